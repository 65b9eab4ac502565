package embedder

import (
	"context"
	"math"
	"testing"
)

// WordHash gives unit vectors, equal ones for texts with the same words
// (case and trailing punctuation aside), and refuses a dimension ≤ 0.
func TestWordHash(t *testing.T) {
	w := WordHash{Dims: 8}
	vs, err := w.Embed(context.Background(), []string{"Cancel the flight.", "the FLIGHT cancel", "", "refund"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-6 {
			t.Fatalf("vector %d has norm² %v", i, n)
		}
	}
	for j := range vs[0] {
		if vs[0][j] != vs[1][j] {
			t.Fatalf("same words, different vectors: %v %v", vs[0], vs[1])
		}
	}
	if vs[2][0] != 1 {
		t.Fatalf("no words: %v, want the first unit vector", vs[2])
	}
	if _, err := (WordHash{}).Embed(context.Background(), []string{"x"}); err == nil {
		t.Fatal("Dims 0 accepted")
	}
	if w.Model() != "word-hash-8" || w.Dim() != 8 {
		t.Fatalf("model %q dim %d", w.Model(), w.Dim())
	}
}
