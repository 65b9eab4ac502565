package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of next_tool's arguments: GET /v1/graph/next's (k from 1 to 100,
// text at most 8,192 characters), checked here too so that a bad argument
// is a tool error naming it before any request.
const (
	defaultNextK = 5
	maxNextK     = 100
	maxNextText  = 8 << 10
)

// MaxNextAfter bounds next_tool's after and GET /v1/graph/next's after=:
// a workflow's calls so far, not a log (the route's URL would grow past
// what servers accept long before). The route had no bound, and echoed a
// 5,000-tool after whole (a walkthrough's finding).
const MaxNextAfter = 256

// GraphTools is the backend of the next_tool tool (issue 11, item 10):
// GET /v1/graph/next as the caller.
type GraphTools interface {
	// GraphNext is GET /v1/graph/next: the next tool after q.After, ranked
	// from the tool graph of the scopes the caller reads (or q.Scope). It
	// answers the route's object: suggestions (tool, probability,
	// confidence, level …), levels and, with q.Text, words. An error
	// wrapping search.ErrNotFound for a q.Scope the caller may not read.
	GraphNext(ctx context.Context, c Caller, q NextQuery) (map[string]any, error)
}

// NextQuery is next_tool's question, as GET /v1/graph/next's parameters.
type NextQuery struct {
	// After is the tools called so far in the workflow, oldest first;
	// empty for its first call.
	After []string
	// Failed is the 0-based positions in After of the calls that failed;
	// non-nil (even empty) when every call's outcome is known, which
	// selects the outcome-aware predictor (failed=).
	Failed []int
	// Text is the user's last message before the call ("": none).
	Text string
	// K is how many suggestions at most, 1 to 100.
	K int
	// Scope is one scope whose graph answers, or a kind (project, team,
	// org: the caller's readable scopes of that kind; all) ("": the union
	// of the scopes the caller reads).
	Scope string
}

// nextInput is next_tool's arguments.
type nextInput struct {
	After  []string `json:"after,omitempty" jsonschema:"the tools called so far in this workflow, oldest first; leave out (or empty) before the first call"`
	Failed []int    `json:"failed,omitempty" jsonschema:"0-based positions in after of the calls that failed; give it (an empty list when none failed) when the outcome of every call is known, which ranks with the outcome-aware model chronicle eval measures"`
	Text   string   `json:"text,omitempty" jsonschema:"the user's last message before the call (at most 8192 characters): its words that followed the last tool in earlier sessions rank the next tool"`
	K      int      `json:"k,omitempty" jsonschema:"how many suggestions at most, 1 to 100 (default 5)"`
	Scope  string   `json:"scope,omitempty" jsonschema:"whose tool graph answers: one scope you read (project:<id>, team:<id> or org:<id>) or a kind (project, team, org: the scopes of that kind you read; all); left out: the union of the graphs of every scope you read"`
}

// nextDescription is next_tool's description.
const nextDescription = "Predict the next tool call of a workflow from the tool graph Chronicle learned from earlier sessions: " +
	"give the tools called so far (after, oldest first), optionally which of them failed and the user's last message (text). " +
	"Answers the suggestions best first, each with its probability, confidence and the context level that ranked it, " +
	"as GET /v1/graph/next does."

// addNextTool registers next_tool when opts.Graph is set.
func (t *tools) addNextTool(s *mcp.Server) {
	if t.opts.Graph == nil {
		return
	}
	in := inferSchema[nextInput]()
	in.Properties["after"].Items.MinLength = jsonschema.Ptr(1)
	in.Properties["after"].MaxItems = jsonschema.Ptr(MaxNextAfter)
	in.Properties["failed"].Items.Minimum = jsonschema.Ptr(0.0)
	in.Properties["k"].Minimum = jsonschema.Ptr(1.0)
	in.Properties["k"].Maximum = jsonschema.Ptr(float64(maxNextK))
	in.Properties["k"].Default = defaultValue(defaultNextK)
	in.Properties["text"].MaxLength = jsonschema.Ptr(maxNextText)
	// a kind or one scope, as memory_search's (it was a bare string: an
	// MCP walkthrough, 2026-12-06)
	in.Properties["scope"].Pattern = scopeFilterPattern
	mcp.AddTool(s, &mcp.Tool{
		Name:         "next_tool",
		OutputSchema: t.outputSchema("next_tool"),
		Description:  nextDescription,
		InputSchema:  in,
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.nextTool)
}

func (t *tools) nextTool(ctx context.Context, req *mcp.CallToolRequest, in nextInput) (*mcp.CallToolResult, map[string]any, error) {
	q := NextQuery{After: in.After, Text: in.Text, K: in.K, Scope: in.Scope}
	if q.K == 0 {
		q.K = defaultNextK
	}
	if q.K < 1 || q.K > maxNextK {
		return nil, nil, invalid("/k", "%d is not an integer from 1 to %d", in.K, maxNextK)
	}
	if len(q.After) > MaxNextAfter {
		return nil, nil, invalid("/after", "%d tools, at most %d", len(q.After), MaxNextAfter)
	}
	for i, tool := range q.After {
		if strings.TrimSpace(tool) == "" {
			return nil, nil, invalid("/after/"+strconv.Itoa(i), "a tool name must not be empty")
		}
		if strings.Contains(tool, ",") {
			// the route's after= is comma-separated: such a name cannot
			// be asked about (OpenAI's tool names are [a-zA-Z0-9_-])
			return nil, nil, invalid("/after/"+strconv.Itoa(i), "%q holds a comma, which no tool name the graph learns from can", tool)
		}
	}
	if failedGiven(req) {
		q.Failed = make([]int, 0, len(in.Failed))
		for i, p := range in.Failed {
			if p < 0 || p >= len(q.After) {
				return nil, nil, invalid("/failed/"+strconv.Itoa(i), "%d is not a position in after (0 to %d)", p, len(q.After)-1)
			}
			if slices.Contains(q.Failed, p) {
				// as the route refuses failed=0,0 (both took it silently:
				// a walkthrough's finding)
				return nil, nil, invalid("/failed/"+strconv.Itoa(i), "position %d is given twice", p)
			}
			q.Failed = append(q.Failed, p)
		}
	}
	if n := utf8.RuneCountInString(q.Text); n > maxNextText {
		return nil, nil, invalid("/text", "%d characters, at most %d (the user's last message)", n, maxNextText)
	}
	caller, err := t.callerOf(req)
	if err != nil {
		return nil, nil, err
	}
	if len(caller.ReadScopes) == 0 {
		return nil, nil, errors.New("next_tool: the caller may read no scope")
	}
	out, err := t.opts.Graph.GraphNext(ctx, caller, q)
	if err != nil {
		return nil, nil, toolError("next_tool", err)
	}
	return nil, out, nil
}

// failedGiven reports whether the call's arguments hold failed (even an
// empty list): the outcomes are known then. The decoded input cannot tell
// an empty list from an absent one.
func failedGiven(req *mcp.CallToolRequest) bool {
	if req == nil || req.Params == nil {
		return false
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(req.Params.Arguments, &args) != nil {
		return false
	}
	v, ok := args["failed"]
	return ok && string(v) != "null"
}
