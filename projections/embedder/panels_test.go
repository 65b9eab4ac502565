package embedder

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Dots agrees with a plain dot product for every vector, after appends,
// replacements and swap-removals, with both kernels.
func TestPanelsDots(t *testing.T) {
	for _, simd := range []bool{false, haveSIMD} {
		r := rand.New(rand.NewPCG(1, 2))
		const dim = 40
		vec := func() []float32 {
			v := make([]float32, dim)
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			return v
		}
		p := &Panels{dim: dim, simd: simd}
		var want [][]float32
		for i := 0; i < 37; i++ {
			v := vec()
			if got := p.Append(v); got != i {
				t.Fatalf("Append = %d, want %d", got, i)
			}
			want = append(want, v)
		}
		want[5] = vec()
		p.Set(5, want[5])
		p.RemoveSwap(3) // vector 36 moves to 3
		want[3] = want[36]
		want = want[:36]
		p.RemoveSwap(35) // the last one
		want = want[:35]
		q := vec()
		out := make([]float32, p.Len())
		p.Dots(q, out)
		if p.Len() != len(want) {
			t.Fatalf("simd %v: Len %d, want %d", simd, p.Len(), len(want))
		}
		for i, v := range want {
			var d float64
			for k := range v {
				d += float64(q[k]) * float64(v[k])
			}
			if math.Abs(float64(out[i])-d) > 1e-4 {
				t.Errorf("simd %v: dot %d = %v, want %v", simd, i, out[i], d)
			}
		}
	}
}
