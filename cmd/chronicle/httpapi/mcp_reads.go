package httpapi

import (
	"context"
	"net/url"
	"strconv"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
)

var (
	_ mcpserver.ReadTools = mcpAPI{}
	_ mcpserver.ReadTools = ClientTools{}
)

// MemoryList is the memory_list tool's backend over the HTTP API (GET
// /v1/memories with scope=, limit= and cursor= when given): the route's
// object, {memories, next_cursor}. The service checks the token's scopes
// (one scope it does not read: a 403 naming scope).
func (c *Client) MemoryList(ctx context.Context, scope string, limit int, cursor string) (map[string]any, error) {
	v := url.Values{}
	if scope != "" {
		v.Set("scope", scope)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	var out map[string]any
	err := c.do(ctx, "GET", withQuery("/v1/memories", v), nil, &out)
	return out, err
}

// PatternGet is the pattern_get tool's backend over the HTTP API (GET
// /v1/patterns/{id}); a pattern of a scope the token does not read is
// the route's 404, reported as not found.
func (c *Client) PatternGet(ctx context.Context, id string) (map[string]any, error) {
	seg, err := idPath("pattern_id", id)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = c.do(ctx, "GET", "/v1/patterns/"+seg, nil, &out)
	return out, err
}

// PatternHistory is the pattern_history tool's backend over the HTTP API
// (GET /v1/patterns/{id}/history with limit= and cursor= when given).
func (c *Client) PatternHistory(ctx context.Context, id string, limit int, cursor string) (map[string]any, error) {
	seg, err := idPath("pattern_id", id)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	var out map[string]any
	err = c.do(ctx, "GET", withQuery("/v1/patterns/"+seg+"/history", v), nil, &out)
	return out, err
}

// withQuery is path with v as its query ("" when v is empty).
func withQuery(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// MemoryList implements mcpserver.ReadTools (Client.MemoryList).
func (t ClientTools) MemoryList(ctx context.Context, _ mcpserver.Caller, scope string, limit int, cursor string) (map[string]any, error) {
	return t.Client.MemoryList(ctx, scope, limit, cursor)
}

// PatternGet implements mcpserver.ReadTools (Client.PatternGet).
func (t ClientTools) PatternGet(ctx context.Context, _ mcpserver.Caller, id string) (map[string]any, error) {
	return t.Client.PatternGet(ctx, id)
}

// PatternHistory implements mcpserver.ReadTools (Client.PatternHistory).
func (t ClientTools) PatternHistory(ctx context.Context, _ mcpserver.Caller, id string, limit int, cursor string) (map[string]any, error) {
	return t.Client.PatternHistory(ctx, id, limit, cursor)
}

// MemoryList implements mcpserver.ReadTools: GET /v1/memories through
// this server's own API as the caller.
func (m mcpAPI) MemoryList(ctx context.Context, c mcpserver.Caller, scope string, limit int, cursor string) (map[string]any, error) {
	return m.client(c).MemoryList(ctx, scope, limit, cursor)
}

// PatternGet implements mcpserver.ReadTools: GET /v1/patterns/{id}
// through this server's own API as the caller.
func (m mcpAPI) PatternGet(ctx context.Context, c mcpserver.Caller, id string) (map[string]any, error) {
	return m.client(c).PatternGet(ctx, id)
}

// PatternHistory implements mcpserver.ReadTools: GET
// /v1/patterns/{id}/history through this server's own API as the caller.
func (m mcpAPI) PatternHistory(ctx context.Context, c mcpserver.Caller, id string, limit int, cursor string) (map[string]any, error) {
	return m.client(c).PatternHistory(ctx, id, limit, cursor)
}
