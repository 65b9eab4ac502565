package mcpserver

import (
	"context"
	"errors"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SearchTools is the backend of the tree-search tools (issue 12):
// search_get and search_resume. scope may be "" (the one scope the caller
// may read, for Get, or write, for Resume, that holds the search). Both
// return an error wrapping search.ErrNotFound for a search the caller may
// not read or write, the same as for a missing one.
type SearchTools interface {
	// SearchGet is GET /v1/searches/{id}: status, open set (the frontier,
	// its head first), quota, counts and best path.
	SearchGet(ctx context.Context, c Caller, searchID, scope string) (map[string]any, error)
	// SearchResume is POST /v1/searches/{id}/resume: the human's decision
	// ("approve" or "reject") on a paused search, written as
	// search.resumed.v1; an error for a search that is not paused.
	SearchResume(ctx context.Context, c Caller, searchID, scope, decision, note string) (map[string]any, error)
}

// searchGetInput is search_get's arguments.
type searchGetInput struct {
	SearchID string `json:"search_id" jsonschema:"id of the tree search"`
	Scope    string `json:"scope,omitempty" jsonschema:"scope of the search (project:<id>, team:<id> or org:<id>) when several of your scopes hold the id"`
}

// searchResumeInput is search_resume's arguments.
type searchResumeInput struct {
	SearchID string `json:"search_id" jsonschema:"id of the paused tree search"`
	Scope    string `json:"scope,omitempty" jsonschema:"scope of the search (project:<id>, team:<id> or org:<id>) when several of your scopes hold the id"`
	Decision string `json:"decision" jsonschema:"approve keeps the node the search paused on, reject drops it"`
	Note     string `json:"note,omitempty" jsonschema:"why: kept on the decision"`
}

// addSearches registers search_get and search_resume when opts.Searches
// is set.
func (t *tools) addSearches(s *mcp.Server) {
	if t.opts.Searches == nil {
		return
	}
	get := oneScope(inferSchema[searchGetInput]())
	get.Properties["search_id"].MinLength = jsonschema.Ptr(1) // "" is refused (it was not in the schema)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "search_get",
		OutputSchema: t.outputSchema("search_get"),
		Description: "The state of a durable tree search (quota-aware Beam-A*): status (running, paused, completed), outcome, " +
			"the open set ordered by f (its head is expanded next), the question when paused, the token quota and the best path.",
		InputSchema: get,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.searchGet)
	in := oneScope(inferSchema[searchResumeInput]())
	in.Properties["decision"].Enum = enum("approve", "reject")
	in.Properties["search_id"].MinLength = jsonschema.Ptr(1)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "search_resume",
		OutputSchema: t.outputSchema("search_resume"),
		Description:  "Give the human decision a paused tree search waits for: approve keeps the node it paused on, reject drops it; the answer's driver says who goes on from there: treesearch-resume (Chronicle, for its built-in components) or external (whoever started the search, which nothing in Chronicle moves).",
		InputSchema:  in,
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, t.searchResume)
}

func (t *tools) searchGet(ctx context.Context, req *mcp.CallToolRequest, in searchGetInput) (*mcp.CallToolResult, map[string]any, error) {
	if strings.TrimSpace(in.SearchID) == "" {
		return nil, nil, invalid("search_id", "required, must not be empty")
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if len(caller.ReadScopes) == 0 {
		return nil, nil, errors.New("search_get: the caller may read no scope")
	}
	out, err := t.opts.Searches.SearchGet(ctx, caller, in.SearchID, in.Scope)
	if err != nil {
		return nil, nil, toolError("search_get", err)
	}
	return nil, out, nil
}

func (t *tools) searchResume(ctx context.Context, req *mcp.CallToolRequest, in searchResumeInput) (*mcp.CallToolResult, map[string]any, error) {
	if strings.TrimSpace(in.SearchID) == "" {
		return nil, nil, invalid("search_id", "required, must not be empty")
	}
	if err := oneOf("decision", in.Decision, "approve", "reject"); err != nil {
		return nil, nil, err
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if len(caller.WriteScopes) == 0 {
		return nil, nil, errors.New("search_resume: the caller may write no scope")
	}
	out, err := t.opts.Searches.SearchResume(ctx, caller, in.SearchID, in.Scope, in.Decision, in.Note)
	if err != nil {
		return nil, nil, toolError("search_resume", err)
	}
	return nil, out, nil
}
