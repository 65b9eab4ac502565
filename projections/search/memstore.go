package search

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// BM25 parameters (Robertson & Zaragoza's usual k1 and b).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// MemStore is the embedded VectorStore: documents in memory, exact cosine
// search (brute force, 512-d dot products) and BM25 over an inverted
// index. The vectors themselves are cached in Pebble by Index, so a restart
// rebuilds a MemStore without re-embedding.
type MemStore struct {
	mu       sync.RWMutex
	docs     map[string]*memDoc
	df       map[string]int
	totalLen int
}

type memDoc struct {
	Doc
	tf map[string]int
	n  int
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{docs: map[string]*memDoc{}, df: map[string]int{}} }

var _ VectorStore = (*MemStore)(nil)

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// DocText is the text a document is embedded and BM25-indexed by.
func DocText(d Doc) string { return d.Title + "\n" + d.Description + "\n" + d.Content }

// Upsert implements VectorStore.
func (s *MemStore) Upsert(_ context.Context, docs []Doc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range docs {
		s.remove(d.ID)
		md := &memDoc{Doc: d, tf: map[string]int{}}
		for _, t := range tokens(DocText(d)) {
			md.tf[t]++
			md.n++
		}
		for t := range md.tf {
			s.df[t]++
		}
		s.totalLen += md.n
		s.docs[d.ID] = md
	}
	return nil
}

// Delete implements VectorStore.
func (s *MemStore) Delete(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.remove(id)
	}
	return nil
}

func (s *MemStore) remove(id string) {
	d, ok := s.docs[id]
	if !ok {
		return
	}
	for t := range d.tf {
		if s.df[t]--; s.df[t] == 0 {
			delete(s.df, t)
		}
	}
	s.totalLen -= d.n
	delete(s.docs, id)
}

// Len implements VectorStore.
func (s *MemStore) Len(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.docs), nil
}

// Candidates implements VectorStore.
func (s *MemStore) Candidates(_ context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	qt := tokens(text)
	n := float64(len(s.docs))
	avg := 1.0
	if n > 0 {
		avg = float64(s.totalLen) / n
	}
	var all []Candidate
	for _, d := range s.docs {
		if !f.admits(&d.Doc) {
			continue
		}
		c := Candidate{Doc: d.Doc}
		c.Vector = nil
		if len(v) == len(d.Vector) {
			var dot float64
			for i, x := range v {
				dot += float64(x) * float64(d.Vector[i])
			}
			c.Cosine = dot
		}
		for _, t := range qt {
			tf := float64(d.tf[t])
			if tf == 0 {
				continue
			}
			df := float64(s.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			c.BM25 += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.n)/avg))
		}
		all = append(all, c)
	}
	keep := map[string]*Candidate{}
	var order []string
	take := func(less func(a, b *Candidate) bool, mark func(c *Candidate)) {
		sort.Slice(all, func(i, j int) bool { return less(&all[i], &all[j]) })
		for i := 0; i < len(all) && i < k; i++ {
			c, ok := keep[all[i].ID]
			if !ok {
				cp := all[i]
				c = &cp
				keep[c.ID] = c
				order = append(order, c.ID)
			}
			mark(c)
		}
	}
	take(func(a, b *Candidate) bool {
		if a.Cosine != b.Cosine {
			return a.Cosine > b.Cosine
		}
		return a.ID < b.ID
	}, func(c *Candidate) { c.HasCosine = true })
	take(func(a, b *Candidate) bool {
		if a.BM25 != b.BM25 {
			return a.BM25 > b.BM25
		}
		return a.ID < b.ID
	}, func(c *Candidate) {
		if c.BM25 > 0 {
			c.HasBM25 = true
		}
	})
	out := make([]Candidate, 0, len(order))
	for _, id := range order {
		c := keep[id]
		if !c.HasBM25 {
			c.BM25 = 0
		}
		if !c.HasCosine {
			c.Cosine = 0
		}
		out = append(out, *c)
	}
	return out, nil
}
