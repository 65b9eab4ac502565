package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// Improvement is the pair_improvement tool's backend over the HTTP API, for
// `chronicle mcp` on stdio, mirroring the tool over /mcp: POST
// /v1/sessions/{id}/improve (?scope= when given), which starts the loop
// for a session below 95 without a context and waits for it (bounded); when
// that answers 403 (the token may read the session's scope but not write
// it), 405 (a read-only chronicle inspect) or not found (the session does
// not exist), GET
// /v1/sessions/{id}/improvement, which only reads. The service checks the
// token's scopes (404 for another scope's session, reported as not found).
func (c *Client) Improvement(ctx context.Context, sessionID, scope string) (map[string]any, error) {
	seg, err := idPath("session_id", sessionID)
	if err != nil {
		return nil, err
	}
	base := "/v1/sessions/" + seg
	q := ""
	if scope != "" {
		q = "?scope=" + url.QueryEscape(scope)
	}
	var out map[string]any
	err = c.do(ctx, "POST", base+"/improve"+q, map[string]any{}, &out)
	// 405: chronicle inspect, which serves reads only (before, the tool
	// failed there while the GET answered)
	if errors.Is(err, search.ErrNotFound) || hasStatus(err, http.StatusForbidden) || hasStatus(err, http.StatusMethodNotAllowed) {
		out = nil
		err = c.do(ctx, "GET", base+"/improvement"+q, nil, &out)
	}
	return out, err
}
