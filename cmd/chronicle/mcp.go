package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/spf13/cobra"
)

func mcpCmd() *cobra.Command {
	var api, tokenEnv, scope string
	var drainWait time.Duration
	cmd := &cobra.Command{
		Use: "mcp [--api http://127.0.0.1:8080] [--scope project:a] [--drain-wait 65s]",
		Example: `  # the MCP server an agent's client starts, against a chronicle serve on 127.0.0.1:8080
  chronicle mcp

  # writing memories to one project, with the token in $AGENT_A_TOKEN, against another host
  chronicle mcp --api http://10.0.0.5:8080 --scope project:a --token-env AGENT_A_TOKEN`,
		Short: "Serve the memory tools (memory_search, memory_record, memory_feedback), pair_improvement, search_get, search_resume and next_tool over MCP on stdio, backed by a running chronicle serve",
		Long: `mcp serves the memory tools (memory_search, memory_record, memory_feedback),
pair_improvement, search_get, search_resume and next_tool over MCP on stdin/stdout (newline-delimited
JSON-RPC), backed by a running chronicle serve, until stdin ends or it is interrupted.

When stdin ends, every request read before the end is still answered: a client may pipe a
batch of requests and close stdin (printf '...' | chronicle mcp). mcp waits for their
answers at most --drain-wait, 65 s by default (each tool call makes at most two requests to
the service, of at most 30 s each), then exits: 0 when every request was answered, else
non-zero with an error naming the requests left unanswered (id, method, tool). Ctrl-C or
SIGTERM ends the wait at once.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if drainWait <= 0 {
				return usage(fmt.Errorf("--drain-wait %s: must be a positive duration (how long to wait, once stdin ends, for the answers of the requests read before the end; default %s)", drainWait, mcpserver.DefaultDrainWait))
			}
			// a URL that names no HTTP server: with --scope, mcp started
			// and every call failed (a walkthrough's finding)
			if u, err := url.Parse(api); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usage(fmt.Errorf("--api %q: not the http:// or https:// URL of a running chronicle serve (e.g. http://127.0.0.1:8080)", api))
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			// a token read from a file often ends in a newline, which an
			// Authorization header cannot hold (every call failed with
			// "invalid header field value": a re-test)
			backend := &httpapi.Client{Base: api, Token: strings.TrimSpace(os.Getenv(tokenEnv))}
			writes := []string{mcpserver.AllScopes}
			var who *httpapi.WhoAmI // the token's scopes, when the service told them at start
			if scope == "" {
				var err error
				if scope, who, err = defaultScope(ctx, backend, tokenEnv); err != nil {
					return err
				}
				if scope == "" {
					// a read-only token: the read tools work; the writing
					// ones answer that the token writes no scope
					writes = nil
					fmt.Fprintln(cmd.ErrOrStderr(), "chronicle mcp: the token writes no scope: memory_record and memory_feedback will be refused; the read tools work")
				}
			} else if !events.ValidScope(scope) {
				return usage(fmt.Errorf("--scope: %s", events.ScopeReason(scope)))
			} else {
				var err error
				if who, err = checkScope(ctx, backend, scope, tokenEnv, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			// The service checks the token's scopes on every call; the
			// stdio side picks where new memories go, and refuses the read
			// tools to a token that reads no scope, as /mcp does (before,
			// the service answered such a token's searches empty lists, so
			// one token's tools answered otherwise over stdio than over
			// /mcp: a walkthrough's finding)
			reads := []string{mcpserver.AllScopes}
			if who != nil && len(who.Read) == 0 {
				reads = nil
				fmt.Fprintln(cmd.ErrOrStderr(), "chronicle mcp: the token reads no scope: memory_search, next_tool and search_get will be refused; the writing tools work")
			}
			caller := mcpserver.Caller{ReadScopes: reads, WriteScopes: writes, DefaultScope: scope}
			return mcpserver.ServeStdio(ctx, backend, mcpserver.Options{Name: "chronicle", Version: serverVersion(), Caller: caller, Improvement: httpapi.ClientTools{Client: backend}.Improvement, Searches: httpapi.ClientTools{Client: backend}, Graph: httpapi.ClientTools{Client: backend}, Reads: httpapi.ClientTools{Client: backend}, OutputSchemas: httpapi.MCPOutputSchemas(), DrainWait: drainWait})
		},
	}
	cmd.Flags().StringVar(&api, "api", "http://127.0.0.1:8080", "URL of a running chronicle serve")
	cmd.Flags().StringVar(&tokenEnv, "token-env", "CHRONICLE_TOKEN", "environment variable holding the API token, if the service uses tokens")
	cmd.Flags().StringVar(&scope, "scope", "", "scope memory_record writes to (default: the token's default write scope, as GET /v1/whoami answers: its first concrete write scope, org:default for a token that writes *)")
	cmd.Flags().DurationVar(&drainWait, "drain-wait", mcpserver.DefaultDrainWait, "once stdin ends, how long to wait for the answers of the requests read before the end, then exit non-zero naming those left unanswered (must be positive)")
	return cmd
}

// checkScope refuses at start a --scope the token may not write (GET
// /v1/whoami) when it writes some other scope: before, mcp started and every memory_record answered the
// service's 403, found only at the first write (a tenant-isolation
// review). A service that does not answer within whoamiWait is no
// refusal: --scope lets mcp start before the service, so that is a
// warning on stderr and the calls then say what the service says.
func checkScope(ctx context.Context, c *httpapi.Client, scope, tokenEnv string, stderr io.Writer) (*httpapi.WhoAmI, error) {
	ctx, cancel := context.WithTimeout(ctx, whoamiWait)
	defer cancel()
	who, err := c.WhoAmI(ctx)
	if terr := tokenError(err, c.Base, tokenEnv, c.Token); terr != nil {
		return nil, terr // every call would be refused alike: say it at start
	}
	if err != nil {
		fmt.Fprintf(stderr, "chronicle mcp: could not check that the token may write --scope %s (%v): memory_record and memory_feedback will say\n", scope, err)
		return nil, nil
	}
	if len(who.Write) == 0 {
		// a read-only token, or chronicle inspect: the read tools work,
		// as without --scope
		fmt.Fprintln(stderr, "chronicle mcp: the token writes no scope: memory_record and memory_feedback will be refused; the read tools work")
		return &who, nil
	}
	if !(access.Caller{Write: who.Write}).CanWrite(scope) {
		return nil, fmt.Errorf("--scope %s: the token %q may not write %s (it writes %v): memory_record and memory_feedback would be refused; pass a scope it writes, or leave --scope out for its default write scope (%q)", scope, who.Name, scope, who.Write, who.DefaultWriteScope)
	}
	return &who, nil
}

// whoamiWait bounds checkScope's question to the service (3 s).
const whoamiWait = 3 * time.Second

// defaultScope asks the service where the token's writes go (GET
// /v1/whoami), so a scoped token works without repeating its scope; ""
// for a token that writes nothing (a read-only token still serves the
// read tools). The service must answer at start: without it the scope
// would be a guess (org:default, which a scoped token may not write).
// who is the service's whole answer.
func defaultScope(ctx context.Context, c *httpapi.Client, tokenEnv string) (scope string, who *httpapi.WhoAmI, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w, err := c.WhoAmI(ctx)
	if terr := tokenError(err, c.Base, tokenEnv, c.Token); terr != nil {
		return "", nil, terr
	}
	if err != nil {
		return "", nil, fmt.Errorf("--scope not given, and asking %s/v1/whoami for the token's default write scope failed (start chronicle serve first, or pass --scope): %w", c.Base, err)
	}
	return w.DefaultWriteScope, &w, nil
}

// tokenError is a 401 of the service at api explained: no token in
// $tokenEnv, or the token there refused. Before, mcp said "start chronicle
// serve first, or pass --scope" for a missing token, and with --scope it
// started anyway and every tool call answered 401 (a subscriber
// walkthrough).
func tokenError(err error, api, tokenEnv, token string) error {
	var r interface{ Refusal() (int, string) }
	if !errors.As(err, &r) {
		return nil
	}
	if code, detail := r.Refusal(); code == http.StatusUnauthorized {
		if token == "" {
			return fmt.Errorf("the service at %s needs an API token and $%s is empty or unset: set it to one of the service's tokens (--token-env names another variable)", api, tokenEnv)
		}
		return fmt.Errorf("the service at %s refused the token in $%s (401: %s)", api, tokenEnv, detail)
	}
	return nil
}
