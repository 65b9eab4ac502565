// Package httpapi is Chronicle's HTTP API: event ingest, the session query
// API over the projections, one session's log read back from Kafka,
// health, digest and Prometheus metrics. Routing is net/http's ServeMux,
// with JSON 404 and 405 answers (jsonRouter).
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/semaphore"
)

// MaxBodyBytes is the largest request body accepted (4 MiB): a batch of
// events; each event of it must also fit events.MaxEventBytes (960 KiB),
// the largest record the broker is sure to accept. Larger: 413 naming the
// limit.
const MaxBodyBytes = 4 << 20

// Request read bounds of the server NewHTTPServer returns.
const (
	// ReadHeaderTimeout bounds reading a request's headers (10 s).
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, body included (30 s): a
	// body trickled more slowly than MaxBodyBytes / 30 s is cut off then
	// (POST /v1/events answers 408 naming it).
	ReadTimeout = 30 * time.Second
	// IdleTimeout closes an idle keep-alive connection (120 s).
	IdleTimeout = 120 * time.Second
)

// SessionEventsTimeout bounds GET /v1/sessions/{id}/events as a whole
// (30 s): reading the session's records from the log, at its indexed
// positions or by a scan. At it the route answers 503 even while
// franz-go still waits for a broker (see within): against a broker that
// accepted connections and never answered it took 32–50 s (an
// operator's walkthrough).
const SessionEventsTimeout = 30 * time.Second

// HealthTimeout bounds the lag query of /healthz (3 s): past it the
// answer is 503 "broker unreachable", even while franz-go still waits
// for a broker (see within; before, 10 s against a hung broker).
const HealthTimeout = 3 * time.Second

// NewHTTPServer is the http.Server that serves h with the documented read
// bounds (ReadHeaderTimeout, ReadTimeout, IdleTimeout) and each write of
// a response bounded by ResponseWriteTimeout. Handlers bound their own
// waits: a publish 15 s, a feedback 5 s, a session log read 30 s.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: writeDeadlines(h), ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout, IdleTimeout: IdleTimeout}
}

// jsonContentTypes are the request media types POST /v1/events reads: JSON and
// the CloudEvents JSON formats (structured and batched).
var jsonContentTypes = map[string]bool{
	"application/json": true, events.ContentTypeCloudEvents: true, "application/cloudevents-batch+json": true,
}

// plainJSON is the media type of the request bodies of every JSON route
// but POST /v1/events.
var plainJSON = map[string]bool{"application/json": true}

// requireJSON answers 415 for a request body of another media type than
// application/json, or with a charset other than UTF-8 (JSON is UTF-8,
// RFC 8259 section 8.1: "charset=latin-1" was accepted and its body read
// as UTF-8, a Python integrator's walkthrough); a request without
// Content-Type is read as JSON. The CloudEvents media types are POST
// /v1/events' only (requireEventJSON): before, every JSON route took them,
// so a memory sent as application/cloudevents-batch+json was recorded
// (a mutation test), against the routes' description.
func requireJSON(next http.HandlerFunc) http.HandlerFunc {
	return requireMediaType(next, plainJSON, "not application/json")
}

// requireEventJSON is requireJSON for POST /v1/events: application/json
// and the CloudEvents JSON formats (structured and batched), and a binary
// mode request's data as application/json.
func requireEventJSON(next http.HandlerFunc) http.HandlerFunc {
	return requireMediaType(next, jsonContentTypes, "not application/json, application/cloudevents+json or application/cloudevents-batch+json")
}

// requireMediaType is requireJSON with the media types types, refused
// with the reason notOne.
func requireMediaType(next http.HandlerFunc, types map[string]bool, notOne string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			mt, params, err := mime.ParseMediaType(ct)
			if err == nil && types[mt] && !events.UTF8Charset(params) {
				reason := fmt.Sprintf("charset %q: JSON is UTF-8 (RFC 8259, section 8.1); send the body as UTF-8 with charset=utf-8 or no charset", params["charset"])
				writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: fmt.Sprintf("Content-Type: %q: %s", ct, reason), Reason: reason})
				return
			}
			if err == nil && !types[mt] && types[events.ContentTypeCloudEvents] && hasBinaryHeaders(r) {
				reason := "the body (data) must be application/json"
				writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: fmt.Sprintf("binary mode: header Content-Type: %q: %s", ct, reason), Reason: reason})
				return
			}
			if err != nil || !types[mt] {
				// the reason as a member, as every refusal's (a 415 had the
				// text alone: a subscriber's walkthrough)
				writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: fmt.Sprintf("Content-Type: %q is %s", ct, notOne), Reason: notOne})
				return
			}
		}
		next(w, r)
	}
}

// Server serves the API of a running pipeline.
type Server struct {
	P *pipeline.Pipeline
	// resumeMu serialises search resumes (publishResume).
	resumeMu sync.Mutex
	// Version is the server's version as the MCP initialize handshake of
	// /mcp names it (serverInfo.version; default "dev"): `chronicle
	// --version`'s without its advice for a build without a VCS
	// revision, set by serve, demo and inspect.
	Version string
	// Tokens, when set, require a bearer token on every /v1 route and
	// limit each caller to its scopes; nil serves every scope (the service
	// then listens on loopback only). ReloadTokens replaces them while the
	// server runs; Tokens itself is not written after start.
	Tokens *access.File
	// StallAfter is how long an owned partition may be behind without
	// progress before /healthz says "stalled" and answers 503 (serve
	// --stall-after; ≤ 0: processors.DefaultStallAfter, 30 s).
	StallAfter time.Duration
	// Advertise is the URL other instances and operators reach this
	// instance's API at (serve --advertise; default: the listen address),
	// shown by GET /v1/cluster.
	Advertise string

	// WorkflowStateMax bounds a workflow's state, in bytes of JSON: a
	// write route that would grow it above is a 413 naming the member
	// (workflows.Service.MaxStateBytes; serve --workflow-state-max-mib).
	// 0: workflows.DefaultMaxStateBytes (16 MiB); negative: no bound.
	WorkflowStateMax int

	// ForwardTimeout bounds a read forwarded to its partition's owner and
	// each member's answer to a fan-out; ≤ 0: ForwardTimeout (5 s).
	ForwardTimeout time.Duration

	// ImproveWait bounds how long POST /v1/sessions/{id}/improve (and the
	// pair_improvement MCP tool) waits for PAIR retrieval and its context
	// to be projected; ≤ 0: DefaultImproveWait (20 s).
	ImproveWait time.Duration

	// RequestLog, when set, gets one line per request (see logRequests):
	// serve sets it (--request-log); nil logs nothing.
	RequestLog *slog.Logger
	// reloaded is the token file of the last ReloadTokens (nil: Tokens)
	reloaded atomic.Pointer[access.File]
	// streamsStop is closed by StopStreams (learned_stream.go)
	openStreams  atomic.Int64 // GET /v1/learned/stream open (LearnedMaxStreams)
	streamsMu    sync.Mutex
	tokenStreams map[string]int // streams open by token name (LearnedMaxStreamsPerToken), under streamsMu
	streamsStop  chan struct{}
	stopStreams  sync.Once
	// serverMetrics are the API's own series (metrics.go), made once
	metricsOnce   sync.Once
	serverMetrics *serverMetrics

	// ReadOnly serves the read API only (chronicle inspect): P has a
	// Store and Search but no broker, producer or runner; every write
	// route answers 405 naming read-only mode (see readonly.go).
	ReadOnly bool
	// LogBrokers, on a ReadOnly server, are the seed brokers (host:port) of
	// a Kafka serving the log the projections were built from (chronicle
	// inspect --brokers: a chronicle broker on that log, or the cluster);
	// with them, GET /v1/sessions/{id}/events is served, listing only the
	// records at or before the positions the projections hold (AsOf).
	// Without them that route answers 503 saying how to give one
	// (NoLogHint). Not read by a server that is not ReadOnly (its log is
	// P.Broker's).
	LogBrokers []string
	// NoLogHint ends the 503 of GET /v1/sessions/{id}/events on a
	// ReadOnly server without LogBrokers: how to serve this directory's
	// log (chronicle inspect sets it from what DIR holds); empty: a generic
	// hint naming --brokers and chronicle broker.
	NoLogHint string

	// internal is the API without the request log (internalHandler).
	internalOnce sync.Once
	internal     http.Handler

	// pairMu guards pairSent, sessions (entity keys) whose context this
	// process published (at most maxPairSent), and pairBusy, the improve route's
	// retrievals in flight, one per session (retrievalOf).
	pairMu   sync.Mutex
	pairSent map[string]bool
	pairBusy map[string]*retrieval

	// dir caches the processors' group (members, advertised URLs,
	// assignment) for the routes that forward to a partition's owner.
	dir directory

	// IngestBudget bounds the bytes of request bodies every route that
	// reads one holds at once, together (budgeted); ≤ 0:
	// DefaultIngestBudget (32 MiB). IngestWait is how long a request
	// waits for room before a 429; ≤ 0: DefaultIngestWait (5 s). See
	// admitBody.
	IngestBudget int64
	IngestWait   time.Duration
	ingestOnce   sync.Once
	ingestSem    *semaphore.Weighted // the budget but its reserve and sent-on part
	ingestLimit  int64
	// ingestReserve is the budget's reserve for small bodies, of
	// ingestReserveSize bytes (ingestBudget)
	ingestReserve     *semaphore.Weighted
	ingestReserveSize int64
	// ingestSentOn is the budget's part for bodies another member read
	// and sent on holding their room there (BodyHeldHeader), of the
	// reserve's size (ingestBudget)
	ingestSentOn *semaphore.Weighted
	// ingestHeld is the room held now, in bytes
	// (chronicle_ingest_budget_held_bytes)
	ingestHeld atomic.Int64

	// outage logs the broker outages POST /v1/events meets (outageLog).
	outage outageLog
	// metricsFailing is set while a collector of GET /metrics fails, so
	// the failure is logged once (metricsHandler).
	metricsFailing atomic.Bool

	graphMu sync.Mutex
	graphs  map[string]cachedGraph // by the scopes' list (graphCacheKey)

	suggestMu sync.Mutex
	suggester suggest.Suggester // POST /v1/workflows/suggest
}

// Route is one route of the API: its net/http ServeMux pattern
// ("METHOD /path/{wildcard}") and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Routes lists every route Handler serves, in registration order. The
// access-control conformance suite (package accesstest) fails for a route
// missing from its table, so a new route cannot skip authorisation review.
func (s *Server) Routes() []Route {
	f := func(pattern string, h http.HandlerFunc) Route { return Route{pattern, h} }
	return []Route{
		f("POST /v1/events", requireEventJSON(s.postEvents)),
		f("GET /v1/sessions", s.listSessions),
		f("GET /v1/sessions/{id...}", s.toOwner(sessionsRoute(false), s.sessionRoutes)),
		f("POST /v1/sessions/{id...}", requireJSON(s.toOwner(sessionsRoute(true), s.improveSession))),
		f("GET /v1/reasoning", s.listReasoning), // the tasks of the caller's scopes (reasoning.go)
		f("GET /v1/reasoning/{id...}", s.toOwner(reasoningRoute, s.reasoningRoutes)),
		f("GET /v1/memories/search", s.toTopicOwner(events.TopicMemories, 0, s.searchMemories)),
		f("GET /v1/patterns/search", s.searchCollection(search.Patterns, "patterns")),
		f("GET /v1/patterns/{id...}", s.patternRoutes), // a pattern and its history: a global table, answered here (patterns.go)
		f("GET /v1/tools/search", s.searchCollection(search.Tools, "tools")),
		f("POST /v1/memories", requireJSON(s.toTopicOwner(events.TopicMemories, memories.DefaultRecordWait, s.recordMemory))),
		f("POST /v1/memories/{id...}", requireJSON(s.toOwner(memoriesRoute(true), s.memoryFeedback))),
		f("GET /v1/memories/{id...}", s.toOwner(memoriesRoute(false), s.memoryRoutes)),
		f("GET /v1/memories", s.toTopicOwner(events.TopicMemories, 0, s.listMemories)), // the memories of the caller's scopes (memories_list.go)
		f("POST /v1/workflows/suggest", requireJSON(s.postSuggest)),
		f("POST /v1/workflows/suggest/feedback", requireJSON(s.postSuggestFeedback)),
		f("GET /v1/workflows", s.listWorkflows),
		f("GET /v1/workflows/{id...}", s.toOwner(workflowsRoute(false), s.workflowGet)),
		f("POST /v1/workflows/{id...}", requireJSON(s.toOwner(workflowsRoute(true), s.workflowPost))),
		f("POST /v1/dags", requireJSON(s.postDAG)),
		f("GET /v1/searches", s.listSearches),                                                       // the searches of the caller's scopes (searches_list.go)
		f("GET /v1/searches/{id...}", s.toOwner(searchesRoute(false), s.searchRoutes)),              // issue 12: tree searches
		f("POST /v1/searches/{id...}", requireJSON(s.toOwner(searchesRoute(true), s.resumeSearch))), // issue 12: POST /v1/searches/{id}/resume
		f("GET /v1/graph/next", s.graphNext),
		f("GET /v1/graph/tools", s.graphTools),
		f("GET /v1/graph/path", s.graphPath),
		f("GET /v1/learned/stream", s.learnedStream), // issue 11: chronicle.learned as Server-Sent Events (learned_stream.go)
		f("GET /v1/deadletters", s.listDeadLetters),  // the refusals of the caller's events (deadletters.go)
		f("GET /v1/digest", s.digest),
		f("GET /v1/cluster", s.cluster),   // issue 15: members, assignment, lag and restore per partition
		f("GET /v1/whoami", s.whoami),     // issue 11: the token's name, scopes and default write scope
		f("GET /openapi.json", s.openAPI), // issue 11: the OpenAPI 3.1 description of these routes
		f("GET /healthz", s.health),
		{"GET /metrics", s.metricsHandler()},
		{"/mcp", mcpserver.HTTPHandler(mcpAPI{s}, mcpserver.Options{Name: "chronicle", Version: s.Version, CallerFunc: s.mcpCaller, Improvement: mcpAPI{s}.Improvement, Searches: mcpAPI{s}, Graph: mcpAPI{s}, Reads: mcpAPI{s}, OutputSchemas: MCPOutputSchemas()})},
	}
}

// metricsHandler serves GET /metrics from P.Registry. A collector that
// fails (the lag collectors while the brokers are down or do not answer)
// leaves its own series out and the rest are served with 200
// (promhttp.ContinueOnError; before, the whole scrape answered 500, the
// dead-letter counts and runtime metrics with it, found by an operator's
// walkthrough); chronicle_lag_collector_up says which lag is missing. The
// failure is logged once, when it starts, and its end once.
func (s *Server) metricsHandler() http.Handler {
	s.metrics() // the API's own series exist from the start
	reg := s.P.Registry
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := reg.Gather()
		if err != nil {
			if !s.metricsFailing.Swap(true) {
				slog.Warn("GET /metrics: a collector failed, its series are left out until it answers again", "error", err)
			}
		} else if s.metricsFailing.Swap(false) {
			slog.Info("GET /metrics: every collector answers again")
		}
		return mfs, err
	})
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Handler returns the API: every route of Routes behind authentication;
// a path or method no route serves is a JSON 404 or 405 (jsonRouter).
func (s *Server) Handler() http.Handler {
	jr := s.router()
	h := s.authenticate(jr) // unmatched routes and methods: JSON 404/405 (router.go)
	// /mcp's Origin check comes before authentication (mcpserver.OriginChecked)
	checked := mcpserver.OriginChecked(h)
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			checked.ServeHTTP(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	})
	h = s.countRequests(jr, h)
	if s.RequestLog != nil {
		h = logRequests(s.RequestLog, h)
	}
	return h
}

func (s *Server) router() *jsonRouter {
	jr := &jsonRouter{mux: http.NewServeMux(), readOnly: s.ReadOnly}
	for _, r := range s.Routes() {
		jr.mux.Handle(r.Pattern, s.budgeted(r.Pattern, s.readOnlyGuard(r, jr)))
	}
	return jr
}

// internalHandler is Handler without the request log, built once: the
// /mcp tools' in-process requests (mcpAPI) go through it.
func (s *Server) internalHandler() http.Handler {
	s.internalOnce.Do(func() { s.internal = s.authenticate(s.router()) })
	return s.internal
}

type callerKey struct{}

// isBearer says whether an Authorization header value carries a Bearer
// token (access.BearerToken).
func isBearer(h string) bool {
	_, ok := access.BearerToken(h)
	return ok
}

// authenticate resolves the caller of every route but publicPaths: 401
// without a known bearer token when tokens are configured. It notes the
// caller's token name for the request log, and keeps the cached group
// view fresh (keepGroupViewFresh) for every request it lets through.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Tokens == nil && !publicPaths[r.URL.Path] && rebound(r) {
			writeErr(w, http.StatusForbidden, "Host %q: this server has no API tokens, so it serves every scope to loopback names only (localhost, 127.0.0.1, [::1]); a page of another site that had its name resolved to this machine (DNS rebinding) would read and write it. Send a loopback Host, or serve with --tokens FILE", r.Host)
			return
		}
		if s.Tokens != nil && strings.HasPrefix(r.URL.Path, "/.well-known/") {
			// /.well-known/ serves nothing here: a 404 without a token, so
			// that an MCP client's OAuth discovery
			// (/.well-known/oauth-protected-resource) learns there is
			// none, where a 401 without resource_metadata sent it looking
			// (an MCP walkthrough). Answered here, with no caller and
			// before the member check: let through as the unrestricted
			// caller, a member header drew the account of how members
			// sign (a security review)
			writeErr(w, http.StatusNotFound, "no route %s %s: this server publishes nothing under /.well-known/ (no OAuth: send a bearer token)", r.Method, r.URL.Path)
			return
		}
		c := access.Unrestricted
		if s.Tokens != nil && !publicPaths[r.URL.Path] {
			var err error
			if c, err = s.tokenFile().Authenticate(r.Header.Get("Authorization")); err != nil {
				// RFC 6750 section 3.1: no error code when the request
				// carried no credentials, invalid_request for another
				// scheme, invalid_token for a token not known here
				challenge := `Bearer realm="chronicle"`
				switch h := r.Header.Get("Authorization"); {
				case h == "":
				case !isBearer(h):
					challenge += `, error="invalid_request", error_description="not a Bearer token"`
				default:
					challenge += `, error="invalid_token", error_description="unknown bearer token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				writeErr(w, http.StatusUnauthorized, "%v", err)
				return
			}
		}
		// a client's copy of a member's headers (memberauth.go), judged
		// after the bearer token: a caller without a known token gets the
		// bearer challenge (RFC 6750), not an account of how members sign
		// (before, a forged member header came first and was answered 401
		// without a WWW-Authenticate challenge, naming member_secret)
		if !s.checkMember(w, r) {
			return
		}
		if s.Tokens == nil || !publicPaths[r.URL.Path] {
			noteCaller(r, c.Name)
		}
		s.keepGroupViewFresh() // for the outage view, also where nothing looks the group up
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// rebound reports whether r reached a loopback listener under a Host that
// is not a loopback name: how a browser page of another site sends its
// requests once it had its name resolved to 127.0.0.1 (DNS rebinding).
// The page is then same-origin with its own name, so no CORS preflight
// stops it, and a server without tokens would serve it every scope. The
// MCP SDK refuses such requests on /mcp; authenticate refuses them on
// every route of a server without tokens (before, only /mcp did; found by
// a standards-conformance walkthrough). In-process requests, which have no
// local address, are not judged.
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopbackName(local.String()) && !loopbackName(r.Host)
}

// loopbackName reports whether hostport (a Host header or an address, with
// or without a port) names this machine's loopback: localhost or a
// loopback IP address.
func loopbackName(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// publicPaths answer without a token: they show no scoped data (health,
// metrics, and the API's description).
var publicPaths = map[string]bool{"/healthz": true, "/metrics": true, "/openapi.json": true}

// CallerOf is the authenticated caller of r.
func CallerOf(r *http.Request) access.Caller {
	if c, ok := r.Context().Value(callerKey{}).(access.Caller); ok {
		return c
	}
	return access.Caller{}
}

// needsAll answers 403 unless the caller reads every scope (cross-scope
// aggregates: the tool graph, the digest).
func needsAll(w http.ResponseWriter, r *http.Request) bool {
	if CallerOf(r).ReadsAll() {
		return false
	}
	writeErr(w, http.StatusForbidden, "this view aggregates every scope: it needs a token that reads *")
	return true
}

type errorBody struct {
	Error   string `json:"error"`
	Index   *int   `json:"index,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	// Parameter names the refused query parameter (paramError).
	Parameter string `json:"parameter,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// writeJSON answers code with v as JSON. '<', '>' and '&' are written as
// themselves, not as json.Marshal's \u003c escapes (they made an error
// such as "<partition>:<next offset>" unreadable in a terminal; found by
// a walkthrough, 2026-11-30); nosniff keeps a browser from reading the
// body as anything but JSON, the escapes' purpose.
func writeJSON(w http.ResponseWriter, code int, v any) {
	jsonHeaders(w, code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// jsonHeaders writes the headers and status of a JSON answer.
func jsonHeaders(w http.ResponseWriter, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
}

// writeState is writeJSON for an answer holding a workflow's state read
// from the projection: rows keep encoding/json's HTML escapes inside the
// channels' values (json.RawMessage, written as stored), so markup came
// back six times its size — 12 MB of markup updates made a 74 MB state
// that the Go client and the CLI then refused above 64 MiB (a re-test,
// 2026-11-30). The answer is the same JSON with '<', '>' and '&' as sent
// (events.UnescapeHTML).
func writeState(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	jsonHeaders(w, code)
	_, _ = w.Write(events.UnescapeHTML(b.Bytes()))
}

func writeErr(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{Error: fmt.Sprintf(format, args...)})
}

// writeFieldErr answers a 400 naming the request body's member: error
// "<field>: <reason>", its JSON pointer and the reason, as the workflow
// and event routes answer.
func writeFieldErr(w http.ResponseWriter, field, pointer, reason string) {
	writeJSON(w, http.StatusBadRequest, errorBody{Error: field + ": " + reason, Pointer: pointer, Reason: reason})
}

// writeSuggestErr answers a suggest.FieldError (a 400 naming the member)
// as writeFieldErr does.
func writeSuggestErr(w http.ResponseWriter, fe *suggest.FieldError) {
	writeFieldErr(w, fe.Field(), fe.Pointer(), fe.Reason)
}

// writeBadInput answers POST /v1/events' 400 for ie with the documented
// fields: error, index, pointer and reason.
func writeBadInput(w http.ResponseWriter, ie *inputError) {
	idx := ie.Index
	writeJSON(w, http.StatusBadRequest, errorBody{Error: ie.Msg, Index: &idx, Pointer: ie.Pointer, Reason: ie.Reason})
}

// postEvents validates every event of the request before producing any
// (CloudEvents HTTP binding: binary, structured or batched content mode,
// or a JSON object or array as application/json; see modeOf), so a request is all or nothing; it answers 202 with
// the ids once the broker acknowledged all of them.
func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("scope") {
		// it was ignored, and the events written into the token's
		// default write scope, which others may read (a security
		// review, 2026-11-30): refused, saying where a scope goes
		reason := "not a query parameter of POST /v1/events: " + eventsScopeHint
		idx := -1 // the request's, as an empty body's
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "scope: " + reason, Index: &idx, Pointer: "/", Reason: reason})
		return
	}
	// the body is held, parsed and produced within the ingest budget,
	// which the router took for it (429 when it stays full: budgeted)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			// the request's as a whole (index -1, pointer /), as an empty
			// body's; it had the text alone, unlike one oversized event's
			// 413 (a subscriber's walkthrough)
			idx := -1
			reason := fmt.Sprintf("larger than %d bytes (MaxBodyBytes; one event may be at most %d bytes)", MaxBodyBytes, events.MaxEventBytes)
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "body " + reason, Index: &idx, Pointer: "/", Reason: reason})
			return
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			// the body did not arrive within the server's read bound: a
			// 408 naming it (it was a 400 "read body: read tcp
			// 127.0.0.1:8080->…: i/o timeout", which named no limit: a
			// load walkthrough, 2026-12-07, a body sent a byte at a time)
			idx := -1
			reason := fmt.Sprintf("not received within %s of the request's start (ReadTimeout; a body of MaxBodyBytes must arrive at %d bytes/s or faster): nothing was written, send it again at once", ReadTimeout, MaxBodyBytes/int(ReadTimeout/time.Second))
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, errorBody{Error: "body " + reason, Index: &idx, Pointer: "/", Reason: reason})
			return
		}
		writeBadInput(w, bodyInputError("read body", err.Error()))
		return
	}
	mode := modeOf(r)
	raws, err := requestEvents(r, mode, body)
	if err != nil {
		var ie *inputError
		if errors.As(err, &ie) {
			writeBadInput(w, ie)
			return
		}
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if len(raws) == 0 { // an empty batch (`[]`): valid, nothing to write
		writeJSON(w, http.StatusAccepted, map[string]any{"ids": []string{}})
		return
	}
	envs, err := events.ParseBatch(raws)
	if err != nil {
		var ve *events.ValidationError
		if errors.As(err, &ve) {
			idx := ve.Index
			msg := ve.Error()
			if mode == modeBinary {
				msg = binaryModeError(ve)
			}
			writeJSON(w, http.StatusBadRequest, errorBody{Error: msg, Index: &idx, Pointer: ve.Pointer, Reason: ve.Reason})
			return
		}
		// not the input's fault: the embedded schemas did not compile
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	c := CallerOf(r)
	// an event without a scope is org:default's; for a token that may not
	// write org:default it goes to the token's default write scope
	// instead, as POST /v1/memories and the MCP tools do (before: a 403
	// for the scope the producer never named)
	if def := c.DefaultWriteScope(); def != "" && !c.CanWrite(events.DefaultScope) {
		for i := range envs {
			if envs[i].Scope == "" {
				envs[i].Scope = def
			}
		}
	}
	noteEventScopes(r, envs)
	for i := range envs {
		if sc := envs[i].EffectiveScope(); !c.CanWrite(sc) {
			idx := i
			writeJSON(w, http.StatusForbidden, errorBody{Error: fmt.Sprintf("event %d: /scope: this token may not write %s", i, sc), Index: &idx, Pointer: "/scope", Reason: "scope not writable"})
			return
		}
		// a suggestion's feedback moves its policy's threshold: the
		// feedback route trusts only a token that reads * (as
		// suggestions need) with it, and so does this one (before, a
		// batch here moved a policy the route refused: a walkthrough)
		if envs[i].Type == events.WorkflowSuggestionFeedback && !c.ReadsAll() {
			idx := i
			writeJSON(w, http.StatusForbidden, errorBody{Error: fmt.Sprintf("event %d: /type: %s moves a policy's threshold: it needs a token that reads *, as POST /v1/workflows/suggest/feedback does", i, events.WorkflowSuggestionFeedback), Index: &idx, Pointer: "/type", Reason: "needs a token that reads *"})
			return
		}
	}
	// a feedback resent with its first send's time, after the clock window,
	// is a duplicate when the memory bank applied that send (this store's
	// rows)
	var applied func(env *events.Envelope) (bool, bool, error)
	if s.P.Store != nil {
		applied = func(env *events.Envelope) (bool, bool, error) { return s.P.Store.AppliedContent(memories.Name, env) }
	}
	if eb := stampAuthor(envs, c, s.Tokens != nil, time.Now(), applied); eb != nil {
		if eb.Reason == reasonNotResent {
			// this store holds no such feedback, but on a cluster member
			// that does not own chronicle.memories that says nothing: the
			// request goes to the owner, whose memory bank applied it or
			// not, so a late resend is the owner's 202 duplicate (or
			// 403) on every member (before, a 403 here); the owner checks
			// and publishes the whole request, as this member would have
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.toTopicOwner(events.TopicMemories, publishWait, func(w http.ResponseWriter, _ *http.Request) {
				if s.P.Runner != nil && !s.ownsLocally(string(events.TopicMemories), 0) {
					// no owner to ask (a member without a URL): say whose
					// store answered
					eb.Error += "; this member does not own chronicle.memories and could not ask its owner, so this is its own store's answer"
				}
				writeJSON(w, http.StatusForbidden, eb)
			})(w, r)
			return
		}
		writeJSON(w, http.StatusForbidden, eb)
		return
	}
	if eb := s.undrivableResumes(envs); eb != nil {
		writeJSON(w, http.StatusUnprocessableEntity, eb)
		return
	}
	// bounded by the producer's PublishTimeout (15 s)
	if err := s.P.Producer.Publish(r.Context(), envs...); err != nil {
		var ve *events.ValidationError
		switch {
		case errors.As(err, &ve):
			code := http.StatusBadRequest
			if errors.Is(err, events.ErrEventTooLarge) {
				code = http.StatusRequestEntityTooLarge
			}
			idx := ve.Index
			writeJSON(w, code, errorBody{Error: ve.Error(), Index: &idx, Pointer: ve.Pointer, Reason: ve.Reason})
		case errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge):
			// a cluster configured below Kafka's defaults: permanent, not "retry"
			writeErr(w, http.StatusRequestEntityTooLarge, "the broker refused the events as too large (its max.message.bytes is below Chronicle's %d-byte event limit): %v", events.MaxEventBytes, err)
		case writeRefused(w, err, refusedEvents(err, len(envs))):
		case r.Context().Err() != nil:
			// the client went away while the events were produced (or
			// before): no broker outage, so nothing is logged and the
			// outage log is left as it was. Before, such a client made
			// serve log "broker not acknowledging events" with "context
			// canceled", and under load a real outage's first line was
			// then held back (a load walkthrough, 2026-12-07: 20 clients
			// that closed their connection 10 ms after sending a batch).
			// The answer goes nowhere; it says what happened for the log.
			w.Header().Set("Retry-After", "5")
			writeErr(w, http.StatusServiceUnavailable, "the client closed the connection before the broker acknowledged: the events may still be written, retry with the same ids: %v", err)
		default:
			s.outage.failed(time.Now(), err)   // logged once per outage, at most once a minute
			w.Header().Set("Retry-After", "5") // openapi.json says so (it said nothing: a Python integrator's walkthrough)
			writeErr(w, http.StatusServiceUnavailable, "not acknowledged by the broker, retry with the same ids: %v", err)
		}
		return
	}
	s.outage.succeeded()
	ids := make([]string, len(envs))
	for i := range envs {
		ids[i] = envs[i].ID
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"ids": ids})
}

// publishWait is how long POST /v1/events may wait for the broker's
// acknowledgement (events.ProducerConfig.PublishTimeout's default): a
// request forwarded to another member gets it on top of the forward
// timeout.
const publishWait = 15 * time.Second

// splitBody accepts one JSON object or a JSON array of them. An empty
// array gives no events and no error: the CloudEvents JSON Batch Format
// (json-format.md §4.3) calls `[]` "typically used in a response, but
// also valid in a request". Its errors are *inputError about the body as
// a whole (index -1, pointer "/").
func splitBody(body []byte) ([][]byte, error) {
	if !json.Valid(body) {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, bodyInputError("", "empty body: send one CloudEvent (JSON object) or a JSON array of them")
		}
		return nil, bodyInputError("body", syntaxReason(body))
	}
	body = bytes.TrimSpace(body)
	switch body[0] {
	case '{':
		return [][]byte{body}, nil
	case '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(body, &arr); err != nil {
			return nil, bodyInputError("", "body: "+err.Error())
		}
		out := make([][]byte, len(arr))
		for i, a := range arr {
			out[i] = a
		}
		return out, nil
	}
	return nil, bodyInputError("", "body must be a JSON object (one CloudEvent) or an array of them")
}

// listParams reads GET /v1/sessions' outcome and limit (default 50,
// 1..500) and checks its scope and cursor; with w nil it only reads them.
func listParams(w http.ResponseWriter, r *http.Request) (outcome string, limit int, ok bool) {
	q := r.URL.Query()
	outcome = q.Get("outcome")
	switch outcome {
	case "", events.OutcomeSuccess, events.OutcomeFailure, events.OutcomeUnknown:
	default:
		if w != nil {
			writeParamErr(w, http.StatusBadRequest, "outcome", fmt.Sprintf("%q is not one of success, failure, unknown", outcome))
		}
		return "", 0, false
	}
	limit = 50
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			if w != nil {
				writeParamErr(w, http.StatusBadRequest, "limit", fmt.Sprintf("%q is not an integer from 1 to 500", l))
			}
			return "", 0, false
		}
		limit = n
	}
	if _, err := scopeFilter(q.Get("scope")); err != nil {
		if w != nil {
			writeErrOf(w, http.StatusBadRequest, err)
		}
		return "", 0, false
	}
	if sc := q.Get("scope"); events.ValidScope(sc) && !CallerOf(r).CanRead(sc) {
		// one scope the token does not read: a 403, as the memory and
		// pattern searches and the learned stream answer, not an empty
		// list that reads as "no sessions there"
		if w != nil {
			writeParamErr(w, http.StatusForbidden, "scope", "this token may not read "+sc)
		}
		return "", 0, false
	}
	if c := q.Get("cursor"); c != "" {
		if err := checkSessionCursor(c); err != nil {
			if w != nil {
				writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("%q is not a next_cursor of this list (<scope>/<session id>, e.g. project:a/s-1): %v", c, err))
			}
			return "", 0, false
		}
	}
	return outcome, limit, true
}

// checkSessionCursor checks a GET /v1/sessions cursor: a session key
// (events.EntityKey: a scope, '/', a session id), the form next_cursor
// has. Anything else used to list from a meaningless position with 200.
func checkSessionCursor(c string) error {
	sc, id, ok := events.SplitEntityKey(c)
	switch {
	case !ok:
		return errors.New("no '/' between a scope and a session id")
	case !events.ValidScope(sc):
		return fmt.Errorf("%q is not a scope (project:<id>, team:<id>, org:<id>)", sc)
	}
	if err := events.CheckID(id); err != nil {
		return fmt.Errorf("session id %q: %v", id, err)
	}
	return nil
}

// listSessionsLocal lists the sessions of this instance's store: a 503
// RestoringError while it restores a partition of chronicle.sessions (a
// page would miss the sessions of records not applied yet).
func (s *Server) listSessionsLocal(w http.ResponseWriter, r *http.Request) {
	outcome, limit, ok := listParams(w, r)
	if !ok {
		return
	}
	if parts := s.restoring(string(events.TopicSessions)); len(parts) > 0 {
		// the sessions of records not applied yet would be missing from
		// the page, and a cursor past them skips them for good
		writeRestoring(w, "the list would miss sessions", string(events.TopicSessions), parts)
		return
	}
	q := r.URL.Query()
	inScope, _ := scopeFilter(q.Get("scope")) // checked by listParams
	c := CallerOf(r)
	list, next, err := sessions.List(s.P.Store, outcome, limit, q.Get("cursor"), func(sc string) bool { return c.CanRead(sc) && inScope(sc) })
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if list == nil {
		list = []sessions.View{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list, "next_cursor": next})
}

// sessionRoutes serves /v1/sessions/{id} and /v1/sessions/{id}/events.
// The id is one path segment with '/' percent-encoded (%2F); ?scope= picks
// the scope when the caller may read several that hold the id.
func (s *Server) sessionRoutes(w http.ResponseWriter, r *http.Request) {
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/sessions/"), "events", "improvement")
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	c := CallerOf(r)
	if suffix == "improvement" {
		s.sessionImprovement(w, r, id)
		return
	}
	if suffix == "events" {
		// the log may hold a session the projection does not (not yet
		// processed, or dead-lettered): then the caller's only readable
		// scope is meant
		key, ok := entityKey(w, r, "session", id, sessions.Scopes, s.P.Store, c.CanRead, c.OnlyReadScope)
		if ok {
			s.sessionEvents(w, r, key)
		}
		return
	}
	key, ok := entityKey(w, r, "session", id, sessions.Scopes, s.P.Store, c.CanRead, nil)
	if !ok {
		return
	}
	v, ok, err := sessions.Get(s.P.Store, key)
	if err == nil && ok {
		// where the evaluation and its completion sit in the log, so the
		// answer can be tied to its records (GET /v1/sessions/{id}/events
		// reads them); before, only the evaluation event read from the
		// log named its cause (an analyst's walkthrough, 2026-12-07)
		v.EvaluationLog, err = sessions.EvaluationLogOf(s.P.Store, key, v.Evaluation)
	}
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	case !ok:
		entityNotFound(w, r, "session", id)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// noSessionEvents is the 404 of GET /v1/sessions/{id}/events for a
// session with no events in scope's log: it names the scope looked in
// and, when the caller did not name it with ?scope= and reads other
// scopes too (a token that reads * defaults to org:default for a session
// no projection holds), says to add ?scope=, as the 409 for a session
// projected in several scopes does. The text depends on the caller and
// the request only, not on whether another scope holds the id.
func noSessionEvents(r *http.Request, id, scope string) string {
	if r.URL.Query().Get("scope") != "" {
		return fmt.Sprintf("session %q has no events in the log of %s", id, scope)
	}
	msg := fmt.Sprintf("session %q has no events in the log of %s, the scope read without ?scope=", id, scope)
	if c := CallerOf(r); c.ReadsAll() || len(c.Read) > 1 {
		msg += ": add ?scope= naming the session's scope (project:<id>, team:<id> or org:<id>) for a session of another scope"
	}
	return msg
}

// sessionEvents reads the events of the session with key (scope "/" id)
// back from the log: at the positions the sessionlog index holds for it,
// with its evaluations, memories and PAIR contexts (session_index.go);
// for a session the index does not hold, by a scan of the key's partition.
// Either way only records whose own scope attribute is the key's scope
// are shown — the scope comes from the records themselves, so a record
// written straight to Kafka under another scope's key is never shown.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request, key string) {
	after, part, limit, ok := sessionEventsPage(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), SessionEventsTimeout) // the whole route's
	defer cancel()
	if s.indexedSessionEvents(ctx, w, key, after, part, limit) { // issue 11: read at indexed positions (session_index.go)
		return
	}
	scope, id, _ := events.SplitEntityKey(key)
	// the scan starts at the cursor and stops after the page's limit plus
	// one event (the next cursor); before, every page scanned the
	// partition from offset 0 to its end
	type scanned struct {
		list []PositionedEvent
		part int32
	}
	got, err := processors.Within(ctx, SessionEventsTimeout, "read the session log", func(ctx context.Context) (scanned, error) {
		list, p, err := readSessionLog(ctx, s.logAddrs(), key, scope, max(after, 0), limit+1, s.asOfBound())
		return scanned{list, p}, err
	})
	list := got.list
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, "%v", events.ExplainBrokerError(err))
		return
	}
	// the shape of the indexed answer (SessionEvents in openapi.json):
	// the scan finds the session's own events only; paged alike
	if part >= 0 && got.part != part {
		writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("names partition %d; the session's events are on partition %d", part, got.part))
		return
	}
	if len(list) == 0 && after < 0 {
		// where the scan looked: a record sent to another partition (a
		// client's other partitioner) is dead-lettered, not missing (a
		// Python integrator's walkthrough read "no events in the log")
		asOf := ""
		if s.ReadOnly {
			// the scan stopped at the state's positions: later records of
			// the session may be in the log
			asOf = ", up to the last record this read-only state holds (GET /healthz as_of)"
		}
		writeErr(w, http.StatusNotFound, "%s (read on the partition of %s the session's key belongs to%s; its records written to another partition are dead letters: GET /v1/deadletters)", noSessionEvents(r, id, scope), events.TopicSessions, asOf)
		return
	}
	next := int64(-1)
	if len(list) > limit {
		next, list = list[limit].Offset, list[:limit]
	}
	page, cursor := pageEvents(list, next)
	if err := markDeadLettered(s.P.Store, key, page); err != nil {
		writeErr(w, http.StatusInternalServerError, "mark the session's dead-lettered events: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": id, "scope": scope, "source": "scan", "events": page,
		"evaluations": []PositionedEvent{}, "memories": []PositionedEvent{}, "pair_contexts": []PositionedEvent{}, "next_cursor": cursor})
}

// ReadSessionLog reads the records keyed key (events.EntityKey) from the
// sessions topic, in log order, keeping only those whose scope attribute
// is scope. Cost: one scan of the session's partition.
func ReadSessionLog(ctx context.Context, brokers []string, key, scope string) ([]PositionedEvent, error) {
	list, _, err := readSessionLog(ctx, brokers, key, scope, 0, 0, nil)
	return list, err
}

// readSessionLog is ReadSessionLog from offset from of the key's
// partition, ending once it holds most events (0: no bound) or past the
// last offset bound holds for the partition (nil: the log's end; a
// partition bound does not name: nothing is read); it answers the
// partition too. Cost: a scan of the partition from from up to the
// most-th event or the end.
func readSessionLog(ctx context.Context, brokers []string, key, scope string, from int64, most int, bound logBound) ([]PositionedEvent, int32, error) {
	id := key
	adm, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return nil, -1, err
	}
	defer adm.Close()
	topic := string(events.TopicSessions)
	md, err := adm.Request(ctx, metadataReq(topic))
	if err != nil {
		return nil, -1, fmt.Errorf("metadata: %w", err)
	}
	nparts := partitionsOf(md, topic)
	if nparts == 0 {
		return nil, -1, fmt.Errorf("topic %s not found", topic)
	}
	part := int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(id)}, nparts))
	end, err := endOffset(ctx, adm, topic, part)
	if err != nil {
		return nil, part, err
	}
	if bound != nil {
		// a read-only state lists nothing past the records it holds
		last, ok := bound[topicPartition{topic, part}]
		if !ok {
			return nil, part, nil
		}
		end = min(end, last+1)
	}
	if end <= from {
		return nil, part, nil
	}
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), // a fenced relay writes in transactions: never an aborted record, and the markers reach the end
		kgo.DisableFetchSessions()) // see kafkapubsub: avoids a race in franz-go's Close
	if err != nil {
		return nil, part, err
	}
	defer cl.Close()
	var out []PositionedEvent
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, part, fmt.Errorf("read log: %w", ctx.Err())
		}
		for it := fs.RecordIter(); !it.Done(); {
			rec := it.Next()
			if rec.Offset < from {
				continue // a fetch starts at its batch's first record
			}
			if string(rec.Key) == id {
				// undecodable records have no scope of their own: never shown;
				// nor are records that are not UTF-8, which no event is (a
				// re-test saw one listed, making the answer invalid JSON text)
				if raw, err := events.StructuredJSON(rec); err == nil && utf8.Valid(raw) && recordScope(raw) == scope {
					pos := projections.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
					out = append(out, PositionedEvent{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Position: pos.String(), Event: raw})
					if most > 0 && len(out) >= most {
						return out, part, nil
					}
				}
			}
			if rec.Offset+1 >= end {
				return out, part, nil
			}
		}
	}
}

func (s *Server) digest(w http.ResponseWriter, r *http.Request) {
	if needsAll(w, r) {
		return
	}
	d, err := s.P.Store.Digest()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// WriteFailureWindow is how long after a failed write to the broker
// /healthz answers 503 "broker rejects writes" (60 s): an acknowledged
// write ends it at once; past the window with no write since, /healthz
// judges the partitions again and lists the failure under warnings, so a
// broker that recovered while nothing was written does not keep the
// instance unhealthy.
const WriteFailureWindow = 60 * time.Second

// health answers the instance's health (processors.Health): "ok",
// "restoring", "rebalancing" or "stalled" with each owned partition's
// detail, the total lag, and the brokers; 503 while stalled, "broker
// unreachable" when the brokers do not answer (HealthTimeout), "failed"
// after a background failure (Pipeline.Err), "joining" before the member
// got its first assignment (joinedGroup), or "broker rejects writes"
// within WriteFailureWindow of a write the broker refused (the README's
// Health table lists them all: TestReadmeHealthTableNamesEveryStatus).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	lag, err := processors.Within(r.Context(), HealthTimeout, "lag", s.P.Lag)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "broker unreachable", "error": events.ExplainBrokerError(err).Error()})
		return
	}
	if err := s.P.Err(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "failed", "error": err.Error()})
		return
	}
	if ok, why := s.joinedGroup(r.Context()); !ok {
		// not "ok" (nor ready) before the member's first assignment
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "joining", "rebalancing": s.P.Runner.Ownership().Rebalancing,
			"error": "this member has not got its first assignment of the processors' group yet (" + why + "); retry"})
		return
	}
	var warnings []string
	if s.P.Producer != nil {
		// a broker whose disk is full answers metadata and offsets, so the
		// lag looks fine while every write is refused
		if f := s.P.Producer.WriteFailure(); f.Err != nil && time.Since(f.Last) < WriteFailureWindow {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "broker rejects writes", "error": f.Err.Error(),
				"failing_since": f.Since.UTC().Format(time.RFC3339Nano), "last_failure": f.Last.UTC().Format(time.RFC3339Nano), "brokers": s.P.Broker.Addrs()})
			return
		} else if f.Err != nil {
			warnings = append(warnings, fmt.Sprintf("the last write to the broker failed at %s and none was made since: %v", f.Last.UTC().Format(time.RFC3339), f.Err))
		}
	}
	rep := processors.Health(s.P.Runner.Ownership(), lag, s.StallAfter, time.Now())
	code := http.StatusOK
	if rep.Status == processors.HealthStalled {
		code = http.StatusServiceUnavailable
	}
	body := map[string]any{"status": rep.Status, "lag": processors.TotalLag(lag), "rebalancing": rep.Rebalancing,
		"stall_after": rep.StallAfter, "partitions": rep.Partitions, "standbys": s.P.Runner.Standbys(), "embedded_broker": s.P.Broker.Embedded(), "brokers": s.P.Broker.Addrs()}
	if s.P.SharedUnfenced() {
		warnings = append(warnings, pipeline.ErrSharedUnfenced.Error())
	}
	if f := s.P.SearchIndexFailure(); f.Err != nil && time.Since(f.Last) < WriteFailureWindow {
		// not a 503: writes and every other read go on; memory search
		// answers 503 naming the store (search.SearchTimeout)
		warnings = append(warnings, fmt.Sprintf("the search index cannot sync to its vector store since %s (%d documents pending): memory, pattern and tool search answer 503 until it can: %v",
			f.Since.UTC().Format(time.RFC3339), f.Pending, f.Err))
		body["vector_store"] = map[string]any{"error": f.Err.Error(), "pending": f.Pending,
			"failing_since": f.Since.UTC().Format(time.RFC3339Nano), "last_failure": f.Last.UTC().Format(time.RFC3339Nano)}
	}
	if len(warnings) > 0 {
		body["warnings"] = warnings
	}
	writeJSON(w, code, body)
}

// recordScope is the effective scope attribute of a structured event, ""
// when it does not parse.
func recordScope(raw []byte) string {
	var env events.Envelope
	if json.Unmarshal(raw, &env) != nil {
		return ""
	}
	return env.EffectiveScope()
}

// memoryRoutes serves /v1/memories/{id} and /v1/memories/{id}/history; the
// id is resolved like a session's (?scope=, else the one readable scope
// that holds it).
func (s *Server) memoryRoutes(w http.ResponseWriter, r *http.Request) {
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/memories/"), "history")
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	key, ok := entityKey(w, r, "memory", id, memories.Scopes, s.P.Store, CallerOf(r).CanRead, nil)
	if !ok {
		return
	}
	m, ok, err := memories.Get(s.P.Store, key)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	case !ok:
		entityNotFound(w, r, "memory", id)
		return
	case suffix == "":
		writeJSON(w, http.StatusOK, m)
		return
	}
	// history: every change of the memory's confidence and state with the
	// id and time of the event that caused it, its stored signals, and a
	// page of its retrievals (limit, cursor; bounded by HistoryPageBytes
	// as a reasoning history is: before, every retrieval came in one body,
	// and a memory found by every search grows one row per hit)
	from, limit, ok := historyPage(w, r, "a retrieval number")
	if !ok {
		return
	}
	changes, signals, err := memories.History(s.P.Store, key)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	retrievals, next, err := memories.RetrievalsPage(s.P.Store, key, from, limit, HistoryPageBytes)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// empty lists are [] (the schema's arrays), never null
	if changes == nil {
		changes = []memories.Change{}
	}
	if signals == nil {
		signals = []memories.Pending{}
	}
	if retrievals == nil {
		retrievals = []memories.Retrieval{}
	}
	// a retrieval's query may carry anything its searcher could read,
	// another tenant's data included: it is shown only to the readers
	// Retrieval.QueryVisible names (issue: a * token's cross-scope query
	// was shown to a one-scope reader, found by a new user's walkthrough);
	// so is its session_id, which may name a session of another scope the
	// searcher read
	c := CallerOf(r)
	for i := range retrievals {
		if !retrievals[i].QueryVisible("token:"+c.Name, c.ReadsAll(), c.CanRead) {
			retrievals[i].Query, retrievals[i].SessionID, retrievals[i].ReaderScopes, retrievals[i].QueryWithheld = "", "", nil, true
		}
	}
	cursor := ""
	if next > 0 {
		cursor = strconv.Itoa(next)
	}
	// usage_count and evidence beside retrieval_count: usage_count counts
	// distinct sources, merged recordings' sessions among them, so it was
	// 7 beside a retrieval_count of 0 and nothing in the answer said why
	// (an analyst's walkthrough, 2026-12-07)
	writeJSON(w, http.StatusOK, map[string]any{"memory_id": id, "scope": m.Scope, "confidence": m.Confidence, "pruned": m.Pruned, "changes": changes, "signals": signals,
		"retrievals": retrievals, "retrieval_count": m.Retrievals, "usage_count": m.UsageCount, "evidence": m.Evidence, "next_cursor": cursor})
}

// cachedGraph is a loaded tool graph and the version it was loaded at.
type cachedGraph struct {
	g   *toolgraph.Graph
	ver int
}

// maxCachedGraphs bounds Server.graphs (one entry per distinct list of
// scopes asked for); past it the cache starts over.
const maxCachedGraphs = 256

// graphSel names the tool graphs a route answers from (their union):
// every scope's (everyGraph; for a caller that reads *) or those of its
// scopes. The zero value, like an empty list, selects no graph: the empty
// one. So a list of scopes that came out nil by accident (slices.Clone of
// an empty read list) fails closed; before, toolGraphIn read nil as every
// scope, and a write-only token got every tenant's tool graph that way
// (fixed in c491f8a; this removes the meaning that allowed it).
type graphSel struct {
	all    bool
	scopes []string // sorted, without duplicates; ignored when all
}

// everyGraph selects every scope's tool graph.
func everyGraph() graphSel { return graphSel{all: true} }

// graphsOf selects the tool graphs of scopes (none: the empty graph).
func graphsOf(scopes ...string) graphSel {
	return graphSel{scopes: slices.Compact(slices.Sorted(slices.Values(scopes)))}
}

// toolGraphIn returns the union of the tool graphs sel selects, cached per
// selection while its version is unchanged (toolgraph.Version). A
// selection of no scope is the empty graph, read from nothing.
func (s *Server) toolGraphIn(sel graphSel) (*toolgraph.Graph, error) {
	if !sel.all && len(sel.scopes) == 0 {
		return toolgraph.NewGraph(), nil
	}
	var scopes []string // toolgraph's nil: every scope
	key := "*"
	if !sel.all {
		scopes = sel.scopes
		key = "=" + strings.Join(scopes, ",")
	}
	v, err := toolgraph.Version(s.P.Store, scopes)
	if err != nil {
		return nil, err
	}
	s.graphMu.Lock()
	defer s.graphMu.Unlock()
	if c, ok := s.graphs[key]; ok && c.ver == v {
		return c.g, nil
	}
	g, err := toolgraph.LoadIn(s.P.Store, scopes)
	if err != nil {
		return nil, err
	}
	if s.graphs == nil || len(s.graphs) >= maxCachedGraphs {
		s.graphs = map[string]cachedGraph{}
	}
	s.graphs[key] = cachedGraph{g: g, ver: v}
	return g, nil
}

// graphScopes selects the tool graphs a graph route answers from (their
// union): ?scope= one scope the caller reads (404
// otherwise, as for another scope's entity), or a kind (project, team,
// org: the scopes of that kind the caller reads; all: every one, as
// without ?scope=), as the list routes and the searches read ?scope=;
// else every scope the caller reads (everyGraph for a token that reads
// *). It writes the error and returns ok false: 400 for a scope
// that is neither.
func (s *Server) graphScopes(w http.ResponseWriter, r *http.Request) (graphSel, bool) {
	c := CallerOf(r)
	sc := r.URL.Query().Get("scope")
	if events.ValidScope(sc) {
		if !c.CanRead(sc) {
			writeErr(w, http.StatusNotFound, "tool graph of scope %q not found", sc)
			return graphSel{}, false
		}
		return graphsOf(sc), true
	}
	inScope, err := scopeFilter(sc)
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return graphSel{}, false
	}
	all := sc == "" || sc == search.ScopeAll
	if all && c.ReadsAll() {
		return everyGraph(), true
	}
	readable := c.Read
	if c.ReadsAll() { // a kind: the scopes of that kind the projection holds
		if readable, err = toolgraph.Scopes(s.P.Store); err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return graphSel{}, false
		}
	}
	var scopes []string // none of the kind: the empty graph (graphSel)
	for _, x := range readable {
		if events.ValidScope(x) && inScope(x) {
			scopes = append(scopes, x)
		}
	}
	return graphsOf(scopes...), true
}

// graphNext predicts the next tool: after=a,b (the tools called so far,
// oldest first; empty for the first call; an empty name, a,,b, is a 400
// naming its position), k (default 5, 1..100),
// failed=i,j (the 0-based positions in after of the calls that failed;
// when present, even empty, the outcome of every call is known and the
// prediction uses the outcome levels: toolgraph.Graph.NextCalls, the
// predictor `chronicle eval` measures; absent: toolgraph.Graph.Next),
// text= (optional, at most MaxNextText characters: the user's last message
// before the call; its words that followed the last tool are mixed in,
// toolgraph.Graph.NextAfterMessage).
func (s *Server) graphNext(w http.ResponseWriter, r *http.Request) {
	scopes, ok := s.graphScopes(w, r)
	if !ok {
		return
	}
	var after []string
	if a := r.URL.Query().Get("after"); a != "" {
		after = strings.Split(a, ",")
		if len(after) > mcpserver.MaxNextAfter {
			writeParamErr(w, http.StatusBadRequest, "after", fmt.Sprintf("%d tools, at most %d (a workflow's calls so far), as next_tool takes", len(after), mcpserver.MaxNextAfter))
			return
		}
		for i, t := range after {
			if t == "" {
				writeParamErr(w, http.StatusBadRequest, "after", fmt.Sprintf("the tool name at position %d (0-based) of %q is empty", i, a))
				return
			}
		}
	}
	k := 5
	if ks := r.URL.Query().Get("k"); ks != "" {
		n, err := strconv.Atoi(ks)
		if err != nil || n < 1 || n > 100 {
			writeParamErr(w, http.StatusBadRequest, "k", fmt.Sprintf("%q is not an integer from 1 to 100", ks))
			return
		}
		k = n
	}
	var calls []toolgraph.Call
	if r.URL.Query().Has("failed") {
		calls = make([]toolgraph.Call, len(after))
		for i, t := range after {
			calls[i].Tool = t
		}
		if f := r.URL.Query().Get("failed"); f != "" {
			for _, x := range strings.Split(f, ",") {
				i, err := strconv.Atoi(x)
				if err != nil || i < 0 || i >= len(after) {
					writeParamErr(w, http.StatusBadRequest, "failed", fmt.Sprintf("%q is not a position in after (0 to %d)", x, len(after)-1))
					return
				}
				if calls[i].Failed {
					writeParamErr(w, http.StatusBadRequest, "failed", fmt.Sprintf("position %d is given twice", i))
					return
				}
				calls[i].Failed = true
			}
		}
	}
	text := r.URL.Query().Get("text")
	if n := utf8.RuneCountInString(text); n > MaxNextText {
		writeParamErr(w, http.StatusBadRequest, "text", fmt.Sprintf("%d characters, at most %d (the user's last message)", n, MaxNextText))
		return
	}
	g, err := s.toolGraphIn(scopes)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if text != "" {
		outcomes := r.URL.Query().Has("failed") // calls is set then
		if !outcomes {
			calls = make([]toolgraph.Call, len(after))
			for i, t := range after {
				calls[i].Tool = t
			}
		}
		writeJSON(w, http.StatusOK, g.NextAfterMessage(calls, outcomes, text, k))
		return
	}
	if r.URL.Query().Has("failed") {
		writeJSON(w, http.StatusOK, g.NextCalls(calls, k))
		return
	}
	writeJSON(w, http.StatusOK, g.Next(after, k))
}

// MaxNextText bounds text= of GET /v1/graph/next (characters, as the
// OpenAPI maxLength counts them): a user message,
// not a document; a longer one is a 400 naming text.
const MaxNextText = 8 << 10

func (s *Server) graphTools(w http.ResponseWriter, r *http.Request) {
	scopes, ok := s.graphScopes(w, r)
	if !ok {
		return
	}
	g, err := s.toolGraphIn(scopes)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": g.Tools()})
}

func (s *Server) graphPath(w http.ResponseWriter, r *http.Request) {
	scopes, ok := s.graphScopes(w, r)
	if !ok {
		return
	}
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	// each named as every refused parameter is, parameter and reason
	// (before, {"error": "from and to: both required"} without them: a
	// TypeScript integrator's walkthrough, 2026-12-06)
	if from == "" {
		writeParamErr(w, http.StatusBadRequest, "from", "required (the tool the path starts at; to: the tool it ends at)")
		return
	}
	if to == "" {
		writeParamErr(w, http.StatusBadRequest, "to", "required (the tool the path ends at)")
		return
	}
	g, err := s.toolGraphIn(scopes)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	route, err := g.Path(from, to)
	switch {
	case errors.Is(err, toolgraph.ErrUnknownTool), errors.Is(err, toolgraph.ErrNoPath):
		writeErr(w, http.StatusNotFound, "%v", err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	default:
		writeJSON(w, http.StatusOK, route)
	}
}

// toolError answers an error of the memory tools: 400 for invalid
// arguments (with the pointer and reason of a search.FieldError), 404 for
// a memory the caller cannot see, 503 otherwise.
func toolError(w http.ResponseWriter, err error) {
	var fe *search.FieldError
	var ae *search.ArgError
	switch {
	case errors.As(err, &fe) && errors.Is(err, events.ErrEventTooLarge):
		// permanent, as an oversized feedback is: only a shorter member
		// makes it fit (it was a 400 with pointer "/": a walkthrough)
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: err.Error(), Pointer: fe.Pointer, Reason: fe.Reason})
	case errors.As(err, &fe):
		// a recording's schema error: the body member's pointer
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error(), Pointer: fe.Pointer, Reason: fe.Reason})
	case errors.As(err, &ae):
		// a search argument: the query parameter of the same name
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error(), Parameter: ae.Arg, Reason: ae.Reason})
	case errors.Is(err, search.ErrInvalid):
		writeErrOf(w, http.StatusBadRequest, err)
	case errors.Is(err, search.ErrNotFound):
		writeErr(w, http.StatusNotFound, "%v", err)
	default:
		// the vector store away, its budget spent: when to come back (a
		// walkthrough, 2026-11-30: a 503 after 20 s without Retry-After)
		w.Header().Set("Retry-After", "5")
		writeErr(w, http.StatusServiceUnavailable, "%v", err)
	}
}

// searchMemories is memory_search over HTTP: query, scope, outcome, limit,
// min_confidence as query parameters.
func (s *Server) searchMemories(w http.ResponseWriter, r *http.Request) {
	q, ok := searchQuery(w, r)
	if !ok {
		return
	}
	q.Source = "token:" + CallerOf(r).Name // usage counts distinct callers (issue 11)
	res, err := s.P.Search.Search(r.Context(), q)
	if err != nil {
		toolError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// searchQuery reads memory_search's parameters from the URL query; it
// answers 400 naming the parameter when one is malformed. The query
// carries the token's read scopes as ReadScopes: who may see the query in
// a memory's history, and the partition of the index's query-vector
// cache, so a search is never a cache hit on another token's query unless
// that token reads the same scopes (tenant-isolation review; before, the
// pattern and tool searches set no ReadScopes and the cache was shared).
func searchQuery(w http.ResponseWriter, r *http.Request) (search.Query, bool) {
	v := r.URL.Query()
	q := search.Query{Text: v.Get("query"), Scope: v.Get("scope"), Outcome: v.Get("outcome"), SessionID: v.Get("session_id"), Readable: CallerOf(r).CanRead,
		ReadScopes: CallerOf(r).Read, Writable: CallerOf(r).CanWrite} // usage only in the scopes the caller writes
	if events.ValidScope(q.Scope) && !CallerOf(r).CanRead(q.Scope) {
		// one scope the token does not read: a 403, as the learned stream
		// answers, not an empty list that reads as "nothing matched"
		writeParamErr(w, http.StatusForbidden, "scope", "this token may not read "+q.Scope)
		return q, false
	}
	if q.SessionID != "" {
		// the session the search is for (its usage and the retrievals of
		// its history): an id as GET /v1/sessions/{id} takes one (before,
		// any string was taken and recorded: an OpenAPI walkthrough)
		if err := events.CheckID(q.SessionID); err != nil {
			writeParamErr(w, http.StatusBadRequest, "session_id", fmt.Sprintf("%q: %v", q.SessionID, err))
			return q, false
		}
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > search.MaxLimit {
			writeParamErr(w, http.StatusBadRequest, "limit", fmt.Sprintf("%q is not an integer from 1 to %d (absent: %d)", l, search.MaxLimit, search.DefaultLimit))
			return q, false
		}
		q.Limit = n
	}
	if mc := v.Get("min_confidence"); mc != "" {
		f, err := strconv.ParseFloat(mc, 64)
		if err != nil {
			writeParamErr(w, http.StatusBadRequest, "min_confidence", fmt.Sprintf("%q is not a number", mc))
			return q, false
		}
		q.MinConfidence = &f
	}
	return q, true
}

// CollectionHit is a hit of GET /v1/patterns/search or /v1/tools/search:
// a search.Hit with its tags (a pattern's category first) and source
// sessions (the sessions that followed a pattern).
type CollectionHit struct {
	search.Hit
	Tags           []string `json:"tags,omitempty"`
	SourceSessions []string `json:"source_sessions,omitempty"`
}

// searchCollection serves GET /v1/patterns/search and /v1/tools/search:
// the parameters and ranking of memory search on another collection,
// answered as {<key>: [CollectionHit], total_found, tokens_used}. Patterns
// are filtered by the caller's scopes like memories; tools aggregate
// every scope, so they need a token that reads all of them (like the
// graph endpoints), and their scope filter keeps the tools of the tool
// graphs it names (toolScopes). No usage events are written.
func (s *Server) searchCollection(c search.Collection, key string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c == search.Tools && needsAll(w, r) {
			return
		}
		q, ok := searchQuery(w, r)
		if !ok {
			return
		}
		q.Collection = c
		var graphs graphSel // tools: the graphs filtered to
		if c == search.Tools {
			if graphs, ok = s.toolScopes(w, &q); !ok {
				return
			}
		}
		if c == search.Tools {
			ctx, ok := contextTools(w, r)
			if !ok {
				return
			}
			if len(ctx) > 0 {
				s.hybridTools(w, r, q, graphs, ctx) // the graph term (issue 14)
				return
			}
		}
		res, err := s.P.Search.Search(r.Context(), q)
		if err != nil {
			toolError(w, err)
			return
		}
		hits := make([]CollectionHit, len(res.Memories))
		for i, h := range res.Memories {
			hits[i] = CollectionHit{Hit: h, Tags: h.Tags, SourceSessions: h.SourceSessions}
		}
		writeJSON(w, http.StatusOK, map[string]any{key: hits, "total_found": res.TotalFound, "tokens_used": res.TokensUsed})
	}
}

// recordMemory is memory_record over HTTP: {title, description, content,
// outcome, tags, scope}, with an optional Idempotency-Key header
// (IdempotencyKeyHeader). With the key, the recording event's id is
// derived from it, the scope and the token (memories.RecordEventID): a
// retry with the same key and body (after a 504, a timeout, a dropped
// connection) writes the same event, a duplicate the memory bank drops,
// and is answered 202 with the memory as the first request was; the same
// key with another body is a 422 naming the header, and nothing is
// written. Without a key every request is a new recording, so a retry of
// one whose answer was lost adds evidence twice.
func (s *Server) recordMemory(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("scope") {
		// ignored before: the memory went into the token's default write
		// scope, which others may read (a security review, 2026-11-30)
		writeErr(w, http.StatusBadRequest, "scope: not a query parameter of POST /v1/memories: "+memoriesScopeHint)
		return
	}
	var body struct {
		search.Record
		Scope string `json:"scope"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeBodyErr(w, err, "")
		return
	}
	if body.Scope != "" && !events.ValidScope(body.Scope) {
		// malformed whatever the token: a 400 naming the field, as the
		// ?scope= parameters answer, before the token's scopes are asked
		// (before, "bogus" was a 403 "may not write bogus" with a token
		// and, without one, a 400 about the derived memory.created.v1
		// event's envelope; found by a new user's walkthrough)
		reason := events.ScopeReason(body.Scope)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "scope: " + reason, Pointer: "/scope", Reason: reason})
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	body.Record.IdempotencyKey = key
	c := CallerOf(r)
	body.Record.Scope = body.Scope
	if body.Record.Scope == "" {
		body.Record.Scope = c.DefaultWriteScope()
	}
	if body.Record.Scope == "" {
		body.Record.Scope = events.DefaultScope
	}
	if !c.CanWrite(body.Record.Scope) {
		if body.Scope == "" && len(c.Write) == 0 {
			// it named no scope: say why none applies, not the default's name
			writeErr(w, http.StatusForbidden, "scope: this token writes no scope (token %q is read-only)", c.Name)
			return
		}
		// the body's member named, as POST /v1/events names /scope (a
		// producer's walkthrough, 2026-11-30: no pointer here)
		writeJSON(w, http.StatusForbidden, errorBody{Error: fmt.Sprintf("scope: this token may not write %s", body.Record.Scope), Pointer: "/scope", Reason: "scope not writable"})
		return
	}
	body.Record.Source = "token:" + c.Name // the author in the memory's history (issue 11)
	body.Record.Readable = c.CanRead       // a write-only caller's answer is withheld
	res, err := s.P.Search.Record(r.Context(), body.Record)
	if errors.Is(err, search.ErrKeyReused) {
		// the IETF draft's answer to a key reused with another payload
		writeErr(w, http.StatusUnprocessableEntity, "%s: %v", IdempotencyKeyHeader, err)
		return
	}
	if writeRefused(w, err, "the memory was not recorded") {
		return
	}
	if errors.Is(err, events.ErrNotAcknowledged) {
		// outcome unknown, as POST /v1/events' 503: say how to retry
		// safely (before, the broker's error alone, which an SRE drill's
		// agent could not act on)
		w.Header().Set("Retry-After", "5")
		writeErr(w, http.StatusServiceUnavailable, "%s: the recording may still be written: %s: %v", NotRecordedMessage, recordRetryHint(key), err)
		return
	}
	if err != nil {
		toolError(w, err)
		return
	}
	if res.Withheld {
		// the caller may not read the scope: the id and the message only
		// (openapi.json's MemoryRecorded makes the rest optional)
		writeJSON(w, http.StatusAccepted, map[string]any{"id": res.ID, "message": res.Message})
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// NotRecordedMessage begins the 503 of POST /v1/memories when the broker
// did not acknowledge the recording (events.ErrNotAcknowledged).
const NotRecordedMessage = "memory not acknowledged by the broker"

// recordRetryHint says how to retry a recording whose outcome is unknown:
// under the same Idempotency-Key when the request had one, else that a
// retry without one may count its evidence twice.
func recordRetryHint(key string) string {
	if key != "" {
		return "retry with the same " + IdempotencyKeyHeader + " and body, which records it once"
	}
	return "this request had no " + IdempotencyKeyHeader + ", so a retry records it again if it was written, counting its evidence twice (send one with every recording to retry safely)"
}

// memoryFeedback is memory_feedback over HTTP: {helpful, comment}.
func (s *Server) memoryFeedback(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Helpful *bool  `json:"helpful"`
		Comment string `json:"comment"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeBodyErr(w, err, "")
		return
	}
	if body.Helpful == nil {
		// with its pointer, as the route's other 400s (a walkthrough)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "body: missing property \"helpful\" (true or false)", Pointer: "/helpful", Reason: "required: true or false"})
		return
	}
	id, suffix, err := pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/memories/"), "feedback")
	if err == nil && suffix != "feedback" {
		writeErr(w, http.StatusNotFound, "no such route: POST %s (POST /v1/memories/{id}/feedback)", r.URL.Path)
		return
	}
	if err == nil {
		err = events.CheckID(id)
	}
	if err != nil {
		writeErr(w, http.StatusBadRequest, "memory id: %v", err)
		return
	}
	sc := r.URL.Query().Get("scope")
	if sc != "" && !events.ValidScope(sc) {
		writeParamErr(w, http.StatusBadRequest, "scope", events.ScopeReason(sc))
		return
	}
	res, err := s.P.Search.Feedback(r.Context(), search.Feedback{MemoryID: id, Scope: sc, Helpful: *body.Helpful, Comment: body.Comment, Writable: CallerOf(r).CanWrite,
		Readable: CallerOf(r).CanRead, DefaultScope: CallerOf(r).DefaultWriteScope(), Source: "token:" + CallerOf(r).Name, SharedSource: s.Tokens == nil})
	if errors.Is(err, search.ErrNotFound) {
		// not found among the scopes it may write: when the caller reads
		// the memory, the answer is that it may not write it (a 404 for a
		// memory GET shows it was a contradiction); a memory it cannot
		// read stays a 404
		if held, serr := memories.Scopes(s.P.Store, id); serr == nil {
			for _, h := range held {
				if (sc == "" || sc == h) && CallerOf(r).CanRead(h) {
					writeErr(w, http.StatusForbidden, "memory %s is in %s, which this token reads but may not write: feedback is a write", id, h)
					return
				}
			}
		}
	}
	if errors.Is(err, events.ErrEventTooLarge) {
		// permanent: only a shorter comment makes it fit (it was a 503
		// "retry later", which an agent retries for ever: a walkthrough,
		// 2026-11-30)
		// the text names the comment as the pointer does (it was the
		// event check's "event 0: /: … bytes encoded", the words of
		// POST /v1/events: an OpenAPI walkthrough)
		reason := fmt.Sprintf("the feedback's event would be above the %d-byte limit of one event: shorten the comment", events.MaxEventBytes)
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "comment: " + reason, Pointer: "/comment", Reason: reason})
		return
	}
	if writeRefused(w, err, "the feedback was not recorded") {
		return
	}
	if errors.Is(err, events.ErrNotAcknowledged) {
		// the broker may have written it all the same: a client that
		// retries records a second feedback (seen twice in a cluster
		// walkthrough, 2026-11-30, after a plain 503)
		w.Header().Set("Retry-After", "5")
		writeErr(w, http.StatusServiceUnavailable, "the feedback may still be recorded (its outcome is unknown): GET /v1/memories/%s/history shows whether it was, before a retry records it again: %v", url.PathEscape(id), err)
		return
	}
	if err != nil {
		toolError(w, err)
		return
	}
	if res.Withheld {
		// the caller may not read the memory's scope: no new_confidence
		writeJSON(w, http.StatusOK, map[string]any{"success": res.Success, "message": res.Message})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// mcpCaller maps the authenticated caller of an /mcp request to the MCP
// tools' caller: it writes new memories to its first concrete write scope.
func (s *Server) mcpCaller(_ context.Context, r *http.Request) (mcpserver.Caller, error) {
	c := access.Unrestricted
	if s.Tokens != nil {
		var err error
		if c, err = s.tokenFile().Authenticate(r.Header.Get("Authorization")); err != nil {
			return mcpserver.Caller{}, err
		}
	}
	def := c.DefaultWriteScope()
	if def == "" {
		def = events.DefaultScope
	}
	return mcpserver.Caller{ReadScopes: c.Read, WriteScopes: c.Write, DefaultScope: def, Source: "token:" + c.Name, SharedSource: s.Tokens == nil, Credentials: r.Header.Get("Authorization")}, nil
}
