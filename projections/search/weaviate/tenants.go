package weaviate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// BM25 per scope (tenant-isolation review). Weaviate takes BM25's
// statistics — the document count N, each term's document frequency and
// each property's average length — over a shard, whatever the query's
// filter; a class without multi-tenancy is one shard holding every scope,
// so one tenant's memories moved another's BM25 scores and order (b's
// note 0.3431, then 0.0400 after another scope's 15 memories with its
// word). So every collection has a second class, its scoped class (the
// collection's name and ScopedSuffix), with multi-tenancy on and one
// tenant per scope (tenantName): each tenant is a shard of its own, with
// its own statistics. It holds the same properties as the collection but
// no vector (its vector index is skipped), and the same object UUIDs. The
// bm25 pass of a search runs in each tenant of a scope the filter admits
// (search.Filter.AdmitsScope) and merges their lists by score: a
// document's score depends on the documents of its own scope only, and a
// reader's list on the scopes it may read only. The nearVector pass stays
// on the collection's class with the scope filter pushed down: a cosine
// depends on the query and the document alone.

// ScopedSuffix is appended to a collection's class name (with its
// ClassPrefix) for its scoped class: MemoryByScope, and so on.
const ScopedSuffix = "ByScope"

// maxTenantName is the longest tenant name Weaviate accepts
// ([A-Za-z0-9_-]{1,64}, entities/schema ShardNameRegexCore).
const maxTenantName = 64

// tenantName is the tenant of scope: its letters, digits and '-' as they
// are, '_' as "__" and every other byte as '_' and two lower-case hex
// digits ("project:p1" is project_3ap1), so names never collide and
// decode back (scopeOfTenant); a name that would be longer than 64
// characters is "_h" and the first 40 hex digits of the scope's SHA-256
// instead ("_h" is no escape), whose scope is read from one of its objects.
func tenantName(scope string) string {
	var b strings.Builder
	for i := 0; i < len(scope); i++ {
		c := scope[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-':
			b.WriteByte(c)
		case c == '_':
			b.WriteString("__")
		default:
			b.WriteByte('_')
			b.WriteString(hex.EncodeToString([]byte{c}))
		}
	}
	if b.Len() == 0 || b.Len() > maxTenantName {
		h := sha256.Sum256([]byte(scope))
		return "_h" + hex.EncodeToString(h[:])[:40]
	}
	return b.String()
}

// scopeOfTenant decodes a tenantName; ok is false for a hashed name (or
// one this package did not make).
func scopeOfTenant(name string) (scope string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(name) && name[i+1] == '_' {
			b.WriteByte('_')
			i++
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		x, err := hex.DecodeString(name[i+1 : i+3])
		if err != nil || strings.ToLower(name[i+1:i+3]) != name[i+1:i+3] {
			return "", false
		}
		b.WriteByte(x[0])
		i += 2
	}
	return b.String(), b.Len() > 0
}

// tenantRefresh is how long a scoped class's tenant list is trusted
// before a search reads it again: a tenant another process created (a
// scope this one never wrote) is searched at most this long after.
const tenantRefresh = time.Second

// tenantSet is the scopes a scoped class holds a tenant for: read from
// the server (its tenant list) at most every tenantRefresh, and grown by
// every Upsert of this process.
type tenantSet struct {
	mu      sync.Mutex
	scopes  map[string]bool
	hashed  map[string]string // hashed tenant name → its scope
	fetched time.Time
}

func (ts *tenantSet) add(scopes ...string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, sc := range scopes {
		ts.scopes[sc] = true
	}
}

// queryClass is the class the candidate queries of s go to: the scoped
// class when s is bound to a tenant, else the collection's.
func (s *Store) queryClass() string {
	if s.tenant != "" {
		return s.text
	}
	return s.class
}

// scopedTenants are the scopes f admits (AdmitsScope) among those the
// served collection's scoped class holds a tenant for, sorted; the tenant
// list is read again when older than tenantRefresh.
func (s *Store) scopedTenants(ctx context.Context, f search.Filter) ([]string, error) {
	ts := s.tenants[s.text]
	ts.mu.Lock()
	stale := time.Since(ts.fetched) > tenantRefresh
	ts.mu.Unlock()
	if stale {
		var list []models.Tenant
		err := s.retry(ctx, "list tenants", func(ctx context.Context) error {
			var err error
			list, err = s.client.Schema().TenantsGetter().WithClassName(s.text).Do(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		var unknown []string
		ts.mu.Lock()
		for _, t := range list {
			if sc, ok := scopeOfTenant(t.Name); ok {
				ts.scopes[sc] = true
			} else if sc, ok := ts.hashed[t.Name]; ok {
				ts.scopes[sc] = true
			} else {
				unknown = append(unknown, t.Name)
			}
		}
		ts.mu.Unlock()
		for _, name := range unknown {
			sc, err := s.tenantScope(ctx, name)
			if err != nil {
				return nil, err
			}
			if sc != "" && tenantName(sc) == name {
				ts.mu.Lock()
				ts.hashed[name], ts.scopes[sc] = sc, true
				ts.mu.Unlock()
			}
		}
		ts.mu.Lock()
		ts.fetched = time.Now()
		ts.mu.Unlock()
	}
	ts.mu.Lock()
	var out []string
	for sc := range ts.scopes {
		if f.AdmitsScope(sc) {
			out = append(out, sc)
		}
	}
	ts.mu.Unlock()
	sort.Strings(out)
	return out, nil
}

// tenantScope is the scope of one object of tenant name in the scoped
// class ("" when it holds none: then it has nothing to search).
func (s *Store) tenantScope(ctx context.Context, name string) (string, error) {
	var out struct {
		Get map[string][]hit `json:"Get"`
	}
	get := s.client.GraphQL().Get().WithClassName(s.text).WithTenant(name).WithLimit(1).WithFields(graphql.Field{Name: "scope"})
	if err := s.query(ctx, "read a tenant's scope", get.Do, &out); err != nil {
		return "", err
	}
	if rows := out.Get[s.text]; len(rows) > 0 {
		return rows[0].Scope, nil
	}
	return "", nil
}

// bm25 is the bm25 pass over the scoped class: one query in each tenant
// of a scope f admits (at most four at a time), each limited to k, their
// lists merged by score (ties by id) and trimmed to k. With refs the
// documents hold their id and scope only (CandidateRefs). Without, a
// query in one tenant reads the whole documents as the collection's
// pass does; over several tenants the queries ask for refs only, and the
// whole documents of the k merged ones are read after (Docs: one query
// instead of k documents from each tenant).
func (s *Store) bm25(ctx context.Context, text string, f search.Filter, k int, refs bool) ([]scored, error) {
	scopes, err := s.scopedTenants(ctx, f)
	if err != nil {
		return nil, err
	}
	light := refs || len(scopes) > 1
	lists := make([][]scored, len(scopes))
	errs := make([]error, len(scopes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for i, sc := range scopes {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			t := *s
			t.tenant = tenantName(sc)
			lists[i], errs[i] = t.search(ctx, "bm25", nil, nil, text, f, k, light)
			if isTenantMissing(errs[i]) { // every object of the scope deleted with its tenant meanwhile
				lists[i], errs[i] = nil, nil
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []scored
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].doc.ID < out[j].doc.ID
	})
	out = out[:min(k, len(out))]
	if refs || !light || len(out) == 0 {
		return out, nil
	}
	ids := make([]string, len(out))
	for i := range out {
		ids[i] = out[i].doc.ID
	}
	docs, err := s.Docs(ctx, ids, f)
	if err != nil {
		return nil, err
	}
	whole := out[:0]
	for _, c := range out {
		if d, ok := docs[c.doc.ID]; ok { // else deleted, or changed past f, since the query
			c.doc = d
			whole = append(whole, c)
		}
	}
	return whole, nil
}

// isTenantMissing reports whether err is the server's refusal of a tenant
// that does not exist.
func isTenantMissing(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "tenant not found")
}

// scopedObject is o (an object of the collection's class) as its scoped
// class holds it: the same UUID and properties, in its scope's tenant,
// without the vector.
func (s *Store) scopedObject(o *models.Object) *models.Object {
	scope, _ := o.Properties.(map[string]any)["scope"].(string)
	return &models.Object{Class: s.text, ID: o.ID, Tenant: tenantName(scope), Properties: o.Properties}
}

// knownScopes are the scopes the collection's class holds for uuids (an
// absent object has none): from the refCache, the others read in one
// query per cfg.MaxFetch of them.
func (s *Store) knownScopes(ctx context.Context, uuids []string) (map[string]string, error) {
	cache := s.refs[s.class]
	_, unknown := cache.get(uuids)
	for start := 0; start < len(unknown); start += s.cfg.MaxFetch {
		chunk := unknown[start:min(start+s.cfg.MaxFetch, len(unknown))]
		var found []hit
		err := s.retry(ctx, "look up scopes", func(ctx context.Context) error {
			var err error
			if s.grpc != nil {
				found, err = s.grpc.search(ctx, s.class, "", s.idProp, nil, "", pbTexts("_id", chunk), len(chunk), []string{s.idProp, "scope"}, true)
				return err
			}
			var out struct {
				Get map[string][]hit `json:"Get"`
			}
			get := s.client.GraphQL().Get().WithClassName(s.class).WithLimit(len(chunk)).
				WithWhere(filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(chunk...)).
				WithFields(graphql.Field{Name: s.idProp}, graphql.Field{Name: "scope"}, graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "id"}}})
			if err := s.postGraphQL(ctx, get.Build(), &out); err != nil {
				return err
			}
			found = out.Get[s.class]
			for i := range found {
				found[i].UUID = found[i].Additional.ID
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i := range found {
			cache.put(found[i].UUID, ref{found[i].MemoryID + found[i].PatternID + found[i].ToolID, found[i].Scope})
		}
	}
	refs, _ := cache.get(uuids)
	out := make(map[string]string, len(uuids))
	for i, u := range uuids {
		if refs[i].scope != "" || refs[i].id != "" {
			out[u] = refs[i].scope
		}
	}
	return out, nil
}

// deleteScoped deletes the objects with uuids from tenant scope of the
// scoped class (a missing tenant or object is no error).
func (s *Store) deleteScoped(ctx context.Context, scope string, uuids []string) error {
	where := filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(uuids...)
	return s.retry(ctx, "batch delete in scope "+scope, func(ctx context.Context) error {
		_, err := s.client.Batch().ObjectsBatchDeleter().WithClassName(s.text).WithTenant(tenantName(scope)).WithWhere(where).WithOutput("minimal").Do(ctx)
		if isTenantMissing(err) || statusOf(err) == http.StatusNotFound {
			return nil
		}
		return err
	})
}

// uuidsOf are the object UUIDs of objs.
func uuidsOf(objs []*models.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = string(o.ID)
	}
	return out
}
