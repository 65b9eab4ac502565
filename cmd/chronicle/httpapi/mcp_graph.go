package httpapi

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
)

var _ mcpserver.GraphTools = mcpAPI{}

// GraphNext is the next_tool tool's backend over the HTTP API (GET
// /v1/graph/next): after=, failed= (present, even empty, when q.Failed is
// non-nil), text=, k= and scope= from q. The answer is the route's object.
func (c *Client) GraphNext(ctx context.Context, q mcpserver.NextQuery) (map[string]any, error) {
	v := url.Values{}
	if len(q.After) > 0 {
		v.Set("after", strings.Join(q.After, ","))
	}
	if q.Failed != nil {
		pos := make([]string, len(q.Failed))
		for i, p := range q.Failed {
			pos[i] = strconv.Itoa(p)
		}
		v.Set("failed", strings.Join(pos, ","))
	}
	if q.Text != "" {
		v.Set("text", q.Text)
	}
	if q.K > 0 {
		v.Set("k", strconv.Itoa(q.K))
	}
	if q.Scope != "" {
		v.Set("scope", q.Scope)
	}
	path := "/v1/graph/next"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out map[string]any
	err := c.do(ctx, "GET", path, nil, &out)
	return out, err
}

// GraphNext implements mcpserver.GraphTools (Client.GraphNext).
func (m mcpAPI) GraphNext(ctx context.Context, c mcpserver.Caller, q mcpserver.NextQuery) (map[string]any, error) {
	return m.client(c).GraphNext(ctx, q)
}
