// Package searchtest is the conformance suite every search.VectorStore
// must pass: the embedded MemStore and the Weaviate store run the same
// expectations, so Index ranks the same memories whichever store holds
// them.
//
// The suite builds its documents from small hand-made Dim-dimensional unit
// vectors (one-hot vectors and normalised mixes of them), so the expected
// nearest-vector order is known exactly, and from short texts whose BM25
// winners are obvious. It compares candidates by id and by their HasCosine
// and HasBM25 flags; Cosine values are compared with a tolerance of
// CosineTolerance (stores may keep float32 distances), BM25 values only by
// order (each store has its own BM25 numbers; Index normalises them by the
// largest among the candidates).
//
// Every candidate must come from one of the two lists (HasCosine or
// HasBM25), be returned once, carry no vector, and have zero for the
// score of a list it is not in; a BM25 candidate has a positive score.
package searchtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// Dim is the dimension of the suite's vectors: the 512 of the embedded
// USE-lite model.
const Dim = 512

// CosineTolerance is how far a store's Cosine may be from the exact dot
// product of the suite's float32 unit vectors.
const CosineTolerance = 1e-4

// Timeout bounds each store call the suite makes.
const Timeout = 30 * time.Second

// OneHot is the unit vector with a 1 at index i (0 ≤ i < Dim).
func OneHot(i int) []float32 {
	v := make([]float32, Dim)
	v[i] = 1
	return v
}

// Mix is the unit vector along Σ w[i]·e_i, for the one-hot vectors e_i: a
// vector whose cosine with OneHot(i) is w[i]/‖w‖. It panics on a zero
// mix.
func Mix(w map[int]float64) []float32 {
	var n float64
	for _, x := range w {
		n += x * x
	}
	if n == 0 {
		panic("searchtest: Mix of nothing")
	}
	n = math.Sqrt(n)
	v := make([]float32, Dim)
	for i, x := range w {
		v[i] = float32(x / n)
	}
	return v
}

// Dot is the dot product of a and b (their cosine for unit vectors), 0
// when their lengths differ.
func Dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

// Run runs the conformance suite as subtests of t. newStore must return a
// new, empty store each time it is called (one per subtest) and arrange
// its cleanup on the t it is given.
func Run(t *testing.T, newStore func(t *testing.T) search.VectorStore) {
	t.Run("EmptyStore", func(t *testing.T) { testEmpty(t, newStore(t)) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("UpsertIdempotent", func(t *testing.T) { testUpsertIdempotent(t, newStore(t)) })
	t.Run("UpsertSameIDInOneBatch", func(t *testing.T) { testSameIDInBatch(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newStore(t)) })
	t.Run("Filters", func(t *testing.T) { testFilters(t, newStore(t)) })
	t.Run("PrunedNeverReturned", func(t *testing.T) { testPruned(t, newStore(t)) })
	t.Run("ReadableBeyondOverFetch", func(t *testing.T) { testReadableDeep(t, newStore(t)) })
	t.Run("NearestVectorOrder", func(t *testing.T) { testNearest(t, newStore(t)) })
	t.Run("BM25", func(t *testing.T) { testBM25(t, newStore(t)) })
	t.Run("MergeByID", func(t *testing.T) { testMerge(t, newStore(t)) })
	t.Run("KLimits", func(t *testing.T) { testKLimits(t, newStore(t)) })
}

// TwoPhase is s answering Candidates as Index reads a search.DocStore:
// CandidateRefs, then Docs of every candidate, each candidate's whole
// document put in place of its ref (a candidate Docs no longer finds is
// left out). Run on it checks the two-phase path against the suite's
// expectations: the same candidates, scores, flags and documents as
// Candidates. Its Candidates fails when a ref's ID or Scope (what the
// ranking reads before Docs) differs from its document's.
func TwoPhase(s search.DocStore) search.VectorStore { return twoPhase{s} }

type twoPhase struct{ search.DocStore }

func (p twoPhase) Candidates(ctx context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	refs, err := p.CandidateRefs(ctx, v, text, f, k)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(refs))
	for i, c := range refs {
		ids[i] = c.ID
	}
	docs, err := p.Docs(ctx, ids, f)
	if err != nil {
		return nil, err
	}
	var out []search.Candidate
	for _, c := range refs {
		d, ok := docs[c.ID]
		if !ok {
			continue
		}
		if d.ID != c.ID || d.Scope != c.Scope {
			return nil, fmt.Errorf("ref %q in %q differs from its document's id or scope (%q, %q)", c.ID, c.Scope, d.ID, d.Scope)
		}
		c.Doc = d
		out = append(out, c)
	}
	return out, nil
}

// RunMulti runs the suite against every collection of the MultiStores
// newStore makes (each call a new, empty one), then checks that the
// collections are independent: the same id in two collections is two
// documents, and writes to one never show in another.
func RunMulti(t *testing.T, newStore func(t *testing.T) search.MultiStore) {
	for _, c := range search.Collections() {
		t.Run(string(c), func(t *testing.T) {
			Run(t, func(t *testing.T) search.VectorStore { return newStore(t).Collection(c) })
		})
	}
	t.Run("CollectionsIndependent", func(t *testing.T) { testIndependent(t, newStore(t)) })
}

func testIndependent(t *testing.T, ms search.MultiStore) {
	if ms.Collection("NoSuchCollection") != nil {
		t.Fatal("Collection of an unknown name is not nil")
	}
	if ms.Collection(search.Memories) == nil || ms.Collection(search.Patterns) == nil || ms.Collection(search.Tools) == nil {
		t.Fatal("a collection of the design is nil")
	}
	mem, pat, tool := ms.Collection(search.Memories), ms.Collection(search.Patterns), ms.Collection(search.Tools)
	upsert(t, mem, doc("shared-id", OneHot(1), "orchard apples harvest"))
	upsert(t, pat, doc("shared-id", OneHot(2), "glacier ice climbing"))
	upsert(t, tool, doc("tool-only", OneHot(3), "volcano lava basalt"))
	wantLen(t, mem, 1)
	wantLen(t, pat, 1)
	wantLen(t, tool, 1)
	if got := cands(t, pat, OneHot(1), "orchard apples", search.Filter{}, 5); len(got) != 1 || got[0].Content != "glacier ice climbing" || got[0].HasBM25 {
		t.Fatalf("patterns answered with another collection's document: %+v", got)
	}
	if got := cands(t, mem, nil, "volcano lava", search.Filter{}, 5); len(got) != 0 {
		t.Fatalf("memories found a tool: %+v", got)
	}
	if err := pat.Delete(ctxT(t), []string{"shared-id"}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, pat, 0)
	wantLen(t, mem, 1)
	if got := cands(t, mem, nil, "orchard", search.Filter{}, 5); len(got) != 1 || got[0].ID != "shared-id" {
		t.Fatalf("deleting from patterns changed memories: %+v", got)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

func upsert(t *testing.T, s search.VectorStore, docs ...search.Doc) {
	t.Helper()
	if err := s.Upsert(ctxT(t), docs); err != nil {
		t.Fatalf("Upsert(%d docs): %v", len(docs), err)
	}
}

func wantLen(t *testing.T, s search.VectorStore, want int) {
	t.Helper()
	n, err := s.Len(ctxT(t))
	if err != nil {
		t.Fatalf("Len: %v", err)
	}
	if n != want {
		t.Fatalf("Len = %d, want %d", n, want)
	}
}

func cands(t *testing.T, s search.VectorStore, v []float32, text string, f search.Filter, k int) []search.Candidate {
	t.Helper()
	cs, err := s.Candidates(ctxT(t), v, text, f, k)
	if err != nil {
		t.Fatalf("Candidates(k=%d, text=%q): %v", k, text, err)
	}
	seen := map[string]bool{}
	var out []search.Candidate
	for _, c := range cs {
		if seen[c.ID] {
			t.Fatalf("Candidates returned %q twice: not merged by id", c.ID)
		}
		seen[c.ID] = true
		if !c.HasCosine && c.Cosine != 0 {
			t.Errorf("%s: Cosine = %v without HasCosine, want 0", c.ID, c.Cosine)
		}
		if !c.HasBM25 && c.BM25 != 0 {
			t.Errorf("%s: BM25 = %v without HasBM25, want 0", c.ID, c.BM25)
		}
		if c.HasBM25 && !(c.BM25 > 0) {
			t.Errorf("%s: HasBM25 with BM25 = %v, want > 0", c.ID, c.BM25)
		}
		if c.Pruned {
			t.Errorf("%s: a pruned document is a candidate", c.ID)
		}
		if len(c.Vector) != 0 {
			t.Errorf("%s: candidate carries its vector (%d values), want none", c.ID, len(c.Vector))
		}
		if !c.HasCosine && !c.HasBM25 {
			t.Errorf("%s: a candidate with neither HasCosine nor HasBM25", c.ID)
		}
		out = append(out, c)
	}
	return out
}

// ids returns the ids of the candidates with the flag (cosine or bm25)
// in the store's cosine (resp. BM25) order: by score, then id.
func ids(cs []search.Candidate, which string) []string {
	var sel []search.Candidate
	for _, c := range cs {
		if (which == "cosine" && c.HasCosine) || (which == "bm25" && c.HasBM25) {
			sel = append(sel, c)
		}
	}
	score := func(c search.Candidate) float64 {
		if which == "cosine" {
			return c.Cosine
		}
		return c.BM25
	}
	sort.SliceStable(sel, func(i, j int) bool {
		if si, sj := score(sel[i]), score(sel[j]); si != sj {
			return si > sj
		}
		return sel[i].ID < sel[j].ID
	})
	out := make([]string, len(sel))
	for i, c := range sel {
		out[i] = c.ID
	}
	return out
}

func sortedIDs(cs []search.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func find(cs []search.Candidate, id string) (search.Candidate, bool) {
	for _, c := range cs {
		if c.ID == id {
			return c, true
		}
	}
	return search.Candidate{}, false
}

// doc is a document with defaults that pass the zero filter.
func doc(id string, v []float32, text string) search.Doc {
	return search.Doc{ID: id, Scope: "org:default", Title: id, Description: "", Content: text, Outcome: "success",
		Confidence: 0.9, Vector: v, Model: "searchtest-onehot"}
}

func testEmpty(t *testing.T, s search.VectorStore) {
	wantLen(t, s, 0)
	if err := s.Upsert(ctxT(t), nil); err != nil {
		t.Fatalf("Upsert(nil): %v", err)
	}
	if err := s.Delete(ctxT(t), nil); err != nil {
		t.Fatalf("Delete(nil): %v", err)
	}
	if err := s.Delete(ctxT(t), []string{"never-there"}); err != nil {
		t.Fatalf("Delete of an unknown id: %v", err)
	}
	wantLen(t, s, 0)
	cs, err := s.Candidates(ctxT(t), OneHot(0), "anything at all", search.Filter{}, 10)
	if err != nil {
		t.Fatalf("Candidates on an empty store: %v", err)
	}
	if len(cs) != 0 {
		t.Fatalf("Candidates on an empty store = %d candidates, want none", len(cs))
	}
}

func testRoundTrip(t *testing.T, s search.VectorStore) {
	d := search.Doc{ID: "mem-roundtrip", Scope: "project:p-1", Title: "Retry the flaky payment call",
		Description: "Payment gateway times out under load", Content: "Wrap the gateway call in exponential backoff.",
		Outcome: "failure", Tags: []string{"payments", "retry"}, SourceSessions: []string{"sess-1", "sess-2"},
		Confidence: 0.625, Evidence: 3, UsageCount: 7, Vector: OneHot(3), Model: "use-lite-512@test", Dim: len(OneHot(3))}
	upsert(t, s, d)
	wantLen(t, s, 1)
	cs := cands(t, s, OneHot(3), "gateway backoff", search.Filter{}, 5)
	if len(cs) != 1 {
		t.Fatalf("got %d candidates, want 1", len(cs))
	}
	c := cs[0]
	if !c.HasCosine || !c.HasBM25 {
		t.Fatalf("HasCosine=%v HasBM25=%v, want both", c.HasCosine, c.HasBM25)
	}
	if math.Abs(c.Cosine-1) > CosineTolerance {
		t.Errorf("Cosine = %v, want 1", c.Cosine)
	}
	got := c.Doc
	want := d
	want.Vector = nil
	if got.ID != want.ID || got.Scope != want.Scope || got.Title != want.Title || got.Description != want.Description ||
		got.Content != want.Content || got.Outcome != want.Outcome || !slices.Equal(got.Tags, want.Tags) ||
		!slices.Equal(got.SourceSessions, want.SourceSessions) || got.Confidence != want.Confidence || got.Pruned != want.Pruned ||
		got.Evidence != want.Evidence || got.UsageCount != want.UsageCount || got.Model != want.Model || got.Dim != want.Dim {
		t.Fatalf("candidate document differs:\n got %+v\nwant %+v", got, want)
	}
}

func testUpsertIdempotent(t *testing.T, s search.VectorStore) {
	a := doc("mem-a", OneHot(0), "apples grow on orchards")
	b := doc("mem-b", OneHot(1), "bananas ripen in warehouses")
	upsert(t, s, a, b)
	wantLen(t, s, 2)
	upsert(t, s, a, b)
	wantLen(t, s, 2)

	a2 := a
	a2.Content, a2.Outcome, a2.Confidence, a2.Vector, a2.Tags = "cherries need frost", "failure", 0.7, OneHot(2), []string{"v2"}
	upsert(t, s, a2)
	wantLen(t, s, 2)

	cs := cands(t, s, OneHot(2), "cherries", search.Filter{}, 1)
	c, ok := find(cs, "mem-a")
	if !ok || !c.HasCosine || !c.HasBM25 {
		t.Fatalf("after re-upsert, mem-a is not the nearest and best BM25 for its new vector and text: %+v", cs)
	}
	if math.Abs(c.Cosine-1) > CosineTolerance {
		t.Errorf("mem-a Cosine with its new vector = %v, want 1", c.Cosine)
	}
	if c.Content != a2.Content || c.Outcome != "failure" || c.Confidence != 0.7 || !slices.Equal(c.Tags, []string{"v2"}) {
		t.Errorf("latest properties did not win: %+v", c.Doc)
	}
	// The old text and vector are gone.
	cs = cands(t, s, OneHot(0), "apples orchards", search.Filter{}, 5)
	if got := ids(cs, "bm25"); len(got) != 0 {
		t.Errorf("old text still matches: BM25 candidates %v", got)
	}
	for _, c := range cs {
		if c.ID == "mem-a" && c.HasCosine && c.Cosine > CosineTolerance {
			t.Errorf("old vector still held: cosine of mem-a with e0 = %v, want 0", c.Cosine)
		}
	}
	if got := ids(cands(t, s, OneHot(2), "cherries", search.Filter{Outcome: "success"}, 5), "bm25"); len(got) != 0 {
		t.Errorf("outcome filter sees the old outcome: %v", got)
	}
}

func testSameIDInBatch(t *testing.T, s search.VectorStore) {
	first := doc("mem-dup", OneHot(0), "first version")
	last := doc("mem-dup", OneHot(1), "final wording")
	last.Confidence = 0.8
	upsert(t, s, first, doc("mem-other", OneHot(5), "unrelated"), last)
	wantLen(t, s, 2)
	cs := cands(t, s, OneHot(1), "final", search.Filter{}, 1)
	c, ok := find(cs, "mem-dup")
	if !ok || !c.HasBM25 || !c.HasCosine || c.Content != "final wording" || c.Confidence != 0.8 {
		t.Fatalf("the last occurrence in a batch did not win: %+v", cs)
	}
}

func testDelete(t *testing.T, s search.VectorStore) {
	upsert(t, s, doc("d1", OneHot(0), "shared words here"), doc("d2", OneHot(1), "shared words here"), doc("d3", OneHot(2), "shared words here"))
	wantLen(t, s, 3)
	if err := s.Delete(ctxT(t), []string{"d2", "missing"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantLen(t, s, 2)
	cs := cands(t, s, OneHot(1), "shared", search.Filter{}, 10)
	if got := sortedIDs(cs); !slices.Equal(got, []string{"d1", "d3"}) {
		t.Fatalf("after deleting d2, candidates = %v, want [d1 d3]", got)
	}
	if err := s.Delete(ctxT(t), []string{"d2"}); err != nil {
		t.Fatalf("Delete twice: %v", err)
	}
	// A deleted id can come back.
	upsert(t, s, doc("d2", OneHot(1), "resurrected"))
	wantLen(t, s, 3)
	if got := ids(cands(t, s, OneHot(1), "resurrected", search.Filter{}, 1), "bm25"); !slices.Equal(got, []string{"d2"}) {
		t.Fatalf("re-upserted d2: BM25 candidates %v, want [d2]", got)
	}
}

// filterFixture: every document contains the word "memo" and has a vector
// mixing e0 with its own axis, so both passes see all of them with a
// large enough k.
func filterFixture() []search.Doc {
	mk := func(i int, id, scope, outcome string, conf float64, sessions ...string) search.Doc {
		d := doc(id, Mix(map[int]float64{0: 1, i: 1}), "memo number "+id)
		d.Scope, d.Outcome, d.Confidence, d.SourceSessions = scope, outcome, conf, sessions
		return d
	}
	return []search.Doc{
		mk(1, "p-a-succ", "project:a", "success", 0.9, "s1", "s2"),
		mk(2, "p-b-fail", "project:b", "failure", 0.5),
		mk(3, "t-x-succ", "team:x", "success", 0.49, "s2"),
		mk(4, "t-y-fail", "team:y", "failure", 0.95, "s3"),
		mk(5, "o-d-succ", "org:default", "success", 0.2),
		mk(6, "o-d-fail", "org:default", "failure", 0.75, "s1"),
		mk(7, "px-odd", "projectx:1", "success", 0.8),
		mk(8, "unk-out", "project:a", "unknown", 0.6),
	}
}

func testFilters(t *testing.T, s search.VectorStore) {
	upsert(t, s, filterFixture()...)
	all := []string{"o-d-fail", "o-d-succ", "p-a-succ", "p-b-fail", "px-odd", "t-x-succ", "t-y-fail", "unk-out"}
	cases := []struct {
		name string
		f    search.Filter
		want []string
	}{
		{"zero", search.Filter{}, all},
		{"min confidence 0.5 (inclusive)", search.Filter{MinConfidence: 0.5}, []string{"o-d-fail", "p-a-succ", "p-b-fail", "px-odd", "t-y-fail", "unk-out"}},
		{"min confidence 0.9", search.Filter{MinConfidence: 0.9}, []string{"p-a-succ", "t-y-fail"}},
		{"min confidence 1", search.Filter{MinConfidence: 1}, nil},
		{"outcome success", search.Filter{Outcome: "success"}, []string{"o-d-succ", "p-a-succ", "px-odd", "t-x-succ"}},
		{"outcome failure", search.Filter{Outcome: "failure"}, []string{"o-d-fail", "p-b-fail", "t-y-fail"}},
		{"outcome all", search.Filter{Outcome: "all"}, all},
		{"scope project", search.Filter{ScopeKind: search.ScopeProject}, []string{"p-a-succ", "p-b-fail", "unk-out"}},
		{"scope team", search.Filter{ScopeKind: search.ScopeTeam}, []string{"t-x-succ", "t-y-fail"}},
		{"scope org", search.Filter{ScopeKind: search.ScopeOrg}, []string{"o-d-fail", "o-d-succ"}},
		{"scope all", search.Filter{ScopeKind: search.ScopeAll}, all},
		{"readable", search.Filter{Readable: func(sc string) bool { return sc == "project:a" || sc == "team:y" }}, []string{"p-a-succ", "t-y-fail", "unk-out"}},
		{"readable nothing", search.Filter{Readable: func(string) bool { return false }}, nil},
		{"exclude s1", search.Filter{ExcludeSourceSession: "s1"}, []string{"o-d-succ", "p-b-fail", "px-odd", "t-x-succ", "t-y-fail", "unk-out"}},
		{"exclude s2", search.Filter{ExcludeSourceSession: "s2"}, []string{"o-d-fail", "o-d-succ", "p-b-fail", "px-odd", "t-y-fail", "unk-out"}},
		{"exclude unknown session", search.Filter{ExcludeSourceSession: "s9"}, all},
		{"combined", search.Filter{MinConfidence: 0.5, Outcome: "failure", ScopeKind: search.ScopeTeam, ExcludeSourceSession: "s9",
			Readable: func(sc string) bool { return strings.HasPrefix(sc, "team:") }}, []string{"t-y-fail"}},
		{"combined exclude", search.Filter{Outcome: "failure", ExcludeSourceSession: "s1", MinConfidence: 0.5}, []string{"p-b-fail", "t-y-fail"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := cands(t, s, OneHot(0), "memo", tc.f, 20)
			want := sorted(tc.want...)
			if got := sortedIDs(cs); !slices.Equal(got, want) {
				t.Fatalf("candidates %v, want %v", got, want)
			}
			for _, c := range cs {
				if !c.HasCosine || !c.HasBM25 {
					t.Errorf("%s: HasCosine=%v HasBM25=%v, want both (k exceeds the admitted documents)", c.ID, c.HasCosine, c.HasBM25)
				}
			}
			// k smaller than the admitted set: still only admitted ones.
			if len(want) > 1 {
				cs := cands(t, s, OneHot(0), "memo", tc.f, 1)
				for _, c := range cs {
					if !slices.Contains(want, c.ID) {
						t.Errorf("k=1: %s is not admitted by the filter", c.ID)
					}
				}
				if len(ids(cs, "cosine")) != 1 || len(ids(cs, "bm25")) != 1 {
					t.Errorf("k=1: cosine %v, bm25 %v, want one each", ids(cs, "cosine"), ids(cs, "bm25"))
				}
			}
		})
	}
}

func testPruned(t *testing.T, s search.VectorStore) {
	p := doc("pruned-best", OneHot(0), "needle needle needle")
	p.Pruned = true
	p.Confidence = 1
	upsert(t, s, p, doc("live", Mix(map[int]float64{0: 1, 1: 1}), "needle in a haystack"), doc("other", OneHot(2), "haystack"))
	// Held, counted, never returned.
	wantLen(t, s, 3)
	for _, f := range []search.Filter{{}, {Outcome: "all", ScopeKind: search.ScopeAll}, {Readable: func(string) bool { return true }}} {
		cs := cands(t, s, OneHot(0), "needle", f, 10)
		if _, ok := find(cs, "pruned-best"); ok {
			t.Fatalf("the pruned document was returned")
		}
		if got := ids(cs, "cosine"); len(got) == 0 || got[0] != "live" {
			t.Fatalf("nearest = %v, want live first", got)
		}
		if got := ids(cs, "bm25"); !slices.Equal(got, []string{"live"}) {
			t.Fatalf("BM25 = %v, want [live]", got)
		}
	}
	// Un-pruning by upsert brings it back.
	p.Pruned = false
	upsert(t, s, p)
	if got := ids(cands(t, s, OneHot(0), "needle", search.Filter{}, 1), "cosine"); !slices.Equal(got, []string{"pruned-best"}) {
		t.Fatalf("after un-pruning: nearest %v, want [pruned-best]", got)
	}
}

// testReadableDeep: the 24 nearest documents are unreadable, so a store
// that post-filters Readable must look past a 4×k over-fetch.
func testReadableDeep(t *testing.T, s search.VectorStore) {
	var docs []search.Doc
	for i := 0; i < 24; i++ {
		d := doc(fmt.Sprintf("hidden-%02d", i), Mix(map[int]float64{0: 10, 1 + i: 1}), "report report")
		d.Scope = "project:secret"
		docs = append(docs, d)
	}
	for i, w := range []float64{3, 2, 1} {
		d := doc(fmt.Sprintf("visible-%d", i), Mix(map[int]float64{0: w, 100 + i: 1}), "report")
		d.Scope = "project:open"
		docs = append(docs, d)
	}
	upsert(t, s, docs...)
	f := search.Filter{Readable: func(sc string) bool { return sc == "project:open" }}
	cs := cands(t, s, OneHot(0), "report", f, 2)
	if got := ids(cs, "cosine"); !slices.Equal(got, []string{"visible-0", "visible-1"}) {
		t.Fatalf("nearest readable = %v, want [visible-0 visible-1]", got)
	}
	if got := ids(cs, "bm25"); len(got) != 2 {
		t.Fatalf("BM25 readable = %v, want 2 of the visible documents", got)
	}
	for _, c := range cs {
		if !strings.HasPrefix(c.ID, "visible-") {
			t.Fatalf("unreadable %s returned", c.ID)
		}
	}
}

func testNearest(t *testing.T, s search.VectorStore) {
	q := OneHot(0)
	docs := []search.Doc{
		doc("n-exact", OneHot(0), "alpha"),
		doc("n-090", Mix(map[int]float64{0: 0.9, 1: math.Sqrt(1 - 0.81)}), "beta"),
		doc("n-060", Mix(map[int]float64{0: 0.6, 2: 0.8}), "gamma"),
		doc("n-030", Mix(map[int]float64{0: 0.3, 3: math.Sqrt(1 - 0.09)}), "delta"),
		doc("n-000", OneHot(4), "epsilon"),
		doc("n-neg", Mix(map[int]float64{0: -0.5, 5: math.Sqrt(0.75)}), "zeta"),
		doc("n-opp", Mix(map[int]float64{0: -1}), "eta"),
	}
	upsert(t, s, docs...)
	want := []string{"n-exact", "n-090", "n-060", "n-030", "n-000", "n-neg", "n-opp"}
	for k := 1; k <= len(want)+2; k++ {
		cs := cands(t, s, q, "nothing matches this", search.Filter{}, k)
		got := ids(cs, "cosine")
		if w := want[:min(k, len(want))]; !slices.Equal(got, w) {
			t.Fatalf("k=%d: nearest %v, want %v", k, got, w)
		}
		if b := ids(cs, "bm25"); len(b) != 0 {
			t.Fatalf("k=%d: BM25 candidates %v for a text nothing contains", k, b)
		}
		// Candidates come in cosine order.
		var order []string
		for _, c := range cs {
			if c.HasCosine {
				order = append(order, c.ID)
			}
		}
		if !slices.Equal(order, got) {
			t.Fatalf("k=%d: candidates in order %v, want cosine order %v", k, order, got)
		}
	}
	cs := cands(t, s, q, "", search.Filter{}, len(docs))
	for _, d := range docs {
		c, ok := find(cs, d.ID)
		if !ok {
			t.Fatalf("%s missing with k = all", d.ID)
		}
		if w := Dot(q, d.Vector); math.Abs(c.Cosine-w) > CosineTolerance {
			t.Errorf("%s: Cosine = %v, want %v", d.ID, c.Cosine, w)
		}
	}
	// A mixed query: closest to e2, then e1.
	q2 := Mix(map[int]float64{2: 2, 1: 1})
	if got := ids(cands(t, s, q2, "", search.Filter{}, 2), "cosine"); !slices.Equal(got, []string{"n-060", "n-090"}) {
		t.Fatalf("query 2e2+e1: nearest %v, want [n-060 n-090]", got)
	}
}

func testBM25(t *testing.T, s search.VectorStore) {
	docs := []search.Doc{
		doc("b-both", OneHot(1), "The pebble batch commit keeps offsets and projections together."),
		doc("b-one", OneHot(2), "A kafka commit of consumer offsets."),
		doc("b-none", OneHot(3), "Vector search over memories."),
		doc("b-title", OneHot(4), "Nothing relevant in the body."),
	}
	docs[3].Title = "Pebble"
	docs[3].Description = "storage engine notes"
	upsert(t, s, docs...)
	// The query vector is orthogonal to every document.
	cs := cands(t, s, OneHot(50), "Pebble, COMMIT!", search.Filter{}, 3)
	got := ids(cs, "bm25")
	if len(got) != 3 || got[0] != "b-both" || !slices.Equal(sorted(got[1:]...), []string{"b-one", "b-title"}) {
		t.Fatalf("BM25 order %v, want b-both first, then b-one and b-title", got)
	}
	if c, _ := find(cs, "b-none"); c.HasBM25 {
		t.Fatalf("b-none contains no query word but HasBM25")
	}
	// Title and description are searched too.
	if got := ids(cands(t, s, OneHot(50), "storage engine", search.Filter{}, 3), "bm25"); !slices.Equal(got, []string{"b-title"}) {
		t.Fatalf("description match: %v, want [b-title]", got)
	}
	// k=1 keeps the best.
	if got := ids(cands(t, s, OneHot(50), "pebble commit", search.Filter{}, 1), "bm25"); !slices.Equal(got, []string{"b-both"}) {
		t.Fatalf("k=1: %v, want [b-both]", got)
	}
	// A word nobody uses.
	if got := ids(cands(t, s, OneHot(50), "xylophone", search.Filter{}, 3), "bm25"); len(got) != 0 {
		t.Fatalf("unknown word: BM25 candidates %v, want none", got)
	}
	// Common short words count (no stopword list: the MemStore has none).
	upsert(t, s, doc("b-the", OneHot(5), "the the the"))
	if got := ids(cands(t, s, OneHot(50), "the", search.Filter{}, 1), "bm25"); !slices.Equal(got, []string{"b-the"}) {
		t.Fatalf("query \"the\": %v, want [b-the]", got)
	}
}

func testMerge(t *testing.T, s search.VectorStore) {
	upsert(t, s,
		doc("m-both", OneHot(0), "lighthouse keeper"),
		doc("m-vec", Mix(map[int]float64{0: 1, 1: 1}), "unrelated words"),
		doc("m-text", OneHot(2), "lighthouse lighthouse"),
		doc("m-far", OneHot(3), "nothing"),
	)
	cs := cands(t, s, OneHot(0), "lighthouse keeper", search.Filter{}, 2)
	if got := sortedIDs(cs); !slices.Equal(got, []string{"m-both", "m-text", "m-vec"}) {
		t.Fatalf("merged candidates %v, want [m-both m-text m-vec]", got)
	}
	both, _ := find(cs, "m-both")
	if !both.HasCosine || !both.HasBM25 || math.Abs(both.Cosine-1) > CosineTolerance || both.BM25 <= 0 {
		t.Errorf("m-both: %+v, want both flags and scores", both)
	}
	vec, _ := find(cs, "m-vec")
	if !vec.HasCosine || vec.HasBM25 || vec.BM25 != 0 || math.Abs(vec.Cosine-math.Sqrt(0.5)) > CosineTolerance {
		t.Errorf("m-vec: %+v, want cosine √½ only", vec)
	}
	text, _ := find(cs, "m-text")
	if text.HasCosine || text.Cosine != 0 || !text.HasBM25 || text.BM25 <= 0 {
		t.Errorf("m-text: %+v, want BM25 only", text)
	}
	if got := ids(cs, "bm25"); got[0] != "m-both" {
		t.Errorf("BM25 order %v, want m-both (both words) first", got)
	}
}

func testKLimits(t *testing.T, s search.VectorStore) {
	var docs []search.Doc
	for i := 0; i < 30; i++ {
		docs = append(docs, doc(fmt.Sprintf("k-%02d", i), Mix(map[int]float64{0: float64(30 - i), 1 + i: 5}),
			strings.Repeat("alpha ", 1+i%3)+fmt.Sprintf("word%02d", i)))
	}
	upsert(t, s, docs...)
	wantLen(t, s, 30)
	for _, k := range []int{1, 5, 12, 30, 50} {
		cs := cands(t, s, OneHot(0), "alpha", search.Filter{}, k)
		c, b := ids(cs, "cosine"), ids(cs, "bm25")
		if len(c) != min(k, 30) || len(b) != min(k, 30) {
			t.Fatalf("k=%d: %d by cosine, %d by BM25, want %d each", k, len(c), len(b), min(k, 30))
		}
		for i, id := range c {
			if want := fmt.Sprintf("k-%02d", i); id != want {
				t.Fatalf("k=%d: nearest[%d] = %s, want %s", k, i, id, want)
			}
		}
		if len(cs) > 2*k {
			t.Fatalf("k=%d: %d candidates, more than 2k", k, len(cs))
		}
	}
	cs, err := s.Candidates(ctxT(t), OneHot(0), "alpha", search.Filter{}, 0)
	if err != nil {
		t.Fatalf("k=0: %v", err)
	}
	if len(cs) != 0 {
		t.Fatalf("k=0: %d candidates, want none", len(cs))
	}
}
