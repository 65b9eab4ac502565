package weaviate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
	"github.com/weaviate/weaviate/entities/models"
)

// A server that loses Chronicle's collections (restarted with its data
// wiped; here, the classes deleted): the next search fails wrapping
// search.ErrStoreReset and the schema is Chronicle's again (scoped classes
// multi-tenant), so the documents written after it are found; a write
// that comes first finds the classes gone, creates them before any object
// reaches the server's auto-schema, and fails the same way. A scoped class
// without multi-tenancy (what the auto-schema made) is refused at start,
// named. Before, every search answered "could not find class" for good,
// and the auto-schema's classes broke every later write and search (a
// walkthrough, 2026-11-30).
func TestServerLostItsSchema(t *testing.T) {
	srv := sharedServer(t)
	doc := scopeLeakDoc("note", "project:b", "Baggage note", "quokkaterm handle luggage carefully")
	readsB := search.Filter{Readable: func(sc string) bool { return sc == "project:b" }}
	for _, useGRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("grpc=%v", useGRPC), func(t *testing.T) {
			cfg := testConfig(srv)
			if useGRPC {
				cfg.GRPCHost = srv.GRPCHost
			}
			s := newTestStore(t, srv, cfg)
			ctx := ctxT(t)
			found := func() bool {
				t.Helper()
				cs, err := s.Candidates(ctx, searchtest.OneHot(0), "quokkaterm", readsB, 10)
				if err != nil {
					t.Fatalf("Candidates: %v", err)
				}
				return len(cs) == 1 && cs[0].Doc.ID == "note"
			}
			multiTenant := func() {
				t.Helper()
				c, err := s.client.Schema().ClassGetter().WithClassName(s.text).Do(ctx)
				if err != nil || c.MultiTenancyConfig == nil || !c.MultiTenancyConfig.Enabled {
					t.Fatalf("scoped class %s: %+v, %v; want it multi-tenant", s.text, c, err)
				}
			}
			if err := s.Upsert(ctx, []search.Doc{doc}); err != nil || !found() {
				t.Fatalf("before: %v", err)
			}
			// a search first
			if err := s.Drop(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := s.Candidates(ctx, searchtest.OneHot(0), "quokkaterm", readsB, 10)
			if !errors.Is(err, search.ErrStoreReset) {
				t.Fatalf("search on the emptied server: %v; want search.ErrStoreReset", err)
			}
			multiTenant()
			if err := s.Upsert(ctx, []search.Doc{doc}); err != nil || !found() {
				t.Fatalf("written again after the reset: %v", err)
			}
			// a write first (once PresenceCheckInterval has passed since
			// the classes were last seen: forgotten here)
			if err := s.Drop(ctx); err != nil {
				t.Fatal(err)
			}
			s.guard.mu.Lock()
			clear(s.guard.seen)
			s.guard.mu.Unlock()
			if err := s.Upsert(ctx, []search.Doc{doc}); !errors.Is(err, search.ErrStoreReset) {
				t.Fatalf("write on the emptied server: %v; want search.ErrStoreReset", err)
			}
			multiTenant()
			if err := s.Upsert(ctx, []search.Doc{doc}); err != nil || !found() {
				t.Fatalf("written again after the reset: %v", err)
			}
		})
	}
	// what the auto-schema left: refused at start, named, with the way out
	cfg := testConfig(srv)
	s := newTestStore(t, srv, cfg)
	ctx := ctxT(t)
	if err := s.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Schema().ClassCreator().WithClass(&models.Class{Class: s.text}).Do(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := New(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), s.text+" exists without multi-tenancy") || !strings.Contains(err.Error(), "DELETE") {
		t.Fatalf("New over a scoped class without multi-tenancy: %v; want a refusal naming it", err)
	}
}
