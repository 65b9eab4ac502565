package embedder

import (
	"math"
	"math/rand/v2"
	"testing"
)

// QuantPanels' exact dots are bit-identical to Panels.Dots, and every
// approximate dot is within its slack of the exact one, after appends,
// replacements and swap-removals, for dimensions with and without a tail
// of the kernel's 4-step loop, with both kernels.
func TestQuantPanels(t *testing.T) {
	defer func(s bool) { haveSIMD = s }(haveSIMD)
	for _, simd := range []bool{false, haveSIMD} {
		haveSIMD = simd
		for _, dim := range []int{3, 40, 45, 512} {
			r := rand.New(rand.NewPCG(uint64(dim), 9))
			vec := func() []float32 {
				v := make([]float32, dim)
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				if r.IntN(5) == 0 { // a few vectors with one large component
					v[r.IntN(dim)] *= 40
				}
				return v
			}
			qp, fp := NewQuantPanels(dim), &Panels{dim: dim, simd: simd}
			for i := 0; i < 70; i++ {
				v := vec()
				if i == 7 {
					v = make([]float32, dim) // the zero vector
				}
				qp.Append(v)
				fp.Append(v)
			}
			v := vec()
			qp.Set(5, v)
			fp.Set(5, v)
			for _, i := range []int{3, 68, 20} {
				qp.RemoveSwap(i)
				fp.RemoveSwap(i)
			}
			if qp.Len() != fp.Len() || qp.Dim() != dim {
				t.Fatalf("Len %d, Panels %d", qp.Len(), fp.Len())
			}
			for round := 0; round < 5; round++ {
				q := vec()
				want := make([]float32, fp.Len())
				fp.Dots(q, want)
				idx := make([]int32, 0, qp.Len())
				for i := qp.Len() - 1; i >= 0; i-- {
					idx = append(idx, int32(i))
				}
				got := make([]float32, len(idx))
				qp.Exact(q, idx, got)
				approx, slack := make([]float64, qp.Len()), make([]float64, qp.Len())
				qp.Approx(q, approx, slack)
				var worst float64
				for j, i := range idx {
					if math.Float32bits(got[j]) != math.Float32bits(want[i]) {
						t.Fatalf("simd %v dim %d: Exact %d = %v, Dots %v", simd, dim, i, got[j], want[i])
					}
					d := math.Abs(approx[i] - float64(want[i]))
					if d > slack[i] {
						t.Fatalf("simd %v dim %d: |approx − exact| of %d = %.3g > slack %.3g", simd, dim, i, d, slack[i])
					}
					if slack[i] > 0 {
						worst = max(worst, d/slack[i])
					}
				}
				if round == 0 {
					t.Logf("simd %v dim %d: largest error / slack %.3f", simd, dim, worst)
				}
			}
		}
	}
}
