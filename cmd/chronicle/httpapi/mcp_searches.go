package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// mcpSearches is the backend of the search_get and search_resume MCP tools
// on the server's own store and producer: a search is resolved like GET
// /v1/searches/{id} (scope given, else the one scope of the caller's that
// holds the id: readable scopes for search_get, writable ones for
// search_resume), and one the caller may not reach is "not found", as a
// missing one.
type mcpSearches struct{ s *Server }

// key resolves the search key of id for a caller allowed the
// scopes can grants.
func (m mcpSearches) key(id, scope string, can func(string) bool) (string, error) {
	if err := events.CheckID(id); err != nil {
		return "", fmt.Errorf("%w: search_id: %v", search.ErrInvalid, err)
	}
	notFound := error(entityNotFound{"search", id})
	if scope != "" {
		if !events.ValidScope(scope) {
			return "", fmt.Errorf("%w: scope: %q is not project:<id>, team:<id> or org:<id>", search.ErrInvalid, scope)
		}
		if !can(scope) {
			return "", notFound
		}
		return events.EntityKey(scope, id), nil
	}
	all, err := treesearch.Scopes(m.s.P.Store, id)
	if err != nil {
		return "", err
	}
	var held []string
	for _, sc := range all {
		if can(sc) {
			held = append(held, sc)
		}
	}
	switch len(held) {
	case 0:
		return "", notFound
	case 1:
		return events.EntityKey(held[0], id), nil
	}
	return "", fmt.Errorf("%w: scope: search %q exists in several of your scopes (%s)", search.ErrInvalid, id, strings.Join(held, ", "))
}

func allows(scopes []string) func(string) bool {
	return func(sc string) bool {
		return slices.Contains(scopes, mcpserver.AllScopes) || slices.Contains(scopes, sc)
	}
}

func (m mcpSearches) get(id, scope string, scopes []string) (string, treesearch.Search, error) {
	key, err := m.key(id, scope, allows(scopes))
	if err != nil {
		return "", treesearch.Search{}, err
	}
	sr, ok, err := treesearch.Get(m.s.P.Store, key)
	if err != nil {
		return "", sr, err
	}
	if !ok {
		return "", sr, entityNotFound{"search", id}
	}
	return key, sr, nil
}

// SearchGet implements mcpserver.SearchTools.
func (m mcpSearches) SearchGet(_ context.Context, c mcpserver.Caller, id, scope string) (map[string]any, error) {
	key, sr, err := m.get(id, scope, c.ReadScopes)
	if err != nil {
		return nil, err
	}
	return asMap(m.s.searchView(key, sr))
}

// SearchResume implements mcpserver.SearchTools.
func (m mcpSearches) SearchResume(ctx context.Context, c mcpserver.Caller, id, scope, decision, note string) (map[string]any, error) {
	if decision != "approve" && decision != "reject" {
		return nil, fmt.Errorf("%w: decision: %q is not approve or reject", search.ErrInvalid, decision)
	}
	key, sr, err := m.get(id, scope, c.WriteScopes)
	if err != nil {
		return nil, err
	}
	if sr.Status != treesearch.StatusPaused {
		return nil, fmt.Errorf("search %q is %s, not paused", id, sr.Status)
	}
	return m.s.publishResume(ctx, key, sr, decision, note, c.Source)
}

func asMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// SearchGet is the search_get tool's backend over the HTTP API (GET
// /v1/searches/{id}, ?scope= when given), for `chronicle mcp` on stdio; the
// service checks the token's scopes (404 for another scope's search,
// reported as not found).
func (c *Client) SearchGet(ctx context.Context, _ mcpserver.Caller, id, scope string) (map[string]any, error) {
	var out map[string]any
	err := c.do(ctx, "GET", "/v1/searches/"+url.PathEscape(id)+scopeQuery(scope), nil, &out)
	return out, err
}

// SearchResume is the search_resume tool's backend over the HTTP API (POST
// /v1/searches/{id}/resume).
func (c *Client) SearchResume(ctx context.Context, _ mcpserver.Caller, id, scope, decision, note string) (map[string]any, error) {
	var out map[string]any
	err := c.do(ctx, "POST", "/v1/searches/"+url.PathEscape(id)+"/resume"+scopeQuery(scope), map[string]any{"decision": decision, "note": note, "by": "mcp"}, &out)
	return out, err
}

func scopeQuery(scope string) string {
	if scope == "" {
		return ""
	}
	return "?scope=" + url.QueryEscape(scope)
}
