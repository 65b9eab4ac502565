package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/spf13/cobra"
)

func tokenCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage API tokens (stored hashed in a JSON file)"}
	var file, name string
	var read, write []string
	create := &cobra.Command{
		Use:   "create --file tokens.json --name NAME --read project:a[,team:b|*] --write project:a",
		Short: "Create a token, store its SHA-256 in the file and print the token once",
		Example: `  # an agent's token, reading and writing one project; then chronicle serve --tokens tokens.json
  chronicle token create --file tokens.json --name agent-a --read project:a --write project:a

  # an analyst's, reading every scope and writing none
  chronicle token create --file tokens.json --name analyst --read '*'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// the flags are checked here, by name: the file's check named
			// "tokens[0].name" for a missing --name, and a token with
			// neither scope list could do nothing (found by a new user's
			// walkthrough)
			if name == "" {
				return usage(fmt.Errorf("--name: required (who the token is for)"))
			}
			if len(splitList(strings.Join(read, ","))) == 0 && len(splitList(strings.Join(write, ","))) == 0 {
				return usage(fmt.Errorf("--read, --write: give at least one (a token with neither may read and write nothing)"))
			}
			for flag, l := range map[string][]string{"--read": read, "--write": write} {
				for _, g := range splitList(strings.Join(l, ",")) {
					if !access.ValidGrant(g) {
						// named by its flag: the file's validation named
						// tokens[0] (admin), a path the user never wrote
						// (an operator's walkthrough, 2026-12-06)
						reason := strings.Replace(events.ScopeReason(g), " or org:<id>", ", org:<id> or *", 1)
						return usage(fmt.Errorf("%s: %s", flag, reason))
					}
				}
			}
			var f access.File
			if _, err := os.Stat(file); err == nil {
				if f, err = access.Load(file); err != nil {
					return err
				}
			}
			tok, err := access.NewToken()
			if err != nil {
				return err
			}
			f.Tokens = append(f.Tokens, access.Token{Name: name, SHA256: access.Hash(tok), Read: splitList(strings.Join(read, ",")), Write: splitList(strings.Join(write, ","))})
			if err := access.Save(file, f); err != nil {
				return err
			}
			fmt.Println(tok)
			// a running serve or inspect accepts the token once it re-read
			// the file: a new token was refused with a 401 until a restart,
			// which nothing said (a walkthrough's finding)
			fmt.Fprintf(os.Stderr, "token %q stored hashed in %s; this is the only time it is shown; a running chronicle serve or inspect accepts it once it re-reads %s: send it SIGHUP (kill -HUP <pid>; every member of a cluster)\n", name, file, file)
			return nil
		},
	}
	create.Flags().StringVar(&file, "file", "tokens.json", "token file")
	create.Flags().StringVar(&name, "name", "", "who the token is for")
	// repeatable: every value counts (a repeated --read kept only the
	// last, a narrower or other grant than typed: a security review)
	create.Flags().StringSliceVar(&read, "read", nil, "scopes it may read (project:<id>, team:<id>, org:<id>, *), comma-separated or repeated")
	create.Flags().StringSliceVar(&write, "write", nil, "scopes it may write, comma-separated or repeated")
	cmd.AddCommand(create)
	return cmd
}

func splitList(s string) []string {
	out := []string{} // an empty list is written [], not null
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// loadTokens reads --tokens; without a file the API must listen on
// loopback only.
func loadTokens(file, httpAddr string) (*access.File, error) {
	if file == "" {
		host, _, err := net.SplitHostPort(httpAddr)
		if err != nil {
			return nil, usage(fmt.Errorf("--http %s: %w", httpAddr, err))
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, usage(errors.New("--http: no --tokens configured, so the API serves every scope and listens on loopback only; give a loopback address or --tokens FILE"))
		}
		fmt.Fprintln(os.Stderr, "chronicle: no API tokens configured: every scope is served, on loopback only")
		return nil, nil
	}
	f, err := access.Load(file)
	if err != nil {
		return nil, err
	}
	warnExposed(file)
	fmt.Fprintf(os.Stderr, "chronicle: %d API tokens from %s (re-read on SIGHUP); every /v1 call needs one\n", len(f.Tokens), file)
	return &f, nil
}

// warnExposed warns on stderr when other users may read or write the token
// file (access.Exposed), at start and at each reload.
func warnExposed(file string) {
	if mode, ok := access.Exposed(file); ok {
		fmt.Fprintf(os.Stderr, "chronicle: warning: --tokens %s has mode %04o: other users of this machine may read it (its member_secret signs as a cluster member) or change it; chmod 600 %s\n", file, mode, file)
	}
}

// reloadTokensOnHUP re-reads the token file on every SIGHUP until ctx
// ends, and hands it to api (httpapi.Server.ReloadTokens), saying on
// stderr what it did: a file that does not load, or that changes the
// member secret, leaves the tokens before in place. Without a file
// (serving every scope on loopback) it installs nothing, and a SIGHUP
// ends the process as it always did.
func reloadTokensOnHUP(ctx context.Context, file string, api *httpapi.Server) {
	if file == "" {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			f, err := access.Load(file)
			if err == nil {
				warnExposed(file)
				err = api.ReloadTokens(f)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "chronicle: SIGHUP: --tokens %s not reloaded, the tokens read before stay: %v\n", file, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "chronicle: SIGHUP: %d API tokens reloaded from %s\n", len(f.Tokens), file)
		}
	}()
}
