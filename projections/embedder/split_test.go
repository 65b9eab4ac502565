package embedder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// queryTexts returns n distinct queries of 1–60 words (up to 64 tokens
// with the sentence markers: every query takes the streaming path).
func queryTexts(n int) []string {
	words := strings.Fields("cancel the flight reservation and refund the payment to the original card " +
		"upgrade cabin class for passenger baggage allowance certificate insurance delay compensation policy " +
		"rebuild a projection from the event log replay kafka partition offset frontier beam reducer")
	r := rand.New(rand.NewPCG(11, 12))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		k := 1 + r.IntN(60)
		if len(out)%4 != 0 {
			k = 1 + r.IntN(8) // mostly short, as memory_search queries are
		}
		q := make([]string, k)
		for j := range q {
			q[j] = words[r.IntN(len(words))]
		}
		t := strings.Join(q, " ")
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// embedWith embeds text alone with the dense layers' path.
func embedWith(lm *liteModel, text string, path densePath) []float32 {
	out := make([]float32, USELiteDim)
	lm.embedTexts([]string{text}, [][]float32{out}, path)
	return out
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func needHelpers(t *testing.T) {
	t.Helper()
	if splitHelpers().helpers == 0 {
		t.Skip("GOMAXPROCS 1: no helpers, every split runs serially")
	}
}

// The split forward pass gives the serial path's vectors bit for bit
// (and the k-blocked path's), over many distinct queries, and helpers
// did take part.
func TestSplitQueryBitIdentical(t *testing.T) {
	needHelpers(t)
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	one := &USELite{lm: u.lm, Workers: 1}
	helped := splitStats.helped.Load()
	for _, q := range queryTexts(150) {
		serial := embedWith(u.lm, q, pathStream)
		if got := embedWith(u.lm, q, pathSplit); !sameBits(got, serial) {
			t.Fatalf("%q: split vector differs from the serial one by %.3g", q, maxAbsDiff(got, serial))
		}
		if got := embedWith(u.lm, q, pathBlocked); !sameBits(got, serial) {
			t.Fatalf("%q: blocked vector differs from the serial one by %.3g", q, maxAbsDiff(got, serial))
		}
		// Through Embed and EmbedQuery (which split or not as
		// splitPolicy chooses; EmbedQuery even with Workers 1).
		v, err := u.Embed(t.Context(), []string{q})
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(v[0], serial) {
			t.Fatalf("%q: Embed's vector differs from the serial one", q)
		}
		w, err := one.EmbedQuery(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(w, serial) {
			t.Fatalf("%q: EmbedQuery's vector differs from the serial one", q)
		}
	}
	if splitStats.helped.Load() == helped {
		t.Fatal("no helper computed a chunk: the split path was not exercised")
	}
}

// When helpers are late, the caller takes their chunks over (it never
// waits for them to finish) and the vectors stay bit-identical.
func TestSplitTakeOverLateHelpers(t *testing.T) {
	needHelpers(t)
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	testHelperDelay.Store(int64(20 * time.Millisecond))
	defer testHelperDelay.Store(0)
	taken := splitStats.takenOver.Load()
	for _, q := range queryTexts(20) {
		serial := embedWith(u.lm, q, pathStream)
		t0 := time.Now()
		got := embedWith(u.lm, q, pathSplit)
		d := time.Since(t0)
		if !sameBits(got, serial) {
			t.Fatalf("%q: split vector with late helpers differs from the serial one", q)
		}
		// Ten matrix products, each waiting at most about one chunk for a
		// late helper: far below the 20 ms a single wait would take.
		if d > 200*time.Millisecond {
			t.Errorf("%q: %v with late helpers: the caller waited for them", q, d)
		}
	}
	if splitStats.takenOver.Load() == taken {
		t.Fatal("no chunk was taken over from a late helper")
	}
}

// split computes every chunk exactly once, whoever computes it, including
// when helpers are late and the caller takes chunks over.
func TestSplitChunksOnce(t *testing.T) {
	needHelpers(t)
	for round := 0; round < 300; round++ {
		if round == 200 {
			testHelperDelay.Store(int64(200 * time.Microsecond))
			defer testHelperDelay.Store(0)
		}
		n := 2 + round%40
		out := make([]float32, n)
		var direct, private, commit atomic.Int32
		split(&splitWork{
			chunks: n,
			direct: func(c int) { out[c] += float32(c + 1); direct.Add(1) },
			private: func(c int, buf []float32) []float32 {
				private.Add(1)
				runtime.Gosched()
				return append(buf[:0], float32(c+1))
			},
			commit: func(c int, buf []float32) { out[c] += buf[0]; commit.Add(1) },
		})
		for c, v := range out {
			if v != float32(c+1) {
				t.Fatalf("round %d: chunk %d written %v times", round, c, v/float32(c+1))
			}
		}
		if int(direct.Load()+commit.Load()) != n {
			t.Fatalf("round %d: %d direct + %d committed chunks, want %d", round, direct.Load(), commit.Load(), n)
		}
	}
}

// splitPolicy takes the faster kind of call and tries the other on every
// exploreEvery-th call, or every exploreRarely-th while that one is more
// than 25% slower.
func TestSplitPolicy(t *testing.T) {
	var p splitPolicy
	if !p.choose() {
		t.Fatal("first call: want split (not measured yet)")
	}
	p.record(true, 3*time.Millisecond)
	if p.choose() {
		t.Fatal("second call: want serial (not measured yet)")
	}
	p.record(false, time.Millisecond)
	count := func(calls int) (splits int) {
		for range calls {
			if p.choose() {
				splits++
			}
		}
		return splits
	}
	if n := count(4 * exploreRarely); n != 4 {
		t.Fatalf("serial 3× faster: %d of %d calls split, want 4 (one in %d)", n, 4*exploreRarely, exploreRarely)
	}
	// The load drops: split calls become faster and the policy follows.
	for range 16 {
		p.record(true, 500*time.Microsecond)
	}
	if n := count(4 * exploreRarely); n != 4*exploreRarely-4 {
		t.Fatalf("split 2× faster: %d of %d calls split, want %d", n, 4*exploreRarely, 4*exploreRarely-4)
	}
	// Close: the slower kind is tried more often.
	for range 16 {
		p.record(false, 550*time.Microsecond)
	}
	if n := count(4 * exploreEvery); n != 4*exploreEvery-4 {
		t.Fatalf("split 10%% faster: %d of %d calls split, want %d", n, 4*exploreEvery, 4*exploreEvery-4)
	}
	// One descheduled call counts at most 3× the average.
	before := p.cost[1]
	p.record(true, time.Second)
	if p.cost[1] > 1.5*before {
		t.Fatalf("one 1 s call moved the split average from %v to %v", time.Duration(before), time.Duration(p.cost[1]))
	}
}

// A split scan (approxSplit, exactSplit) gives Approx's and Exact's
// values bit for bit, with helpers on time and with late ones (whose
// chunks the caller takes over); a write after a late scan copies the
// arrays a helper may still read (run with -race) and changes nothing
// else.
func TestScanSplitMatchesSerial(t *testing.T) {
	needHelpers(t)
	const dim, n = 512, 3000
	r := rand.New(rand.NewPCG(21, 22))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	qp := NewQuantPanels(dim)
	for range n {
		qp.Append(vec())
	}
	idx := make([]int32, 700)
	for j := range idx {
		idx[j] = int32(r.IntN(n))
	}
	check := func(what string) {
		q := vec()
		a1, s1 := make([]float64, n), make([]float64, n)
		a2, s2 := make([]float64, n), make([]float64, n)
		qp.Approx(q, a1, s1)
		qp.approxSplit(q, a2, s2)
		for i := range a1 {
			if math.Float64bits(a1[i]) != math.Float64bits(a2[i]) || math.Float64bits(s1[i]) != math.Float64bits(s2[i]) {
				t.Fatalf("%s: vector %d: split estimate %v ± %v, serial %v ± %v", what, i, a2[i], s2[i], a1[i], s1[i])
			}
		}
		e1, e2 := make([]float32, len(idx)), make([]float32, len(idx))
		qp.Exact(q, idx, e1)
		qp.exactSplit(q, idx, e2)
		if !sameBits(e1, e2) {
			t.Fatalf("%s: split exact dots differ from the serial ones", what)
		}
	}
	for i := range 20 {
		check(fmt.Sprintf("query %d", i))
	}
	testHelperDelay.Store(int64(5 * time.Millisecond))
	taken := splitStats.takenOver.Load()
	// at least five queries, and on until a helper was late and its chunk
	// taken over: on a loaded machine a helper may not be scheduled at all
	// during a query, and then the caller does every chunk itself
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 5 || splitStats.takenOver.Load() == taken && time.Now().Before(deadline); i++ {
		check(fmt.Sprintf("late helpers, query %d", i))
		qp.Set(r.IntN(n), vec()) // while late helpers may still read
	}
	testHelperDelay.Store(0)
	if splitStats.takenOver.Load() == taken {
		t.Fatal("no chunk was taken over from a late helper in 20 s of queries")
	}
	check("after the writes")
	// ScanSplit, whichever way splitPolicy goes, is Approx then Exact.
	q := vec()
	a, s := make([]float64, n), make([]float64, n)
	for range 3 * exploreRarely {
		got, ex := qp.ScanSplit(q, a, s, func() []int32 { return idx[:300] }, nil)
		want := make([]float32, len(got))
		qp.Exact(q, got, want)
		if len(got) != 300 || !sameBits(ex, want) {
			t.Fatal("ScanSplit's exact dots differ from Exact's")
		}
	}
}
