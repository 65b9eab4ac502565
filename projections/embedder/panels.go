package embedder

// Panels holds n vectors of one dimension packed for the dot products of
// one query against all of them — the exact scan of a vector store. With
// the AVX2+FMA kernel (matmul_amd64.s) the vectors are kept in column
// panels of 16 ([n/16][dim][16]) and a query is multiplied into each panel
// with FMA; otherwise they are kept row by row and dotted in Go. Either
// way Dots is exact (no approximation), up to float32 rounding, which
// differs between the two kernels in the last bits.
//
// Panels is not safe for concurrent writes; Dots may run concurrently with
// other Dots.
type Panels struct {
	dim, n int
	simd   bool
	data   []float32 // panels (simd) or rows
}

// NewPanels returns an empty matrix of dim-dimensional vectors, packed
// for the SIMD kernel when the CPU has it.
func NewPanels(dim int) *Panels { return &Panels{dim: dim, simd: haveSIMD} }

// Len is the number of vectors held.
func (p *Panels) Len() int { return p.n }

// Dim is the vectors' dimension.
func (p *Panels) Dim() int { return p.dim }

// Append adds v (length Dim) as vector Len() and returns its index.
func (p *Panels) Append(v []float32) int {
	i := p.n
	p.n++
	need := p.n * p.dim
	if p.simd {
		need = (p.n + panelWidth - 1) / panelWidth * panelWidth * p.dim
	}
	if need > len(p.data) {
		if need > cap(p.data) {
			grown := make([]float32, need, max(need, 2*cap(p.data)))
			copy(grown, p.data)
			p.data = grown
		} else {
			p.data = p.data[:need]
		}
	}
	p.Set(i, v)
	return i
}

// Set replaces vector i (< Len) with v (length Dim).
func (p *Panels) Set(i int, v []float32) {
	v = v[:p.dim]
	if !p.simd {
		copy(p.data[i*p.dim:(i+1)*p.dim], v)
		return
	}
	base, col := (i/panelWidth)*p.dim*panelWidth, i%panelWidth
	for k, x := range v {
		p.data[base+k*panelWidth+col] = x
	}
}

// get returns a copy of vector i.
func (p *Panels) get(i int) []float32 {
	v := make([]float32, p.dim)
	if !p.simd {
		copy(v, p.data[i*p.dim:(i+1)*p.dim])
		return v
	}
	base, col := (i/panelWidth)*p.dim*panelWidth, i%panelWidth
	for k := range v {
		v[k] = p.data[base+k*panelWidth+col]
	}
	return v
}

// RemoveSwap removes vector i by moving the last vector into its place
// (the caller renumbers that one: it had index Len()−1, now i).
func (p *Panels) RemoveSwap(i int) {
	last := p.n - 1
	if i != last {
		p.Set(i, p.get(last))
	}
	p.Set(last, make([]float32, p.dim))
	p.n--
	need := p.n * p.dim
	if p.simd {
		need = (p.n + panelWidth - 1) / panelWidth * panelWidth * p.dim
	}
	p.data = p.data[:need]
}

// Dots sets out[i] to the dot product of q (length Dim) with vector i,
// for every i < Len; out needs Len elements.
func (p *Panels) Dots(q []float32, out []float32) {
	q = q[:p.dim]
	out = out[:p.n]
	if !p.simd {
		for i := range out {
			out[i] = dot(q, p.data[i*p.dim:(i+1)*p.dim])
		}
		return
	}
	// The kernel's 4-row tile reads the query four times (lda 0) into a
	// scratch tile; row 0 is the answer. A quarter of its multiply-adds
	// are used, but the scan is bound by streaming the panels from memory,
	// which each vector is read from once.
	var tile [4 * panelWidth]float32
	for pn := 0; pn*panelWidth < p.n; pn++ {
		clear(tile[:])
		gemm4x16(p.dim, &q[0], 0, &p.data[pn*p.dim*panelWidth], &tile[0], panelWidth)
		copy(out[pn*panelWidth:min(p.n, (pn+1)*panelWidth)], tile[:panelWidth])
	}
}
