package weaviate

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// A server that lost the collections (restarted with its data wiped).
//
// Before, such a server answered every search "could not find class
// Memory in schema" for good, while /healthz said ok with nothing pending,
// and the first write after it let Weaviate's auto-schema create the
// classes itself: the scoped ones without multi-tenancy, so every later
// write and search failed ("has multi-tenancy disabled, but request was
// with tenant"), across restarts of serve (a walkthrough, 2026-11-30).
// Now an operation that finds its class gone creates the schema again
// (ensureSchema), forgets what the store knew of the server's scopes,
// tenants and objects, and fails wrapping search.ErrStoreReset, on which
// the index pushes every document again; an upsert checks that its
// classes exist first (at most once per PresenceCheckInterval), so that
// no write reaches the server's auto-schema before the schema is back;
// and ensureSchema refuses a scoped class without multi-tenancy, naming
// it and the way out.

// PresenceCheckInterval is how often at most an upsert checks that its
// collection's classes exist on the server (two schema reads), so that a
// server restarted empty gets Chronicle's schema before any write reaches
// its auto-schema.
const PresenceCheckInterval = 2 * time.Second

// schemaGuard is shared by the Stores of one server (Collection's copies):
// one re-creation at a time, and the time each class was last seen
// present.
type schemaGuard struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// goneClass matches the server's words for a class it does not have: the
// gRPC search's, GraphQL's (the class is no field of Get; no schema at
// all, no GraphQL provider) and a REST write's without auto-schema.
var goneClass = regexp.MustCompile(`could not find class|Cannot query field "[A-Za-z0-9_]+" on type "GetObjectsObj"|no graphql provider present|class "?[A-Za-z0-9_]+"? (was )?not found`)

// lost is err, or, when err says the store's class is gone from the
// server, the schema created again and an error wrapping
// search.ErrStoreReset and err.
func (s *Store) lost(ctx context.Context, err error) error {
	if err == nil || !goneClass.MatchString(err.Error()) {
		return err
	}
	if rerr := s.recreate(ctx); rerr != nil {
		return fmt.Errorf("weaviate: collection %s is gone from the server, and creating it again failed: %w (after: %w)", s.class, rerr, err)
	}
	return fmt.Errorf("weaviate: collection %s was gone from the server (restarted with its data wiped?): the schema is created again: %w; the operation failed: %w", s.class, search.ErrStoreReset, err)
}

// present checks, at most once per PresenceCheckInterval, that the
// store's class and scoped class exist on the server; when one does not,
// it creates the schema again and returns an error wrapping
// search.ErrStoreReset.
func (s *Store) present(ctx context.Context) error {
	s.guard.mu.Lock()
	last := s.guard.seen[s.class]
	s.guard.mu.Unlock()
	if time.Since(last) < PresenceCheckInterval {
		return nil
	}
	for _, class := range []string{s.class, s.text} {
		var missing bool
		err := s.retry(ctx, "get collection "+class, func(ctx context.Context) error {
			_, err := s.client.Schema().ClassGetter().WithClassName(class).Do(ctx)
			if statusOf(err) == http.StatusNotFound {
				missing = true
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		if missing {
			if err := s.recreate(ctx); err != nil {
				return fmt.Errorf("weaviate: collection %s is gone from the server, and creating it again failed: %w", class, err)
			}
			return fmt.Errorf("weaviate: collection %s was gone from the server (restarted with its data wiped?): the schema is created again: %w", class, search.ErrStoreReset)
		}
	}
	s.guard.mu.Lock()
	s.guard.seen[s.class] = time.Now()
	s.guard.mu.Unlock()
	return nil
}

// recreate runs ensureSchema and forgets what the store knew of the
// server's content: the scopes each collection holds, the tenants of the
// scoped classes, the object references.
func (s *Store) recreate(ctx context.Context) error {
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	if err := s.ensureSchema(ctx); err != nil {
		return err
	}
	for _, ss := range s.scopes {
		ss.mu.Lock()
		ss.seeded, ss.known = false, map[string]bool{}
		ss.mu.Unlock()
	}
	for _, ts := range s.tenants {
		ts.mu.Lock()
		ts.scopes, ts.hashed, ts.fetched = map[string]bool{}, map[string]string{}, time.Time{}
		ts.mu.Unlock()
	}
	for _, rc := range s.refs {
		rc.mu.Lock()
		rc.byUUID = map[string]ref{}
		rc.mu.Unlock()
	}
	clear(s.guard.seen)
	return nil
}
