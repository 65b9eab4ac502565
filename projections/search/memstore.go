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
	post     map[string]map[*memDoc]int // term → document → term frequency
	totalLen int
	list     []*memDoc // docs in a slice for scans; nil when stale
}

type memDoc struct {
	Doc
	terms []string // distinct terms
	n     int      // tokens
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{docs: map[string]*memDoc{}, post: map[string]map[*memDoc]int{}}
}

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
		md := &memDoc{Doc: d}
		tf := map[string]int{}
		for _, t := range tokens(DocText(d)) {
			tf[t]++
			md.n++
		}
		for t, f := range tf {
			md.terms = append(md.terms, t)
			p := s.post[t]
			if p == nil {
				p = map[*memDoc]int{}
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
func (s *MemStore) Len(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.docs), nil
}

// Candidates implements VectorStore: an exact scan of every admitted
// vector (a dot product: vectors are L2-normalised) and BM25 over the
// postings of the query's terms, each keeping its top k in a heap.
func (s *MemStore) Candidates(_ context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error) {
	s.mu.Lock()
	if s.list == nil {
		s.list = make([]*memDoc, 0, len(s.docs))
		for _, d := range s.docs {
			s.list = append(s.list, d)
		}
		sort.Slice(s.list, func(i, j int) bool { return s.list[i].ID < s.list[j].ID })
	}
	list := s.list
	s.mu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	admitted := map[*memDoc]bool{}
	admit := func(d *memDoc) bool {
		ok, seen := admitted[d]
		if !seen {
			ok = f.admits(&d.Doc)
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
	bm := map[*memDoc]float64{}
	for _, t := range uniq(tokens(text)) {
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
	keep := map[*memDoc]*Candidate{}
	var out []*Candidate
	get := func(d *memDoc) *Candidate {
		c, ok := keep[d]
		if !ok {
			c = &Candidate{Doc: d.Doc}
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
	res := make([]Candidate, len(out))
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
	d     *memDoc
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

func (t *topK) offer(d *memDoc, score float64) {
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

// MemStores is the embedded MultiStore: a MemStore per collection. Its
// own VectorStore methods are those of the Memories collection's.
type MemStores struct {
	*MemStore
	others map[Collection]*MemStore
}

// NewMemStores returns empty stores for every collection.
func NewMemStores() *MemStores {
	s := &MemStores{MemStore: NewMemStore(), others: map[Collection]*MemStore{}}
	for _, c := range Collections() {
		if c != Memories {
			s.others[c] = NewMemStore()
		}
	}
	return s
}

var _ MultiStore = (*MemStores)(nil)

// Collection implements MultiStore (nil for an unknown collection).
func (s *MemStores) Collection(c Collection) VectorStore {
	if c == Memories {
		return s.MemStore
	}
	if m, ok := s.others[c]; ok {
		return m
	}
	return nil
}
