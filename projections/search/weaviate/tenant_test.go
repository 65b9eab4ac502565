package weaviate

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
)

// scopeLeakDoc is a memory of the tenant-isolation review's repro: every
// vector the same, so that only BM25 tells the documents apart.
func scopeLeakDoc(id, scope, title, content string) search.Doc {
	return search.Doc{ID: id, Scope: scope, Title: title, Description: "a note", Content: content, Outcome: "success",
		Confidence: 0.8, Vector: searchtest.OneHot(0), Model: "searchtest-onehot"}
}

// TestBM25IgnoresOtherScopes is the review's repro on a real Weaviate
// server: project:b holds "Baggage note" (quokkaterm) and "Baggage memo"
// (wombatterm), team:b the same two. A reader of b's scopes searches
// "quokkaterm wombatterm"; the BM25 scores and the order of its
// candidates must not move when project:a, which it cannot read, gains 15
// memories with quokkaterm, then 40 with wombatterm (half in org:a), nor
// when they are deleted again — over GraphQL and gRPC, through
// Candidates and the two-phase path Index takes. On the store that kept
// every scope in one class, b's note fell from BM25 0.34 to 0.04 (Weaviate
// counted N, document frequencies and average lengths over the class).
func TestBM25IgnoresOtherScopes(t *testing.T) {
	srv := sharedServer(t)
	for _, useGRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("grpc=%v", useGRPC), func(t *testing.T) {
			cfg := testConfig(srv)
			if useGRPC {
				cfg.GRPCHost = srv.GRPCHost
			}
			s := newTestStore(t, srv, cfg)
			mine := []search.Doc{
				scopeLeakDoc("note", "project:b", "Baggage note", "quokkaterm handle luggage carefully"),
				scopeLeakDoc("memo", "project:b", "Baggage memo", "wombatterm weigh luggage before check-in"),
				scopeLeakDoc("t-note", "team:b", "Baggage note", "quokkaterm handle luggage carefully"),
				scopeLeakDoc("t-memo", "team:b", "Baggage memo", "wombatterm weigh luggage before check-in"),
			}
			if err := s.Upsert(ctxT(t), mine); err != nil {
				t.Fatal(err)
			}
			readsB := func(sc string) bool { return sc == "project:b" }
			filters := map[string]search.Filter{
				"token reading project:b": {Readable: readsB},
				"one scope project:b":     {ScopeKind: search.ScopeProject, Readable: readsB},
				"b's two scopes":          {Readable: func(sc string) bool { return sc == "project:b" || sc == "team:b" }},
				"team kind, every scope":  {ScopeKind: search.ScopeTeam},
			}
			paths := map[string]search.VectorStore{"Candidates": s, "two-phase": searchtest.TwoPhase(s)}
			const text = "quokkaterm wombatterm"
			type key struct{ path, filter string }
			query := func() map[key][]search.Candidate {
				out := map[key][]search.Candidate{}
				for pn, p := range paths {
					for fn, f := range filters {
						cs, err := p.Candidates(ctxT(t), searchtest.OneHot(1), text, f, 10)
						if err != nil {
							t.Fatal(err)
						}
						if len(cs) != 2 && fn != "b's two scopes" || len(cs) != 4 && fn == "b's two scopes" {
							t.Fatalf("%s, %s: %d candidates: %+v", pn, fn, len(cs), cs)
						}
						out[key{pn, fn}] = cs
					}
				}
				return out
			}
			before := query()
			same := func(step string) {
				t.Helper()
				now := query()
				for k, want := range before {
					got := now[k]
					for i := range want {
						g, w := got[i], want[i]
						if g.ID != w.ID || !g.HasBM25 || math.Abs(g.BM25-w.BM25) > 1e-6*w.BM25 {
							t.Errorf("%s, %s, %s: candidate %d is %s BM25 %.4f, was %s %.4f", step, k.path, k.filter, i, g.ID, g.BM25, w.ID, w.BM25)
						}
					}
				}
			}
			var other []search.Doc
			for i := range 15 {
				other = append(other, scopeLeakDoc(fmt.Sprintf("a-q%02d", i), "project:a", fmt.Sprintf("Other note %d", i), "quokkaterm somewhere else entirely"))
			}
			if err := s.Upsert(ctxT(t), other); err != nil {
				t.Fatal(err)
			}
			same("15 quokkaterm memories in project:a")
			var more []search.Doc
			for i := range 40 {
				sc := "project:a"
				if i%2 == 1 {
					sc = "org:a"
				}
				more = append(more, scopeLeakDoc(fmt.Sprintf("a-w%02d", i), sc, fmt.Sprintf("Other memo %d", i), "wombatterm and many other words of another tenant"))
			}
			if err := s.Upsert(ctxT(t), more); err != nil {
				t.Fatal(err)
			}
			same("40 wombatterm memories in project:a and org:a")
			var ids []string
			for _, d := range append(other, more...) {
				ids = append(ids, d.ID)
			}
			if err := s.Delete(ctxT(t), ids); err != nil {
				t.Fatal(err)
			}
			same("the other tenant's memories deleted")
			if n, err := s.Len(ctxT(t)); err != nil || n != len(mine) {
				t.Fatalf("Len = %d, %v after the deletes, want %d", n, err, len(mine))
			}
		})
	}
}

// TestUpgradeFromOneClass: a store written by the version that kept every
// scope in one class (no scoped classes) is upgraded without losing a
// document: New adds empty scoped classes and leaves the collections as
// they are (Len unchanged), and the index's first sync after start, which
// pushes every document, fills them — a search through the index then
// finds b's memories by BM25 with the scores of a store holding b's
// scopes alone.
func TestUpgradeFromOneClass(t *testing.T) {
	srv := sharedServer(t)
	for _, useGRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("grpc=%v", useGRPC), func(t *testing.T) {
			cfg := testConfig(srv)
			if useGRPC {
				cfg.GRPCHost = srv.GRPCHost
			}
			docs := []search.Doc{
				scopeLeakDoc("note", "project:b", "Baggage note", "quokkaterm handle luggage carefully"),
				scopeLeakDoc("memo", "project:b", "Baggage memo", "wombatterm weigh luggage before check-in"),
			}
			mine := len(docs)
			for i := range 15 {
				docs = append(docs, scopeLeakDoc(fmt.Sprintf("a-q%02d", i), "project:a", fmt.Sprintf("Other note %d", i), "quokkaterm somewhere else entirely"))
			}
			index := func(vs search.VectorStore, docs []search.Doc) *search.Index {
				src := search.Source{Collection: search.Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
					Docs: func(*projections.Store, []string) ([]search.Doc, []string, error) {
						out := slices.Clone(docs)
						for i := range out {
							out[i].Vector, out[i].Model = nil, ""
						}
						return out, nil, nil
					}}
				ps, err := projections.Open(t.TempDir(), projections.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ps.Close() })
				return search.NewIndex(ps, embedder.WordHash{Dims: 32}, vs, src)
			}
			// b's scores on a store holding b's memories alone
			alone := newTestStore(t, srv, testConfig(srv))
			if err := index(alone, docs[:mine]).Sync(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			readsB := search.Filter{Readable: func(sc string) bool { return sc == "project:b" }}
			const text = "quokkaterm wombatterm"
			// The old layout: every document in the collection's class,
			// no scoped class (written here by this version, whose
			// scoped classes are then dropped).
			old := newTestStore(t, srv, cfg)
			if err := index(old, docs).Sync(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{old.memory, old.patterns, old.tools} {
				if err := old.client.Schema().ClassDeleter().WithClassName(c + ScopedSuffix).Do(ctxT(t)); err != nil {
					t.Fatal(err)
				}
			}
			old.Close()
			s, err := New(ctxT(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n, err := s.Len(ctxT(t)); err != nil || n != len(docs) {
				t.Fatalf("after the upgrade: Len = %d, %v, want %d", n, err, len(docs))
			}
			ix := index(s, docs)
			res, err := ix.Search(ctxT(t), search.Query{Text: text, Readable: readsB.Readable, ReadScopes: []string{"project:b"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Memories) != mine {
				t.Fatalf("after the upgrade and the first sync: %d hits, want %d: %+v", len(res.Memories), mine, res.Memories)
			}
			// The index's first sync filled the scoped classes: b's BM25
			// scores are those of b's memories alone.
			want, err := alone.Candidates(ctxT(t), nil, text, readsB, 10)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Candidates(ctxT(t), nil, text, readsB, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != mine || len(want) != mine {
				t.Fatalf("BM25 candidates: %d upgraded, %d alone, want %d", len(got), len(want), mine)
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Abs(got[i].BM25-want[i].BM25) > 1e-6*want[i].BM25 {
					t.Fatalf("candidate %d: upgraded %s BM25 %v, alone %s %v", i, got[i].ID, got[i].BM25, want[i].ID, want[i].BM25)
				}
			}
		})
	}
}

// aloneStores are stores holding docs one scope each (by scope), over
// GraphQL: the reference of a search whose BM25 counts each scope alone.
func aloneStores(t *testing.T, docs []search.Doc) map[string]*Store {
	srv := sharedServer(t)
	byScope := map[string][]search.Doc{}
	for _, d := range docs {
		byScope[d.Scope] = append(byScope[d.Scope], d)
	}
	out := map[string]*Store{}
	for sc, ds := range byScope {
		s := newTestStore(t, srv, testConfig(srv))
		if err := s.Upsert(ctxT(t), ds); err != nil {
			t.Fatal(err)
		}
		out[sc] = s
	}
	return out
}

// scopedLegacyCandidates is what Candidates must return since BM25 is
// counted per scope: the query path before issue 11 (legacyCandidates)
// for the nearVector list on full, and for the bm25 list on each store of
// alone (one scope each, aloneStores) whose scope f admits, those lists
// merged by score (ties by id) and trimmed to k; the two merged by id as
// Candidates merges them.
func scopedLegacyCandidates(t *testing.T, full *Store, alone map[string]*Store, v []float32, text string, f search.Filter, k int) []search.Candidate {
	t.Helper()
	out, err := full.legacyCandidates(ctxT(t), v, "", f, k)
	if err != nil {
		t.Fatal(err)
	}
	var byText []search.Candidate
	for sc, s := range alone {
		if !f.AdmitsScope(sc) {
			continue
		}
		cs, err := s.legacyCandidates(ctxT(t), nil, text, f, k)
		if err != nil {
			t.Fatal(err)
		}
		byText = append(byText, cs...)
	}
	sort.SliceStable(byText, func(i, j int) bool {
		if byText[i].BM25 != byText[j].BM25 {
			return byText[i].BM25 > byText[j].BM25
		}
		return byText[i].ID < byText[j].ID
	})
	at := map[string]int{}
	for i, c := range out {
		at[c.ID] = i
	}
	for _, c := range byText[:min(k, len(byText))] {
		if i, ok := at[c.ID]; ok {
			out[i].BM25, out[i].HasBM25 = c.BM25, true
			continue
		}
		at[c.ID] = len(out)
		out = append(out, c)
	}
	return out
}

// TestScopeMoveLeavesOldTenant: a document upserted with another scope
// leaves its old scope's tenant (the old scope read from the collection's
// class by a store that never saw it), so the old scope's readers no
// longer find it by BM25, nor count it, and Delete finds its tenant.
func TestScopeMoveLeavesOldTenant(t *testing.T) {
	srv := sharedServer(t)
	for _, useGRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("grpc=%v", useGRPC), func(t *testing.T) {
			cfg := testConfig(srv)
			if useGRPC {
				cfg.GRPCHost = srv.GRPCHost
			}
			s := newTestStore(t, srv, cfg)
			docs := []search.Doc{
				scopeLeakDoc("note", "project:b", "Baggage note", "quokkaterm handle luggage carefully"),
				scopeLeakDoc("memo", "project:b", "Baggage memo", "quokkaterm weigh luggage before check-in"),
			}
			if err := s.Upsert(ctxT(t), docs); err != nil {
				t.Fatal(err)
			}
			readsB := search.Filter{Readable: func(sc string) bool { return sc == "project:b" }}
			readsA := search.Filter{Readable: func(sc string) bool { return sc == "project:a" }}
			alone := newTestStore(t, srv, testConfig(srv))
			if err := alone.Upsert(ctxT(t), docs[1:]); err != nil {
				t.Fatal(err)
			}
			want, err := alone.Candidates(ctxT(t), nil, "quokkaterm luggage", readsB, 10)
			if err != nil {
				t.Fatal(err)
			}
			other, err := New(ctxT(t), cfg) // another process: a cold cache
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			moved := docs[0]
			moved.Scope = "project:a"
			if err := other.Upsert(ctxT(t), []search.Doc{moved}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Candidates(ctxT(t), nil, "quokkaterm luggage", readsB, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || len(want) != 1 || got[0].ID != "memo" || math.Abs(got[0].BM25-want[0].BM25) > 1e-6*want[0].BM25 {
				t.Fatalf("project:b after the move: %+v, want memo alone with BM25 %+v", got, want)
			}
			if got, err := s.Candidates(ctxT(t), nil, "quokkaterm", readsA, 10); err != nil || len(got) != 1 || got[0].ID != "note" {
				t.Fatalf("project:a after the move: %+v, %v, want note", got, err)
			}
			third, err := New(ctxT(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer third.Close()
			if err := third.Delete(ctxT(t), []string{"note"}); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Candidates(ctxT(t), nil, "quokkaterm", readsA, 10); err != nil || len(got) != 0 {
				t.Fatalf("project:a after the delete: %+v, %v, want nothing", got, err)
			}
		})
	}
}

// TestTenantNames: every scope's tenant name is a valid Weaviate tenant
// name, distinct scopes get distinct names, and names decode back (but
// the hashed ones of long scopes, which do not decode).
func TestTenantNames(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9\-_]{1,64}$`)
	scopes := []string{"project:p1", "project:P1", "team:a_b", "team:a__b", "team:a_5fb", "org:*", "org:default", "projectx:1",
		"project:a.b-c", "", "_", "__", "x", "project:" + strings.Repeat("z", 70), "project:" + strings.Repeat("z", 71), "ünïcode:ß"}
	seen := map[string]string{}
	for _, sc := range scopes {
		name := tenantName(sc)
		if !valid.MatchString(name) {
			t.Errorf("%q: tenant %q is not a valid tenant name", sc, name)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("%q and %q share tenant %q", sc, other, name)
		}
		seen[name] = sc
		back, ok := scopeOfTenant(name)
		if hashed := strings.HasPrefix(name, "_h"); hashed == ok || ok && back != sc {
			t.Errorf("%q: tenant %q decodes to %q, %v", sc, name, back, ok)
		}
	}
	if got := tenantName("project:p1"); got != "project_3ap1" {
		t.Errorf("tenant of project:p1 = %q, want project_3ap1", got)
	}
}
