package mcpserver

import (
	"context"
	"errors"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/events"
)

// Limits of memory_list's and pattern_history's arguments: those of GET
// /v1/memories (limit 1 to 500, absent 50: httpapi.MaxMemoryList and
// httpapi.DefaultMemoryList) and GET /v1/patterns/{id}/history (limit 1
// to 500, absent every record), in the schemas so that a client checking
// its arguments knows them; TestMCPReadToolsAnswerAsTheirRoutes (httpapi)
// holds them equal to the routes'.
const (
	defaultMemoryList = 50
	maxMemoryList     = 500
	maxHistoryPage    = 500
)

// ReadTools is the backend of the tools that read what GET /v1/memories,
// GET /v1/patterns/{id} and GET /v1/patterns/{id}/history answer:
// memory_list, pattern_get and pattern_history. Each answers its route's
// JSON object as the caller: the route checks the caller's scopes, so
// an implementation calls the route (httpapi's Client over stdio, the
// server's own handler over /mcp) instead of reading a store.
type ReadTools interface {
	// MemoryList is GET /v1/memories: a page of the memories of the
	// scopes the caller reads (scope "": all of them, else a kind or one
	// scope), limit at a time (0: the route's default), from cursor (a
	// next_cursor; "": the first page). An error naming scope for one
	// scope the caller does not read (the route's 403).
	MemoryList(ctx context.Context, c Caller, scope string, limit int, cursor string) (map[string]any, error)
	// PatternGet is GET /v1/patterns/{id}: the coordination pattern with
	// its counts and the rule of its confidence; an error wrapping
	// search.ErrNotFound for a pattern of a scope the caller does not
	// read, the same as for a missing one.
	PatternGet(ctx context.Context, c Caller, patternID string) (map[string]any, error)
	// PatternHistory is GET /v1/patterns/{id}/history: a page of the
	// pattern's coordination.pattern.counted.v1 records, limit at a time
	// (0: every record) from cursor ("": the first). Not found as
	// PatternGet.
	PatternHistory(ctx context.Context, c Caller, patternID string, limit int, cursor string) (map[string]any, error)
}

// memoryListInput is memory_list's arguments: GET /v1/memories' query.
type memoryListInput struct {
	Scope  string `json:"scope,omitempty" jsonschema:"whose memories: a kind (project, team, org or all) or one scope you read (project:<id>, team:<id> or org:<id>); left out: every scope you read"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many memories at most on this page, 1 to 500 (default 50); a page also ends before about 4 MiB"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page (<scope>/<memory id>); left out: the first page"`
}

// patternGetInput is pattern_get's arguments.
type patternGetInput struct {
	PatternID string `json:"pattern_id" jsonschema:"id of the coordination pattern, as memory_search's pattern hits or the learned stream name it"`
}

// patternHistoryInput is pattern_history's arguments: GET
// /v1/patterns/{id}/history's path and query.
type patternHistoryInput struct {
	PatternID string `json:"pattern_id" jsonschema:"id of the coordination pattern"`
	Limit     int    `json:"limit,omitempty" jsonschema:"how many records at most on this page, 1 to 500; left out: every record (a page also ends before about 4 MiB)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page (the number of its first record); left out: the first page"`
}

// addReadTools registers memory_list, pattern_get and pattern_history
// when opts.Reads is set. They are three tools, not one pattern tool with
// a history flag, so that each has one output schema: its route's
// response schema (MCPOutputSchemas), which the SDK checks every answer
// against.
func (t *tools) addReadTools(s *mcp.Server) {
	if t.opts.Reads == nil {
		return
	}
	list := inferSchema[memoryListInput]()
	list.Properties["scope"].Pattern = scopeFilterPattern
	list.Properties["limit"].Minimum = jsonschema.Ptr(1.0)
	list.Properties["limit"].Maximum = jsonschema.Ptr(float64(maxMemoryList))
	list.Properties["limit"].Default = defaultValue(defaultMemoryList)
	list.Properties["cursor"].MinLength = jsonschema.Ptr(1)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "memory_list",
		OutputSchema: t.outputSchema("memory_list"),
		Description: "List the memory bank: every memory of the scopes you read (or of scope), pruned ones included, each as recorded with its confidence, usage and evidence, " +
			"in key order (scope, then id), a page at a time; give next_cursor back as cursor for the next page (\"\" on the last). As GET /v1/memories answers. " +
			"Reading records no usage (memory_search does).",
		InputSchema: list,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.memoryList)
	get := inferSchema[patternGetInput]()
	get.Properties["pattern_id"].MinLength = jsonschema.Ptr(1)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "pattern_get",
		OutputSchema: t.outputSchema("pattern_get"),
		Description: "A coordination pattern (a tool sequence learned from sessions): its scope, tools, steps, session_count, succeeded_count, confidence and the confidence_rule that makes it, " +
			"and its last sessions; as GET /v1/patterns/{id} answers. pattern_history gives the records that made the counts.",
		InputSchema: get,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.patternGet)
	hist := inferSchema[patternHistoryInput]()
	hist.Properties["pattern_id"].MinLength = jsonschema.Ptr(1)
	hist.Properties["limit"].Minimum = jsonschema.Ptr(1.0)
	hist.Properties["limit"].Maximum = jsonschema.Ptr(float64(maxHistoryPage))
	hist.Properties["cursor"].Pattern = `^[1-9][0-9]*$`
	mcp.AddTool(s, &mcp.Tool{
		Name:         "pattern_history",
		OutputSchema: t.outputSchema("pattern_history"),
		Description: "Why a coordination pattern has its confidence: the coordination.pattern.counted.v1 records that made its counts, read back from the log, " +
			"each with its position, session, the change it made and the counts after it, a page at a time; as GET /v1/patterns/{id}/history answers.",
		InputSchema: hist,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.patternHistory)
}

// mayRead is the refusal of a tool for a caller that reads no scope, as
// memory_search's and search_get's.
func mayRead(tool string, c Caller) error {
	if len(c.ReadScopes) == 0 {
		return errors.New(tool + ": the caller may read no scope")
	}
	return nil
}

func (t *tools) memoryList(ctx context.Context, req *mcp.CallToolRequest, in memoryListInput) (*mcp.CallToolResult, map[string]any, error) {
	// The SDK checked the schema; these cover a server used with another.
	if in.Scope != "" && !scopeFilterRe.MatchString(in.Scope) {
		return nil, nil, invalid("scope", "%s", events.ScopeFilterReason(in.Scope))
	}
	if in.Limit == 0 {
		in.Limit = defaultMemoryList
	}
	if in.Limit < 1 || in.Limit > maxMemoryList {
		return nil, nil, invalid("limit", "%d is not an integer from 1 to %d", in.Limit, maxMemoryList)
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if err := mayRead("memory_list", caller); err != nil {
		return nil, nil, err
	}
	out, err := t.opts.Reads.MemoryList(ctx, caller, in.Scope, in.Limit, in.Cursor)
	if err != nil {
		return nil, nil, toolError("memory_list", err)
	}
	return nil, out, nil
}

func (t *tools) patternGet(ctx context.Context, req *mcp.CallToolRequest, in patternGetInput) (*mcp.CallToolResult, map[string]any, error) {
	if strings.TrimSpace(in.PatternID) == "" {
		return nil, nil, invalid("pattern_id", "required, must not be empty")
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if err := mayRead("pattern_get", caller); err != nil {
		return nil, nil, err
	}
	out, err := t.opts.Reads.PatternGet(ctx, caller, in.PatternID)
	if err != nil {
		return nil, nil, toolError("pattern_get", err)
	}
	return nil, out, nil
}

func (t *tools) patternHistory(ctx context.Context, req *mcp.CallToolRequest, in patternHistoryInput) (*mcp.CallToolResult, map[string]any, error) {
	if strings.TrimSpace(in.PatternID) == "" {
		return nil, nil, invalid("pattern_id", "required, must not be empty")
	}
	if in.Limit < 0 || in.Limit > maxHistoryPage {
		return nil, nil, invalid("limit", "%d is not an integer from 1 to %d", in.Limit, maxHistoryPage)
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if err := mayRead("pattern_history", caller); err != nil {
		return nil, nil, err
	}
	out, err := t.opts.Reads.PatternHistory(ctx, caller, in.PatternID, in.Limit, in.Cursor)
	if err != nil {
		return nil, nil, toolError("pattern_history", err)
	}
	return nil, out, nil
}
