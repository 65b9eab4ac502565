// Package mcpserver serves the ReasoningBank memory tools — memory_search,
// memory_record and memory_feedback — over the Model Context Protocol, on
// top of a [search.Backend], and, when [Options] provide their backends,
// pair_improvement, the tree-search tools search_get and search_resume,
// next_tool, and the read tools memory_list, pattern_get and
// pattern_history.
//
// The tools are registered with the official Go SDK's typed handlers; their
// input schemas advertise the ReasoningBank constraints (required fields,
// enums, defaults, bounds), which the SDK enforces before a handler runs, and
// each handler checks its input again. A call that breaks the contract, is
// not allowed for its caller or fails in the backend answers with a tool
// error (a result with isError set whose text names the field and the
// reason), never with a protocol error.
//
// Who is calling decides what a call may see and change: every call runs
// for a [Caller], fixed for a stdio server ([Options.Caller]) and resolved
// per HTTP request by [Options.CallerFunc] for the streamable HTTP
// transport. The server turns the caller into [search.Query.Readable],
// [search.Feedback.Writable] and [search.Record.Scope] before calling the
// backend.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// AllScopes in [Caller.ReadScopes] or [Caller.WriteScopes] grants every
// scope.
const AllScopes = "*"

// Caller is who makes the tool calls of a connection (stdio) or of an HTTP
// request, and what it may do. A scope is "project:<id>", "team:<id>",
// "org:<id>" or [AllScopes]. Scopes match exactly: "team:a" does not grant
// the projects of team a. The zero Caller may read and write nothing.
type Caller struct {
	// ReadScopes are the scopes whose memories memory_search may return.
	ReadScopes []string
	// WriteScopes are the scopes the caller may record memories into and
	// give feedback on.
	WriteScopes []string
	// DefaultScope is the scope memory_record writes to; it must be one of
	// WriteScopes (or WriteScopes holds [AllScopes]) and must not be "*".
	DefaultScope string
	// Source names the caller on memory.retrieved and memory.feedback
	// events ("token:<name>" over HTTP); empty: "mcp:" and the client's
	// name from its initialize request (stdio).
	Source string
	// SharedSource says that every caller of the server gives Source (serve
	// without API tokens): see search.Feedback.SharedSource.
	SharedSource bool
	// Credentials is the Authorization header of the HTTP request the call
	// came in on (serve's /mcp), so that a backend can make the call
	// through the service's HTTP API as the same caller; empty over stdio.
	// Never logged nor written anywhere.
	Credentials string
}

type callerCtxKey struct{}

// ContextWithCaller returns ctx carrying c: the tools hand the backend's
// Search, Record and Feedback calls such a ctx (their arguments carry no
// caller), so a backend can tell who calls (CallerFromContext).
func ContextWithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerCtxKey{}, c)
}

// CallerFromContext returns the caller ContextWithCaller put in ctx; ok
// false when there is none.
func CallerFromContext(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerCtxKey{}).(Caller)
	return c, ok
}

// readable is the [search.Query.Readable] filter of the caller: nil (every
// scope) when it may read all scopes.
func (c Caller) readable() func(string) bool {
	if slices.Contains(c.ReadScopes, AllScopes) {
		return nil
	}
	scopes := slices.Clone(c.ReadScopes)
	return func(scope string) bool { return grants(scopes, scope) }
}

// writable is the [search.Feedback.Writable] filter of the caller.
func (c Caller) writable() func(string) bool {
	scopes := slices.Clone(c.WriteScopes)
	return func(scope string) bool { return grants(scopes, scope) }
}

// grants reports whether scopes hold scope, a concrete scope, or AllScopes.
func grants(scopes []string, scope string) bool {
	if !events.ValidScope(scope) {
		return false
	}
	return slices.Contains(scopes, AllScopes) || slices.Contains(scopes, scope)
}

// Options configure the MCP server.
type Options struct {
	// Name and Version identify the server in the initialize handshake
	// (default "chronicle" and "dev").
	Name, Version string
	// Caller is the caller of every call over stdio, and over HTTP when
	// CallerFunc is nil.
	Caller Caller
	// CallerFunc, when set, resolves the caller of each HTTP request before
	// the request reaches the MCP transport (typically from its bearer
	// token). An error answers 401 Unauthorized with the error's text and
	// the request is not served. Not used over stdio.
	CallerFunc func(ctx context.Context, req *http.Request) (Caller, error)
	// Improvement, when set, adds the pair_improvement tool (issue 13):
	// the PAIR loop state of a session.
	Improvement ImprovementFunc
	// Searches, when set, adds the tree-search tools search_get and
	// search_resume (issue 12).
	Searches SearchTools
	// Graph, when set, adds next_tool (issue 11, item 10): the next tool
	// of a workflow from the learned tool graph.
	Graph GraphTools
	// Reads, when set, adds memory_list, pattern_get and pattern_history:
	// GET /v1/memories, GET /v1/patterns/{id} and its history as the
	// caller.
	Reads ReadTools
	// OutputSchemas, when set, gives the output schema (the JSON Schema
	// of structuredContent, "type": "object" at its root) of the tools
	// whose answer is an HTTP route's body, by tool name:
	// pair_improvement, search_get, search_resume, next_tool,
	// memory_list, pattern_get and pattern_history
	// (httpapi.MCPOutputSchemas builds them from openapi.json). The SDK
	// checks every answer of such a tool against its schema, and a
	// mismatch is the call's error. A tool without an entry (the
	// default: nil) declares an open object. The memory tools' output
	// schemas are their Go types' and are not read from here.
	OutputSchemas map[string]*jsonschema.Schema
	// DrainWait bounds how long [ServeStdio], once stdin ends, waits for
	// the answers of the requests read before the end (0:
	// [DefaultDrainWait]). Not used over HTTP.
	DrainWait time.Duration
}

// New returns an MCP server exposing the three memory tools on backend
// (which must not be nil). Every call on it runs for opts.Caller; use
// [HTTPHandler] to resolve callers per HTTP request with opts.CallerFunc.
func New(backend search.Backend, opts Options) *mcp.Server {
	return newServer(backend, opts, nil)
}

// HTTPHandler returns the streamable HTTP transport of the memory tools, to
// be mounted at /mcp. It is stateless: every POST carries its own caller
// (opts.CallerFunc, else opts.Caller), so no MCP session outlives its
// request and no session can be taken over with another token. Requests
// reaching a loopback listener with a non-loopback Host header are refused
// (the SDK's DNS rebinding protection); bodies are limited to 4 MiB. A
// request's handling ends when its POST does: a client that gives up on a
// call (cancels it, times out, hangs up) cancels the tool's context, and
// with it the backend's work, whatever the protocol version.
func HTTPHandler(backend search.Backend, opts Options) http.Handler {
	reg := &callerRegistry{callers: make(map[string]inflight)}
	server := newServer(backend, opts, reg)
	h := textChecked(methodNotFound(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})))
	return originChecked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := opts.Caller
		if opts.CallerFunc != nil {
			var err error
			if caller, err = opts.CallerFunc(r.Context(), r); err != nil {
				w.Header().Set("WWW-Authenticate", "Bearer")
				http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
				return
			}
		}
		key, release := reg.add(caller, r.Context())
		defer release()
		r = r.Clone(r.Context())
		r.Header.Set(callerHeader, key)
		h.ServeHTTP(w, r)
	}))
}

// OriginChecked is originChecked for a server that authenticates /mcp's
// requests before they reach HTTPHandler (httpapi): it wraps the whole
// chain, so that a cross-origin request is refused before its token is
// looked at, as the MCP transport's own check is (a 401 for a missing
// token and another for an unknown one told a page of another site which
// it had: an MCP walkthrough, 2026-12-03). HTTPHandler checks again,
// which a request that passed here passes.
func OriginChecked(h http.Handler) http.Handler { return originChecked(h) }

// originChecked refuses, with 403 Forbidden and a JSON-RPC error without
// an id, a POST or DELETE whose Origin header names another origin than
// the request's Host (or whose Sec-Fetch-Site says cross-site): the MCP
// Streamable HTTP transport says servers MUST validate the Origin header
// and answer 403 when it is present and invalid. Requests without Origin
// (MCP clients that are no browser) pass, and so do GET, HEAD and OPTIONS
// (http.CrossOriginProtection's rule). With the SDK's check of the Host
// header on loopback listeners, a page of another site reaches the tools
// neither across origins nor by DNS rebinding. Before, such a POST was
// served (found by a standards-conformance walkthrough).
func originChecked(h http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeRPCError(w, http.StatusForbidden, nil, -32600, fmt.Sprintf("Forbidden: cross-origin request (Origin %q, Host %q): the MCP endpoint serves its own origin only", r.Header.Get("Origin"), r.Host))
	}))
	return p.Handler(h)
}

// protocolVersionRe is the form of an MCP protocol version: a date.
var protocolVersionRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// textCheckedMax is the most of a POST body textChecked reads to check it:
// the SDK's own limit, mcp.DefaultMaxRequestBodyBytes (4 MiB), which
// HTTPHandler keeps; a larger body is handed on and the SDK refuses it.
// It was 16 MiB, so a body the SDK would refuse was held whole in memory
// first, four times the room the HTTP API's ingest budget weighs a body
// at (an ingest-budget walkthrough, 2026-12-07;
// TestTextCheckedReadsNoMoreThanTheSDKTakes).
const textCheckedMax = mcp.DefaultMaxRequestBodyBytes

// textChecked refuses a POST whose body is not UTF-8 text, or holds a \u
// escape of a lone UTF-16 surrogate, with 400 and a JSON-RPC parse error
// (-32700) without an id, and one whose Content-Type names a charset other
// than UTF-8 with 415: JSON is UTF-8 (RFC 8259, section 8.1), and the
// SDK's decoder turns such bytes and escapes into U+FFFD, so memory_record
// titles that differed only there were one memory, merged with its
// evidence counted three times (a re-test, 2026-12-01), as the HTTP API's
// own routes refuse them. Only the HTTP transport is checked: `chronicle
// mcp` over stdio hands the SDK its stdin as it comes.
func textChecked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !protocolVersionRe.MatchString(v) {
			// a version is a date: anything else is the SDK's own
			// text/plain refusal of an unsupported version, which it gave
			// only below 2026-07-28 and, for "bogus" (after it in string
			// order), answered a JSON-RPC error about a _meta field the
			// client never heard of (an MCP walkthrough, 2026-12-03)
			http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version %q: a protocol version is a date, YYYY-MM-DD (supported versions: %s)", v, strings.Join(mcp.SupportedProtocolVersions(), ",")), http.StatusBadRequest)
			return
		}
		// JSON-RPC 2.0 (section 5): the id member is null when it could not be read
		refuse := func(status int, msg string) { writeRPCError(w, status, json.RawMessage("null"), -32700, msg) }
		if _, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && !events.UTF8Charset(params) {
			refuse(http.StatusUnsupportedMediaType, fmt.Sprintf("Parse error: charset %q: JSON is UTF-8 (RFC 8259, section 8.1)", params["charset"]))
			return
		}
		body, err := peekBody(r, textCheckedMax+1)
		if err != nil {
			refuse(http.StatusBadRequest, "Parse error: reading the body: "+err.Error())
			return
		}
		if len(body) <= textCheckedMax {
			if !utf8.Valid(body) {
				refuse(http.StatusBadRequest, "Parse error: the body is not valid UTF-8 (JSON is UTF-8, RFC 8259, section 8.1)")
				return
			}
			if ptr, reason, ok := events.LoneSurrogate(body); ok {
				refuse(http.StatusBadRequest, fmt.Sprintf("Parse error: %s: %s", ptr, reason))
				return
			}
			if err := notJSON(body); err != nil {
				// the SDK's answer was a text/plain 400 with Go's decoder
				// text, where stdio answers a JSON-RPC Parse error (an MCP
				// mutation walkthrough, 2026-12-03)
				refuse(http.StatusBadRequest, "Parse error: "+err.Error())
				return
			}
			if !oneValue(body) {
				refuse(http.StatusBadRequest, "Parse error: the body holds more than one JSON value: send one JSON-RPC message (or, before 2025-06-18, one array of them) per request")
				return
			}
			if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '{' {
				if id, code, text, bad := badMessage(b); bad {
					writeRPCError(w, http.StatusOK, id, code, text)
					return
				}
				if id, why, bad := unanswerableID(b); bad {
					writeRPCError(w, http.StatusBadRequest, id, -32600, "Invalid Request: "+why)
					return
				}
				if id, why, bad := invalidParams(b); bad {
					writeRPCError(w, http.StatusOK, id, -32602, "Invalid params: "+why)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// callerHeader carries, from [HTTPHandler]'s authentication step to the tool
// handlers, the registry key of the request's caller. The SDK hands tool
// handlers the request's headers but not its context. Whatever a client
// sends in this header is overwritten, and a key is only valid in the
// registry of the handler that made it while its request is being served.
const callerHeader = "X-Chronicle-Mcp-Caller"

// callerRegistry holds the callers of the HTTP requests being served,
// with the requests' contexts.
type callerRegistry struct {
	mu      sync.Mutex
	callers map[string]inflight
}

// inflight is an HTTP request being served: its caller and its context,
// done when the client hangs up or the server ends it.
type inflight struct {
	caller Caller
	ctx    context.Context
}

// add registers c and the request context ctx under a fresh random key;
// release removes them.
func (r *callerRegistry) add(c Caller, ctx context.Context) (key string, release func()) {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	key = hex.EncodeToString(b)
	r.mu.Lock()
	r.callers[key] = inflight{caller: c, ctx: ctx}
	r.mu.Unlock()
	return key, func() {
		r.mu.Lock()
		delete(r.callers, key)
		r.mu.Unlock()
	}
}

func (r *callerRegistry) get(key string) (Caller, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.callers[key]
	return c.caller, ok
}

// requestContext is the context of the HTTP request registered under key.
func (r *callerRegistry) requestContext(key string) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.callers[key]
	return c.ctx, ok
}

// cancelWithRequest gives every request handled for an HTTP POST a
// context that is cancelled when the POST's is: the client gave up (its
// call's context ended, so the SDK client closed the POST), the server
// is shutting down. In stateless mode the SDK runs a handler on the
// detached context of the request's one-off session, and a
// notifications/cancelled arrives on another POST, in another one-off
// session that knows nothing of the call; so a cancelled memory_search,
// or a pair_improvement waiting up to 20 s, ran to its end for an answer
// nobody would read (an MCP walkthrough, 2026-12-06: a cancelled call's
// backend ran its full 10 s). The SDK's PropagateRequestCancellation does
// this for protocol 2026-07-28 only; this covers every version.
func (r *callerRegistry) cancelWithRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			if key := extra.Header.Get(callerHeader); key != "" {
				if reqCtx, ok := r.requestContext(key); ok {
					var cancel context.CancelCauseFunc
					ctx, cancel = context.WithCancelCause(ctx)
					defer cancel(nil)
					stop := context.AfterFunc(reqCtx, func() { cancel(fmt.Errorf("the HTTP request of %s ended: %w", method, context.Cause(reqCtx))) })
					defer stop()
				}
			}
		}
		return next(ctx, method, req)
	}
}

// callerOf returns the caller of a tool call: opts.Caller without a
// registry, else the one registered for the HTTP request carrying req.
func (s *tools) callerOf(req *mcp.CallToolRequest) (Caller, error) {
	if s.reg == nil {
		return s.opts.Caller, nil
	}
	var key string
	if req != nil && req.Extra != nil && req.Extra.Header != nil {
		key = req.Extra.Header.Get(callerHeader)
	}
	if c, ok := s.reg.get(key); ok && key != "" {
		return c, nil
	}
	return Caller{}, fmt.Errorf("unauthenticated: the call carries no authenticated caller")
}
