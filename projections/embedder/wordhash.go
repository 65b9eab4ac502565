package embedder

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
)

// WordHash embeds a text as the normalised counts of its words hashed into
// Dims buckets (the hashing trick: Weinberger et al., "Feature Hashing for
// Large Scale Multitask Learning", ICML 2009). Words are the text's
// whitespace-separated fields, lower-cased, with leading and trailing
// ".,:;" trimmed; FNV-1a picks the bucket. A text with no word gets the
// first unit vector. It is deterministic and needs no model: tests and
// benchmarks use it where the ranking, not the model, is under test. Not
// used by serve.
type WordHash struct {
	// Dims is the vector's dimension (> 0).
	Dims int
}

// Embed implements Embedder.
func (w WordHash) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if w.Dims <= 0 {
		return nil, fmt.Errorf("embedder: WordHash.Dims: %d, must be > 0", w.Dims)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, w.Dims)
		for _, word := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(word, ".,:;")))
			v[h.Sum32()%uint32(w.Dims)]++
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			v[0], n = 1, 1
		}
		for j := range v {
			v[j] = float32(float64(v[j]) / math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}

// Model implements Embedder: "word-hash-<Dims>".
func (w WordHash) Model() string { return fmt.Sprintf("word-hash-%d", w.Dims) }

// Dim implements Embedder.
func (w WordHash) Dim() int { return w.Dims }
