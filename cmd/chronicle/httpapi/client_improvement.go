package httpapi

import (
	"context"
	"net/url"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
)

// Improvement is the pair_improvement tool's backend over the HTTP API
// (GET /v1/sessions/{id}/improvement, ?scope= when given), for `chronicle
// mcp` on stdio; the service checks the token's scopes (404 for another
// scope's session, reported as not found).
func (c *Client) Improvement(ctx context.Context, _ mcpserver.Caller, sessionID, scope string) (map[string]any, error) {
	path := "/v1/sessions/" + url.PathEscape(sessionID) + "/improvement"
	if scope != "" {
		path += "?scope=" + url.QueryEscape(scope)
	}
	var out map[string]any
	err := c.do(ctx, "GET", path, nil, &out)
	return out, err
}
