package embedder

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"
)

// QueryCache remembers the vectors of the last texts an Embedder was asked
// for, one text at a time, in a least-recently-used cache: agents repeat
// their queries, and a hit costs a map lookup instead of a model run
// (~1.5–5 ms with USE lite). Vectors are deterministic functions of the
// model and the text, so a hit returns what the model would. Callers must
// not modify the returned vector. It is safe for concurrent use.
type QueryCache struct {
	emb   Embedder
	cache *lru.Cache[string, []float32]
}

// NewQueryCache caches up to size vectors of emb (size ≥ 1; a 512-d
// vector with its text is ~2.2 KB, so 1,024 entries take ~2.3 MB).
func NewQueryCache(emb Embedder, size int) (*QueryCache, error) {
	c, err := lru.New[string, []float32](size)
	if err != nil {
		return nil, err
	}
	return &QueryCache{emb: emb, cache: c}, nil
}

// Embed returns the vector of text, from the cache or from the embedder
// (EmbedQuery; then cached).
func (c *QueryCache) Embed(ctx context.Context, text string) ([]float32, error) {
	if v, ok := c.cache.Get(text); ok {
		return v, nil
	}
	v, err := EmbedQuery(ctx, c.emb, text)
	if err != nil {
		return nil, err
	}
	c.cache.Add(text, v)
	return v, nil
}

// Len is the number of cached vectors.
func (c *QueryCache) Len() int { return c.cache.Len() }
