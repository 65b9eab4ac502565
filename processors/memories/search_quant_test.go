package memories_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// sameCandidates fails unless a and b are the same candidates in the same
// order with bit-identical cosines and BM25 scores.
func sameCandidates(t *testing.T, what string, a, b []search.Candidate) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d candidates, float32 scan %d", what, len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].HasCosine != b[i].HasCosine || a[i].HasBM25 != b[i].HasBM25 ||
			math.Float64bits(a[i].Cosine) != math.Float64bits(b[i].Cosine) || math.Float64bits(a[i].BM25) != math.Float64bits(b[i].BM25) {
			t.Fatalf("%s: candidate %d = %s cos %v bm25 %v, float32 scan %s cos %v bm25 %v",
				what, i, a[i].ID, a[i].Cosine, a[i].BM25, b[i].ID, b[i].Cosine, b[i].BM25)
		}
	}
}

// TestQuantisedScanMatchesFloat32 (issue 11, item 2): on the corpus of
// BenchmarkMemorySearch (10,000 memories) the quantised scan of the
// default store returns exactly the float32 scan's candidates — ids,
// order, cosines bit for bit — for 100 distinct queries embedded with
// USE lite, with k = 200 (a search's) and k = 5, with and without
// filters, and so does the store without the bound-first selections
// (NewMemStoreSerial); and so it does on 1,500 memories whose vectors are USE lite's
// own (clustered, unlike the random bank: many near-ties at the top).
func TestQuantisedScanMatchesFloat32(t *testing.T) {
	use, err := embedder.NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(t *testing.T, emb embedder.Embedder, n, queries int) {
		st := bankOf(t, n)
		defer st.Close()
		quant, serial, exact := search.NewMemStore(), search.NewMemStoreSerial(), search.NewMemStoreFloat32()
		for _, vs := range []search.VectorStore{quant, serial, exact} {
			if err := search.NewIndex(st, emb, vs, memories.SearchSource()).Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := rand.New(rand.NewPCG(5, 6))
		// Filters admitting all, a sixth, a third and two thirds of the
		// bank: the bound-first selections end at kk = k or go deeper,
		// and fall back to the loop over every document.
		filters := []search.Filter{{}, {Outcome: events.OutcomeFailure, ScopeKind: "project"}, {MinConfidence: 0.5, ScopeKind: "team"},
			{Readable: func(scope string) bool { return scope != "org:o" }}}
		for i := 0; i < queries; i++ {
			q := text(r, 2+r.IntN(6))
			v, err := use.Embed(ctx, []string{q})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{search.CandidatesPerQuery, 5} {
				f := filters[i%len(filters)]
				a, err := quant.Candidates(ctx, v[0], q, f, k)
				if err != nil {
					t.Fatal(err)
				}
				b, err := exact.Candidates(ctx, v[0], q, f, k)
				if err != nil {
					t.Fatal(err)
				}
				if len(a) == 0 {
					t.Fatalf("query %q: no candidates", q)
				}
				sameCandidates(t, fmt.Sprintf("query %d %q k %d", i, q, k), a, b)
				c, err := serial.Candidates(ctx, v[0], q, f, k)
				if err != nil {
					t.Fatal(err)
				}
				sameCandidates(t, fmt.Sprintf("serial store, query %d %q k %d", i, q, k), c, b)
			}
		}
	}
	t.Run("benchmark-corpus-10k", func(t *testing.T) { check(t, hashEmbedder{}, 10_000, 100) })
	t.Run("use-lite-vectors-1500", func(t *testing.T) { check(t, shortUSE{use}, 1_500, 60) })
}

// shortUSE embeds a document by its first 8 words with USE lite (the
// whole text would take ~10× longer for the same kind of vectors).
type shortUSE struct{ embedder.Embedder }

func (e shortUSE) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	short := make([]string, len(texts))
	for i, t := range texts {
		short[i] = firstWords(t, 8)
	}
	return e.Embedder.Embed(ctx, short)
}

func firstWords(s string, n int) string {
	w := 0
	for i, r := range s {
		if r == ' ' || r == '\n' {
			if w++; w == n {
				return s[:i]
			}
		}
	}
	return s
}

// countingHash is hashEmbedder counting the texts it embeds.
type countingHash struct{ texts int }

func (e *countingHash) Model() string { return "hash-512" }
func (e *countingHash) Dim() int      { return 512 }
func (e *countingHash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.texts += len(texts)
	return hashEmbedder{}.Embed(ctx, texts)
}

// A repeated search text is embedded once (the Index's query cache), and
// every time with the cache off; the results are the same.
func TestSearchQueryCache(t *testing.T) {
	st := bankOf(t, 50)
	defer st.Close()
	ctx := context.Background()
	emb := &countingHash{}
	ix := search.NewIndex(st, emb, nil, memories.SearchSource())
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	q := search.Query{Text: "cancel reservation refund", Limit: 5, MinConfidence: &zero}
	search2 := func() (a, b search.Result) {
		var err error
		if a, err = ix.Search(ctx, q); err != nil {
			t.Fatal(err)
		}
		if b, err = ix.Search(ctx, q); err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	before := emb.texts
	a, b := search2()
	if emb.texts-before != 1 {
		t.Errorf("two searches of one text embedded %d texts, want 1 (cached)", emb.texts-before)
	}
	ix.SetQueryCache(0)
	before = emb.texts
	c, d := search2()
	if emb.texts-before != 2 {
		t.Errorf("without the cache, two searches embedded %d texts, want 2", emb.texts-before)
	}
	for _, r := range []search.Result{b, c, d} {
		if len(r.Memories) == 0 || fmt.Sprint(r.Memories) != fmt.Sprint(a.Memories) {
			t.Fatalf("results differ: %v vs %v", r.Memories, a.Memories)
		}
	}
}

// queryCounting is countingHash with a query path (embedder.QueryEmbedder)
// that counts the queries it embeds.
type queryCounting struct {
	countingHash
	queries int
}

func (e *queryCounting) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	e.queries++
	v, err := hashEmbedder{}.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// A search embeds its query with the embedder's query path when it has
// one (USE lite's splits across idle cores even with Workers 1), through
// the cache and without it; documents still go through Embed.
func TestSearchUsesQueryPath(t *testing.T) {
	st := bankOf(t, 50)
	defer st.Close()
	ctx := context.Background()
	emb := &queryCounting{}
	ix := search.NewIndex(st, emb, nil, memories.SearchSource())
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if emb.texts != 50 || emb.queries != 0 {
		t.Fatalf("sync: %d texts through Embed and %d through EmbedQuery, want 50 and 0", emb.texts, emb.queries)
	}
	zero := 0.0
	for _, cache := range []int{1024, 0} {
		ix.SetQueryCache(cache)
		before := emb.queries
		for range 2 {
			if _, err := ix.Search(ctx, search.Query{Text: "refund the cabin upgrade", Limit: 5, MinConfidence: &zero}); err != nil {
				t.Fatal(err)
			}
		}
		want := 2
		if cache > 0 {
			want = 1
		}
		if got := emb.queries - before; got != want || emb.texts != 50 {
			t.Errorf("cache %d: two searches made %d EmbedQuery calls (want %d) and %d Embed texts (want 50)", cache, got, want, emb.texts)
		}
	}
}
