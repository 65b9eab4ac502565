package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// mcpAPI is the backend of serve's /mcp tools: each call is made through
// this server's own HTTP API, in process, as the caller (the Authorization
// of its /mcp request, mcpserver.Caller.Credentials), with the same Client
// `chronicle mcp` uses on stdio. So a tool answers as its route does —
// forwarded to the member that owns the memory bank, the session or the
// search on a cluster, scopes checked by the route — instead of reading
// this instance's store, which on a cluster holds a part of the data.
// The in-process requests skip the request log (the /mcp request is
// logged) and carry no forwarding mark, so they are routed like a
// client's.
type mcpAPI struct{ s *Server }

var (
	_ search.Backend            = mcpAPI{}
	_ mcpserver.SearchTools     = mcpAPI{}
	_ mcpserver.ImprovementFunc = mcpAPI{}.Improvement
)

// inProcess is the host of the in-process requests' URLs (never resolved).
const inProcess = "http://chronicle.in-process"

func (m mcpAPI) client(c mcpserver.Caller) *Client {
	token := ""
	if scheme, v, ok := strings.Cut(strings.TrimSpace(c.Credentials), " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(v)
	}
	return &Client{Base: inProcess, Token: token, HTTP: &http.Client{Transport: handlerTransport{m.s.internalHandler()}, Timeout: mcpCallTimeout}}
}

// mcpCallTimeout bounds an /mcp tool call's request through the API: the
// longest route wait (POST …/improve, ImproveWait, 20 s by default) and a
// margin.
const mcpCallTimeout = 40 * time.Second

func (m mcpAPI) callerOf(ctx context.Context) mcpserver.Caller {
	c, _ := mcpserver.CallerFromContext(ctx)
	return c
}

// Search implements search.Backend: GET /v1/memories/search.
func (m mcpAPI) Search(ctx context.Context, q search.Query) (search.Result, error) {
	return m.client(m.callerOf(ctx)).Search(ctx, q)
}

// Record implements search.Backend: POST /v1/memories.
func (m mcpAPI) Record(ctx context.Context, r search.Record) (search.Recorded, error) {
	return m.client(m.callerOf(ctx)).Record(ctx, r)
}

// Feedback implements search.Backend: POST /v1/memories/{id}/feedback.
func (m mcpAPI) Feedback(ctx context.Context, f search.Feedback) (search.FeedbackResult, error) {
	return m.client(m.callerOf(ctx)).Feedback(ctx, f)
}

// Improvement is the pair_improvement tool's backend (Client.Improvement).
func (m mcpAPI) Improvement(ctx context.Context, c mcpserver.Caller, sessionID, scope string) (map[string]any, error) {
	return ClientTools{m.client(c)}.Improvement(ctx, c, sessionID, scope)
}

// SearchGet implements mcpserver.SearchTools (Client.SearchGet).
func (m mcpAPI) SearchGet(ctx context.Context, c mcpserver.Caller, id, scope string) (map[string]any, error) {
	return ClientTools{m.client(c)}.SearchGet(ctx, c, id, scope)
}

// SearchResume implements mcpserver.SearchTools (Client.SearchResume).
func (m mcpAPI) SearchResume(ctx context.Context, c mcpserver.Caller, id, scope, decision, note string) (map[string]any, error) {
	return ClientTools{m.client(c)}.SearchResume(ctx, c, id, scope, decision, note)
}

// ClientTools adapts a Client to the MCP server's tool backends, whose
// methods take the mcpserver.Caller: mcpserver.SearchTools,
// mcpserver.GraphTools and, as its Improvement method,
// mcpserver.ImprovementFunc; with the Client itself, a search.Backend, it
// is what `chronicle mcp` serves on stdio. The Client's token decides what
// each call may do; of the Caller only Source is used (search_resume's
// by). Before 2026-12-05 the Client's own Improvement, SearchGet,
// SearchResume and GraphNext took the Caller, so a Go caller of the HTTP
// API had to make one of the MCP server's type to call them.
type ClientTools struct{ *Client }

var (
	_ mcpserver.SearchTools     = ClientTools{}
	_ mcpserver.GraphTools      = ClientTools{}
	_ mcpserver.ImprovementFunc = ClientTools{}.Improvement
)

// Improvement is Client.Improvement as an mcpserver.ImprovementFunc.
func (t ClientTools) Improvement(ctx context.Context, _ mcpserver.Caller, sessionID, scope string) (map[string]any, error) {
	return t.Client.Improvement(ctx, sessionID, scope)
}

// SearchGet implements mcpserver.SearchTools (Client.SearchGet).
func (t ClientTools) SearchGet(ctx context.Context, _ mcpserver.Caller, id, scope string) (map[string]any, error) {
	return t.Client.SearchGet(ctx, id, scope)
}

// SearchResume implements mcpserver.SearchTools (Client.SearchResume, by
// c.Source).
func (t ClientTools) SearchResume(ctx context.Context, c mcpserver.Caller, id, scope, decision, note string) (map[string]any, error) {
	return t.Client.SearchResume(ctx, id, scope, decision, note, c.Source)
}

// GraphNext implements mcpserver.GraphTools (Client.GraphNext).
func (t ClientTools) GraphNext(ctx context.Context, _ mcpserver.Caller, q mcpserver.NextQuery) (map[string]any, error) {
	return t.Client.GraphNext(ctx, q)
}

// handlerTransport is an http.RoundTripper that serves a request with a
// handler in process (httptest's recorder holds the answer).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	// an in-process request has no local address: it inherits the /mcp
	// request's context, whose loopback listener address, with the
	// in-process Host, made rebound refuse every tool call of a server
	// without tokens (a walkthrough, 2026-11-30). The /mcp request itself
	// was judged on its way in.
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, nil))
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}
