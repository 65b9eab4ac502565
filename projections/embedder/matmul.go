package embedder

// panelWidth is the number of output columns per packed panel of the SIMD
// kernel.
const panelWidth = 16

// dense is a fully connected layer y = x·W + b. W is kept in the layout of
// the kernel chosen when the model was built:
//   - wp: column panels of 16 ([out/16][in][16]) for the AVX2+FMA kernel
//     (matmul_amd64.s), used when the CPU has it;
//   - wt: the transpose ([out][in], row-major) for the portable Go kernel.
type dense struct {
	in, out int
	b       []float32
	wt      []float32
	wp      []float32
}

// newDense builds a layer from the row-major [in][out] matrix w.
func newDense(w, b []float32, in, out int, simd bool) dense {
	d := dense{in: in, out: out, b: b}
	if simd && out%panelWidth == 0 {
		d.wp = make([]float32, len(w))
		for p := 0; p < out/panelWidth; p++ {
			panel := d.wp[p*in*panelWidth : (p+1)*in*panelWidth]
			for k := 0; k < in; k++ {
				copy(panel[k*panelWidth:(k+1)*panelWidth], w[k*out+p*panelWidth:k*out+(p+1)*panelWidth])
			}
		}
		return d
	}
	d.wt = transpose(w, in, out)
	return d
}

// transpose returns the [cols][rows] transpose of the row-major w.
func transpose(w []float32, rows, cols int) []float32 {
	t := make([]float32, len(w))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			t[c*rows+r] = w[r*cols+c]
		}
	}
	return t
}

// goRowBlock is the number of rows the portable kernel applies each pair of
// weight rows to before moving on.
const goRowBlock = 32

// kBlock is the depth of one pass of the SIMD kernel.
const kBlock = 256

// smallRows is the most (padded) rows for which dense.apply streams each
// weight panel whole instead of blocking over k: a query or a text of up
// to 64 tokens, whose cost is reading W (each panel, up to 96 KB, is
// reused from L2 by the row tiles). Measured one text at a time, both
// paths interleaved on the shared 2-core machine: streaming took p50
// 3.6 vs 5.5 ms at 10 tokens, 5.1 vs 7.2 at 24, 10.7 vs 13.2 at 60, and
// about the same at 120 tokens.
const smallRows = 64

// padRows rounds a row count up to the SIMD kernel's 4-row tile.
func padRows(T int) int { return (T + 3) &^ 3 }

// densePath selects how dense.apply runs the SIMD kernel; every path
// gives bit-identical outputs.
type densePath uint8

const (
	// pathStream streams each weight panel whole for up to smallRows
	// rows and blocks over k above (the serial path of issue 11 item 2).
	pathStream densePath = iota
	// pathBlocked blocks over k whatever the rows (the only path before
	// issue 11 item 2; the benchmarks' baseline).
	pathBlocked
	// pathSplit is pathStream with the streamed panels divided into
	// chunks of splitPanels that idle cores help compute (see split).
	pathSplit
)

// splitPanels is the number of 16-column weight panels per chunk of a
// split product: 8 to 24 chunks for USE lite's layers (512 to 1536
// outputs), each 64–384 KB of weights (~6–36 µs at the ~11 GB/s one
// core streams), so that the caller never waits long for a chunk a helper
// claimed.
const splitPanels = 4

// apply computes out[t] = x[t]·W + b for the T rows of x (width d.in) into
// out (width d.out). With the SIMD kernel, x and out should have capacity
// for padRows(T) rows (the scratch buffers do); otherwise padded copies are
// made. path chooses the loop (densePath); the result is bit-identical
// whichever it is. late (pathSplit only) reports that a helper may still
// be reading x (see split): the caller must not write x's buffer again.
func (d *dense) apply(x []float32, T int, out []float32, path densePath) (late bool) {
	if d.wp == nil {
		d.applyGo(x, T, out)
		return false
	}
	in, n := d.in, d.out
	rows := padRows(T)
	if cap(x) < rows*in || cap(out) < rows*n {
		xp := make([]float32, rows*in)
		copy(xp, x[:T*in])
		op := make([]float32, rows*n)
		d.apply(xp[:T*in], T, op[:T*n], path) // xp is this call's own: late does not matter
		copy(out[:T*n], op)
		return false
	}
	xp := x[:rows*in]
	clear(xp[T*in:])
	op := out[:rows*n]
	for t := 0; t < rows; t++ {
		copy(op[t*n:(t+1)*n], d.b)
	}
	if rows <= smallRows && path != pathBlocked {
		// A few rows (a query): the product is bound by streaming W from
		// memory, so each panel is read whole, in memory order (the
		// panels are contiguous: one sequential pass over W that the
		// prefetchers follow), and applied to every 4-row tile while it
		// is in L1/L2. Each output is the same chain of multiply-adds
		// over k as in the blocked loop below (the accumulators are
		// float32 in memory between blocks there), so a row's result
		// does not depend on the path.
		// Split, each chunk of panels is the same loop over its panels,
		// writing its own output columns.
		panels := n / panelWidth
		stream := func(p0, p1 int) {
			for p := p0; p < p1; p++ {
				panel := d.wp[p*in*panelWidth : (p+1)*in*panelWidth]
				for t := 0; t < rows; t += 4 {
					gemm4x16pf(in, &xp[t*in], in, &panel[0], &op[t*n+p*panelWidth], n)
				}
			}
		}
		if path == pathSplit {
			span := func(c int) (int, int) { return c * splitPanels, min(panels, (c+1)*splitPanels) }
			return split(&splitWork{
				chunks: (panels + splitPanels - 1) / splitPanels,
				direct: func(c int) { stream(span(c)) },
				// A helper's chunk: the same kernel calls on the chunk's
				// columns, from the bias, into a rows × w buffer.
				private: func(c int, buf []float32) []float32 {
					p0, p1 := span(c)
					w := (p1 - p0) * panelWidth
					if cap(buf) < rows*w {
						buf = make([]float32, rows*w)
					}
					buf = buf[:rows*w]
					for t := 0; t < rows; t++ {
						copy(buf[t*w:(t+1)*w], d.b[p0*panelWidth:p1*panelWidth])
					}
					for p := p0; p < p1; p++ {
						panel := d.wp[p*in*panelWidth : (p+1)*in*panelWidth]
						for t := 0; t < rows; t += 4 {
							gemm4x16pf(in, &xp[t*in], in, &panel[0], &buf[t*w+(p-p0)*panelWidth], w)
						}
					}
					return buf
				},
				commit: func(c int, buf []float32) {
					p0, p1 := span(c)
					w := (p1 - p0) * panelWidth
					for t := 0; t < rows; t++ {
						copy(op[t*n+p0*panelWidth:t*n+p1*panelWidth], buf[t*w:(t+1)*w])
					}
				},
			})
		}
		stream(0, panels)
		return false
	}
	// Blocked over k so that a 16-column slice of a panel (kBlock×16
	// floats, 16 KB) stays in L1 while every row block streams past it,
	// and the kBlock-wide slab of x stays in L2.
	for k0 := 0; k0 < in; k0 += kBlock {
		kc := min(kBlock, in-k0)
		for p := 0; p < n/panelWidth; p++ {
			sub := d.wp[(p*in+k0)*panelWidth : (p*in+k0+kc)*panelWidth]
			for t := 0; t < rows; t += 4 {
				gemm4x16(kc, &xp[t*in+k0], in, &sub[0], &op[t*n+p*panelWidth], n)
			}
		}
	}
	return false
}

// applyGo is the portable kernel: blocks of 4 rows × 2 output columns, so
// that every weight and input value loaded feeds several multiply-adds.
// Each output is summed in index order whatever the block.
func (d *dense) applyGo(x []float32, T int, out []float32) {
	in, n := d.in, d.out
	x = x[:T*in]
	out = out[:T*n]
	full := T &^ 3
	// Rows go in blocks of goRowBlock: the block's inputs stay in L2 while
	// each pair of weight rows (in L1) is applied to all of them, so the
	// weights stream from memory once per block rather than once per 4 rows.
	for r0 := 0; r0 < full; r0 += goRowBlock {
		r1 := min(r0+goRowBlock, full)
		for j := 0; j+2 <= n; j += 2 {
			w0 := d.wt[j*in : (j+1)*in]
			w1 := d.wt[(j+1)*in : (j+2)*in]
			w1 = w1[:len(w0)]
			b0, b1 := d.b[j], d.b[j+1]
			for t := r0; t < r1; t += 4 {
				x0 := x[t*in : (t+1)*in][:len(w0)]
				x1 := x[(t+1)*in : (t+2)*in][:len(w0)]
				x2 := x[(t+2)*in : (t+3)*in][:len(w0)]
				x3 := x[(t+3)*in : (t+4)*in][:len(w0)]
				var a00, a01, a10, a11, a20, a21, a30, a31 float32
				for k, wa := range w0 {
					wb := w1[k]
					v0, v1, v2, v3 := x0[k], x1[k], x2[k], x3[k]
					a00 += v0 * wa
					a01 += v0 * wb
					a10 += v1 * wa
					a11 += v1 * wb
					a20 += v2 * wa
					a21 += v2 * wb
					a30 += v3 * wa
					a31 += v3 * wb
				}
				out[t*n+j], out[t*n+j+1] = a00+b0, a01+b1
				out[(t+1)*n+j], out[(t+1)*n+j+1] = a10+b0, a11+b1
				out[(t+2)*n+j], out[(t+2)*n+j+1] = a20+b0, a21+b1
				out[(t+3)*n+j], out[(t+3)*n+j+1] = a30+b0, a31+b1
			}
		}
		if n%2 == 1 {
			j := n - 1
			w := d.wt[j*in : (j+1)*in]
			for t := r0; t < r1; t++ {
				out[t*n+j] = seqDot(x[t*in:(t+1)*in], w) + d.b[j]
			}
		}
	}
	for t := full; t < T; t++ {
		xr := x[t*in : (t+1)*in]
		o := out[t*n : (t+1)*n]
		for j := range o {
			o[j] = seqDot(xr, d.wt[j*in:(j+1)*in]) + d.b[j]
		}
	}
}

// seqDot returns Σ a[i]·b[i] summed in index order, as the blocked loop of
// applyGo does, so that a row's result does not depend on whether it was
// part of a 4-row block (and so on the other texts of a batch).
func seqDot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// dot returns Σ a[i]·b[i] over len(a) elements.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
