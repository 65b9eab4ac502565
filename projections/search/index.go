package search

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"github.com/chronicle-dev/chronicle/events"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// Constants of the design's alpha rule (memory-search design), used by
// FusionAlpha; DefaultRanking no longer uses them (README, "Ranking").
const (
	// AlphaObservations: below this many observations (evidence + usage) a
	// memory is ranked by meaning only (alpha 1.0).
	AlphaObservations = 5
	// AlphaStep is how much alpha drops per observation from there on,
	// down to AlphaFloor: established memories' exact wording has earned
	// the lexical (BM25) half of the score.
	AlphaStep  = 0.05
	AlphaFloor = 0.5
)

// ScopeWeight multiplies relevance by the kind of scope a memory lives in:
// project 1.0, team 0.9, org 0.8 (memory-search design).
func ScopeWeight(scope string) float64 {
	switch {
	case strings.HasPrefix(scope, "project:"):
		return 1.0
	case strings.HasPrefix(scope, "team:"):
		return 0.9
	default:
		return 0.8
	}
}

// Alpha is the weight of vector similarity against BM25 for a memory with
// obs observations: 1.0 below AlphaObservations, then AlphaStep less per
// observation, never below AlphaFloor.
func Alpha(obs int) float64 {
	if obs < AlphaObservations {
		return 1
	}
	return math.Max(AlphaFloor, 1-AlphaStep*float64(obs-AlphaObservations+1))
}

// Index keeps the vector stores of the three collections in step with
// their projections — memories (the memory bank), coordination patterns
// (the sessions projection) and tools (the tool graph) — and ranks their
// candidates. Vectors are cached in the Pebble store outside the digest,
// keyed by embedding model and text hash: a model change re-embeds every
// document instead of mixing vector spaces. The index follows the
// projections' commits (a commit hook marks documents dirty; the next
// search, or Sync, pushes them to the vector stores).
type Index struct {
	store *projections.Store
	emb   embedder.Embedder
	// queries caches the vectors of recent search texts (nil: no cache),
	// partitioned by the searcher's read scopes (queryPartition).
	queries *embedder.QueryCache

	// syncSlot (one slot, made by syncOnce) serialises Syncs; a Sync
	// waiting for it gives up when its context ends, so a search queued
	// behind a sync that hangs on the vector store keeps its own budget
	// (SearchTimeout). mu guards the collections' dirty sets and gen, and
	// is held only briefly: the commit hook takes it on the processors'
	// goroutines, which must never wait for an embedding or a
	// vector-store call.
	syncOnce sync.Once
	syncSlot chan struct{}
	mu       sync.Mutex
	gen      uint64
	// lastSyncErr is the last Sync's error (nil after one that succeeded),
	// guarded by mu: a search that waits for the sync ahead of it names it
	lastSyncErr error
	cols        []*collection // in Collections() order

	// ranking is SetRanking's; nil: DefaultRanking.
	ranking *Ranking

	// sinceCommit is how long ago the processors last committed (nil:
	// the store's SinceCommit); tests set it to hold the processors busy
	// without depending on the scheduler.
	sinceCommit func() time.Duration
}

// collection is one collection's source, store and sync state.
type collection struct {
	Source
	vs VectorStore
	// dirty maps a changed document's id to the generation (Index.gen) of
	// its latest change.
	dirty  map[string]uint64
	loaded bool
	// repair counts the successful syncs to go until the collection is
	// trusted again after a failure (see Sync): 2 after a failure, the
	// rewrite happens at 1.
	repair int
	// pushed maps a document's id to the hash of what the vector store
	// was last given for it (docHash), so a document whose rows changed
	// but whose indexed fields did not is not written again (see sync).
	pushed map[string]uint64
}

// pushSeed seeds docHash for the process: the hashes are compared within
// it only.
var pushSeed = maphash.MakeSeed()

// docHash is the hash of what d gives a vector store, its vector aside
// (a function of its text, which is in d, and of the model).
func docHash(d Doc) uint64 {
	b, _ := json.Marshal(d) // Vector is left out (json:"-")
	return maphash.Bytes(pushSeed, b)
}

// RepairChunk is how many documents a rewrite after an outage deletes and
// re-inserts at a time: each is missing from searches only between its
// chunk's delete and insert.
const RepairChunk = 200

// NewIndex builds an index over store's projections with emb and vs (nil:
// NewMemStores()), one collection per source (the processors' SearchSource
// functions). vs serves the Memories collection; when it is a MultiStore it
// serves the others too, else they get a MemStore each. A search of a
// collection without a source finds nothing. NewIndex registers a commit
// hook: call it before the processors start.
func NewIndex(store *projections.Store, emb embedder.Embedder, vs VectorStore, sources ...Source) *Index {
	if vs == nil {
		vs = NewMemStores()
	}
	ix := &Index{store: store, emb: emb}
	ix.SetQueryCache(QueryCacheSize)
	// vectors cached by text alone (legacyVectorPrefix) are never read
	// again: dropped once, not left as garbage; a failure only leaves them
	_ = store.DeleteCachePrefix(legacyVectorPrefix)
	for _, src := range sources {
		c := &collection{Source: src, dirty: map[string]uint64{}, vs: vs}
		if src.Collection != Memories {
			c.vs = NewMemStore()
			if ms, ok := vs.(MultiStore); ok && ms.Collection(src.Collection) != nil {
				c.vs = ms.Collection(src.Collection)
			}
		}
		ix.cols = append(ix.cols, c)
	}
	store.OnCommit(func(proj string, keys []string) {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		ix.gen++
		for _, c := range ix.cols {
			if c.Projection != proj {
				continue
			}
			for _, k := range keys {
				if id := c.IDOfKey(k); id != "" {
					c.dirty[id] = ix.gen
				}
			}
		}
	})
	return ix
}

// QueryCacheSize is how many query vectors an Index remembers by
// default per partition (queryPartition: one set of read scopes), in
// embedder.QueryCache: a repeated query skips the model. Each partition
// evicts its own entries only, and at most
// embedder.DefaultQueryCachePartitions are kept at once, each dropped
// after embedder.DefaultQueryCacheIdle unused.
const QueryCacheSize = embedder.DefaultQueryCacheSize

// SetQueryCache replaces the query-vector cache with an empty one of size
// entries per partition; 0 turns caching off (every search runs the
// model, as BenchmarkMemorySearch's baseline does). Call it before
// searching.
func (ix *Index) SetQueryCache(size int) {
	ix.queries = nil
	if size > 0 {
		ix.queries, _ = embedder.NewQueryCache(ix.emb, size) // only fails for size < 1
	}
}

// embedQuery returns the vector of a search text, through the cache in
// partition part when cached is true (queryPartition), with the
// embedder's query path (embedder.EmbedQuery: USE lite splits a query
// across idle cores even when its batch work is limited to one).
func (ix *Index) embedQuery(ctx context.Context, text, part string, cached bool) ([]float32, error) {
	if ix.queries != nil && cached {
		return ix.queries.Embed(ctx, part, text)
	}
	return embedder.EmbedQuery(ctx, ix.emb, text)
}

// queryPartition is the query-vector cache's partition of q's searcher,
// from q as the caller gave it (before normalise): the searcher's read
// scopes, q.ReadScopes, sorted without repeats and joined by newlines, or
// "*" when they hold "*" (every scope) or when q has neither ReadScopes
// nor Readable (a caller that reads everything: evaluations, the stdio
// MCP server). A query with a Readable filter but no ReadScopes has no
// partition (ok false): its text is embedded every time, never cached,
// since nothing says whose queries it may share a cache hit with.
//
// Why (tenant-isolation review): the cache was one for every caller, and
// a hit answers milliseconds sooner (2.7–3.9 ms against 5.7–9.8 ms for a
// fresh text), so a tenant could tell whether another had searched a text
// (11 of 12 guesses right). Now a hit needs the same text searched before
// by a searcher with the same read scopes. The scope filter the query
// asks for (q.Scope) is not part of the partition: it narrows what one
// searcher reads, and keying by the narrowed scopes would let a searcher
// that reads only project:b hit what one reading project:a and project:b
// searched in project:b.
func queryPartition(q Query) (part string, ok bool) {
	if len(q.ReadScopes) == 0 {
		return "*", q.Readable == nil
	}
	scopes := slices.Clone(q.ReadScopes)
	sort.Strings(scopes)
	scopes = slices.Compact(scopes)
	if slices.Contains(scopes, "*") {
		return "*", true
	}
	return strings.Join(scopes, "\n"), true
}

// Model is the embedding model of the vectors.
func (ix *Index) Model() string { return ix.emb.Model() }

// Store is the vector store of the Memories collection.
func (ix *Index) Store() VectorStore { return ix.Collection(Memories) }

// Collection is the vector store of collection c (nil for an unknown one).
func (ix *Index) Collection(c Collection) VectorStore {
	if col := ix.col(c); col != nil {
		return col.vs
	}
	return nil
}

func (ix *Index) col(c Collection) *collection {
	for _, col := range ix.cols {
		if col.Collection == c {
			return col
		}
	}
	return nil
}

// vectors returns the cached vectors of docs' texts (texts[i] is
// docs[i]'s EmbedText), embedding the misses.
func (ix *Index) vectors(ctx context.Context, docs []Doc, texts []string) ([][]float32, error) {
	return ix.embedCached(ctx, docs, texts, nil)
}

// vectorPrefix is the prefix of the document-vector cache's keys
// (vectorKey). Keys under legacyVectorPrefix, written before the scope
// was part of the key, are deleted when an Index is built (NewIndex).
const (
	vectorPrefix       = "vecs/"
	legacyVectorPrefix = "vec/"
)

// vectorKey is the document-vector cache's key of text, a document of
// scope's, for the index's model: vecs/<model>/<dim>/<the first 16 bytes
// of the SHA-256 of scope, a NUL byte and text, in hex>.
//
// Why the scope (tenant-isolation review): keyed by text alone, a
// document whose title and description equal another scope's found its
// vector cached, so a tenant that recorded a memory and searched at once
// was answered one embedding sooner (a few ms) when another tenant held
// that text: an oracle for guessed texts. Now a hit needs the text in the
// same scope; equal texts of two scopes are embedded once each.
func (ix *Index) vectorKey(scope, text string) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return vectorPrefix + ix.emb.Model() + "/" + strconv.Itoa(ix.emb.Dim()) + "/" + hex.EncodeToString(h.Sum(nil)[:16])
}

// embedCached is vectors; before each batch it embeds it calls before
// (when set), which the background warm-up uses to yield to the
// processors.
func (ix *Index) embedCached(ctx context.Context, docs []Doc, texts []string, before func()) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []int
	keys := make([]string, len(texts))
	for i, t := range texts {
		keys[i] = ix.vectorKey(docs[i].Scope, t)
		b, ok, err := ix.store.GetCache(keys[i])
		if err != nil {
			return nil, err
		}
		if ok && len(b) == 4*ix.emb.Dim() {
			v := make([]float32, ix.emb.Dim())
			for j := range v {
				v[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
			}
			out[i] = v
			continue
		}
		missing = append(missing, i)
	}
	size := 64
	if before != nil {
		size = WarmBatch
	}
	for start := 0; start < len(missing); start += size {
		batch := missing[start:min(start+size, len(missing))]
		if before != nil {
			before()
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		in := make([]string, len(batch))
		for j, i := range batch {
			in[j] = texts[i]
		}
		vecs, err := ix.emb.Embed(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("search: embed with %s: %w", ix.emb.Model(), err)
		}
		for j, i := range batch {
			out[i] = vecs[j]
			b := make([]byte, 4*len(vecs[j]))
			for k, f := range vecs[j] {
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(f))
			}
			if err := ix.store.SetCache(keys[i], b); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Sync pushes every document (first call) or the documents changed since
// (later calls) of every collection to its vector store, embedding what
// is not cached. A collection that fails stays pending; the others are
// still synced. Errors of several collections are joined.
//
// Repair after an outage. When any collection's sync fails, every
// collection is repaired: its next successful sync pushes every document
// (not only the changed ones), and the sync after that rewrites every
// document, deleting each chunk of RepairChunk documents and inserting it
// again; until then the whole collection counts as pending. The reason is
// what a SIGKILLed and restarted Weaviate 1.35 did: it accepted writes to
// a collection while still recovering that collection's write-ahead log,
// and an object written then was stored but missing from the vector index
// — found by BM25, never by meaning. An upsert cannot repair that
// (Weaviate skips re-indexing an object whose vector did not change), and
// a write in the first successful sync may still fall in the recovery
// window, hence the rewrite one sync later. Vectors are cached, so the
// cost is one upload and one rewrite of each collection per outage. A
// restart that no sync sees fail (between two syncs) is not detected.
func (ix *Index) Sync(ctx context.Context) error { return ix.syncAll(ctx, false) }

// syncAll is Sync; cachedOnly is sync's.
func (ix *Index) syncAll(ctx context.Context, cachedOnly bool) error {
	ix.syncOnce.Do(func() { ix.syncSlot = make(chan struct{}, 1) })
	select {
	case ix.syncSlot <- struct{}{}:
	case <-ctx.Done():
		ix.mu.Lock()
		last := ix.lastSyncErr
		ix.mu.Unlock()
		if last != nil {
			// the store's failure, not only the wait (a search against a
			// killed Weaviate said only "context deadline exceeded": an
			// operator's walkthrough, 2026-11-30)
			return fmt.Errorf("search: waiting for the index sync ahead of this one: %w (the last sync failed: %w)", ctx.Err(), last)
		}
		return fmt.Errorf("search: waiting for the index sync ahead of this one: %w", ctx.Err())
	}
	defer func() { <-ix.syncSlot }()
	var errs []error
	for _, c := range ix.cols {
		if err := ix.sync(ctx, c, cachedOnly); err != nil {
			errs = append(errs, fmt.Errorf("search: %s: %w", c.Collection, err))
			if errors.Is(err, ErrStoreUnavailable) {
				break // the others would wait as long for the same server
			}
		}
	}
	err := errors.Join(errs...)
	ix.mu.Lock()
	ix.lastSyncErr = err
	if err != nil {
		for _, c := range ix.cols {
			c.loaded, c.repair = false, 2
		}
	}
	ix.mu.Unlock()
	return err
}

// sync is Sync of one collection; ix.syncSlot is held. It snapshots the
// dirty set, reads the documents (at least as new as the snapshot: a hook
// runs after its commit), and after a successful upsert clears only the
// ids not changed again meanwhile (same generation).
//
// With cachedOnly, a loaded collection outside repair pushes only the
// documents whose vectors are cached and leaves the others dirty for a
// later sync (the background sync: warm embeds them behind the
// processors).
func (ix *Index) sync(ctx context.Context, c *collection, cachedOnly bool) error {
	var ids []string
	ix.mu.Lock()
	loaded, rewrite, seen, upTo := c.loaded, c.repair == 1, make(map[string]uint64, len(c.dirty)), ix.gen
	for id, g := range c.dirty {
		seen[id] = g
		ids = append(ids, id)
	}
	ix.mu.Unlock()
	if loaded && len(ids) == 0 {
		return nil
	}
	if !loaded {
		ids = nil // every document
	}
	sort.Strings(ids)
	docs, gone, err := c.Docs(ix.store, ids)
	if err != nil {
		return err
	}
	// A document whose indexed fields are what the store was last given
	// is not written again: every search changes the rows of the memories
	// it returns (their retrievals), and each of them was written to the
	// store again, unchanged. Weaviate keeps an overwritten object's
	// postings until it compacts them, so its document frequencies grew
	// past its object counts, its BM25 scores went negative, and a filtered
	// keyword query dropped memories a few identical searches after they
	// were found (a Weaviate walkthrough, 2026-11-30). A full push (not
	// loaded, or the rewrite after a failure) writes every document.
	hashes := make([]uint64, len(docs))
	for i := range docs {
		docs[i].Model, docs[i].Dim = ix.emb.Model(), ix.emb.Dim()
		hashes[i] = docHash(docs[i])
	}
	var unchanged []string // cleared without a write
	if loaded && c.repair == 0 {
		ix.mu.Lock()
		kept := 0
		for i := range docs {
			if h, ok := c.pushed[docs[i].ID]; ok && h == hashes[i] {
				unchanged = append(unchanged, docs[i].ID)
				continue
			}
			docs[kept], hashes[kept] = docs[i], hashes[i]
			kept++
		}
		ix.mu.Unlock()
		docs, hashes = docs[:kept], hashes[:kept]
	}
	texts := make([]string, len(docs))
	for i := range docs {
		texts[i] = EmbedText(c.Collection, docs[i])
	}
	if cachedOnly && loaded && c.repair == 0 {
		kept := 0
		for i := range docs {
			if _, ok, err := ix.store.GetCache(ix.vectorKey(docs[i].Scope, texts[i])); err != nil {
				return err
			} else if ok {
				docs[kept], texts[kept], hashes[kept] = docs[i], texts[i], hashes[i]
				kept++
			}
		}
		docs, texts, hashes = docs[:kept], texts[:kept], hashes[:kept]
	}
	vecs, err := ix.vectors(ctx, docs, texts)
	if err != nil {
		return err
	}
	for i := range docs {
		docs[i].Vector = vecs[i] // Model and Dim were set for docHash
	}
	for start := 0; start < len(docs); start += RepairChunk {
		chunk := docs[start:min(start+RepairChunk, len(docs))]
		if rewrite {
			ids := make([]string, len(chunk))
			for i, d := range chunk {
				ids[i] = d.ID
			}
			if err := c.vs.Delete(ctx, ids); err != nil {
				return fmt.Errorf("vector store delete before rewrite: %w", err)
			}
		}
		if err := c.vs.Upsert(ctx, chunk); err != nil {
			return fmt.Errorf("vector store upsert: %w", err)
		}
	}
	if len(gone) > 0 {
		if err := c.vs.Delete(ctx, gone); err != nil {
			return fmt.Errorf("vector store delete: %w", err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if c.pushed == nil {
		c.pushed = map[string]uint64{}
	}
	for i, d := range docs {
		c.pushed[d.ID] = hashes[i]
	}
	for _, id := range gone {
		delete(c.pushed, id)
	}
	if c.repair > 0 {
		c.repair--
	}
	c.loaded = c.repair == 0
	clear := func(id string) {
		g, ok := c.dirty[id]
		if !ok {
			return
		}
		if want, snap := seen[id]; (snap && g == want) || (!loaded && g <= upTo) {
			delete(c.dirty, id)
		}
	}
	for _, d := range docs {
		clear(d.ID)
	}
	for _, id := range unchanged {
		clear(id)
	}
	for _, id := range gone {
		clear(id)
	}
	return nil
}

// Search ranks the documents of q.Collection (default: memories) visible
// to q by the index's Ranking (memories: DefaultRanking, a convex
// combination of normalised cosine and BM25 × scope weight,
// near-duplicates collapsed into the better hit, which takes over their
// source sessions; other collections: OtherRanking),
// over the candidates of the collection's vector store (the
// CandidatesPerQuery nearest by vector and best by BM25). Pruned documents, documents below MinConfidence, and
// documents outside the scope kind, the outcome, Readable or IDs never
// appear.
// Ties are broken by id. TotalFound counts the candidates with a positive
// relevance. Errors: ErrInvalid (wrapped, naming the field) for a query
// that breaks the tool schema or names an unknown collection; embedding
// and vector-store errors.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	part, cached := queryPartition(q)
	q, err := normalise(q)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, SearchTimeout, ErrTimeout)
	defer cancel()
	res, err := ix.search(ctx, q, part, cached)
	if errors.Is(err, ErrStoreReset) {
		ix.mu.Lock()
		for _, c := range ix.cols {
			c.loaded, c.repair = false, 2 // pushed whole by the next sync
		}
		ix.mu.Unlock()
	}
	if err != nil && errors.Is(context.Cause(ctx), ErrTimeout) {
		err = fmt.Errorf("%w (%s): %w", ErrTimeout, SearchTimeout, err)
	}
	return res, err
}

// SearchTimeout bounds one Search: embedding the query, the index sync
// it waits for (its own, or another's ahead of it) and the candidate
// query. Default 20 s: longer than the Weaviate store's retry budget for
// one operation (weaviate.DefaultRetryMaxElapsed, 15 s), so a store that
// is down fails a search with its own error (naming Weaviate) first,
// while a store that accepts and never answers, or a queue of searches
// behind one sync, ends at this bound. A search that runs out of it fails
// with ErrTimeout, wrapped with what it was waiting for; the HTTP API
// answers 503. Like any failed sync, it makes the next successful sync
// push every document again (see Sync).
var SearchTimeout = 20 * time.Second

// ErrTimeout is the error of a search that ran out of SearchTimeout
// (wrapped, naming the budget and the step that was waiting).
var ErrTimeout = errors.New("search: no answer within the search budget")

// ErrStoreUnavailable is wrapped by a vector store's error when the
// store's server did not answer within its retry budget (the weaviate
// package's ErrUnavailable): a sync stops at the first collection that
// meets it, since the next would wait its whole budget for the same
// answer (three collections made /healthz name a killed server after
// about 75 s instead of 25: an operator's walkthrough, 2026-11-30).
var ErrStoreUnavailable = errors.New("search: the vector store's server is unavailable")

// ErrStoreReset is wrapped by a vector store's error when the store found
// its collections gone from its server (a Weaviate restarted with its data
// wiped) and created them again, empty: the index then pushes every
// document of every collection again, as after an outage (see Sync), on
// the next sync — a search's own, at the latest. Before, such a server
// answered every search with "could not find class" for good, and its
// auto-schema then created the classes without multi-tenancy (a
// walkthrough, 2026-11-30).
var ErrStoreReset = errors.New("search: the vector store lost its collections and recreated them empty")

// search is Search of a normalised query whose searcher's query-cache
// partition is part (cached false: none, see queryPartition).
func (ix *Index) search(ctx context.Context, q Query, part string, cached bool) (Result, error) {
	qv, err := ix.embedQuery(ctx, q.Text, part, cached)
	if err != nil {
		return Result{}, fmt.Errorf("search: embed query: %w", err)
	}
	if err := ix.Sync(ctx); err != nil {
		return Result{}, err
	}
	f := Filter{MinConfidence: *q.MinConfidence, Outcome: q.Outcome, ScopeKind: q.Scope, Readable: q.Readable, ExcludeSourceSession: q.ExcludeSourceSession,
		EveryScope: cached && part == "*"}
	col := ix.col(q.Collection)
	k := max(CandidatesPerQuery, 4*q.Limit)
	if q.IDs != nil {
		// IDs is checked on the candidates, not by the store: ask for
		// every document, so the admitted ones are candidates wherever
		// they rank (GET /v1/tools/search's scope filter: a scope's tools
		// outside the best k of every scope's were never found)
		n, err := col.vs.Len(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("search: candidates: %w", err)
		}
		k = max(k, n)
	}
	rules := ix.rulesFor(q.Collection)
	var cands []Candidate
	ds, twoPhase := col.vs.(DocStore)
	twoPhase = twoPhase && rules.Fusion != FusionAlpha // it reads evidence and usage
	if twoPhase {
		cands, err = ds.CandidateRefs(ctx, qv, q.Text, f, k)
	} else {
		cands, err = col.vs.Candidates(ctx, qv, q.Text, f, k)
	}
	if err != nil {
		return Result{}, fmt.Errorf("search: candidates: %w", err)
	}
	if q.IDs != nil {
		cands = slices.DeleteFunc(cands, func(c Candidate) bool { return !q.IDs(c.ID) })
	}
	rs := rank(rules, cands)
	res := Result{Memories: []Hit{}}
	var kept []*rankedDoc
	var read []docState // twoPhase: whether each of rs has its whole document
	if twoPhase {
		read = make([]docState, len(rs))
	}
	for i := range rs {
		r := &rs[i]
		if r.rel <= 0 {
			break
		}
		res.TotalFound++
		if len(res.Memories) == q.Limit {
			continue
		}
		if twoPhase && read[i] == docUnread {
			if err := readDocs(ctx, ds, f, rs[i:], read[i:], 2*(q.Limit-len(res.Memories)), ix.goneFrom(col)); err != nil {
				return Result{}, fmt.Errorf("search: candidates' documents: %w", err)
			}
		}
		if twoPhase && read[i] == docGone {
			continue
		}
		if j := duplicateOf(rules.DuplicateJaccard, r, kept); j >= 0 {
			// collapsed into a better hit, which now stands for it too:
			// it takes over its provenance (the sessions it was learned from)
			res.Memories[j].SourceSessions = mergeSessions(res.Memories[j].SourceSessions, r.c.SourceSessions)
			continue
		}
		kept = append(kept, r)
		m := r.c
		id := m.ID
		if scope, bare, ok := events.SplitEntityKey(id); ok && scope == m.Scope {
			id = bare // a memory document's id is its entity key
		}
		res.Memories = append(res.Memories, Hit{ID: id, Title: m.Title, Description: m.Description, Content: m.Content, Outcome: m.Outcome,
			Confidence: m.Confidence, UsageCount: m.UsageCount, Relevance: math.Round(r.rel*1e4) / 1e4, Scope: m.Scope, Tags: m.Tags, SourceSessions: m.SourceSessions, Collection: q.Collection})
		res.TokensUsed += (len(m.Title) + len(m.Description) + len(m.Content) + 3) / 4
	}
	return res, nil
}

// docState says whether a DocStore candidate's document was read.
type docState uint8

const (
	docUnread docState = iota // c.Doc holds only what CandidateRefs returns
	docWhole                  // c.Doc is the whole document
	docGone                   // deleted, or no longer admitted, since the query
)

// readDocs fills in the whole documents of up to n candidates of rs (a
// DocStore's CandidateRefs, ranked; read their states) from the first
// on, those with a positive relevance not read yet, in one Docs call. A
// candidate whose document is gone is marked docGone. The scores stay
// those of the query.
func readDocs(ctx context.Context, ds DocStore, f Filter, rs []rankedDoc, read []docState, n int, gone func(ids []string) ([]string, error)) error {
	var ids []string
	var at []int
	for i := 0; i < len(rs) && len(ids) < max(n, 1) && rs[i].rel > 0; i++ {
		if read[i] == docUnread {
			ids, at = append(ids, rs[i].c.ID), append(at, i)
		}
	}
	docs, err := ds.Docs(ctx, ids, f)
	if err != nil {
		return err
	}
	// the projections decide what exists: a persistent store can hold
	// documents this data directory never had (another deployment's on
	// the same Weaviate, a directory replayed or replaced) — returned as
	// hits, they answered 404 to a read and dead-lettered their usage
	// events (an operator's walkthrough, 2026-11-30)
	missing, err := gone(ids)
	if err != nil {
		return err
	}
	for _, id := range missing {
		delete(docs, id)
	}
	for _, i := range at {
		d, ok := docs[rs[i].c.ID]
		if !ok {
			read[i] = docGone
			continue
		}
		rs[i].c.Doc, read[i] = d, docWhole
	}
	return nil
}

// goneFrom returns which of ids c's projection does not hold (its
// Source.Docs' gone ids).
func (ix *Index) goneFrom(c *collection) func(ids []string) ([]string, error) {
	return func(ids []string) ([]string, error) {
		_, gone, err := c.Docs(ix.store, ids)
		if err != nil {
			return nil, fmt.Errorf("search: %s: %w", c.Collection, err)
		}
		return gone, nil
	}
}

// mergeSessions is a followed by the sessions of b it lacks, in b's order.
func mergeSessions(a, b []string) []string {
	out := a
	for _, s := range b {
		if !slices.Contains(out, s) {
			if len(out) == len(a) {
				out = append([]string(nil), a...) // never write into the candidate's slice
			}
			out = append(out, s)
		}
	}
	return out
}

// CandidatesPerQuery is how many candidates a search asks the vector
// store for, by vector and by BM25 each (at least 4 × the limit).
const CandidatesPerQuery = 200

// normalise applies the tool schema's defaults and bounds.
func normalise(q Query) (Query, error) {
	if strings.TrimSpace(q.Text) == "" {
		return q, argErr("query", "required")
	}
	if n := utf8.RuneCountInString(q.Text); n > MaxQueryLength {
		return q, argErr("query", "%d characters, above the %d allowed", n, MaxQueryLength)
	}
	c, err := ParseCollection(string(q.Collection))
	if err != nil {
		return q, err
	}
	q.Collection = c
	switch q.Scope {
	case "":
		q.Scope = ScopeAll
	case ScopeProject, ScopeTeam, ScopeOrg, ScopeAll:
	default:
		if !events.ValidScope(q.Scope) {
			return q, argErr("scope", "%s", events.ScopeFilterReason(q.Scope))
		}
		// one scope: filter by its kind (pushed down to the vector store)
		// and keep only that scope among the readable ones
		one, readable := q.Scope, q.Readable
		q.Scope, _, _ = strings.Cut(one, ":")
		q.Readable = func(sc string) bool { return sc == one && (readable == nil || readable(sc)) }
	}
	switch q.Outcome {
	case "":
		q.Outcome = "all"
	case "success", "failure", "all":
	default:
		return q, argErr("outcome", "%q is not success, failure or all", q.Outcome)
	}
	switch {
	case q.Limit == 0: // absent
		q.Limit = DefaultLimit
	case q.Limit < 1 || q.Limit > MaxLimit:
		return q, argErr("limit", "%d is not between 1 and %d", q.Limit, MaxLimit)
	}
	if q.MinConfidence == nil {
		d := 0.5
		if q.Collection == Patterns && q.Outcome == "failure" {
			// a coordination pattern's confidence is its sessions' success
			// rate, (met + 1) / (sessions + 2), below 0.5 for every pattern
			// no session met its criteria with: the default left every
			// failure pattern out (found by a subscriber's walkthrough)
			d = 0
		}
		q.MinConfidence = &d
	} else if !(*q.MinConfidence >= 0 && *q.MinConfidence <= 1) {
		// written so NaN, which every comparison is false for, is out of
		// range too: it passed as < 0 || > 1 and turned the filter off
		// (found by a new user's walkthrough)
		return q, argErr("min_confidence", "%v is not between 0 and 1", *q.MinConfidence)
	}
	return q, nil
}

// Pending is how many documents of every collection changed since the
// last successful Sync (all of them before a collection's first): the
// vector stores' lag.
func (ix *Index) Pending() int {
	n := 0
	for _, c := range Collections() {
		n += ix.PendingIn(c)
	}
	return n
}

// PendingIn is Pending of one collection (0 for an unknown one).
func (ix *Index) PendingIn(coll Collection) int {
	c := ix.col(coll)
	if c == nil {
		return 0
	}
	ix.mu.Lock()
	loaded, n := c.loaded, len(c.dirty)
	ix.mu.Unlock()
	if loaded {
		return n
	}
	docs, _, err := c.Docs(ix.store, nil) // outside mu: the commit hook must not wait
	if err != nil {
		return 0
	}
	return len(docs)
}

// Run keeps the vector store in step until ctx ends: it syncs every
// interval (default 1 s), behind the processors — it waits until they
// have been idle (no batch committed) for IdleBeforeSync, at most 5
// intervals, then embeds what the cache lacks WarmBatch texts at a time,
// waiting again (at most one interval) before each batch, so under a
// constant load embedding takes at most one batch per interval (about 5%
// of one core with USE lite) and between bursts of events all it needs;
// Pending shows how far behind it is — and, while the store fails (Weaviate down), retries
// with exponential backoff (backoff/v4, from 1 s up to 30 s) and lags —
// Pending grows — without holding up the processors. Nothing is lost: a
// document stays pending until an upsert of it succeeds, and after a
// failure the whole collection is pushed again (see Sync). onErr, when
// set, is told about each failure.
func (ix *Index) Run(ctx context.Context, interval time.Duration, onErr func(error)) {
	if interval <= 0 {
		interval = time.Second
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = time.Second, 30*time.Second, 0
	wait := interval
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		ix.waitIdle(ctx, 5*interval)
		err := ix.warm(ctx, interval)
		if err == nil {
			err = ix.syncAll(ctx, true) // what changed during warm waits for the next round
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if onErr != nil {
				onErr(err)
			}
			wait = bo.NextBackOff()
			continue
		}
		bo.Reset()
		wait = interval
	}
}

// WarmBatch is how many texts the background sync embeds between two
// looks at the processors (see Run): about 50 ms of one core with USE lite.
const WarmBatch = 16

// warm embeds into the vector cache the texts of the documents that
// changed since the last sync (every document before the first) and that
// the cache lacks, WarmBatch at a time, waiting before each batch until the
// processors have been idle for IdleBeforeSync, at most maxWait. It holds
// no lock while it waits, so a search (which syncs) never waits behind it;
// the Sync that follows finds the vectors cached.
func (ix *Index) warm(ctx context.Context, maxWait time.Duration) error {
	for _, c := range ix.cols {
		var ids []string
		ix.mu.Lock()
		loaded := c.loaded
		for id := range c.dirty {
			ids = append(ids, id)
		}
		ix.mu.Unlock()
		if loaded && len(ids) == 0 {
			continue
		}
		if !loaded {
			ids = nil
		}
		sort.Strings(ids)
		docs, _, err := c.Docs(ix.store, ids)
		if err != nil {
			return fmt.Errorf("search: %s: %w", c.Collection, err)
		}
		texts := make([]string, len(docs))
		for i := range docs {
			texts[i] = EmbedText(c.Collection, docs[i])
		}
		if _, err := ix.embedCached(ctx, docs, texts, func() { ix.waitIdle(ctx, maxWait) }); err != nil {
			return fmt.Errorf("search: %s: %w", c.Collection, err)
		}
	}
	return nil
}

// IdleBeforeSync is how long the processors must have committed nothing
// before the background sync (Run) embeds and pushes documents.
const IdleBeforeSync = 50 * time.Millisecond

// waitIdle returns once the processors have been idle for IdleBeforeSync,
// after at most max, or when ctx ends.
func (ix *Index) waitIdle(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	since := ix.sinceCommit
	if since == nil {
		since = ix.store.SinceCommit
	}
	for since() < IdleBeforeSync && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
