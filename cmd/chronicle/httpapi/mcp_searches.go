package httpapi

import (
	"context"
	"net/url"
)

// SearchGet is the search_get tool's backend over the HTTP API (GET
// /v1/searches/{id}, ?scope= when given), for `chronicle mcp` on stdio; the
// service checks the token's scopes (404 for another scope's search,
// reported as not found).
func (c *Client) SearchGet(ctx context.Context, id, scope string) (map[string]any, error) {
	seg, err := idPath("search_id", id)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = c.do(ctx, "GET", "/v1/searches/"+seg+scopeQuery(scope), nil, &out)
	return out, err
}

// SearchResume is the search_resume tool's backend over the HTTP API (POST
// /v1/searches/{id}/resume), decided by by (the MCP caller's Source,
// "token:<name>" over serve's /mcp); with by "" (`chronicle mcp` on stdio)
// it is left out and the service records the token's identity,
// "token:<name>". Before, stdio sent "mcp", which the service recorded in
// place of the token's name.
func (c *Client) SearchResume(ctx context.Context, id, scope, decision, note, by string) (map[string]any, error) {
	body := map[string]any{"decision": decision, "note": note}
	if by != "" {
		body["by"] = by
	}
	seg, err := idPath("search_id", id)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = c.do(ctx, "POST", "/v1/searches/"+seg+"/resume"+scopeQuery(scope), body, &out)
	return out, err
}

func scopeQuery(scope string) string {
	if scope == "" {
		return ""
	}
	return "?scope=" + url.QueryEscape(scope)
}
