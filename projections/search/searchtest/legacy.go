package searchtest

// This file is the embedded vector store as it was before issue 11 (map
// postings, a map of admitted documents and a scalar dot product per
// document on every query), kept verbatim except for names so that
// BenchmarkMemorySearch (processors/memories) measures the current
// search.LegacyMemStore side by side with it. Nothing else uses it.

import (
	"context"
	"github.com/chronicle-dev/chronicle/projections/search"
	"math"
	"sort"
	"sync"
)

// BM25 parameters (Robertson & Zaragoza's usual k1 and b).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// LegacyMemStore is the embedded VectorStore: documents in memory, exact cosine
// search (brute force, 512-d dot products) and BM25 over an inverted
// index. The vectors themselves are cached in Pebble by Index, so a restart
// rebuilds a LegacyMemStore without re-embedding.
type LegacyMemStore struct {
	mu       sync.RWMutex
	docs     map[string]*legacyDoc
	post     map[string]map[*legacyDoc]int // term → document → term frequency
	totalLen int
	list     []*legacyDoc // docs in a slice for scans; nil when stale
}

type legacyDoc struct {
	search.Doc
	terms []string // distinct terms
	n     int      // tokens
}

// NewLegacyMemStore returns an empty store.
func NewLegacyMemStore() *LegacyMemStore {
	return &LegacyMemStore{docs: map[string]*legacyDoc{}, post: map[string]map[*legacyDoc]int{}}
}

var _ search.VectorStore = (*LegacyMemStore)(nil)

// legacyTokens are the current store's terms (search.Tokens), so that the
// two stores are compared on their statistics, not their tokenizers.
func legacyTokens(s string) []string { return search.Tokens(s) }

// Upsert implements VectorStore.
func (s *LegacyMemStore) Upsert(_ context.Context, docs []search.Doc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range docs {
		s.remove(d.ID)
		md := &legacyDoc{Doc: d}
		tf := map[string]int{}
		for _, t := range legacyTokens(search.DocText(d)) {
			tf[t]++
			md.n++
		}
		for t, f := range tf {
			md.terms = append(md.terms, t)
			p := s.post[t]
			if p == nil {
				p = map[*legacyDoc]int{}
				s.post[t] = p
			}
			p[md] = f
		}
		s.totalLen += md.n
		s.docs[d.ID] = md
	}
	s.list = nil
	return nil
}

// Delete implements VectorStore.
func (s *LegacyMemStore) Delete(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.remove(id)
	}
	return nil
}

func (s *LegacyMemStore) remove(id string) {
	d, ok := s.docs[id]
	if !ok {
		return
	}
	for _, t := range d.terms {
		if p := s.post[t]; p != nil {
			delete(p, d)
			if len(p) == 0 {
				delete(s.post, t)
			}
		}
	}
	s.totalLen -= d.n
	delete(s.docs, id)
	s.list = nil
}

// Len implements VectorStore.
func (s *LegacyMemStore) Len(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.docs), nil
}

// Candidates implements VectorStore: an exact scan of every admitted
// vector (a dot product: vectors are L2-normalised) and BM25 over the
// postings of the query's terms, each keeping its top k in a heap.
func (s *LegacyMemStore) Candidates(_ context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	s.mu.Lock()
	if s.list == nil {
		s.list = make([]*legacyDoc, 0, len(s.docs))
		for _, d := range s.docs {
			s.list = append(s.list, d)
		}
		sort.Slice(s.list, func(i, j int) bool { return s.list[i].ID < s.list[j].ID })
	}
	list := s.list
	s.mu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	admitted := map[*legacyDoc]bool{}
	admit := func(d *legacyDoc) bool {
		ok, seen := admitted[d]
		if !seen {
			ok = f.Admits(&d.Doc)
			admitted[d] = ok
		}
		return ok
	}
	byCos := &topK{k: k}
	for _, d := range list {
		if len(v) != len(d.Vector) || !admit(d) {
			continue
		}
		var dot float32
		for i, x := range v {
			dot += x * d.Vector[i]
		}
		byCos.offer(d, float64(dot))
	}
	n := float64(len(s.docs))
	avg := 1.0
	if n > 0 {
		avg = float64(s.totalLen) / n
	}
	bm := map[*legacyDoc]float64{}
	for _, t := range uniq(legacyTokens(text)) {
		p := s.post[t]
		df := float64(len(p))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for d, tf := range p {
			if !admit(d) {
				continue
			}
			f := float64(tf)
			bm[d] += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.n)/avg))
		}
	}
	byBM := &topK{k: k}
	for d, score := range bm {
		byBM.offer(d, score)
	}
	keep := map[*legacyDoc]*search.Candidate{}
	var out []*search.Candidate
	get := func(d *legacyDoc) *search.Candidate {
		c, ok := keep[d]
		if !ok {
			c = &search.Candidate{Doc: d.Doc}
			c.Vector = nil
			keep[d] = c
			out = append(out, c)
		}
		return c
	}
	for _, e := range byCos.sorted() {
		c := get(e.d)
		c.Cosine, c.HasCosine = e.score, true
	}
	for _, e := range byBM.sorted() {
		c := get(e.d)
		c.BM25, c.HasBM25 = e.score, true
	}
	res := make([]search.Candidate, len(out))
	for i, c := range out {
		res[i] = *c
	}
	return res, nil
}

func uniq(ts []string) []string {
	seen := map[string]bool{}
	out := ts[:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

type scored struct {
	d     *legacyDoc
	score float64
}

// topK keeps the k best (highest score, then lowest id) offered documents
// in a min-heap.
type topK struct {
	k int
	h []scored
}

func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.d.ID > b.d.ID
}

func (t *topK) offer(d *legacyDoc, score float64) {
	e := scored{d, score}
	if len(t.h) < t.k {
		t.h = append(t.h, e)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if t.k <= 0 || !worse(t.h[0], e) {
		return
	}
	t.h[0] = e
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && worse(t.h[l], t.h[m]) {
			m = l
		}
		if r < len(t.h) && worse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns the kept documents, best first.
func (t *topK) sorted() []scored {
	out := append([]scored(nil), t.h...)
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out
}
