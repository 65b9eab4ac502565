package search

import (
	"time"

	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/cenkalti/backoff/v4"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// Ranking constants (memory-search design; documented in the README).
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

// Index keeps a VectorStore in step with the memory bank's projection and
// ranks its candidates. Vectors are cached in the Pebble store outside the
// digest, keyed by embedding model and text hash: a model change re-embeds
// every memory instead of mixing vector spaces. The index follows the
// memory bank's commits (a commit hook marks memories dirty; the next
// search, or Sync, pushes them to the vector store).
type Index struct {
	store *projections.Store
	emb   embedder.Embedder
	vs    VectorStore

	mu     sync.Mutex
	dirty  map[string]bool
	loaded bool
}

// NewIndex builds an index over store's memories projection with emb and
// vs (nil: a new MemStore). It registers a commit hook: call it before the
// processors start.
func NewIndex(store *projections.Store, emb embedder.Embedder, vs VectorStore) *Index {
	if vs == nil {
		vs = NewMemStore()
	}
	ix := &Index{store: store, emb: emb, vs: vs, dirty: map[string]bool{}}
	store.OnCommit(func(proj string, keys []string) {
		if proj != memories.Name {
			return
		}
		ix.mu.Lock()
		for _, k := range keys {
			if strings.HasPrefix(k, "m/") {
				ix.dirty[k[2:]] = true
			}
		}
		ix.mu.Unlock()
	})
	return ix
}

// Model is the embedding model of the vectors.
func (ix *Index) Model() string { return ix.emb.Model() }

// Store is the vector store behind the index.
func (ix *Index) Store() VectorStore { return ix.vs }

// vectors returns the cached vectors of texts, embedding the misses.
func (ix *Index) vectors(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []int
	keys := make([]string, len(texts))
	for i, t := range texts {
		h := sha256.Sum256([]byte(t))
		keys[i] = "vec/" + ix.emb.Model() + "/" + hex.EncodeToString(h[:16])
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
	for start := 0; start < len(missing); start += 64 {
		batch := missing[start:min(start+64, len(missing))]
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

// DocOf is the vector-store document of memory m (without its vector).
func DocOf(m memories.Memory) Doc {
	return Doc{ID: m.ID, Scope: m.Scope, Title: m.Title, Description: m.Description, Content: m.Content, Outcome: m.Outcome,
		Tags: m.Tags, SourceSessions: m.SourceSessions, Confidence: m.Confidence, Pruned: m.Pruned, Evidence: m.Evidence, UsageCount: m.UsageCount}
}

// Sync pushes every memory (first call) or the memories changed since
// (later calls) to the vector store, embedding what is not cached.
func (ix *Index) Sync(ctx context.Context) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var ms []memories.Memory
	var gone []string
	if !ix.loaded {
		if err := memories.Each(ix.store, func(m memories.Memory) bool { ms = append(ms, m); return true }); err != nil {
			return err
		}
	} else {
		ids := make([]string, 0, len(ix.dirty))
		for id := range ix.dirty {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			m, ok, err := memories.Get(ix.store, id)
			if err != nil {
				return err
			}
			if ok {
				ms = append(ms, m)
			} else {
				gone = append(gone, id)
			}
		}
	}
	docs := make([]Doc, len(ms))
	texts := make([]string, len(ms))
	for i, m := range ms {
		docs[i] = DocOf(m)
		texts[i] = DocText(docs[i])
	}
	vecs, err := ix.vectors(ctx, texts)
	if err != nil {
		return err
	}
	for i := range docs {
		docs[i].Vector, docs[i].Model = vecs[i], ix.emb.Model()
	}
	if len(docs) > 0 {
		if err := ix.vs.Upsert(ctx, docs); err != nil {
			return fmt.Errorf("search: vector store upsert: %w", err)
		}
	}
	if len(gone) > 0 {
		if err := ix.vs.Delete(ctx, gone); err != nil {
			return fmt.Errorf("search: vector store delete: %w", err)
		}
	}
	ix.loaded = true
	for _, m := range ms {
		delete(ix.dirty, m.ID)
	}
	for _, id := range gone {
		delete(ix.dirty, id)
	}
	return nil
}

// Search ranks the memories visible to q: relevance = (alpha · cosine +
// (1 − alpha) · BM25 / max BM25) × scope weight, cosine clamped at 0, over
// the candidates of the vector store (the CandidatesPerQuery nearest by
// vector and best by BM25). Pruned memories, memories below
// MinConfidence, and memories outside the scope kind, the outcome or
// Readable never appear. Ties are broken by id. TotalFound counts the
// candidates with a positive relevance.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	q, err := normalise(q)
	if err != nil {
		return Result{}, err
	}
	qv, err := ix.emb.Embed(ctx, []string{q.Text})
	if err != nil {
		return Result{}, fmt.Errorf("search: embed query: %w", err)
	}
	if err := ix.Sync(ctx); err != nil {
		return Result{}, err
	}
	f := Filter{MinConfidence: *q.MinConfidence, Outcome: q.Outcome, ScopeKind: q.Scope, Readable: q.Readable, ExcludeSourceSession: q.ExcludeSourceSession}
	cands, err := ix.vs.Candidates(ctx, qv[0], q.Text, f, max(CandidatesPerQuery, 4*q.Limit))
	if err != nil {
		return Result{}, fmt.Errorf("search: candidates: %w", err)
	}
	maxBM := 0.0
	for _, c := range cands {
		maxBM = math.Max(maxBM, c.BM25)
	}
	type ranked struct {
		c   Candidate
		rel float64
	}
	rs := make([]ranked, 0, len(cands))
	for _, c := range cands {
		bm := 0.0
		if maxBM > 0 {
			bm = c.BM25 / maxBM
		}
		a := Alpha(c.Evidence + c.UsageCount)
		rs = append(rs, ranked{c, (a*math.Max(0, c.Cosine) + (1-a)*bm) * ScopeWeight(c.Scope)})
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].rel != rs[j].rel {
			return rs[i].rel > rs[j].rel
		}
		return rs[i].c.ID < rs[j].c.ID
	})
	res := Result{Memories: []Hit{}}
	for _, r := range rs {
		if r.rel <= 0 {
			break
		}
		res.TotalFound++
		if len(res.Memories) < q.Limit {
			m := r.c
			res.Memories = append(res.Memories, Hit{ID: m.ID, Title: m.Title, Description: m.Description, Content: m.Content, Outcome: m.Outcome,
				Confidence: m.Confidence, UsageCount: m.UsageCount, Relevance: math.Round(r.rel*1e4) / 1e4, Scope: m.Scope, Tags: m.Tags, SourceSessions: m.SourceSessions})
			res.TokensUsed += (len(m.Title) + len(m.Description) + len(m.Content) + 3) / 4
		}
	}
	return res, nil
}

// CandidatesPerQuery is how many candidates a search asks the vector
// store for, by vector and by BM25 each (at least 4 × the limit).
const CandidatesPerQuery = 200

// normalise applies the tool schema's defaults and bounds.
func normalise(q Query) (Query, error) {
	if strings.TrimSpace(q.Text) == "" {
		return q, fmt.Errorf("%w: query: required", ErrInvalid)
	}
	switch q.Scope {
	case "":
		q.Scope = ScopeAll
	case ScopeProject, ScopeTeam, ScopeOrg, ScopeAll:
	default:
		return q, fmt.Errorf("%w: scope: %q is not project, team, org or all", ErrInvalid, q.Scope)
	}
	switch q.Outcome {
	case "":
		q.Outcome = "all"
	case "success", "failure", "all":
	default:
		return q, fmt.Errorf("%w: outcome: %q is not success, failure or all", ErrInvalid, q.Outcome)
	}
	switch {
	case q.Limit == 0:
		q.Limit = 5
	case q.Limit < 1 || q.Limit > 20:
		return q, fmt.Errorf("%w: limit: %d is not between 1 and 20", ErrInvalid, q.Limit)
	}
	if q.MinConfidence == nil {
		d := 0.5
		q.MinConfidence = &d
	} else if *q.MinConfidence < 0 || *q.MinConfidence > 1 {
		return q, fmt.Errorf("%w: min_confidence: %v is not between 0 and 1", ErrInvalid, *q.MinConfidence)
	}
	return q, nil
}

// Pending is how many memories changed since the last successful Sync
// (all of them before the first): the vector store's lag.
func (ix *Index) Pending() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.loaded {
		n := 0
		_ = memories.Each(ix.store, func(memories.Memory) bool { n++; return true })
		return n
	}
	return len(ix.dirty)
}

// Run keeps the vector store in step until ctx ends: it syncs every
// interval (default 1 s) and, while the store fails (Weaviate down), retries
// with exponential backoff (backoff/v4, from 1 s up to 30 s) and lags —
// Pending grows — without holding up the processors. Nothing is lost: a
// memory stays pending until an upsert of it succeeds. onErr, when set, is
// told about each failure.
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
		if err := ix.Sync(ctx); err != nil {
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
