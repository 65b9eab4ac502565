package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// Limits of the ReasoningBank tool schemas.
const (
	maxTitle          = 50
	maxDescription    = 200
	defaultLimit      = 5
	maxLimit          = 20
	defaultConfidence = 0.5
)

// searchInput is memory_search's arguments.
type searchInput struct {
	Query         string  `json:"query" jsonschema:"what to look for: the task at hand, an error, a question (at most 8192 characters)"`
	Scope         string  `json:"scope,omitempty" jsonschema:"which scopes to search: a kind (project, team, org or all) or one scope (project:<id>, team:<id>, org:<id>)"`
	Outcome       string  `json:"outcome,omitempty" jsonschema:"success for strategies that worked, failure for anti-patterns, or all"`
	Limit         int     `json:"limit,omitempty" jsonschema:"how many memories to return at most"`
	MinConfidence float64 `json:"min_confidence,omitempty" jsonschema:"leave out memories whose confidence is below this"`
}

// recordDescription is memory_record's description: what a merge answers.
const recordDescription = "Record a new memory (a strategy that worked or an anti-pattern) in scope, or without it in the caller's default write scope. " +
	"A memory of that scope with the same title and content (ignoring case and spacing) gets the recording as evidence instead: " +
	"the answer then names it in merged_into, and id, confidence and evidence are that memory's (a merge leaves its confidence as it was)."

// recordInput is memory_record's arguments.
type recordInput struct {
	Title       string   `json:"title" jsonschema:"short name of the strategy or anti-pattern"`
	Description string   `json:"description" jsonschema:"one or two sentences: when it applies and what it does"`
	Content     string   `json:"content" jsonschema:"the full memory: steps, reasoning, pitfalls"`
	Outcome     string   `json:"outcome" jsonschema:"success for a strategy that worked, failure for an anti-pattern"`
	Tags        []string `json:"tags,omitempty" jsonschema:"keywords to find the memory by"`
	// Scope is where the memory goes: POST /v1/memories' body member
	// scope, as a tool argument (before, memory_record over /mcp wrote to
	// the token's default write scope only: a walkthrough's finding).
	Scope string `json:"scope,omitempty" jsonschema:"the scope to record the memory in (project:<id>, team:<id> or org:<id>), one you may write; left out: your default write scope (GET /v1/whoami's default_write_scope; over stdio, chronicle mcp --scope)"`
	// IdempotencyKey is search.Record.IdempotencyKey: the Idempotency-Key
	// header of POST /v1/memories, as a tool argument.
	IdempotencyKey *string `json:"idempotency_key,omitempty" jsonschema:"optional unique key (e.g. a UUID) of this recording, at most 255 printable ASCII characters: a retry of the call with the same key and fields (after a timeout or a lost answer) is answered as the first call was and adds no second evidence; the same key with other fields is an error"`
}

// feedbackInput is memory_feedback's arguments.
type feedbackInput struct {
	MemoryID string `json:"memory_id" jsonschema:"id of the memory, as memory_search or memory_record returned it"`
	Helpful  bool   `json:"helpful" jsonschema:"whether the memory helped"`
	Comment  string `json:"comment,omitempty" jsonschema:"why it helped or not"`
	Scope    string `json:"scope,omitempty" jsonschema:"the memory's scope (project:<id>, team:<id> or org:<id>), when the same memory id is in several scopes you may write; left out: the one that holds it"`
}

// tools holds what the tool handlers need.
type tools struct {
	backend search.Backend
	opts    Options
	reg     *callerRegistry // nil (stdio): every call runs for opts.Caller
}

func newServer(backend search.Backend, opts Options, reg *callerRegistry) *mcp.Server {
	if backend == nil {
		panic("mcpserver: nil search.Backend")
	}
	name, version := opts.Name, opts.Version
	if name == "" {
		name = "chronicle"
	}
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{
		Instructions: "Chronicle's ReasoningBank: call memory_search before a task for strategies " +
			"and anti-patterns learned from earlier sessions, memory_record to keep a new one, and " +
			"memory_feedback to say whether a memory helped; next_tool suggests the next tool call of a " +
			"workflow from the tool graph learned from earlier sessions; where listed, pair_improvement gives a " +
			"session's PAIR improvement loop (its next attempt's context), search_get a tree search's state and " +
			"search_resume answers a search paused for a human decision; memory_list pages through the memory bank, " +
			"pattern_get and pattern_history show a coordination pattern and the records that made its confidence.",
	})
	s.AddReceivingMiddleware(recoverHandlerPanic, refuseNullArguments, refuseRepeatedArguments, readableSchemaErrors, refuseUnknownLogLevel)
	if reg != nil {
		s.AddReceivingMiddleware(reg.cancelWithRequest)
	}
	t := &tools{backend: backend, opts: opts, reg: reg}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "memory_search",
		Description: "Search the memory bank for strategies (success) and anti-patterns (failure) relevant to a query, best first. Records the retrieval of each hit in a scope the caller writes (its usage count, which decides how much one feedback signal can move it).",
		InputSchema: searchSchema(),
		// Not read-only: a hit in a scope the caller writes gets a usage
		// event (memory.retrieved.v1), and usage decides whether one
		// feedback signal applies without consensus. It was marked
		// read-only, which the MCP spec defines as "does not modify its
		// environment" (a walkthrough, 2026-11-30). Nothing is destroyed.
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, t.search)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "memory_record",
		Description:  recordDescription,
		InputSchema:  recordSchema(),
		OutputSchema: recordedSchema(),
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, t.record)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "memory_feedback",
		Description:  "Tell the memory bank whether a memory helped; this moves its confidence.",
		InputSchema:  feedbackSchema(),
		OutputSchema: feedbackResultSchema(),
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, t.feedback)
	t.addImprovement(s)
	t.addSearches(s)
	t.addNextTool(s)
	t.addReadTools(s)
	return s
}

// refuseRepeatedArguments answers a tools/call whose arguments repeat a
// member within one object, at any depth ({"query":"a","query":"b"}),
// with a tool error naming the member's JSON pointer within the arguments
// and the reason ("invalid argument: /query: the member \"query\" appears
// twice in one object …"), as the tools answer any other bad argument, and
// the tool does not run. The SDK decodes the arguments with the last
// member kept silently, so the call ran with "b" where the client may
// mean "a"; the HTTP routes refuse such a body (events.RepeatedMember),
// and now /mcp and `chronicle mcp` do too (the last closing note's gap).
func refuseRepeatedArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil {
			if ptr, reason, repeated := events.RepeatedMember(r.Params.Arguments); repeated {
				var res mcp.CallToolResult
				res.SetError(invalid(ptr, "%s", reason))
				return &res, nil
			}
		}
		return next(ctx, method, req)
	}
}

// refuseNullArguments answers a tools/call whose arguments are JSON null
// with the tool error a string or an array gets ("invalid argument: /:
// type: got null, want object …"), and the tool does not run. The SDK
// decoded null into a nil map and then panicked writing the input
// schema's defaults into it (memory_search and next_tool, the tools whose
// schemas have defaults): one request from any token, a reader's
// included, ended `serve` and `chronicle mcp` (an MCP walkthrough,
// 2026-12-03). Arguments left out are no arguments, as before.
func refuseNullArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil &&
			string(bytes.TrimSpace(r.Params.Arguments)) == "null" {
			var res mcp.CallToolResult
			res.SetError(invalid("/", "type: got null, want object (the tool's arguments are a JSON object; leave them out for none)"))
			return &res, nil
		}
		return next(ctx, method, req)
	}
}

// logLevels are the levels of logging/setLevel (MCP, server utilities:
// logging; RFC 5424's severities).
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// refuseUnknownLogLevel answers a logging/setLevel whose level is none of
// logLevels with -32602 Invalid params, as the MCP spec's logging page
// asks ("Invalid log level: -32602"); the SDK took any string (an MCP
// walkthrough, 2026-12-03).
func refuseUnknownLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" && p != nil && !slices.Contains(logLevels, p.Level) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Invalid params: level %q is not one of debug, info, notice, warning, error, critical, alert, emergency", p.Level)}
		}
		return next(ctx, method, req)
	}
}

// recoverHandlerPanic turns a panic while a request is handled (the
// SDK's or a tool's) into a JSON-RPC internal error (-32603) for that
// request, logged with its stack, so that no request can end the process
// that serves every other (the SDK's panic on null arguments did:
// refuseNullArguments).
func recoverHandlerPanic(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Printf("mcp: %s panicked: %v\n%s", method, p, debug.Stack())
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error handling %s", method)}
			}
		}()
		return next(ctx, method, req)
	}
}

// inferSchema is the schema of T's JSON form (required fields: those
// without omitempty; descriptions from jsonschema tags).
func inferSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema: %v", err))
	}
	return s
}

func enum(values ...string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func defaultValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// scopeFilterPattern is memory_search's scope: a kind or one scope (the
// id alphabet of events.ValidScope).
const scopeFilterPattern = `^(project|team|org|all)$|^(project|team|org):[A-Za-z0-9._-]+$`

var scopeFilterRe = regexp.MustCompile(scopeFilterPattern)

// scopePattern is the scope argument of the tools that take one scope
// (memory_record, memory_feedback, pair_improvement, search_get,
// search_resume): events.ValidScope's form. Those schemas said a bare
// string, though every tool refused another, so a client checking its
// arguments against the schema could not know (an MCP walkthrough,
// 2026-12-06).
const scopePattern = `^(project|team|org):[A-Za-z0-9._-]+$`

// outputSchema is the output schema of the tool name from
// opts.OutputSchemas, as Tool.OutputSchema wants it: nil (no schema: the
// SDK infers an open object from map[string]any) when it has none, never
// a nil *jsonschema.Schema, which the SDK would take as a schema.
func (t *tools) outputSchema(name string) any {
	if s := t.opts.OutputSchemas[name]; s != nil {
		return s
	}
	return nil
}

// oneScope gives the schema s's scope property scopePattern.
func oneScope(s *jsonschema.Schema) *jsonschema.Schema {
	s.Properties["scope"].Pattern = scopePattern
	return s
}

func searchSchema() *jsonschema.Schema {
	s := inferSchema[searchInput]()
	p := s.Properties
	p["query"].MinLength = jsonschema.Ptr(1)
	p["query"].MaxLength = jsonschema.Ptr(search.MaxQueryLength)
	p["scope"].Pattern = scopeFilterPattern
	p["scope"].Default = defaultValue(search.ScopeAll)
	p["outcome"].Enum = enum("success", "failure", "all")
	p["outcome"].Default = defaultValue("all")
	p["limit"].Minimum = jsonschema.Ptr(1.0)
	p["limit"].Maximum = jsonschema.Ptr(float64(maxLimit))
	p["limit"].Default = defaultValue(defaultLimit)
	p["min_confidence"].Minimum = jsonschema.Ptr(0.0)
	p["min_confidence"].Maximum = jsonschema.Ptr(1.0)
	p["min_confidence"].Default = defaultValue(defaultConfidence)
	return s
}

func recordSchema() *jsonschema.Schema {
	s := inferSchema[recordInput]()
	p := s.Properties
	p["title"].MinLength = jsonschema.Ptr(1)
	p["title"].MaxLength = jsonschema.Ptr(maxTitle)
	p["description"].MinLength = jsonschema.Ptr(1)
	p["description"].MaxLength = jsonschema.Ptr(maxDescription)
	p["content"].MinLength = jsonschema.Ptr(1)
	p["outcome"].Enum = enum("success", "failure")
	p["tags"].Types, p["tags"].Type = nil, "array" // not null
	p["tags"].Items.MinLength = jsonschema.Ptr(1)
	// what search.CheckIdempotencyKey refuses, a client checking its
	// arguments against the schema now knows (it was a bare string: a
	// walkthrough, 2026-11-30)
	p["idempotency_key"].MinLength = jsonschema.Ptr(1)
	p["idempotency_key"].MaxLength = jsonschema.Ptr(search.MaxIdempotencyKey)
	p["idempotency_key"].Pattern = `^[ -~]+$`
	return oneScope(s)
}

func feedbackSchema() *jsonschema.Schema {
	s := inferSchema[feedbackInput]()
	s.Properties["memory_id"].MinLength = jsonschema.Ptr(1)
	return oneScope(s)
}

// recordedSchema is memory_record's output schema: search.Recorded's,
// whose confidence, initial_confidence and evidence are optional (not
// required) and, when present, numbers, never null: they are left out for
// a caller that may not read the scope (search.WithheldRecorded) instead
// of reading 0, a real confidence. The SDK would derive them from the
// pointer fields as ["null", "number"].
func recordedSchema() *jsonschema.Schema {
	s := inferSchema[search.Recorded]()
	notNull(s, "confidence", "initial_confidence", "evidence")
	return s
}

// feedbackResultSchema is memory_feedback's output schema:
// search.FeedbackResult's, whose new_confidence is optional (left out for
// a caller that may not read the memory's scope) and never null.
func feedbackResultSchema() *jsonschema.Schema {
	s := inferSchema[search.FeedbackResult]()
	notNull(s, "new_confidence")
	return s
}

// notNull makes the named properties of s, inferred from pointer fields
// as [null, T], of type T only: the answers leave them out, never send
// null.
func notNull(s *jsonschema.Schema, names ...string) {
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			panic("mcpserver: output schema has no property " + n)
		}
		if i := slices.Index(p.Types, "null"); i >= 0 && len(p.Types) == 2 {
			p.Type, p.Types = p.Types[1-i], nil
		}
	}
}

// sourceOf is who a tool call comes from, for usage and consensus
// (issue 11): the caller's Source, else "mcp:" and the client name of the
// session's initialize request, else "mcp:unknown".
func sourceOf(c Caller, req *mcp.CallToolRequest) string {
	if c.Source != "" {
		return c.Source
	}
	if req != nil && req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			return "mcp:" + p.ClientInfo.Name
		}
	}
	return "mcp:unknown"
}

// invalid is the error of an argument that breaks the tool schema.
func invalid(field, format string, args ...any) error {
	if !strings.HasPrefix(field, "/") {
		// an argument is named by its pointer, as the schema's refusals
		// name it ("/query: required: missing"); the tools' own checks
		// said "query: required, must not be empty" (an MCP walkthrough)
		field = "/" + events.PointerToken(field)
	}
	return fmt.Errorf("%w: %s: %s", search.ErrInvalid, field, fmt.Sprintf(format, args...))
}

// toolError is the error a handler returns for a backend failure; the SDK
// turns it into a tool error result carrying its text.
func toolError(tool string, err error) error {
	var r refusal
	switch {
	case errors.Is(err, search.ErrNotFound), errors.Is(err, search.ErrInvalid):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: interrupted: %w", tool, err)
	case errors.As(err, &r):
		// the service refused (4xx): its own words, as the /mcp endpoint
		// answers the same cause; the request's URL (with the query)
		// stayed out of it (a subscriber walkthrough: over stdio it read
		// "memory_search failed: chronicle GET /v1/memories/search?…:
		// 403 Forbidden: …")
		if code, detail := r.Refusal(); code >= 400 && code < 500 && detail != "" {
			return fmt.Errorf("%s: %s", tool, detail)
		}
	}
	return fmt.Errorf("%s failed: %w", tool, err)
}

// refusal is a backend's answer with an HTTP status and the service's
// own error text (httpapi.Client's).
type refusal interface {
	error
	Refusal() (status int, detail string)
}

func oneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return invalid(field, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return invalid(field, "required, must not be empty")
	}
	return nil
}

func (in *searchInput) validate() error {
	// The SDK applied the schema's defaults to absent arguments; these
	// cover a server used with another schema.
	if in.Scope == "" {
		in.Scope = search.ScopeAll
	}
	if in.Outcome == "" {
		in.Outcome = "all"
	}
	if err := required("query", in.Query); err != nil {
		return err
	}
	if !scopeFilterRe.MatchString(in.Scope) {
		return invalid("scope", "%s", events.ScopeFilterReason(in.Scope))
	}
	if err := oneOf("outcome", in.Outcome, "success", "failure", "all"); err != nil {
		return err
	}
	if in.Limit < 1 || in.Limit > maxLimit {
		return invalid("limit", "%d is out of range 1..%d", in.Limit, maxLimit)
	}
	if math.IsNaN(in.MinConfidence) || in.MinConfidence < 0 || in.MinConfidence > 1 {
		return invalid("min_confidence", "%v is out of range 0..1", in.MinConfidence)
	}
	return nil
}

func (in *recordInput) validate() error {
	if err := required("title", in.Title); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(in.Title); n > maxTitle {
		return invalid("title", "%d characters, at most %d", n, maxTitle)
	}
	if err := required("description", in.Description); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(in.Description); n > maxDescription {
		return invalid("description", "%d characters, at most %d", n, maxDescription)
	}
	if err := required("content", in.Content); err != nil {
		return err
	}
	if err := oneOf("outcome", in.Outcome, "success", "failure"); err != nil {
		return err
	}
	for i, tag := range in.Tags {
		if err := required(fmt.Sprintf("tags[%d]", i), tag); err != nil {
			return err
		}
	}
	if in.Scope != "" && !events.ValidScope(in.Scope) {
		return invalid("scope", "%s", events.ScopeReason(in.Scope))
	}
	if in.IdempotencyKey != nil { // given empty is refused, as the header is: not taken for none
		if err := search.CheckIdempotencyKey(*in.IdempotencyKey); err != nil {
			return invalid("idempotency_key", "%v", err)
		}
	}
	return nil
}

// idempotencyKey is the key given, "" for none.
func (in *recordInput) idempotencyKey() string {
	if in.IdempotencyKey == nil {
		return ""
	}
	return *in.IdempotencyKey
}

func (in *feedbackInput) validate() error {
	if in.Scope != "" && !events.ValidScope(in.Scope) {
		// by its pointer, as memory_record names the same argument (a
		// walkthrough, 2026-12-06)
		return invalid("scope", "%s", events.ScopeReason(in.Scope))
	}
	return required("memory_id", in.MemoryID)
}

// search is the memory_search handler.
func (t *tools) search(ctx context.Context, req *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, search.Result, error) {
	if err := in.validate(); err != nil {
		return nil, search.Result{}, err
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, search.Result{}, err
	}
	if len(caller.ReadScopes) == 0 {
		return nil, search.Result{}, errors.New("memory_search: the caller may read no scope")
	}
	if readable := caller.readable(); readable != nil && events.ValidScope(in.Scope) && !readable(in.Scope) {
		// one scope the caller does not read: an error, as GET
		// /v1/memories/search's 403, not an empty list
		return nil, search.Result{}, fmt.Errorf("memory_search: scope: this token may not read %s", in.Scope)
	}
	minConfidence := in.MinConfidence
	ctx = ContextWithCaller(ctx, caller)
	res, err := t.backend.Search(ctx, search.Query{
		Text:          in.Query,
		Scope:         in.Scope,
		Outcome:       in.Outcome,
		Limit:         in.Limit,
		MinConfidence: &minConfidence,
		Readable:      caller.readable(),
		Writable:      caller.writable(), // usage only in the scopes the caller writes
		Source:        sourceOf(caller, req),
		ReadScopes:    caller.ReadScopes, // who may see the query in a memory's history
	})
	if err != nil {
		return nil, search.Result{}, toolError("memory_search", err)
	}
	if res.Memories == nil {
		res.Memories = []search.Hit{}
	}
	return nil, res, nil
}

// record is the memory_record handler.
func (t *tools) record(ctx context.Context, req *mcp.CallToolRequest, in recordInput) (*mcp.CallToolResult, search.Recorded, error) {
	if err := in.validate(); err != nil {
		return nil, search.Recorded{}, err
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, search.Recorded{}, err
	}
	scope := caller.DefaultScope
	if in.Scope != "" {
		scope = in.Scope
	}
	switch {
	case len(caller.WriteScopes) == 0:
		return nil, search.Recorded{}, errors.New("memory_record: the caller may write no scope")
	case in.Scope != "" && !grants(caller.WriteScopes, scope):
		// as POST /v1/memories' 403 for a body's scope it may not write
		return nil, search.Recorded{}, fmt.Errorf("memory_record: scope: this token may not write %s", scope)
	case scope == "":
		return nil, search.Recorded{}, errors.New("memory_record: the caller has no default scope to write to")
	case !events.ValidScope(scope):
		return nil, search.Recorded{}, fmt.Errorf("memory_record: the caller's default scope %s", events.ScopeReason(scope))
	case !grants(caller.WriteScopes, scope):
		return nil, search.Recorded{}, fmt.Errorf("memory_record: the caller may not write scope %s", scope)
	}
	ctx = ContextWithCaller(ctx, caller)
	rec, err := t.backend.Record(ctx, search.Record{
		Title:       in.Title,
		Description: in.Description,
		Content:     in.Content,
		Outcome:     in.Outcome,
		Tags:        in.Tags,
		Scope:       scope,
		Source:      sourceOf(caller, req), // the author in the memory's history (issue 11)
		Readable:    caller.readable(),     // a write-only caller's answer is withheld
		// a retry with the key is one recording (the same event id)
		IdempotencyKey: in.idempotencyKey(),
	})
	if err != nil {
		return nil, search.Recorded{}, toolError("memory_record", err)
	}
	return nil, rec, nil
}

// feedback is the memory_feedback handler.
func (t *tools) feedback(ctx context.Context, req *mcp.CallToolRequest, in feedbackInput) (*mcp.CallToolResult, search.FeedbackResult, error) {
	if err := in.validate(); err != nil {
		return nil, search.FeedbackResult{}, err
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, search.FeedbackResult{}, err
	}
	if len(caller.WriteScopes) == 0 {
		return nil, search.FeedbackResult{}, errors.New("memory_feedback: the caller may write no scope")
	}
	if in.Scope != "" && !grants(caller.WriteScopes, in.Scope) {
		if readable := caller.readable(); readable != nil && !readable(in.Scope) {
			// a scope the caller neither writes nor reads: "memory not
			// found", as POST /v1/memories/{id}/feedback?scope= answers
			// (404) and as for a memory that does not exist, so the
			// answer tells nothing of the scope; it said "may not write",
			// which the HTTP route did not (tenant-isolation review)
			return nil, search.FeedbackResult{}, fmt.Errorf("%w: %s", search.ErrNotFound, in.MemoryID)
		}
		// a scope it reads: name the argument, as memory_search does for
		// a scope it may not read; it said "memory not found" (a
		// subscriber's walkthrough)
		return nil, search.FeedbackResult{}, fmt.Errorf("memory_feedback: scope: this token may not write %s", in.Scope)
	}
	ctx = ContextWithCaller(ctx, caller)
	res, err := t.backend.Feedback(ctx, search.Feedback{
		MemoryID: in.MemoryID,
		Scope:    in.Scope,
		Helpful:  in.Helpful,
		Comment:  in.Comment,
		Writable: caller.writable(),
		Readable: caller.readable(), // a write-only caller's answer is withheld
		// where a write-only caller's signal without a scope goes
		DefaultScope: caller.DefaultScope,
		Source:       sourceOf(caller, req),
		SharedSource: caller.SharedSource,
	})
	if err != nil {
		return nil, search.FeedbackResult{}, toolError("memory_feedback", err)
	}
	return nil, res, nil
}
