package embedder

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// QuantPanels holds n vectors of one dimension for the top-k scan of a
// vector store, in two forms:
//
//   - int8 codes in column panels of 16 ([n/16][dim][16]int8) with one
//     scale per vector (v ≈ scale·code, scale = max|v|/127): the first
//     pass (Approx) reads a quarter of the bytes of float32 panels;
//   - the float32 vectors row by row, from which Exact re-scores the few
//     vectors the first pass could not rule out, with exactly the
//     arithmetic of Panels.Dots (bit-identical results).
//
// With every approximate dot comes a rigorous bound on its distance to
// the exact float32 dot (see Approx), so that a caller can select the
// candidates of a top k without ever missing one: a vector whose upper
// bound is below the k-th best lower bound cannot be in the top k. The
// result of such a search is the float32 scan's, not an approximation.
//
// QuantPanels is not safe for concurrent writes; Approx and Exact may run
// concurrently with each other.
type QuantPanels struct {
	dim, n int
	codes  []int8    // panels of 16 vectors
	scale  []float32 // per vector
	slack  []float64 // per vector: resid + γ·(scale·‖code‖ + ‖v‖), see Approx
	rows   []float32 // [n][dim] float32
	gamma  float64
	// shared is set when a split scan left a late helper reading codes,
	// scale, slack or rows (see split): the next write copies them first.
	shared atomic.Bool
	// policy chooses between split and serial scans (ScanSplit).
	policy splitPolicy
}

// unshare gives the matrix arrays of its own before a write if a late
// helper may still read the current ones.
func (p *QuantPanels) unshare() {
	if p.shared.Load() {
		p.codes, p.scale, p.slack, p.rows = slices.Clone(p.codes), slices.Clone(p.scale), slices.Clone(p.slack), slices.Clone(p.rows)
		p.shared.Store(false)
	}
}

// NewQuantPanels returns an empty set of dim-dimensional vectors.
func NewQuantPanels(dim int) *QuantPanels {
	// γ_n = n·u/(1−n·u), u = 2⁻²⁴: the classic bound on the relative error
	// of a float32 sum of n products in any order (Higham, Accuracy and
	// Stability of Numerical Algorithms, §3.1), with n = dim + 8 for the
	// kernel's partial sums.
	nu := float64(dim+8) * 0x1p-24
	return &QuantPanels{dim: dim, gamma: nu / (1 - nu)}
}

// Len is the number of vectors held.
func (p *QuantPanels) Len() int { return p.n }

// Dim is the vectors' dimension.
func (p *QuantPanels) Dim() int { return p.dim }

// Append adds v (length Dim) as vector Len() and returns its index.
func (p *QuantPanels) Append(v []float32) int {
	p.unshare()
	i := p.n
	p.n++
	if need := (p.n + panelWidth - 1) / panelWidth * panelWidth * p.dim; need > len(p.codes) {
		p.codes = append(p.codes, make([]int8, need-len(p.codes))...)
	}
	p.scale = append(p.scale, 0)
	p.slack = append(p.slack, 0)
	p.rows = append(p.rows, make([]float32, p.dim)...)
	p.Set(i, v)
	return i
}

// Set replaces vector i (< Len) with v (length Dim).
func (p *QuantPanels) Set(i int, v []float32) {
	p.unshare()
	v = v[:p.dim]
	copy(p.rows[i*p.dim:(i+1)*p.dim], v)
	var maxAbs float32
	for _, x := range v {
		maxAbs = max(maxAbs, float32(math.Abs(float64(x))))
	}
	base, col := (i/panelWidth)*p.dim*panelWidth, i%panelWidth
	if maxAbs == 0 || math.IsInf(float64(maxAbs), 0) || math.IsNaN(float64(maxAbs)) {
		for k := range v {
			p.codes[base+k*panelWidth+col] = 0
		}
		p.scale[i], p.slack[i] = 0, math.Inf(1)
		if maxAbs == 0 {
			p.slack[i] = 0 // the zero vector: every dot is exactly 0
		}
		return
	}
	s := maxAbs / 127
	var resid, cn, vn float64
	for k, x := range v {
		c := math.Round(float64(x) / float64(s))
		c = max(-127, min(127, c))
		p.codes[base+k*panelWidth+col] = int8(c)
		r := float64(x) - float64(s)*c
		resid += r * r
		cn += c * c
		vn += float64(x) * float64(x)
	}
	p.scale[i] = s
	// Rounded up by a relative 1e-9: the float64 arithmetic of the bound
	// itself must not make it smaller than the truth.
	p.slack[i] = (math.Sqrt(resid) + p.gamma*(float64(s)*math.Sqrt(cn)+math.Sqrt(vn))) * (1 + 1e-9)
}

// RemoveSwap removes vector i by moving the last vector into its place
// (the caller renumbers that one: it had index Len()−1, now i).
func (p *QuantPanels) RemoveSwap(i int) {
	p.unshare()
	last := p.n - 1
	if i != last {
		p.Set(i, p.rows[last*p.dim:(last+1)*p.dim])
	}
	base, col := (last/panelWidth)*p.dim*panelWidth, last%panelWidth
	for k := 0; k < p.dim; k++ {
		p.codes[base+k*panelWidth+col] = 0
	}
	p.n--
	p.codes = p.codes[:(p.n+panelWidth-1)/panelWidth*panelWidth*p.dim]
	p.scale, p.slack, p.rows = p.scale[:p.n], p.slack[:p.n], p.rows[:p.n*p.dim]
}

// Approx sets approx[i] to the int8 estimate of q·v_i and slack[i] to a
// bound on |approx[i] − Exact(q, i)|, for every i < Len (both need Len
// elements). The bound is ‖q‖·(‖r_i‖ + γ·(scale_i·‖c_i‖ + ‖v_i‖)), with
// c_i the codes and r_i = v_i − scale_i·c_i the quantisation residual
// (Cauchy–Schwarz), γ the float32 rounding bound of a dim-term dot
// product, once for the estimate and once for the exact dot; the
// estimate scale_i·Σ q_k c_ik is formed in float64 from its float32 sum,
// so the product adds no rounding. A vector with a non-finite component
// gets an infinite slack.
func (p *QuantPanels) Approx(q []float32, approx []float64, slack []float64) {
	q = q[:p.dim]
	approx, slack = approx[:p.n], slack[:p.n]
	var qn float64
	for _, x := range q {
		qn += float64(x) * float64(x)
	}
	qn = math.Sqrt(qn) * (1 + 1e-9)
	var tile [panelWidth]float32
	for pn := 0; pn*panelWidth < p.n; pn++ {
		dotsInt8(p.dim, q, p.codes[pn*p.dim*panelWidth:(pn+1)*p.dim*panelWidth], &tile)
		for j := 0; j < panelWidth && pn*panelWidth+j < p.n; j++ {
			i := pn*panelWidth + j
			approx[i] = float64(p.scale[i]) * float64(tile[j])
			slack[i] = qn * p.slack[i]
		}
	}
}

// Exact sets out[j] to q·v_idx[j] computed as Panels.Dots computes it
// (bit for bit: the same chain of float32 multiply-adds), for the vectors
// idx names; out needs len(idx) elements.
func (p *QuantPanels) Exact(q []float32, idx []int32, out []float32) {
	exactRows(p.rows, p.dim, q, idx, out)
}

// exactRows is Exact over the rows [n][dim] given.
func exactRows(rows []float32, dim int, q []float32, idx []int32, out []float32) {
	q = q[:dim]
	out = out[:len(idx)]
	if !haveSIMD || dim == 0 {
		for j, i := range idx {
			out[j] = dot(q, rows[int(i)*dim:(int(i)+1)*dim])
		}
		return
	}
	// Eight rows at a time, gathered by element offset (the last group
	// padded with row idx[0]).
	var offs [8]int32
	var res [8]float32
	for j0 := 0; j0 < len(idx); j0 += 8 {
		m := min(8, len(idx)-j0)
		for c := range offs {
			offs[c] = idx[j0+min(c, m-1)] * int32(dim)
		}
		dots8Rows(dim, &q[0], &rows[0], &offs[0], &res[0])
		copy(out[j0:j0+m], res[:m])
	}
}

// scanChunkPanels is the number of 16-vector panels per chunk of a split
// Approx (512 vectors, 256 KB of int8 codes at 512 dimensions: 20 chunks
// at 10k vectors), and scanChunkRows the rows per chunk of a split Exact.
const (
	scanChunkPanels = 32
	scanChunkRows   = 64
)

// ScanSplit is Approx followed by Exact of the indices pick returns from
// Approx's arrays, each divided among idle cores (split: by ranges of
// vectors for Approx, of indices for Exact) when splitting pays on this
// machine's current load (splitPolicy, per QuantPanels). The results are
// those of Approx and Exact, bit for bit: every value is computed by the
// same kernel call whoever computes it. q is copied, so the caller may
// reuse it; the vectors must not change during the call (the store's
// read lock), and a write after it never disturbs a late helper (the
// arrays are then copied first). exact needs room for pick's indices; it
// returns them and their exact dot products.
func (p *QuantPanels) ScanSplit(q []float32, approx, slack []float64, pick func() []int32, exact []float32) ([]int32, []float32) {
	q = slices.Clone(q[:p.dim])
	use := p.n >= 2*scanChunkPanels*panelWidth && p.policy.choose()
	t0 := time.Now()
	if use {
		p.approxSplit(q, approx, slack)
	} else {
		p.Approx(q, approx, slack)
	}
	idx := pick()
	if cap(exact) < len(idx) {
		exact = make([]float32, len(idx))
	}
	exact = exact[:len(idx)]
	if use && len(idx) >= 2*scanChunkRows {
		p.exactSplit(q, idx, exact)
	} else {
		p.Exact(q, idx, exact)
	}
	if p.n >= 2*scanChunkPanels*panelWidth {
		p.policy.record(use, time.Since(t0))
	}
	return idx, exact
}

// approxSplit is Approx with its panels in chunks of scanChunkPanels.
// A helper reads only what the call captured (q is the caller's copy):
// a late one never races with the caller's next writes.
func (p *QuantPanels) approxSplit(q []float32, approx []float64, slack []float64) {
	approx, slack = approx[:p.n], slack[:p.n]
	var qn float64
	for _, x := range q {
		qn += float64(x) * float64(x)
	}
	qn = math.Sqrt(qn) * (1 + 1e-9)
	n, dim := p.n, p.dim
	panels := (n + panelWidth - 1) / panelWidth
	codes, scale, pslack := p.codes, p.scale, p.slack // a helper reads only these
	span := func(c int) (int, int) { return c * scanChunkPanels, min(panels, (c+1)*scanChunkPanels) }
	// dots writes the chunk's dot products of q with the codes into out
	// (16 per panel).
	dots := func(c int, out []float32) {
		p0, p1 := span(c)
		for pn := p0; pn < p1; pn++ {
			dotsInt8(dim, q, codes[pn*dim*panelWidth:(pn+1)*dim*panelWidth], (*[panelWidth]float32)(out[(pn-p0)*panelWidth:]))
		}
	}
	// finish turns a chunk's dot products into estimates and slacks.
	finish := func(c int, tiles []float32) {
		p0, p1 := span(c)
		for i := p0 * panelWidth; i < min(n, p1*panelWidth); i++ {
			approx[i] = float64(scale[i]) * float64(tiles[i-p0*panelWidth])
			slack[i] = qn * pslack[i]
		}
	}
	late := split(&splitWork{
		chunks: (panels + scanChunkPanels - 1) / scanChunkPanels,
		direct: func(c int) {
			var tiles [scanChunkPanels * panelWidth]float32
			dots(c, tiles[:])
			finish(c, tiles[:])
		},
		private: func(c int, buf []float32) []float32 {
			buf = slices.Grow(buf[:0], scanChunkPanels*panelWidth)[:scanChunkPanels*panelWidth]
			dots(c, buf)
			return buf
		},
		commit: finish,
	})
	if late {
		p.shared.Store(true)
	}
}

// exactSplit is Exact with idx in chunks of scanChunkRows.
// A helper reads only what the call captured (q and idx are its own
// copies): a late one never races with the caller's next writes.
func (p *QuantPanels) exactSplit(q []float32, idx []int32, out []float32) {
	idx = slices.Clone(idx)
	rows, dim := p.rows, p.dim
	span := func(c int) (int, int) { return c * scanChunkRows, min(len(idx), (c+1)*scanChunkRows) }
	late := split(&splitWork{
		chunks: (len(idx) + scanChunkRows - 1) / scanChunkRows,
		direct: func(c int) {
			j0, j1 := span(c)
			exactRows(rows, dim, q, idx[j0:j1], out[j0:j1])
		},
		private: func(c int, buf []float32) []float32 {
			j0, j1 := span(c)
			buf = slices.Grow(buf[:0], j1-j0)[:j1-j0]
			exactRows(rows, dim, q, idx[j0:j1], buf)
			return buf
		},
		commit: func(c int, buf []float32) {
			j0, j1 := span(c)
			copy(out[j0:j1], buf)
		},
	})
	if late {
		p.shared.Store(true)
	}
}

// dotsInt8 sets out[j] = Σ_k q[k]·codes[k*16+j] for one panel of codes
// ([dim][16]); the SIMD kernel handles dim rounded down to 4, Go the rest.
func dotsInt8(dim int, q []float32, codes []int8, out *[panelWidth]float32) {
	k4 := 0
	if haveSIMD {
		k4 = dim &^ 3
	}
	if k4 > 0 {
		dotsInt8x16(k4, &q[0], &codes[0], &out[0])
	} else {
		clear(out[:])
	}
	for k := k4; k < dim; k++ {
		row := codes[k*panelWidth : (k+1)*panelWidth]
		for j, c := range row {
			out[j] += q[k] * float32(c)
		}
	}
}
