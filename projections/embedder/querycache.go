package embedder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// QueryCache remembers the vectors of the last texts an Embedder was asked
// for, one text at a time: agents repeat their queries, and a hit costs a
// map lookup instead of a model run (~1.5–5 ms with USE lite). Vectors are
// deterministic functions of the model and the text, so a hit returns what
// the model would. Callers must not modify the returned vector. It is safe
// for concurrent use.
//
// Entries are kept per partition: a text cached under one partition is
// never a hit under another. A hit is milliseconds faster than a miss to
// whoever times it, so a cache shared by every caller told a tenant what
// other tenants had searched (tenant-isolation review: 11 of 12 guesses
// right); callers that may not learn each other's queries (callers with
// different read scopes) must use different partitions.
//
// Nothing one partition does moves another's entries. Each partition is a
// least-recently-used cache of its own (Size entries), so its entries are
// evicted by its own texts only; a partition unused for Idle is dropped
// whatever the others do; and at most Partitions exist at once — a new
// partition beyond that is not created (its texts are embedded every time,
// not cached) until one of the others has been idle for Idle. Before, the
// partitions shared one least-recently-used list, and a tenant that cached
// a text and searched it again later could tell, by a miss, that other
// searchers had run at least the cache's size of other texts meanwhile
// (TestQueryCacheEvictsWithinAPartition). What a caller can still learn:
// that Partitions others searched within Idle, when its own first search
// finds no room (its texts are then never hits).
type QueryCache struct {
	emb Embedder
	cfg QueryCacheConfig
	now func() time.Time

	mu    sync.Mutex
	parts map[string]*queryPartition
}

// queryPartition is one partition's entries and when it was last used.
type queryPartition struct {
	cache *simplelru.LRU[string, []float32] // guarded by QueryCache.mu
	used  time.Time
}

// QueryCacheConfig sizes a QueryCache.
type QueryCacheConfig struct {
	// Size is how many vectors one partition keeps (≥ 1). Default 256:
	// a 512-d vector with its text is ~2.2 KB, so a full partition takes
	// ~0.6 MB.
	Size int
	// Partitions is how many partitions exist at once (≥ 1). Default 32:
	// with Size 256, at most ~18 MB in all. A partition is one set of
	// read scopes (search.Index): one per token's scopes, one per PAIR
	// session scope.
	Partitions int
	// Idle is how long a partition lives unused; a use after that finds it
	// empty (> 0). Default 10 minutes.
	Idle time.Duration
}

// Defaults of QueryCacheConfig's fields.
const (
	DefaultQueryCacheSize       = 256
	DefaultQueryCachePartitions = 32
	DefaultQueryCacheIdle       = 10 * time.Minute
)

// withDefaults fills the zero fields.
func (c QueryCacheConfig) withDefaults() QueryCacheConfig {
	if c.Size == 0 {
		c.Size = DefaultQueryCacheSize
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultQueryCachePartitions
	}
	if c.Idle == 0 {
		c.Idle = DefaultQueryCacheIdle
	}
	return c
}

// Validate reports the first field out of range, after the defaults.
func (c QueryCacheConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Size < 1:
		return fmt.Errorf("embedder: QueryCacheConfig.Size %d: must be at least 1", c.Size)
	case c.Partitions < 1:
		return fmt.Errorf("embedder: QueryCacheConfig.Partitions %d: must be at least 1", c.Partitions)
	case c.Idle < 0:
		return fmt.Errorf("embedder: QueryCacheConfig.Idle %v: must be positive", c.Idle)
	}
	return nil
}

// NewQueryCache caches up to size vectors of emb per partition (size ≥ 1;
// the other fields of QueryCacheConfig at their defaults). It fails only
// for size < 1.
func NewQueryCache(emb Embedder, size int) (*QueryCache, error) {
	if size < 1 {
		return nil, errors.New("embedder: a query cache needs a size of at least 1")
	}
	return NewQueryCacheConfig(emb, QueryCacheConfig{Size: size})
}

// NewQueryCacheConfig is NewQueryCache with every setting; it fails when
// cfg.Validate does.
func NewQueryCacheConfig(emb Embedder, cfg QueryCacheConfig) (*QueryCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &QueryCache{emb: emb, cfg: cfg.withDefaults(), now: time.Now, parts: map[string]*queryPartition{}}, nil
}

// Embed returns the vector of text, from partition's entries or from the
// embedder (EmbedQuery; then cached in partition, when it exists or there
// is room for it). Any string is a partition; equal strings are the same
// partition. The embedder's errors are returned as they are, and nothing
// is cached then.
func (c *QueryCache) Embed(ctx context.Context, partition, text string) ([]float32, error) {
	c.mu.Lock()
	if p := c.live(partition); p != nil {
		if v, ok := p.cache.Get(text); ok {
			p.used = c.now()
			c.mu.Unlock()
			return v, nil
		}
	}
	c.mu.Unlock()
	v, err := EmbedQuery(ctx, c.emb, text)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.live(partition)
	if p == nil {
		p = c.create(partition)
	}
	if p != nil {
		p.cache.Add(text, v)
		p.used = c.now()
	}
	return v, nil
}

// live is partition's entries, nil when it has none or has been idle for
// cfg.Idle (then dropped). c.mu is held.
func (c *QueryCache) live(partition string) *queryPartition {
	p := c.parts[partition]
	if p != nil && c.idle(p, c.now()) {
		delete(c.parts, partition)
		return nil
	}
	return p
}

// create adds an empty partition, after dropping those idle for cfg.Idle;
// nil when cfg.Partitions others are in use. c.mu is held.
func (c *QueryCache) create(partition string) *queryPartition {
	if len(c.parts) >= c.cfg.Partitions {
		now := c.now()
		for name, p := range c.parts {
			if c.idle(p, now) {
				delete(c.parts, name)
			}
		}
		if len(c.parts) >= c.cfg.Partitions {
			return nil
		}
	}
	cache, _ := simplelru.NewLRU[string, []float32](c.cfg.Size, nil) // Size ≥ 1: Validate
	p := &queryPartition{cache: cache, used: c.now()}
	c.parts[partition] = p
	return p
}

// Contains reports whether text's vector is cached in partition, without
// embedding anything or changing the entries' recency.
func (c *QueryCache) Contains(partition, text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[partition]
	return p != nil && !c.idle(p, c.now()) && p.cache.Contains(text)
}

// idle reports whether p has gone unused for cfg.Idle at now.
func (c *QueryCache) idle(p *queryPartition, now time.Time) bool {
	return now.Sub(p.used) >= c.cfg.Idle
}

// Len is the number of cached vectors, over all partitions (idle ones
// included until they are dropped).
func (c *QueryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.parts {
		n += p.cache.Len()
	}
	return n
}
