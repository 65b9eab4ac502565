//go:build amd64 && !purego

package embedder

import "golang.org/x/sys/cpu"

// haveSIMD reports whether the AVX2+FMA kernel in matmul_amd64.s can run.
var haveSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// gemm4x16 adds, for r in 0..3 and j in 0..15,
//
//	c[r*ldc+j] += Σ_{i<k} a[r*lda+i] · b[i*16+j]
//
// where b is one packed 16-column panel of a weight matrix. It needs AVX2
// and FMA (see haveSIMD).
//
//go:noescape
func gemm4x16(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// dotsInt8x16 sets, for j in 0..15,
//
//	out[j] = Σ_{i<k} q[i] · float32(b[i*16+j])
//
// over one panel of int8 codes (QuantPanels), k a multiple of 4. The sum
// runs in 8 partial sums (4 steps of i × 2 halves of j), added at the end.
// It needs AVX2 and FMA (see haveSIMD).
//
//go:noescape
func dotsInt8x16(k int, q *float32, b *int8, out *float32)

// gemm4x16pf is gemm4x16 with a software prefetch of b 1 KB ahead (for a
// panel streamed from memory once).
//
//go:noescape
func gemm4x16pf(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// dots8Rows sets out[j] = Σ_{i<k} q[i]·rows[idx[j]+i] for j in 0..7 with
// the FMA chain of one column of gemm4x16 (bit-identical to Panels.Dots).
// It needs AVX2 and FMA (see haveSIMD).
//
//go:noescape
func dots8Rows(k int, q *float32, rows *float32, idx *int32, out *float32)
