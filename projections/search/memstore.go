package search

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// BM25 parameters (Robertson & Zaragoza's usual k1 and b).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// MemStore is the embedded VectorStore: documents in memory, exact cosine
// search and BM25 over an inverted index. The vectors themselves are cached
// in Pebble by Index, so a restart rebuilds a MemStore without
// re-embedding.
//
// Layout (issue 11, for latency): every document has a position; its
// vector is row `position` of an embedder.Panels matrix (packed for the
// AVX2+FMA kernel), so the cosine scan is one streaming pass of fused
// multiply-adds instead of a scalar loop per document; postings are slices
// of (document, term frequency) and BM25 scores accumulate in a dense
// array indexed by position, instead of maps. The filter is tested only
// for documents that could enter a top k. An upsert of a known id updates
// its row in place; a delete moves the last document into the freed
// position. The old store is kept as searchtest.LegacyMemStore, the
// baseline of BenchmarkMemorySearch (processors/memories).
type MemStore struct {
	mu       sync.RWMutex
	docs     map[string]*memDoc
	list     []*memDoc // by position
	post     map[string][]posting
	totalLen int
	// vecs holds row i = list[i]'s vector (zeros when it has none of
	// vecs' dimension: hasVec false). nil until the first vector.
	vecs *embedder.Panels
	// lens and hasVec are list[i].n and list[i].hasVec by position, dense
	// so that scans never follow a document pointer.
	lens   []int32
	hasVec []bool
	pool   sync.Pool // *scanScratch
}

type memDoc struct {
	Doc    // Vector is kept in MemStore.vecs, not here
	terms  []string
	n      int // tokens
	pos    int
	hasVec bool
}

// posting is one document's term frequency for a term; pos is the
// document's position (kept up to date when a delete moves it).
type posting struct {
	pos int32
	tf  int32
}

// scanScratch is one query's dense score arrays.
type scanScratch struct {
	dots    []float32
	bm      []float64
	touched []int32
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{docs: map[string]*memDoc{}, post: map[string][]posting{}}
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
		vec := d.Vector
		d.Vector = nil
		md, ok := s.docs[d.ID]
		if ok {
			s.unindex(md)
			md.Doc, md.terms, md.n = d, nil, 0
		} else {
			md = &memDoc{Doc: d, pos: len(s.list)}
			s.list = append(s.list, md)
			s.lens = append(s.lens, 0)
			s.hasVec = append(s.hasVec, false)
			s.docs[d.ID] = md
		}
		tf := map[string]int32{}
		for _, t := range tokens(DocText(d)) {
			tf[t]++
			md.n++
		}
		for t, f := range tf {
			md.terms = append(md.terms, t)
			s.post[t] = append(s.post[t], posting{int32(md.pos), f})
		}
		s.totalLen += md.n
		s.lens[md.pos] = int32(md.n)
		if s.vecs == nil && len(vec) > 0 {
			s.vecs = embedder.NewPanels(len(vec))
		}
		if s.vecs != nil {
			md.hasVec = len(vec) == s.vecs.Dim()
			s.hasVec[md.pos] = md.hasVec
			if !md.hasVec {
				vec = make([]float32, s.vecs.Dim())
			}
			if md.pos < s.vecs.Len() {
				s.vecs.Set(md.pos, vec)
			} else {
				for s.vecs.Len() < md.pos {
					s.vecs.Append(make([]float32, s.vecs.Dim()))
				}
				s.vecs.Append(vec)
			}
		}
	}
	return nil
}

// unindex removes d's postings and length (not its position).
func (s *MemStore) unindex(d *memDoc) {
	for _, t := range d.terms {
		p := s.post[t]
		for i := range p {
			if int(p[i].pos) == d.pos {
				p[i] = p[len(p)-1]
				p = p[:len(p)-1]
				break
			}
		}
		if len(p) == 0 {
			delete(s.post, t)
		} else {
			s.post[t] = p
		}
	}
	s.totalLen -= d.n
}

// Delete implements VectorStore.
func (s *MemStore) Delete(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		d, ok := s.docs[id]
		if !ok {
			continue
		}
		s.unindex(d)
		delete(s.docs, id)
		last := len(s.list) - 1
		moved := s.list[last]
		if moved != d {
			for _, t := range moved.terms { // its postings follow it
				p := s.post[t]
				for i := range p {
					if int(p[i].pos) == last {
						p[i].pos = int32(d.pos)
						break
					}
				}
			}
		}
		s.list[d.pos], moved.pos = moved, d.pos
		s.lens[d.pos], s.hasVec[d.pos] = s.lens[last], s.hasVec[last]
		s.list, s.lens, s.hasVec = s.list[:last], s.lens[:last], s.hasVec[:last]
		if s.vecs != nil && s.vecs.Len() > last {
			s.vecs.RemoveSwap(d.pos)
		}
	}
	return nil
}

// Len implements VectorStore.
func (s *MemStore) Len(context.Context) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.docs), nil
}

// Candidates implements VectorStore: an exact scan of every vector (a dot
// product: vectors are L2-normalised) and BM25 over the postings of the
// query's terms, each keeping its top k admitted documents in a heap.
// Results do not depend on the documents' positions: ties are broken by
// id.
func (s *MemStore) Candidates(_ context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := len(s.list)
	sc, _ := s.pool.Get().(*scanScratch)
	if sc == nil {
		sc = &scanScratch{}
	}
	defer s.pool.Put(sc)
	// admitted caches the filter per position, for the documents that
	// reach a heap (most never do).
	admitted := map[int]bool{}
	admit := func(d *memDoc) bool {
		ok, seen := admitted[d.pos]
		if !seen {
			ok = f.admits(&d.Doc)
			admitted[d.pos] = ok
		}
		return ok
	}
	byCos := &topK{k: k}
	if s.vecs != nil && len(v) == s.vecs.Dim() && n > 0 && k > 0 {
		if cap(sc.dots) < n {
			sc.dots = make([]float32, n)
		}
		dots := sc.dots[:n]
		s.vecs.Dots(v, dots)
		hasVec := s.hasVec[:n]
		for i, dot := range dots {
			if !hasVec[i] {
				continue
			}
			if len(byCos.h) == byCos.k && float64(dot) < byCos.h[0].score {
				continue // cannot enter the top k: skip the filter
			}
			d := s.list[i]
			if len(byCos.h) == byCos.k && !worse(byCos.h[0], scored{d, float64(dot)}) {
				continue
			}
			if admit(d) {
				byCos.offer(d, float64(dot))
			}
		}
	}
	avg := 1.0
	if n > 0 {
		avg = float64(s.totalLen) / float64(n)
	}
	if cap(sc.bm) < n {
		sc.bm = make([]float64, n)
	}
	bm := sc.bm[:n]
	sc.touched = sc.touched[:0]
	for _, t := range uniq(tokens(text)) {
		p := s.post[t]
		df := float64(len(p))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		lens := s.lens
		for _, e := range p {
			f := float64(e.tf)
			if bm[e.pos] == 0 {
				sc.touched = append(sc.touched, e.pos)
			}
			bm[e.pos] += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(lens[e.pos])/avg))
		}
	}
	byBM := &topK{k: k}
	for _, i := range sc.touched {
		score := bm[i]
		bm[i] = 0
		if score <= 0 || k <= 0 {
			continue
		}
		if len(byBM.h) == byBM.k && score < byBM.h[0].score {
			continue
		}
		d := s.list[i]
		if len(byBM.h) == byBM.k && (score < byBM.h[0].score || !worse(byBM.h[0], scored{d, score})) {
			continue
		}
		if admit(d) {
			byBM.offer(d, score)
		}
	}
	keep := map[*memDoc]int{}
	var out []Candidate
	get := func(d *memDoc) *Candidate {
		i, ok := keep[d]
		if !ok {
			i = len(out)
			keep[d] = i
			out = append(out, Candidate{Doc: d.Doc})
		}
		return &out[i]
	}
	for _, e := range byCos.sorted() {
		c := get(e.d)
		c.Cosine, c.HasCosine = e.score, true
	}
	for _, e := range byBM.sorted() {
		c := get(e.d)
		c.BM25, c.HasBM25 = e.score, true
	}
	return out, nil
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
