package httpapi

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
)

// searchQuery, which the memory, pattern and tool searches read their
// parameters with, gives the query the token's read scopes as ReadScopes
// next to its Readable: the index partitions its query-vector cache by
// them (search.Query.ReadScopes, tenant-isolation review). Only the
// memory search used to set them; without them the index caches no
// pattern or tool search at all.
func TestSearchQueryCarriesReadScopes(t *testing.T) {
	tok := access.Caller{Name: "b", Read: []string{"project:b", "team:b"}}
	r := httptest.NewRequest("GET", "/v1/patterns/search?query=quokkaterm", nil)
	r = r.WithContext(context.WithValue(r.Context(), callerKey{}, tok))
	q, ok := searchQuery(httptest.NewRecorder(), r)
	if !ok {
		t.Fatal("refused")
	}
	if !slices.Equal(q.ReadScopes, tok.Read) || q.Readable == nil || !q.Readable("team:b") || q.Readable("project:a") {
		t.Fatalf("ReadScopes %v, want the token's %v with its Readable", q.ReadScopes, tok.Read)
	}
}
