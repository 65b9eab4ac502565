package search

import (
	"context"
	"testing"
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
// document only in the BM25 list at rank 1 scores LexicalWeight/(K+1)
// over the best possible.
func TestRRFRelevance(t *testing.T) {
	r := DefaultRanking
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
	if !duplicate(th, b, []*rankedDoc{a}) {
		t.Error("b is not collapsed into a")
	}
	if duplicate(th, c, []*rankedDoc{a}) {
		t.Error("c is collapsed into a")
	}
	if duplicate(0, b, []*rankedDoc{a}) {
		t.Error("collapsing with DuplicateJaccard 0")
	}
}
