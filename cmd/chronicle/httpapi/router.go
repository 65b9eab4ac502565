package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// jsonRouter is the API's ServeMux with JSON answers for what ServeMux
// would answer itself in text/plain: 404 for a path no route serves and
// 405 (with its Allow header) for a method the path has no route for.
// Every request a registered pattern serves goes through the ServeMux
// unchanged (so its path values and behaviour are those of the routes).
//
// ServeMux also redirects the root of a "/prefix/{id...}" subtree
// (GET /v1/memories → /v1/memories/), where every such route answers 400
// for the empty id. Decision: no redirect; such a path is answered as one
// without that subtree route: GET /v1/patterns (no list of patterns) is a
// 404 naming the routes under /v1/patterns. GET /v1/memories and GET
// /v1/workflows list memories and workflows (their own patterns, which
// ServeMux prefers to the subtree's root). A redirect to a cleaned path
// (//v1/x → /v1/x) stays as ServeMux answers it.
type jsonRouter struct {
	mux *http.ServeMux
	// readOnly: only GET patterns serve (chronicle inspect); the Allow of
	// a 405 lists GET and HEAD at most
	readOnly bool
}

// readAllow is the Allow header of a read-only server's 405 for r: "GET,
// HEAD" when a GET route serves r's path, else empty (RFC 9110 §10.2.1:
// an empty Allow says the resource allows no method). A GET subtree
// pattern ("GET /v1/workflows/{id...}") counts only for the paths its
// documented operations have (routesFor): POST /v1/workflows/wf1/updates
// has no GET route, so its Allow is empty, as on every write-only path.
func (jr *jsonRouter) readAllow(r *http.Request) string {
	if jr.routesFor(r, http.MethodGet) {
		return "GET, HEAD"
	}
	return ""
}

// routesFor says whether a route serves method m on r's exact path: a
// registered pattern matches it (not by ServeMux's redirect of a subtree
// root), on a read-only server a "GET " one (not /mcp's), and, when that pattern is an
// {id...} subtree (which matches any suffix, and whose handler answers
// 404 for one it does not serve), an operation of openapi.json with
// method m (GET for HEAD) has the path (documentedPath).
func (jr *jsonRouter) routesFor(r *http.Request, m string) bool {
	if jr.readOnly && m != http.MethodGet && m != http.MethodHead {
		return false
	}
	probe := r.Clone(r.Context())
	probe.Method = m
	_, p := jr.mux.Handler(probe)
	if p == "" || subtreeRootRedirect(probe, p) || jr.readOnly && !strings.HasPrefix(p, "GET ") {
		return false
	}
	if !strings.HasSuffix(p, "...}") {
		return true
	}
	if m == http.MethodHead {
		m = http.MethodGet
	}
	return documentedPath(m, r.URL.EscapedPath())
}

// allowFor lists the methods routesFor serves on r's path, in
// routerMethods order.
func (jr *jsonRouter) allowFor(r *http.Request) []string {
	var allowed []string
	for _, m := range routerMethods {
		if jr.routesFor(r, m) {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// documentedPath says whether an operation of openapi.json with method
// has the escaped path: the path is matched as OpenAPI matches it, each
// {param} of a template taking one non-empty segment and a concrete path
// before a templated one (POST /v1/workflows/suggest, not GET
// /v1/workflows/{id}: GET /v1/workflows/suggest has no operation).
func documentedPath(method, escaped string) bool {
	_, found := documentedTemplate(method, escaped)
	return found
}

// documentedTemplate is documentedPath with the path template of
// openapi.json that has the operation (/v1/memories/{id}/history).
func documentedTemplate(method, escaped string) (string, bool) {
	segs := strings.Split(escaped, "/")
	var best []string // the matching template, most concrete first
	found := false
	for _, rt := range documentedRoutes() {
		tmpl := strings.Split(rt.path, "/")
		if len(tmpl) != len(segs) {
			continue
		}
		ok := true
		for i, t := range tmpl {
			if isParam(t) {
				ok = segs[i] != ""
			} else {
				ok = t == segs[i]
			}
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		switch {
		case best == nil || moreConcrete(tmpl, best):
			best, found = tmpl, rt.method == method
		case slices.Equal(tmpl, best):
			found = found || rt.method == method
		}
	}
	return strings.Join(best, "/"), found
}

// isParam says whether a path template's segment is a {param}.
func isParam(seg string) bool {
	return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}")
}

// moreConcrete says whether template a, of b's length, has a literal
// segment where b has its first {param} that a does not share.
func moreConcrete(a, b []string) bool {
	for i := range a {
		if pa, pb := isParam(a[i]), isParam(b[i]); pa != pb {
			return pb
		}
	}
	return false
}

// routerMethods are the methods probed for the Allow header of a 405.
var routerMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

func (jr *jsonRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if param, err := badQuery(r.URL.RawQuery); err != nil {
		name := "query"
		if param != "" {
			name = fmt.Sprintf("query parameter %q", param)
		}
		reason := fmt.Sprintf("%v (percent-encode the query's '%%' as %%25, and separate parameters with '&')", err)
		msg := name + ": " + reason
		if r.Method == http.MethodPost && r.URL.Path == "/v1/events" {
			// its 400 has every field (EventError): the request as a whole
			idx := -1
			writeJSON(w, http.StatusBadRequest, errorBody{Error: msg, Index: &idx, Pointer: "/", Reason: "the query string does not parse"})
			return
		}
		// parameter and reason as every other parameter's 400 (it had
		// only error: a producer's walkthrough, 2026-12-06)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: msg, Parameter: param, Reason: reason})
		return
	}
	name, reason := queryShape(r.URL.Query())
	if name == "" {
		name, reason = unknownParam(r)
	}
	if name != "" {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/events" {
			// its 400 has every field (EventError), as for a query that
			// does not parse; before, it lacked index, pointer and reason
			// (a mutation test)
			idx := -1
			writeJSON(w, http.StatusBadRequest, errorBody{Error: name + ": " + reason, Index: &idx, Pointer: "/", Parameter: name, Reason: reason})
			return
		}
		writeParamErr(w, http.StatusBadRequest, name, reason)
		return
	}
	h, pattern := jr.mux.Handler(r)
	switch {
	case pattern == "":
		// ServeMux's own answer: 404, 405, or the redirect of an unclean
		// path (which names no pattern when the cleaned one has none)
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if rec.code != http.StatusNotFound && rec.code != http.StatusMethodNotAllowed {
			h.ServeHTTP(w, r)
			return
		}
		jr.noRoute(w, r)
	case subtreeRootRedirect(r, pattern):
		jr.noRoute(w, r)
	case strings.HasSuffix(pattern, "...}") && !jr.routesFor(r, r.Method):
		// an {id...} subtree matched a path it has no operation for: when
		// another method has one, 405 naming it (GET
		// /v1/workflows/wf1/updates: Allow: POST); else the handler's own
		// answer (an id it does not hold, or its 404)
		if allowed := jr.allowFor(r); len(allowed) > 0 {
			jr.methodNotAllowed(w, r, strings.Join(allowed, ", "))
			return
		}
		jr.mux.ServeHTTP(w, r)
	default:
		jr.mux.ServeHTTP(w, r)
	}
}

// noRoute answers a request no route serves: 405 with the methods the
// path has routes for in Allow, else 404. ServeMux's own Allow would
// count the subtree routes whose root it redirects (DELETE /v1/memories:
// "GET, HEAD, POST") and every path of a subtree (DELETE /v1/sessions/s1:
// POST, though only POST /v1/sessions/{id}/improve routes), so the
// methods are probed here, without them (routesFor).
func (jr *jsonRouter) noRoute(w http.ResponseWriter, r *http.Request) {
	if jr.readOnly {
		if allow := jr.readAllow(r); allow != "" {
			jr.methodNotAllowed(w, r, allow)
		} else {
			jr.notFound(w, r)
		}
		return
	}
	allowed := jr.allowFor(r)
	if len(allowed) == 0 {
		jr.notFound(w, r)
		return
	}
	jr.methodNotAllowed(w, r, strings.Join(allowed, ", "))
}

// subtreeRootRedirect reports whether ServeMux answers r, for which it
// found pattern, with its trailing-slash redirect: the pattern is a
// subtree ("/a/{x...}" or "/a/") and r's path is its root without the
// slash ("/a"), shorter than any path the pattern matches.
func subtreeRootRedirect(r *http.Request, pattern string) bool {
	pp := pattern
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pp = p
	}
	if i := strings.IndexByte(pp, '/'); i > 0 { // a host before the path
		pp = pp[i:]
	}
	if !strings.HasSuffix(pp, "...}") && !strings.HasSuffix(pp, "/") {
		return false
	}
	p := path.Clean("/" + r.URL.Path)
	return !strings.HasSuffix(r.URL.Path, "/") && strings.Count(p, "/") < strings.Count(pp, "/")
}

// notFound answers 404 {"error"} naming the routes under r's path.
func (jr *jsonRouter) notFound(w http.ResponseWriter, r *http.Request) {
	// a member forwarding here tells "no such route" (a member reached at
	// a wrong URL) from "no such entity" by it (memberAnswer.failed)
	w.Header().Set(NoRouteHeader, "1")
	writeErr(w, http.StatusNotFound, "no route %s %s%s", r.Method, r.URL.Path, jr.routesNear(r.URL.Path))
}

// methodNotAllowed answers 405 {"error"} with the Allow header.
func (jr *jsonRouter) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeErr(w, http.StatusMethodNotAllowed, "method %s is not allowed on %s (allowed: %s)%s", r.Method, r.URL.Path, allow, jr.routesNear(r.URL.Path))
}

// routesNear names the routes under p, or under its nearest parent that
// has some below the top level (/v1/memories/x/y: those under
// /v1/memories), as openapi.json documents them (POST
// /v1/memories/{id}/feedback, not the subtree pattern that serves it; a
// read-only server's GET routes only), and points to GET /openapi.json
// for all of them.
func (jr *jsonRouter) routesNear(p string) string {
	p = strings.TrimSuffix(path.Clean("/"+p), "/")
	for strings.Count(p, "/") >= 2 {
		var near []string
		for _, rt := range documentedRoutes() {
			if jr.readOnly && rt.method != http.MethodGet {
				continue
			}
			if rt.path == p || strings.HasPrefix(rt.path, p+"/") {
				near = append(near, rt.method+" "+rt.path)
			}
		}
		if len(near) > 0 {
			return fmt.Sprintf("; the routes under %s: %s (every route: GET /openapi.json)", p, strings.Join(near, ", "))
		}
		p = path.Dir(p)
	}
	return "; every route is described at GET /openapi.json"
}

// route is one operation of openapi.json.
type route struct{ method, path string }

// documentedRoutes are the operations of openapi.json, by path, then in
// routerMethods order (TestOpenAPIMatchesRoutes holds them to the
// registered routes).
var documentedRoutes = sync.OnceValue(func() []route {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		panic("httpapi: openapi.json: " + err.Error()) // embedded and tested: a build defect
	}
	var out []route
	for p, ops := range doc.Paths {
		for _, m := range routerMethods {
			if _, ok := ops[strings.ToLower(m)]; ok {
				out = append(out, route{m, p})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
})

// statusRecorder keeps the status and headers of an answer, not its body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header { return s.header }

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return len(b), nil
}

// badQuery names the first parameter of a query string that does not parse
// (url.ParseQuery's error: a bad percent-encoding, a ';'), with the error
// ("" with the error when no one parameter is at fault); "", nil for a
// query that parses. Every route reads its query with
// r.URL.Query(), which silently drops such a parameter: GET
// /v1/workflows?cursor=%zz (or ?%%%) answered 200 with the first page,
// while ?cursor=zzz was a 400 naming cursor (found by an agent-runtime
// developer's walkthrough). The router answers 400 naming it on every
// route instead.
func badQuery(raw string) (string, error) {
	if _, err := url.ParseQuery(raw); err == nil {
		return "", nil
	}
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		if _, err := url.ParseQuery(part); err == nil {
			continue
		}
		key, _, _ := strings.Cut(part, "=")
		name := key
		if k, kerr := url.QueryUnescape(key); kerr == nil && !strings.Contains(k, ";") {
			name = k
		}
		_, err := url.ParseQuery(part)
		return name, err
	}
	_, err := url.ParseQuery(raw)
	return "", err
}

// unknownParam names the first query parameter (in name order) of a
// request to a documented /v1/ operation that openapi.json does not
// declare for it, with the reason, which names the operation and the
// parameters it takes; "", "" when there is none. A name starting with
// '_' is left alone: it is how a client busts a cache (jQuery's
// cache: false sends ?_=<time>), not a parameter it means the server to
// read. Before 2026-12-06 every unknown parameter was ignored, so a typo
// changed the answer without a word: GET /v1/memories/search?scop=project:x
// answered the memories of every scope the token reads, ?limt=1 a page of
// the default size, and ?q= (the usual name elsewhere) "query: required",
// which did not say that q is not read (an analyst's walkthrough;
// TestUnknownQueryParameterIsNamed). Operations outside /v1/ (/healthz,
// /metrics, /openapi.json, /mcp), which monitoring and MCP clients call
// with their own conventions, are left as they were.
func unknownParam(r *http.Request) (name, reason string) {
	if r.URL.RawQuery == "" || !strings.HasPrefix(r.URL.Path, "/v1/") {
		return "", ""
	}
	m := r.Method
	if m == http.MethodHead {
		m = http.MethodGet
	}
	tmpl, ok := documentedTemplate(m, r.URL.EscapedPath())
	if !ok {
		return "", "" // no such operation: the router's 404 or 405 says so
	}
	takes := documentedParams()[route{m, tmpl}]
	names := make([]string, 0, len(r.URL.Query()))
	for n := range r.URL.Query() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, "_") || slices.Contains(takes, n) {
			continue
		}
		if hint := paramHints[route{m, tmpl}][n]; hint != "" {
			return n, fmt.Sprintf("not a query parameter of %s %s: %s", m, tmpl, hint)
		}
		if len(takes) == 0 {
			return n, fmt.Sprintf("not a query parameter of %s %s, which takes none (see GET /openapi.json)", m, tmpl)
		}
		return n, fmt.Sprintf("not a query parameter of %s %s, which takes %s (see GET /openapi.json)", m, tmpl, strings.Join(takes, ", "))
	}
	return "", ""
}

// The hints of paramHints: where what a caller put in the query goes.
const (
	eventsScopeHint   = "an event's scope is its scope attribute (structured and batched modes) or its ce-scope header (binary mode); without one, the token's default write scope (GET /v1/whoami)"
	memoriesScopeHint = `the memory's scope is the body's "scope"; without one, the token's default write scope (GET /v1/whoami)`
)

// paramHints say, for a parameter an operation does not take, where what
// it meant goes: ?scope= on the write routes that take the scope in the
// body (before 2026-11-30 it was ignored, and the write went into the
// token's default write scope, which others may read: a security review).
var paramHints = map[route]map[string]string{
	{http.MethodPost, "/v1/events"}:   {"scope": eventsScopeHint},
	{http.MethodPost, "/v1/memories"}: {"scope": memoriesScopeHint},
}

// documentedParams are the query parameters of each operation of
// openapi.json, the path item's and the operation's own, in the order
// declared.
var documentedParams = sync.OnceValue(func() map[route][]string {
	type param struct {
		Name string `json:"name"`
		In   string `json:"in"`
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		panic("httpapi: openapi.json: " + err.Error()) // embedded and tested: a build defect
	}
	out := map[route][]string{}
	for p, item := range doc.Paths {
		var common []param
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &common); err != nil {
				panic("httpapi: openapi.json: " + p + ": parameters: " + err.Error())
			}
		}
		for _, m := range routerMethods {
			raw, ok := item[strings.ToLower(m)]
			if !ok {
				continue
			}
			var op struct {
				Parameters []param `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				panic("httpapi: openapi.json: " + m + " " + p + ": " + err.Error())
			}
			var names []string
			for _, q := range append(append([]param(nil), common...), op.Parameters...) {
				if q.In == "query" && !slices.Contains(names, q.Name) {
					names = append(names, q.Name)
				}
			}
			out[route{m, p}] = names
		}
	}
	return out
})

// listQueryParams are the query parameters that take several values
// (types=a&types=b, as many HTTP clients send a list).
var listQueryParams = map[string]bool{"types": true}

// numericParams are the query parameters that take a number: given empty
// (?limit=) they are refused, as a value that does not parse.
var numericParams = [...]string{"limit", "k", "min_confidence"}

// queryShape is the check of a request's query every route shares: a
// parameter other than listQueryParams given more than once
// (?limit=1&limit=2), or a numericParams one given empty, is refused with
// its name and the reason (name "" when the query is fine; the 400 carries
// both as parameter and reason). Before, routes
// differed: url.Values.Get kept the first of repeated values silently,
// and ?limit= meant the default on /v1/sessions and /v1/memories/search
// but was a 400 on /v1/workflows (a walkthrough, 2026-11-30). A parameter
// the route does not take is refused by unknownParam, except a
// cache-buster's (?_=…), which is left alone when given once; given twice,
// it is refused as any.
func queryShape(q url.Values) (name, reason string) {
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names) // one answer for one query
	for _, n := range names {
		if vs := q[n]; len(vs) > 1 && !listQueryParams[n] {
			return n, fmt.Sprintf("given %d times (%s=%s): it takes one value", len(vs), n, strings.Join(vs, "&"+n+"="))
		}
	}
	for _, n := range numericParams {
		if q.Has(n) && q.Get(n) == "" {
			return n, "given empty: give a number, or leave the parameter out for the route's default"
		}
	}
	return "", ""
}

// NoRouteHeader marks a 404 that says no route serves the path, not that
// an entity is missing: a member whose forward gets it reached the other
// member at a wrong URL (an --advertise with a path), and reports that
// member as not answering instead of relaying a false "not found".
const NoRouteHeader = "Chronicle-No-Route"
