package search

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"

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
	// BM25 parameters (Robertson & Zaragoza's usual k1, b).
	bm25K1 = 1.2
	bm25B  = 0.75
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

type doc struct {
	m   memories.Memory
	vec []float32
	tf  map[string]int
	n   int // tokens
}

// Index is the embedded vector + BM25 index over the memory bank's
// projection. Vectors are cached in the store outside the digest, keyed by
// embedding model and text hash: a model change re-embeds every memory
// instead of mixing vector spaces. The index follows the memory bank's
// commits (a commit hook marks memories dirty; the next search refreshes
// them).
type Index struct {
	store *projections.Store
	emb   embedder.Embedder

	mu       sync.Mutex
	docs     map[string]*doc
	df       map[string]int
	totalLen int
	dirty    map[string]bool
	loaded   bool
}

// NewIndex builds an index over store's memories projection with emb. It
// registers a commit hook: call it before the processors start.
func NewIndex(store *projections.Store, emb embedder.Embedder) *Index {
	ix := &Index{store: store, emb: emb, docs: map[string]*doc{}, df: map[string]int{}, dirty: map[string]bool{}}
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

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func docText(m memories.Memory) string { return m.Title + "\n" + m.Description + "\n" + m.Content }

// vector returns the cached vector of text, embedding it on a miss.
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

// refresh loads every memory on first use, then the dirty ones.
func (ix *Index) refresh(ctx context.Context) error {
	var ms []memories.Memory
	if !ix.loaded {
		if err := memories.Each(ix.store, func(m memories.Memory) bool { ms = append(ms, m); return true }); err != nil {
			return err
		}
		ix.loaded = true
		ix.dirty = map[string]bool{}
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
				ix.remove(id)
			}
			delete(ix.dirty, id)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	texts := make([]string, len(ms))
	for i, m := range ms {
		texts[i] = docText(m)
	}
	vecs, err := ix.vectors(ctx, texts)
	if err != nil {
		return err
	}
	for i, m := range ms {
		ix.remove(m.ID)
		d := &doc{m: m, vec: vecs[i], tf: map[string]int{}}
		for _, t := range tokens(texts[i]) {
			d.tf[t]++
			d.n++
		}
		for t := range d.tf {
			ix.df[t]++
		}
		ix.totalLen += d.n
		ix.docs[m.ID] = d
	}
	return nil
}

func (ix *Index) remove(id string) {
	d, ok := ix.docs[id]
	if !ok {
		return
	}
	for t := range d.tf {
		if ix.df[t]--; ix.df[t] == 0 {
			delete(ix.df, t)
		}
	}
	ix.totalLen -= d.n
	delete(ix.docs, id)
}

// Len is the number of memories indexed (after the last refresh).
func (ix *Index) Len() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.docs)
}

// Search ranks the memories visible to q: relevance = (alpha · cosine +
// (1 − alpha) · BM25 / max BM25) × scope weight, cosine clamped at 0.
// Pruned memories, memories below MinConfidence, and memories outside the
// scope kind, the outcome or Readable never appear. Ties are broken by id.
func (ix *Index) Search(ctx context.Context, q Query) (Result, error) {
	q, err := normalise(q)
	if err != nil {
		return Result{}, err
	}
	qv, err := ix.emb.Embed(ctx, []string{q.Text})
	if err != nil {
		return Result{}, fmt.Errorf("search: embed query: %w", err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.refresh(ctx); err != nil {
		return Result{}, err
	}
	qt := tokens(q.Text)
	type cand struct {
		d        *doc
		cos, bm  float64
		relevant float64
	}
	var cands []cand
	maxBM := 0.0
	avg := 1.0
	if len(ix.docs) > 0 {
		avg = float64(ix.totalLen) / float64(len(ix.docs))
	}
	for _, d := range ix.docs {
		m := d.m
		if m.Pruned || m.Confidence < *q.MinConfidence || (q.Outcome != "all" && m.Outcome != q.Outcome) ||
			(q.Scope != ScopeAll && !strings.HasPrefix(m.Scope, q.Scope+":")) || (q.Readable != nil && !q.Readable(m.Scope)) {
			continue
		}
		var cos float64
		for i, x := range qv[0] {
			cos += float64(x) * float64(d.vec[i])
		}
		bm := 0.0
		for _, t := range qt {
			f := float64(d.tf[t])
			if f == 0 {
				continue
			}
			n := float64(len(ix.docs))
			idf := math.Log(1 + (n-float64(ix.df[t])+0.5)/(float64(ix.df[t])+0.5))
			bm += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.n)/avg))
		}
		maxBM = math.Max(maxBM, bm)
		cands = append(cands, cand{d: d, cos: math.Max(0, cos), bm: bm})
	}
	for i := range cands {
		c := &cands[i]
		bm := 0.0
		if maxBM > 0 {
			bm = c.bm / maxBM
		}
		a := Alpha(c.d.m.Evidence + c.d.m.UsageCount)
		c.relevant = (a*c.cos + (1-a)*bm) * ScopeWeight(c.d.m.Scope)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].relevant != cands[j].relevant {
			return cands[i].relevant > cands[j].relevant
		}
		return cands[i].d.m.ID < cands[j].d.m.ID
	})
	res := Result{Memories: []Hit{}}
	for _, c := range cands {
		if c.relevant <= 0 {
			break
		}
		res.TotalFound++
		if len(res.Memories) < q.Limit {
			m := c.d.m
			res.Memories = append(res.Memories, Hit{ID: m.ID, Title: m.Title, Description: m.Description, Content: m.Content, Outcome: m.Outcome,
				Confidence: m.Confidence, UsageCount: m.UsageCount, Relevance: math.Round(c.relevant*1e4) / 1e4, Scope: m.Scope})
			res.TokensUsed += (len(m.Title) + len(m.Description) + len(m.Content) + 3) / 4
		}
	}
	return res, nil
}

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
