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
//
// Entries are kept per partition: a text cached under one partition is
// never a hit under another. A hit is seconds faster than a miss to
// whoever times it, so a cache shared by every caller told a tenant what
// other tenants had searched (tenant-isolation review: 11 of 12 guesses
// right); callers that may not learn each other's queries (callers with
// different read scopes) must use different partitions. The partitions
// share the cache's size.
type QueryCache struct {
	emb   Embedder
	cache *lru.Cache[queryKey, []float32]
}

// queryKey is a cache entry's partition and text.
type queryKey struct{ partition, text string }

// NewQueryCache caches up to size vectors of emb (size ≥ 1; a 512-d
// vector with its text is ~2.2 KB, so 1,024 entries take ~2.3 MB), over
// all partitions together. It fails only for size < 1.
func NewQueryCache(emb Embedder, size int) (*QueryCache, error) {
	c, err := lru.New[queryKey, []float32](size)
	if err != nil {
		return nil, err
	}
	return &QueryCache{emb: emb, cache: c}, nil
}

// Embed returns the vector of text, from partition's entries or from the
// embedder (EmbedQuery; then cached in partition). Any string is a
// partition; equal strings are the same partition. The embedder's errors
// are returned as they are, and nothing is cached then.
func (c *QueryCache) Embed(ctx context.Context, partition, text string) ([]float32, error) {
	k := queryKey{partition, text}
	if v, ok := c.cache.Get(k); ok {
		return v, nil
	}
	v, err := EmbedQuery(ctx, c.emb, text)
	if err != nil {
		return nil, err
	}
	c.cache.Add(k, v)
	return v, nil
}

// Contains reports whether text's vector is cached in partition, without
// embedding anything or changing the entries' recency.
func (c *QueryCache) Contains(partition, text string) bool {
	return c.cache.Contains(queryKey{partition, text})
}

// Len is the number of cached vectors, over all partitions.
func (c *QueryCache) Len() int { return c.cache.Len() }
