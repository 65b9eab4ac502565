package search

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// vec is a unit vector along axis i (4 dimensions).
func vec(i int) []float32 {
	v := make([]float32, 4)
	v[i] = 1
	return v
}

// A document that matches the query's exact words but is far by meaning
// is found first by fusion (it tops the BM25 list) and last by the
// design's alpha rule (young memories: meaning only). This is the
// "memory not in the top 20 for its own title" finding of issue 11.
func TestFusionFindsExactWords(t *testing.T) {
	s := NewMemStore()
	docs := []Doc{
		{ID: "exact", Scope: "org:o", Title: "Rebook flight HAT170", Content: "x", Outcome: "success", Confidence: 0.8, Vector: vec(3)},
		{ID: "near-1", Scope: "org:o", Title: "Travel plans", Content: "y", Outcome: "success", Confidence: 0.8, Vector: vec(0)},
		{ID: "near-2", Scope: "org:o", Title: "Trip changes", Content: "z", Outcome: "success", Confidence: 0.8, Vector: vec(0)},
	}
	if err := s.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	cands, err := s.Candidates(context.Background(), vec(0), "Rebook flight HAT170", Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := rank(DefaultRanking, cands); got[0].c.ID != "exact" {
		t.Fatalf("fusion ranked %s first (%v), want exact", got[0].c.ID, got)
	}
	if got := rank(Ranking{Fusion: FusionAlpha}, cands); got[len(got)-1].c.ID != "exact" {
		t.Fatalf("alpha rule ranked %s last, want exact (meaning only)", got[len(got)-1].c.ID)
	}
}

// Relevance under FusionRRF: top of both lists is 1 × scope weight; a
// document only in the BM25 list at rank 2 scores LexicalWeight/(K+2)
// over the best possible.
func TestRRFRelevance(t *testing.T) {
	r := Ranking{Fusion: FusionRRF, K: 3, VectorWeight: 1, LexicalWeight: 3}
	cands := []Candidate{
		{Doc: Doc{ID: "both", Scope: "project:p"}, Cosine: 0.9, HasCosine: true, BM25: 5, HasBM25: true},
		{Doc: Doc{ID: "bm-only", Scope: "org:o"}, BM25: 4, HasBM25: true},
		{Doc: Doc{ID: "none", Scope: "org:o"}, HasCosine: false},
	}
	got := rank(r, cands)
	best := (r.VectorWeight + r.LexicalWeight) / (r.K + 1)
	want := map[string]float64{
		"both":    1,
		"bm-only": r.LexicalWeight / (r.K + 2) / best * 0.8,
		"none":    0,
	}
	for _, g := range got {
		if d := g.rel - want[g.c.ID]; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s: relevance %v, want %v", g.c.ID, g.rel, want[g.c.ID])
		}
	}
	if got[0].c.ID != "both" || got[1].c.ID != "bm-only" {
		t.Errorf("order %s, %s", got[0].c.ID, got[1].c.ID)
	}
}

// Near-duplicates (same words but one id) collapse into the better one;
// a distinct document stays; TotalFound still counts all of them.
func TestSearchCollapsesNearDuplicates(t *testing.T) {
	base := "Avoid wrong update reservation flights arguments: call update_reservation_flights with the cabin the user asked for, after reading the reservation and the flight status of each segment"
	a := &rankedDoc{c: Candidate{Doc: Doc{ID: "a", Title: base, Content: "reservation ABC123"}}}
	b := &rankedDoc{c: Candidate{Doc: Doc{ID: "b", Title: base, Content: "reservation XYZ789"}}}
	c := &rankedDoc{c: Candidate{Doc: Doc{ID: "c", Title: "Strategy: cancel_reservation", Content: "get_reservation_details then cancel"}}}
	if j := jaccard(a.wordSet(), b.wordSet()); j < 0.9 {
		t.Fatalf("jaccard(a, b) = %v, the fixture should be a near-duplicate", j)
	}
	th := DefaultRanking.DuplicateJaccard
	if duplicateOf(th, b, []*rankedDoc{c, a}) != 1 {
		t.Error("b is not collapsed into a")
	}
	if duplicateOf(th, c, []*rankedDoc{a}) >= 0 {
		t.Error("c is collapsed into a")
	}
	if duplicateOf(0, b, []*rankedDoc{a}) >= 0 {
		t.Error("collapsing with DuplicateJaccard 0")
	}
}

// A hit that near-duplicates collapsed into stands for them: it carries
// their source sessions after its own (PAIR retrieval reads a hit's
// provenance from them), and the candidates' own lists are not touched.
func TestCollapsedHitKeepsProvenance(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	base := "Strategy: change the flight of a reservation after reading the reservation and the flight status of each segment, then confirm with the user"
	docs := []Doc{
		{ID: "m1", Title: base, Description: "task seven", Outcome: "success", Confidence: 0.8, Scope: "org:default", SourceSessions: []string{"s7a", "s7b"}},
		{ID: "m2", Title: base, Description: "task six", Outcome: "success", Confidence: 0.8, Scope: "org:default", SourceSessions: []string{"s6a", "s7b"}},
		{ID: "m3", Title: "Strategy: cancel a reservation", Description: "cancel", Outcome: "success", Confidence: 0.8, Scope: "org:default", SourceSessions: []string{"s1"}},
	}
	src := Source{Collection: Memories, Projection: "memories", IDOfKey: func(string) string { return "" },
		Docs: func(*projections.Store, []string) ([]Doc, []string, error) {
			out := make([]Doc, len(docs))
			copy(out, docs)
			return out, nil, nil
		}}
	ix := NewIndex(store, &countingEmbedder{}, nil, src)
	res, err := ix.Search(context.Background(), Query{Text: "change the flight of a reservation task seven", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Memories) != 2 || res.Memories[0].ID != "m1" {
		t.Fatalf("hits %+v, want m1 (m2 collapsed into it) and m3", res.Memories)
	}
	if got, want := res.Memories[0].SourceSessions, []string{"s7a", "s7b", "s6a"}; !slices.Equal(got, want) {
		t.Fatalf("the kept hit's source sessions %v, want %v", got, want)
	}
	if !slices.Equal(docs[0].SourceSessions, []string{"s7a", "s7b"}) {
		t.Fatalf("the candidate's own list was changed: %v", docs[0].SourceSessions)
	}
}

// Relevance under FusionConvex: each score over its theoretical range up
// to the best candidate's (cosine from −1, BM25 from 0), then the weighted
// mean × scope weight. A candidate without a BM25 score gets only the
// vector half.
func TestConvexRelevance(t *testing.T) {
	r := Ranking{Fusion: FusionConvex, VectorWeight: 1, LexicalWeight: 3}
	cands := []Candidate{
		{Doc: Doc{ID: "both", Scope: "project:p"}, Cosine: 0.6, HasCosine: true, BM25: 5, HasBM25: true},
		{Doc: Doc{ID: "near", Scope: "team:t"}, Cosine: 0.8, HasCosine: true, BM25: 2, HasBM25: true},
		{Doc: Doc{ID: "vec-only", Scope: "org:o"}, Cosine: -0.2, HasCosine: true},
	}
	want := map[string]float64{
		"both":     (1*(0.6+1)/(0.8+1) + 3*5.0/5) / 4,
		"near":     (1*1 + 3*2.0/5) / 4 * 0.9,
		"vec-only": 1 * (-0.2 + 1) / (0.8 + 1) / 4 * 0.8,
	}
	got := rank(r, cands)
	for _, g := range got {
		if d := g.rel - want[g.c.ID]; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s: relevance %v, want %v", g.c.ID, g.rel, want[g.c.ID])
		}
	}
	if got[0].c.ID != "both" || got[1].c.ID != "near" || got[2].c.ID != "vec-only" {
		t.Errorf("order %s, %s, %s", got[0].c.ID, got[1].c.ID, got[2].c.ID)
	}
}

// What rank-only fusion loses: the same task's strategy is first by BM25
// by a wide margin (its goal sentence) but 20th by cosine, while a
// strategy of another task with the same tools is first by cosine and
// second by BM25 (a constructed fixture). Reciprocal-rank fusion (K = 3,
// BM25 weighted 3, the previous default) keeps only the ranks and puts
// the other task first; the convex combination keeps the BM25 margin.
func TestConvexKeepsLexicalMargin(t *testing.T) {
	cands := []Candidate{
		{Doc: Doc{ID: "same-task", Scope: "org:o"}, Cosine: 0.70, HasCosine: true, BM25: 46.7, HasBM25: true},
		{Doc: Doc{ID: "same-tools", Scope: "org:o"}, Cosine: 0.88, HasCosine: true, BM25: 11.1, HasBM25: true},
	}
	for i := 0; i < 18; i++ { // cosine ranks 2..19, BM25 below both
		cands = append(cands, Candidate{Doc: Doc{ID: fmt.Sprintf("other-%02d", i), Scope: "org:o"}, Cosine: 0.87 - 0.005*float64(i), HasCosine: true, BM25: 5, HasBM25: true})
	}
	if got := rank(DefaultRanking, cands); got[0].c.ID != "same-task" {
		t.Errorf("DefaultRanking put %s first, want same-task", got[0].c.ID)
	}
	rrf := Ranking{Fusion: FusionRRF, K: 3, VectorWeight: 1, LexicalWeight: 3}
	if got := rank(rrf, cands); got[0].c.ID != "same-tools" {
		t.Errorf("RRF K=3 put %s first; the fixture no longer shows the rank-only failure", got[0].c.ID)
	}
}

// A memory's vector is made from its title and description: its content
// (a distilled strategy's tool steps) is searched by BM25 only.
func TestEmbedTextMemories(t *testing.T) {
	d := Doc{Title: "Strategy: cancel_reservation", Description: "Use when the user wants to cancel reservation MDCLVA", Content: "1. get_reservation_details(reservation_id)"}
	if got, want := EmbedText(Memories, d), d.Title+"\n"+d.Description; got != want {
		t.Errorf("EmbedText(Memories) = %q, want %q", got, want)
	}
	if got := EmbedText(Tools, d); got != DocText(d) {
		t.Errorf("EmbedText(Tools) = %q, want the whole text", got)
	}
}

// Coordination patterns and tools are never collapsed, however alike their
// words: each pattern is one tool sequence, each tool one tool. Before, a
// failed two-call pattern took the place and the sessions of the
// successful three-call patterns that extend it (a cluster walkthrough,
// 2026-12-03: one hit with 298 source sessions, total_found 4).
func TestPatternsAreNotCollapsed(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	task := "Used when the user wants to book a flight from New York to Seattle on May 20 in economy with two passengers."
	docs := []Doc{
		{ID: "p2", Title: "Pattern: search_flights → get_user_details", Description: task, Content: "1. search_flights\n2. get_user_details", Outcome: "failure", Confidence: 0.1, Scope: "org:default", SourceSessions: []string{"f1"}},
		{ID: "p3", Title: "Pattern: search_flights → get_user_details → book_reservation", Description: task, Content: "1. search_flights\n2. get_user_details\n3. book_reservation", Outcome: "success", Confidence: 0.9, Scope: "org:default", SourceSessions: []string{"s1"}},
	}
	a, b := &rankedDoc{c: Candidate{Doc: docs[0]}}, &rankedDoc{c: Candidate{Doc: docs[1]}}
	if j := jaccard(a.wordSet(), b.wordSet()); j < DefaultRanking.DuplicateJaccard {
		t.Fatalf("jaccard %v: the fixture should be alike enough to collapse as memories", j)
	}
	src := Source{Collection: Patterns, Projection: "patterns", IDOfKey: func(string) string { return "" },
		Docs: func(*projections.Store, []string) ([]Doc, []string, error) {
			out := make([]Doc, len(docs))
			copy(out, docs)
			return out, nil, nil
		}}
	ix := NewIndex(store, &countingEmbedder{}, nil, src)
	zero := 0.0
	res, err := ix.Search(context.Background(), Query{Collection: Patterns, Text: "search_flights get_user_details", Limit: 5, MinConfidence: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Memories) != 2 {
		t.Fatalf("hits %+v, want both patterns", res.Memories)
	}
	for _, h := range res.Memories {
		if want := map[string]string{"p2": "f1", "p3": "s1"}[h.ID]; !slices.Equal(h.SourceSessions, []string{want}) {
			t.Errorf("%s: source sessions %v, want its own [%s]", h.ID, h.SourceSessions, want)
		}
	}
}
