package search

import (
	"math"
	"sort"
)

// Fusion rules: how a candidate's vector and BM25 evidence become one
// relevance.
const (
	// FusionRRF is reciprocal-rank fusion (Cormack, Clarke & Büttcher,
	// SIGIR 2009): a candidate scores VectorWeight / (K + its rank by
	// cosine) + LexicalWeight / (K + its rank by BM25), ranks from 1, a
	// list it is absent from adding nothing; the sum is divided by the
	// best possible, (VectorWeight + LexicalWeight) / (K + 1), so the top
	// of both lists has relevance 1 before the scope weight.
	FusionRRF = "rrf"
	// FusionAlpha is the memory-search design's rule: alpha · cosine +
	// (1 − alpha) · BM25 / max BM25, alpha from Alpha(evidence + usage).
	FusionAlpha = "alpha"
	// FusionScore is a fixed convex combination of the scores:
	// (VectorWeight · max(0, cosine) + LexicalWeight · BM25 / max BM25) /
	// (VectorWeight + LexicalWeight).
	FusionScore = "score"
	// FusionConvex is the convex combination of theoretically min-max
	// normalised scores (TM2C2 in Bruch, Gai & Ingber, "An Analysis of
	// Fusion Functions for Hybrid Retrieval", ACM TOIS 42(1), 2023): each
	// score is mapped to [0, 1] by (s − its theoretical minimum) / (the
	// best score among the candidates − that minimum) — cosine from −1,
	// BM25 from 0 — and relevance is (VectorWeight · cosine′ +
	// LexicalWeight · BM25′) / (VectorWeight + LexicalWeight). Unlike
	// FusionRRF it keeps each list's margins: a BM25 score far above the
	// next one stays far above it, and cosines that barely differ (USE
	// lite puts most memories of one domain within 0.1) barely move the
	// order. A candidate absent from a list (no cosine, BM25 0) gets 0
	// from it.
	FusionConvex = "convex"
)

// Ranking says how Index.Search orders candidates. DefaultRanking is what
// every search uses; SetRanking exists for evaluations comparing rules.
type Ranking struct {
	// Fusion is FusionConvex, FusionRRF, FusionScore or FusionAlpha.
	Fusion string
	// K is FusionRRF's rank constant (larger: flatter).
	K float64
	// VectorWeight and LexicalWeight weigh the vector and the BM25
	// evidence in FusionConvex, FusionRRF and FusionScore.
	VectorWeight, LexicalWeight float64
	// DuplicateJaccard collapses near-duplicates: a hit whose set of
	// words (DocText, tokenised as for BM25) has a Jaccard similarity of
	// at least DuplicateJaccard with a better hit already returned is
	// left out of Memories (it still counts in TotalFound). 0 turns it
	// off.
	DuplicateJaccard float64
}

// DefaultRanking is FusionConvex with equal weights (the paper's
// untuned alpha 0.5) and near-duplicates (Jaccard ≥ 0.9 of their word
// sets) collapsed; since issue 11 the memory's vector is made from its
// title and description only (EmbedText). It replaced reciprocal-rank
// fusion with K = 3 and the BM25 list weighted 3 over whole-text vectors,
// which keeps only ranks: a BM25 score several times the next memory's
// counts one rank step. The choice was made on tuning sets only — the
// tuning half of pair_recall_at_3, the tau-bench tasks in neither half
// and the tuning half of the Reflexion reflection recall (processors/pair
// TestTuneRanking, processors/passes TestTuneReflectionRanking) — where
// it scored 27/28, 26/32 and 33/34 against 27/28, 22/32 and 33/34 for the
// previous default (README "Retrieval quality", which also reports the
// report halves). RRF stays available (FusionRRF) for comparisons, as
// does the design's alpha rule (FusionAlpha), which ranked every memory
// with fewer than 5 observations by meaning alone.
var DefaultRanking = Ranking{Fusion: FusionConvex, VectorWeight: 1, LexicalWeight: 1, DuplicateJaccard: 0.9}

// OtherRanking ranks the collections other than memories (coordination
// patterns, tools): reciprocal-rank fusion with Cormack et al.'s K = 60
// and equal weights, untuned. DefaultRanking's weights were tuned on memory
// retrieval only; on patterns, whose descriptions are the goal of
// whichever session first followed them, a BM25 weight of 3 let a
// natural-language query ("cancel a reservation") rank read-only patterns
// first. Nothing is collapsed (DuplicateJaccard 0): a pattern is one tool
// sequence and a tool one tool, distinct by construction, and collapsing
// by words gave a failed two-call pattern the sessions of two successful
// longer ones (298 source sessions, their hits gone: a cluster
// walkthrough, 2026-12-03).
var OtherRanking = Ranking{Fusion: FusionRRF, K: 60, VectorWeight: 1, LexicalWeight: 1}

// SetRanking replaces the index's ranking of memories (DefaultRanking
// until then). For evaluations; not safe to call during searches.
func (ix *Index) SetRanking(r Ranking) { ix.ranking = &r }

// rulesFor is the ranking of collection c.
func (ix *Index) rulesFor(c Collection) Ranking {
	if c != Memories && c != "" {
		return OtherRanking
	}
	return ix.rules()
}

func (ix *Index) rules() Ranking {
	if ix.ranking != nil {
		return *ix.ranking
	}
	return DefaultRanking
}

// rankedDoc is a candidate with its relevance (scope weight included).
type rankedDoc struct {
	c     Candidate
	rel   float64
	words map[string]struct{} // for near-duplicate checks, built lazily
}

// rank orders cands by relevance (ties by id) under ranking r.
func rank(r Ranking, cands []Candidate) []rankedDoc {
	rs := make([]rankedDoc, len(cands))
	for i, c := range cands {
		rs[i].c = c
	}
	switch r.Fusion {
	case FusionAlpha:
		maxBM := 0.0
		for _, c := range cands {
			maxBM = math.Max(maxBM, c.BM25)
		}
		for i, c := range cands {
			bm := 0.0
			if maxBM > 0 {
				bm = c.BM25 / maxBM
			}
			a := Alpha(c.Evidence + c.UsageCount)
			rs[i].rel = (a*math.Max(0, c.Cosine) + (1-a)*bm) * ScopeWeight(c.Scope)
		}
	case FusionScore:
		maxBM := 0.0
		for _, c := range cands {
			maxBM = math.Max(maxBM, c.BM25)
		}
		for i, c := range cands {
			bm := 0.0
			if maxBM > 0 {
				bm = c.BM25 / maxBM
			}
			rs[i].rel = (r.VectorWeight*math.Max(0, c.Cosine) + r.LexicalWeight*bm) / (r.VectorWeight + r.LexicalWeight) * ScopeWeight(c.Scope)
		}
	case FusionConvex:
		maxCos, maxBM := math.Inf(-1), 0.0
		for _, c := range cands {
			if c.HasCosine {
				maxCos = math.Max(maxCos, c.Cosine)
			}
			if c.HasBM25 {
				maxBM = math.Max(maxBM, c.BM25)
			}
		}
		w := r.VectorWeight + r.LexicalWeight
		for i, c := range cands {
			s := 0.0
			if c.HasCosine && maxCos > -1 {
				s += r.VectorWeight * (c.Cosine + 1) / (maxCos + 1)
			}
			if c.HasBM25 && maxBM > 0 && c.BM25 > 0 {
				s += r.LexicalWeight * c.BM25 / maxBM
			}
			if w > 0 {
				s /= w
			}
			rs[i].rel = s * ScopeWeight(c.Scope)
		}
	default:
		cos := listRanks(cands, func(c *Candidate) (float64, bool) { return c.Cosine, c.HasCosine })
		bm := listRanks(cands, func(c *Candidate) (float64, bool) { return c.BM25, c.HasBM25 && c.BM25 > 0 })
		best := (r.VectorWeight + r.LexicalWeight) / (r.K + 1)
		for i, c := range cands {
			s := 0.0
			if cos[i] > 0 {
				s += r.VectorWeight / (r.K + float64(cos[i]))
			}
			if bm[i] > 0 {
				s += r.LexicalWeight / (r.K + float64(bm[i]))
			}
			if best > 0 {
				s /= best
			}
			rs[i].rel = s * ScopeWeight(c.Scope)
		}
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].rel != rs[j].rel {
			return rs[i].rel > rs[j].rel
		}
		return rs[i].c.ID < rs[j].c.ID
	})
	return rs
}

// listRanks gives each candidate its rank (1 = best, ties by id) among
// those score admits, 0 for the others.
func listRanks(cands []Candidate, score func(*Candidate) (float64, bool)) []int {
	idx := make([]int, 0, len(cands))
	for i := range cands {
		if _, ok := score(&cands[i]); ok {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool {
		sa, _ := score(&cands[idx[a]])
		sb, _ := score(&cands[idx[b]])
		if sa != sb {
			return sa > sb
		}
		return cands[idx[a]].ID < cands[idx[b]].ID
	})
	out := make([]int, len(cands))
	for r, i := range idx {
		out[i] = r + 1
	}
	return out
}

// duplicateOf is the index in kept of the first hit r is a near-duplicate
// of under threshold th (DuplicateJaccard; 0: never), or -1.
func duplicateOf(th float64, r *rankedDoc, kept []*rankedDoc) int {
	if th <= 0 {
		return -1
	}
	for i, k := range kept {
		if jaccard(r.wordSet(), k.wordSet()) >= th {
			return i
		}
	}
	return -1
}

func (r *rankedDoc) wordSet() map[string]struct{} {
	if r.words == nil {
		r.words = map[string]struct{}{}
		for _, t := range tokens(DocText(r.c.Doc)) {
			r.words[t] = struct{}{}
		}
	}
	return r.words
}

func jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for t := range a {
		if _, ok := b[t]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
