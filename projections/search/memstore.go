package search

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

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
//
// Quantised scan (issue 11, item 2): by default the vectors are kept as
// int8 codes with a per-vector scale (embedder.QuantPanels, a quarter of
// the bytes to stream per query) next to their float32 rows. The int8
// pass gives every document an estimate with a rigorous error bound;
// only the documents whose upper bound reaches the k-th best lower bound
// are re-scored exactly, with the float32 kernel of the plain scan, so
// the candidates — ids, order and cosines, bit for bit — are those of the
// float32 scan (NewMemStoreFloat32, kept as the benchmark's baseline).
//
// BM25 statistics per scope (tenant-isolation review): postings are kept
// per term and per scope, with each scope's document count and total
// length, so that a query's BM25 document count N, document frequencies
// and average length are those of the documents in the scopes its Filter
// admits (Filter.AdmitsScope) — not of every scope's. Before, they were
// the whole collection's, so one tenant's memories moved another's scores
// and order (15 memories of a word in one scope lowered a memory of
// another scope with that word from 0.9684 to 0.7655). A query also
// scores only the postings of the admitted scopes.
type MemStore struct {
	mu   sync.RWMutex
	docs map[string]*memDoc
	list []*memDoc // by position
	// post maps a term to its postings by scope id (index in scopes).
	post map[string]map[int32][]posting
	// scopes are the BM25 statistics of every scope a document ever had,
	// by scope id (ids are never reused: a scope no document holds any
	// more keeps an entry with n 0); scopeIDs maps a scope to its id.
	scopes   []scopeStats
	scopeIDs map[string]int32
	// vecs holds row i = list[i]'s vector (zeros when it has none of
	// vecs' dimension: hasVec false): an *embedder.QuantPanels, or an
	// *embedder.Panels with float32. nil until the first vector.
	vecs    vectorRows
	float32 bool
	// serial keeps Candidates as it was before its bound-first selection
	// (NewMemStoreSerial).
	serial bool
	// lens and hasVec are list[i].n and list[i].hasVec by position, dense
	// so that scans never follow a document pointer.
	lens   []int32
	hasVec []bool
	pool   sync.Pool // *scanScratch
}

type memDoc struct {
	Doc    // Vector is kept in MemStore.vecs, not here
	terms  []string
	n      int   // tokens
	scope  int32 // id of Doc.Scope in MemStore.scopes (when indexed)
	pos    int
	hasVec bool
}

// scopeStats are the BM25 statistics of one scope's documents: their
// number and their total length in tokens.
type scopeStats struct {
	name        string
	n, totalLen int
}

// posting is one document's term frequency for a term; pos is the
// document's position (kept up to date when a delete moves it).
type posting struct {
	pos int32
	tf  int32
}

// vectorRows is what MemStore needs of its vector matrix (both
// embedder.Panels and embedder.QuantPanels).
type vectorRows interface {
	Len() int
	Dim() int
	Append(v []float32) int
	Set(i int, v []float32)
	RemoveSwap(i int)
}

// scanScratch is one query's dense score arrays.
type scanScratch struct {
	dots          []float32
	approx, slack []float64
	cand          []int32
	exact         []float32
	bm            []float64
	touched       []int32
	admitted      []uint8
	seen          []int32
	bounds        []float64 // lowerBounds' heap
	scopeOK       []bool    // by scope id: the filter admits the scope
	admScopes     []int32   // the ids scopeOK holds true for
	lists         [][]posting
}

// NewMemStore returns an empty store with the quantised scan.
func NewMemStore() *MemStore {
	return &MemStore{docs: map[string]*memDoc{}, post: map[string]map[int32][]posting{}, scopeIDs: map[string]int32{}}
}

// NewMemStoreFloat32 returns an empty store that scans float32 panels
// (embedder.Panels) only: the store before the quantised scan, which
// gives the same candidates (TestQuantisedScanMatchesFloat32) and is the
// baseline of BenchmarkMemorySearch.
func NewMemStoreFloat32() *MemStore {
	s := NewMemStore()
	s.float32 = true
	return s
}

// NewMemStoreSerial returns an empty store with the quantised scan as it
// was before the bound-first selection of issue 11 item 2 (Candidates
// tests the filter of every document that might enter a top k, in
// position order): the same candidates, the baseline of
// BenchmarkMemorySearch.
func NewMemStoreSerial() *MemStore {
	s := NewMemStore()
	s.serial = true
	return s
}

var _ VectorStore = (*MemStore)(nil)

// Tokens returns the terms BM25 indexes a text by and queries it with
// (and the word sets near-duplicates are compared by). The text is put
// in NFKC (so NFD "café" is NFC "café", full-width "ＣＡＦＥ" is "CAFE"
// and half-width katakana full-width) and case-folded (German "STRASSE"
// and "Straße" are both "strasse"; Turkish "İ" is "i"). A word is a run
// of letters, digits and combining marks: a mark (a Hindi vowel sign, an
// Arabic haraka) belongs to its word instead of splitting it. A run of
// Han, kana or Hangul, written without spaces, gives its overlapping
// bigrams ("東京の天気" is "東京", "京の", "の天", "天気"; a lone
// character is itself), as Lucene's CJK analyzer does. ASCII text gives
// the lower-cased runs of letters and digits it gave before; in other
// text, compatibility characters now give terms ("™" is "tm", "²" is
// "2"), where they separated words.
func Tokens(s string) []string {
	if !ascii(s) {
		// A Caser is not safe for concurrent use: one per call.
		s = norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
		// Case folding makes "İ" an "i" with U+0307 COMBINING DOT ABOVE,
		// which a Turkish reader writes as a plain "i".
		s = strings.ReplaceAll(s, "i\u0307", "i")
	} else {
		s = strings.ToLower(s)
	}
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) }) {
		out = appendWordTokens(out, w)
	}
	return out
}

func tokens(s string) []string { return Tokens(s) }

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// cjk reports whether r is written without spaces between words: Han,
// Hiragana, Katakana (with the prolonged sound mark) and Hangul.
func cjk(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == '\u30fc'
}

// appendWordTokens appends the terms of one word: the word itself, or,
// for each run of CJK characters in it, the run's bigrams.
func appendWordTokens(out []string, w string) []string {
	if ascii(w) || strings.IndexFunc(w, cjk) < 0 {
		return append(out, w)
	}
	for len(w) > 0 {
		r, _ := utf8.DecodeRuneInString(w)
		inCJK := cjk(r)
		end := strings.IndexFunc(w, func(r rune) bool { return cjk(r) != inCJK && !unicode.IsMark(r) })
		if end < 0 {
			end = len(w)
		}
		run := w[:end]
		w = w[end:]
		if !inCJK {
			out = append(out, run)
			continue
		}
		// Characters with the marks that follow them (a combining
		// dakuten that NFKC could not compose).
		var chars []string
		for len(run) > 0 {
			_, n := utf8.DecodeRuneInString(run)
			for n < len(run) {
				m, size := utf8.DecodeRuneInString(run[n:])
				if !unicode.IsMark(m) {
					break
				}
				n += size
			}
			chars, run = append(chars, run[:n]), run[n:]
		}
		if len(chars) == 1 {
			out = append(out, chars[0])
		}
		for i := 0; i+1 < len(chars); i++ {
			out = append(out, chars[i]+chars[i+1])
		}
	}
	return out
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
		id, ok := s.scopeIDs[d.Scope]
		if !ok {
			id = int32(len(s.scopes))
			s.scopeIDs[d.Scope] = id
			s.scopes = append(s.scopes, scopeStats{name: d.Scope})
		}
		md.scope = id
		for t, f := range tf {
			md.terms = append(md.terms, t)
			byScope := s.post[t]
			if byScope == nil {
				byScope = map[int32][]posting{}
				s.post[t] = byScope
			}
			byScope[id] = append(byScope[id], posting{int32(md.pos), f})
		}
		s.scopes[id].n++
		s.scopes[id].totalLen += md.n
		s.lens[md.pos] = int32(md.n)
		if s.vecs == nil && len(vec) > 0 {
			if s.float32 {
				s.vecs = embedder.NewPanels(len(vec))
			} else {
				s.vecs = embedder.NewQuantPanels(len(vec))
			}
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

// unindex removes d's postings and its scope's count and length (not
// its position).
func (s *MemStore) unindex(d *memDoc) {
	for _, t := range d.terms {
		byScope := s.post[t]
		p := byScope[d.scope]
		for i := range p {
			if int(p[i].pos) == d.pos {
				p[i] = p[len(p)-1]
				p = p[:len(p)-1]
				break
			}
		}
		switch {
		case len(p) > 0:
			byScope[d.scope] = p
		case len(byScope) > 1:
			delete(byScope, d.scope)
		default:
			delete(s.post, t)
		}
	}
	s.scopes[d.scope].n--
	s.scopes[d.scope].totalLen -= d.n
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
				p := s.post[t][moved.scope]
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

// Candidates implements VectorStore: an exact top k by cosine (a dot
// product: vectors are L2-normalised; the int8 pass with exact re-scores
// of quantisedTop, or a float32 scan of every vector for
// NewMemStoreFloat32, with the same result) and BM25 over the postings of
// the query's terms, each keeping its top k admitted documents in a heap.
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
	// admitted caches the filter per position (0 not tested, 1 admitted,
	// 2 not), for the documents that reach a heap (most never do); seen
	// lists the positions to reset before the scratch goes back.
	if cap(sc.admitted) < n {
		sc.admitted = make([]uint8, n)
	}
	admitted := sc.admitted[:n]
	defer func() {
		for _, i := range sc.seen {
			admitted[i] = 0
		}
		sc.seen = sc.seen[:0]
	}()
	// admit tests the document at position i (its memDoc is read only
	// the first time: following the pointer is a cache miss).
	admit := func(i int) bool {
		a := admitted[i]
		if a == 0 {
			a = 2
			if f.admits(&s.list[i].Doc) {
				a = 1
			}
			admitted[i] = a
			sc.seen = append(sc.seen, int32(i))
		}
		return a == 1
	}
	byCos := &topK{k: k}
	if qp, ok := s.vecs.(*embedder.QuantPanels); ok && len(v) == qp.Dim() && n > 0 && k > 0 {
		s.quantisedTop(qp, v, n, sc, admit, byCos)
	} else if s.vecs != nil && len(v) == s.vecs.Dim() && n > 0 && k > 0 {
		if cap(sc.dots) < n {
			sc.dots = make([]float32, n)
		}
		dots := sc.dots[:n]
		s.vecs.(*embedder.Panels).Dots(v, dots)
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
			if admit(i) {
				byCos.offer(d, float64(dot))
			}
		}
	}
	// BM25 over the scopes f admits: their documents are the collection
	// the statistics (N, document frequencies, average length) are
	// counted over, and only their postings are scored.
	if cap(sc.scopeOK) < len(s.scopes) {
		sc.scopeOK = make([]bool, len(s.scopes))
	}
	scopeOK := sc.scopeOK[:len(s.scopes)]
	adm := sc.admScopes[:0]
	inScopes, totalLen := 0, 0
	for id := range s.scopes {
		st := &s.scopes[id]
		if st.n > 0 && f.AdmitsScope(st.name) {
			scopeOK[id] = true
			adm = append(adm, int32(id))
			inScopes += st.n
			totalLen += st.totalLen
		}
	}
	sc.admScopes = adm
	defer func() {
		for _, id := range sc.admScopes {
			scopeOK[id] = false
		}
	}()
	avg := 1.0
	if inScopes > 0 {
		avg = float64(totalLen) / float64(inScopes)
	}
	if cap(sc.bm) < n {
		sc.bm = make([]float64, n)
	}
	bm := sc.bm[:n]
	sc.touched = sc.touched[:0]
	for _, t := range uniq(tokens(text)) {
		byScope := s.post[t]
		lists, df := sc.lists[:0], 0
		if len(adm) <= len(byScope) {
			for _, id := range adm {
				if p := byScope[id]; len(p) > 0 {
					lists, df = append(lists, p), df+len(p)
				}
			}
		} else {
			for id, p := range byScope {
				if scopeOK[id] {
					lists, df = append(lists, p), df+len(p)
				}
			}
		}
		sc.lists = lists[:0]
		idf := math.Log(1 + (float64(inScopes)-float64(df)+0.5)/(float64(df)+0.5))
		lens := s.lens
		for _, p := range lists {
			for _, e := range p {
				f := float64(e.tf)
				if bm[e.pos] == 0 {
					sc.touched = append(sc.touched, e.pos)
				}
				bm[e.pos] += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(lens[e.pos])/avg))
			}
		}
	}
	byBM := &topK{k: k}
	if s.serial || !s.bm25BoundFirst(bm, sc, admit, byBM) {
		for _, i := range sc.touched {
			score := bm[i]
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
			if admit(int(i)) {
				byBM.offer(d, score)
			}
		}
	}
	for _, i := range sc.touched {
		bm[i] = 0
	}
	keep := make(map[*memDoc]int, len(byCos.h)+len(byBM.h))
	out := make([]Candidate, 0, len(byCos.h)+len(byBM.h)) // never grown: a Candidate is large
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

// quantisedTop offers to byCos the top k admitted documents by exact
// cosine, as the float32 scan would, from the int8 estimates: pass 1 keeps
// the k best lower bounds (estimate − slack) of admitted documents in a
// heap and records every admitted document whose upper bound (estimate +
// slack) reached the heap's minimum at its turn; pass 2 re-scores exactly
// those whose upper bound reaches the final minimum L. A document of the
// exact top k is never dropped: if its upper bound were below L, k
// admitted documents would have exact cosines ≥ L above its own.
//
// Bound-first (issue 11 item 2, unless NewMemStoreSerial): testing the
// filter follows a document's pointer, a cache miss, and pass 1 tests
// every document whose upper bound beats the running minimum (≈1,000 of
// 10k random vectors for k = 200). So the k-th best lower bound L0 of all
// documents with a vector comes first, from the dense arrays alone, and
// only the documents whose upper bound reaches L0 are tested (≈430). If k
// of them are admitted with lower bounds ≥ L0, then L = L0 (L ≤ L0 as the
// admitted are a subset; L ≥ L0 as k admitted reach it) and the admitted
// ones are exactly pass 2's set; otherwise (a filter that rejects some of
// the best) the two passes run as above, with the filter's answers kept.
func (s *MemStore) quantisedTop(qp *embedder.QuantPanels, v []float32, n int, sc *scanScratch, admit func(int) bool, byCos *topK) {
	if cap(sc.approx) < n {
		sc.approx, sc.slack = make([]float64, n), make([]float64, n)
	}
	approx, slack := sc.approx[:n], sc.slack[:n]
	hasVec := s.hasVec[:n]
	if cap(sc.bounds) < byCos.k {
		sc.bounds = make([]float64, 0, byCos.k)
	}
	// pick selects the documents to re-score from the estimates.
	pick := func() []int32 {
		keep, ok := []int32(nil), false
		if !s.serial {
			keep, ok = s.boundFirst(approx, slack, sc, admit, byCos.k)
		}
		if !ok {
			lb := lowerBounds{k: byCos.k, h: sc.bounds[:0]}
			cand := sc.cand[:0]
			for i, a := range approx {
				if !hasVec[i] || (lb.full() && a+slack[i] < lb.h[0]) {
					continue
				}
				if admit(i) {
					if lo := a - slack[i]; !math.IsNaN(lo) {
						lb.offer(lo) // a non-finite vector (infinite slack) bounds nothing
					}
					cand = append(cand, int32(i))
				}
			}
			L := math.Inf(-1)
			if lb.full() {
				L = lb.h[0]
			}
			keep = cand[:0]
			for _, i := range cand {
				if approx[i]+slack[i] >= L {
					keep = append(keep, i)
				}
			}
		}
		sc.cand = keep
		return keep
	}
	var keep []int32
	var exact []float32
	if s.serial {
		qp.Approx(v, approx, slack)
		keep = pick()
		if cap(sc.exact) < len(keep) {
			sc.exact = make([]float32, len(keep))
		}
		exact = sc.exact[:len(keep)]
		qp.Exact(v, keep, exact)
	} else {
		// The same arithmetic, split across idle cores while that pays.
		keep, exact = qp.ScanSplit(v, approx, slack, pick, sc.exact)
		sc.exact = exact
	}
	for j, i := range keep {
		byCos.offer(s.list[i], float64(exact[j]))
	}
}

// boundFirst is quantisedTop's bound-first selection. For kk = k, 4k,
// 16k: L0 is the kk-th best lower bound of all documents with a vector
// (dense arrays only), and only the documents whose upper bound reaches
// L0 are tested. Once k of them are admitted with lower bounds ≥ L0, the
// k-th best lower bound of the admitted, L, is among them (an admitted
// document with a lower bound ≥ L ≥ L0 has an upper bound ≥ L0), and
// the admitted ones with an upper bound ≥ L are exactly pass 2's set,
// returned in position order (ok). A filter that admits most documents
// ends at kk = k, one that admits a quarter at 4k; otherwise ok is false
// and the filter's answers so far stay cached in admit.
func (s *MemStore) boundFirst(approx, slack []float64, sc *scanScratch, admit func(int) bool, k int) (keep []int32, ok bool) {
	hasVec := s.hasVec[:len(approx)]
	for kk := k; kk <= 16*k && kk < len(approx); kk *= 4 {
		if cap(sc.bounds) < kk {
			sc.bounds = make([]float64, 0, kk)
		}
		lb := lowerBounds{k: kk, h: sc.bounds[:0]}
		for i, a := range approx {
			if !hasVec[i] {
				continue
			}
			if lo := a - slack[i]; !math.IsNaN(lo) && (!lb.full() || lo > lb.h[0]) {
				lb.offer(lo)
			}
		}
		if !lb.full() {
			return nil, false
		}
		L0 := lb.h[0]
		cand := sc.cand[:0]
		strong := lowerBounds{k: k, h: sc.bounds[:0]} // L0's heap is no longer needed
		for i, a := range approx {
			if !hasVec[i] || !(a+slack[i] >= L0) {
				continue
			}
			if admit(i) {
				cand = append(cand, int32(i))
				if lo := a - slack[i]; lo >= L0 {
					strong.offer(lo)
				}
			}
		}
		sc.cand = cand
		if !strong.full() {
			continue
		}
		L := strong.h[0]
		keep = cand[:0]
		for _, i := range cand {
			if approx[i]+slack[i] >= L {
				keep = append(keep, i)
			}
		}
		sc.cand = keep
		return keep, true
	}
	return nil, false
}

// bm25BoundFirst offers to byBM the top k admitted documents by BM25
// score, as the loop over every scored document in Candidates would,
// testing the filter of fewer documents. For kk = k, 4k, 16k: T is the
// kk-th best score of all scored documents; once k admitted documents
// score ≥ T, every document of the admitted top k does (ties by id
// included), so only the admitted ones scoring ≥ T are offered. It
// reports false, having offered nothing, when no kk gets there (the
// filter's answers so far stay cached in admit).
func (s *MemStore) bm25BoundFirst(bm []float64, sc *scanScratch, admit func(int) bool, byBM *topK) bool {
	k := byBM.k
	if k <= 0 {
		return false
	}
	for kk := k; kk <= 16*k && kk < len(sc.touched); kk *= 4 {
		if cap(sc.bounds) < kk {
			sc.bounds = make([]float64, 0, kk)
		}
		lb := lowerBounds{k: kk, h: sc.bounds[:0]}
		for _, i := range sc.touched {
			if x := bm[i]; x > 0 && (!lb.full() || x > lb.h[0]) {
				lb.offer(x)
			}
		}
		if !lb.full() {
			return false
		}
		T := lb.h[0]
		cand := sc.cand[:0]
		for _, i := range sc.touched {
			if bm[i] >= T && admit(int(i)) {
				cand = append(cand, i)
			}
		}
		sc.cand = cand
		if len(cand) < k {
			continue
		}
		for _, i := range cand {
			byBM.offer(s.list[i], bm[i])
		}
		return true
	}
	return false
}

// lowerBounds keeps the k largest values offered in a min-heap.
type lowerBounds struct {
	k int
	h []float64
}

func (b *lowerBounds) full() bool { return len(b.h) == b.k }

func (b *lowerBounds) offer(x float64) {
	if len(b.h) < b.k {
		b.h = append(b.h, x)
		for i := len(b.h) - 1; i > 0; {
			p := (i - 1) / 2
			if b.h[p] <= b.h[i] {
				break
			}
			b.h[i], b.h[p] = b.h[p], b.h[i]
			i = p
		}
		return
	}
	if x <= b.h[0] {
		return
	}
	b.h[0] = x
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(b.h) && b.h[l] < b.h[m] {
			m = l
		}
		if r < len(b.h) && b.h[r] < b.h[m] {
			m = r
		}
		if m == i {
			break
		}
		b.h[i], b.h[m] = b.h[m], b.h[i]
		i = m
	}
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
