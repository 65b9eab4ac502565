package mcpserver

import (
	"context"
	"errors"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ImprovementFunc returns the PAIR loop state of a session for a caller
// (the object GET /v1/sessions/{id}/improvement serves), after starting the
// loop as POST /v1/sessions/{id}/improve does when the caller may write the
// session's scope; scope may be "" (the one readable scope that holds the
// session). It returns an error for a session the caller may not read, the
// same as for a missing one.
type ImprovementFunc func(ctx context.Context, c Caller, sessionID, scope string) (map[string]any, error)

// improvementInput is pair_improvement's arguments.
type improvementInput struct {
	SessionID string `json:"session_id" jsonschema:"id of the session (as the producer named it)"`
	Scope     string `json:"scope,omitempty" jsonschema:"scope of the session (project:<id>, team:<id> or org:<id>) when several readable scopes hold the id"`
}

// addImprovement registers pair_improvement when opts.Improvement is set.
func (t *tools) addImprovement(s *mcp.Server) {
	if t.opts.Improvement == nil {
		return
	}
	in := oneScope(inferSchema[improvementInput]())
	in.Properties["session_id"].MinLength = jsonschema.Ptr(1) // "" is refused (it was not in the schema)
	mcp.AddTool(s, &mcp.Tool{
		Name:         "pair_improvement",
		OutputSchema: t.outputSchema("pair_improvement"),
		InputSchema:  in,
		Description: "The PAIR loop state of a session evaluated below 95: status (SUCCESS, MAX_ITERATIONS_REACHED, REVISION_READY, AWAITING_CONTEXT, AWAITING_EVALUATION when the session has no evaluation yet, NOT_EVALUATED when its evaluation is not_evaluated: no criterion with a weight could be scored, so there is nothing to revise), " +
			"the retrieved patterns per gap with their recommendation, the revision (tool sequence to follow, missing writes, rules, rationale, estimated improvement) " +
			"and how to start the next attempt (next_attempt: iteration, parent_session). " +
			"Like POST /v1/sessions/{id}/improve, it starts the loop when it has not started and the caller may write the session's scope: " +
			"PAIR retrieval runs for a session below 95 without a context (waiting up to 20 s); a caller who may only read gets the state as it is; a session that has not completed is an error saying so (nothing to improve from yet).",
		// not read-only: it may write the session's PAIR context; repeating
		// it writes nothing more (one context per session)
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, t.improvement)
}

func (t *tools) improvement(ctx context.Context, req *mcp.CallToolRequest, in improvementInput) (*mcp.CallToolResult, map[string]any, error) {
	if strings.TrimSpace(in.SessionID) == "" {
		return nil, nil, invalid("session_id", "required")
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if len(caller.ReadScopes) == 0 {
		return nil, nil, errors.New("pair_improvement: the caller may read no scope")
	}
	out, err := t.opts.Improvement(ctx, caller, in.SessionID, in.Scope)
	if err != nil {
		return nil, nil, toolError("pair_improvement", err)
	}
	return nil, out, nil
}
