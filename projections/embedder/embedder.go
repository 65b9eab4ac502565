package embedder

import (
	"context"
	"fmt"
	"math"
)

// Embedder turns texts into unit-length vectors.
type Embedder interface {
	// Embed returns one L2-normalised vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model and version, recorded with every vector (e.g. "use-lite-512@energetic-ai-0.2.0").
	Model() string
	// Dim is the vector dimension (512 for USE lite).
	Dim() int
}

// QueryEmbedder is an Embedder with a path for one search query: a
// foreground, latency-bound call, which may use more cores than the
// Embedder's batch work is allowed (USELite.Workers limits Embed only).
// Its vector is Embed's for the same text, bit for bit.
type QueryEmbedder interface {
	Embedder
	// EmbedQuery returns the L2-normalised vector of one text.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// EmbedQuery embeds one search query with emb's EmbedQuery when it has
// one, and with Embed otherwise.
func EmbedQuery(ctx context.Context, emb Embedder, text string) ([]float32, error) {
	if q, ok := emb.(QueryEmbedder); ok {
		return q.EmbedQuery(ctx, text)
	}
	vs, err := emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// Compile-time checks that both implementations satisfy Embedder.
var (
	_ QueryEmbedder = (*USELite)(nil)
	_ Embedder      = (*OpenAI)(nil)
)

// normalize scales v to unit L2 norm in place. A zero vector is left as is;
// a vector with a NaN or infinite component is an error.
func normalize(v []float32) error {
	var ss float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("component %d is %v", i, x)
		}
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(ss)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return nil
}
