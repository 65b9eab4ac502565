package embedder

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
)

// refTolerance is the largest difference allowed between a component of a
// Go vector and of the JavaScript reference vector.
const refTolerance = 1e-5

// refCase is one text of testdata/reference.json.
type refCase struct {
	Name   string    `json:"name"`
	Text   string    `json:"text"`
	Tokens []int     `json:"tokens"`
	Vector []float32 `json:"vector"`
}

// loadReference reads the vectors produced by testdata/gen-reference.js.
func loadReference(t testing.TB) []refCase {
	t.Helper()
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Cases []refCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) < 20 {
		t.Fatalf("reference.json has only %d cases", len(r.Cases))
	}
	return r.Cases
}

// texts returns the texts of the cases.
func texts(cases []refCase) []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.Text
	}
	return out
}

// maxAbsDiff returns max_i |a[i]-b[i]|.
func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// cosine returns the cosine similarity of a and b.
func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// newUSELiteWith builds a USELite from the shipped files with a chosen
// kernel, and with the weights passed through transform when not nil.
func newUSELiteWith(t testing.TB, simd bool, transform func([]byte) []byte) *USELite {
	t.Helper()
	w, err := readGzip(weightsFile)
	if err != nil {
		t.Fatal(err)
	}
	if transform != nil {
		w = transform(w)
	}
	v, err := readGzip(vocabFile)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := newLiteModel(w, v, simd)
	if err != nil {
		t.Fatal(err)
	}
	return &USELite{lm: lm}
}

func TestTokenizerMatchesJSReference(t *testing.T) {
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loadReference(t) {
		got := u.lm.tok.encode(c.Text)
		if !slices.Equal(got, c.Tokens) && !(len(got) == 0 && len(c.Tokens) == 0) {
			t.Errorf("%s: encode(%q) = %v, want %v", c.Name, c.Text, got, c.Tokens)
		}
	}
}

// checkAgainstReference embeds every reference text in one call and checks
// each vector against the JavaScript one; it returns the largest difference.
func checkAgainstReference(t *testing.T, u *USELite, cases []refCase) float64 {
	t.Helper()
	got, err := u.Embed(context.Background(), texts(cases))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("got %d vectors for %d texts", len(got), len(cases))
	}
	var worst float64
	for i, c := range cases {
		if len(got[i]) != USELiteDim || len(c.Vector) != USELiteDim {
			t.Fatalf("%s: dimensions %d and %d, want %d", c.Name, len(got[i]), len(c.Vector), USELiteDim)
		}
		d := maxAbsDiff(got[i], c.Vector)
		worst = math.Max(worst, d)
		if d > refTolerance {
			t.Errorf("%s: max |go - js| = %.3g > %g", c.Name, d, refTolerance)
		}
	}
	return worst
}

func TestUSELiteMatchesJSReference(t *testing.T) {
	cases := loadReference(t)
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
	}
	for _, need := range []string{"accents", "emoji", "cjk-japanese", "cjk-chinese", "empty", "long-over-128-tokens"} {
		if !names[need] {
			t.Fatalf("reference.json lacks the %q case", need)
		}
	}
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	worst := checkAgainstReference(t, u, cases)
	t.Logf("default kernel (SIMD=%v): max |go - js| = %.3g over %d texts", haveSIMD, worst, len(cases))
}

func TestUSELitePortableKernelMatchesJSReference(t *testing.T) {
	if !haveSIMD {
		t.Skip("the portable kernel is the default here; TestUSELiteMatchesJSReference covers it")
	}
	worst := checkAgainstReference(t, newUSELiteWith(t, false, nil), loadReference(t))
	t.Logf("portable Go kernel: max |go - js| = %.3g", worst)
}

func TestUSELiteBatchIndependence(t *testing.T) {
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	cases := loadReference(t)
	ctx := context.Background()
	all, err := u.Embed(ctx, texts(cases))
	if err != nil {
		t.Fatal(err)
	}
	// Alone, reversed, or in a batch with the others: bit-identical.
	rev := texts(cases)
	slices.Reverse(rev)
	reversed, err := u.Embed(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	// On one goroutine (Workers 1): the same vectors.
	serial, err := (&USELite{lm: u.lm, Workers: 1}).Embed(ctx, texts(cases))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if !slices.Equal(serial[i], all[i]) {
			t.Errorf("%s: vector with Workers 1 differs", c.Name)
		}
		one, err := u.Embed(ctx, []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one[0], all[i]) {
			t.Errorf("%s: vector alone differs from the batched one by %.3g", c.Name, maxAbsDiff(one[0], all[i]))
		}
		if !slices.Equal(reversed[len(cases)-1-i], all[i]) {
			t.Errorf("%s: vector depends on the batch order", c.Name)
		}
	}
}

// The dense layers' streaming path for a few rows (a text alone) and the
// k-blocked path give bit-identical vectors.
func TestUSELiteBlockedDenseSameVectors(t *testing.T) {
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	blocked := &USELite{lm: u.lm, BlockedDense: true}
	ctx := context.Background()
	for _, c := range loadReference(t) {
		a, err := u.Embed(ctx, []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		b, err := blocked.Embed(ctx, []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a[0], b[0]) {
			t.Errorf("%s: streaming and blocked vectors differ by %.3g", c.Name, maxAbsDiff(a[0], b[0]))
		}
	}
}

func TestUSELiteVectors(t *testing.T) {
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	if u.Dim() != 512 || u.Model() != "use-lite-512@energetic-ai-0.2.0" {
		t.Fatalf("Dim() = %d, Model() = %q", u.Dim(), u.Model())
	}
	in := []string{
		"How do I rebuild a projection from the event log?",
		"What is the way to replay the event store into a read model?",
		"My cat likes to sleep in the sun all afternoon.",
		"",
		string([]byte{0xff, 0xfe, 'o', 'k'}), // invalid UTF-8
	}
	vs, err := u.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(math.Sqrt(n)-1) > 1e-5 {
			t.Errorf("vector %d has norm %v", i, math.Sqrt(n))
		}
	}
	para, unrel := cosine(vs[0], vs[1]), cosine(vs[0], vs[2])
	if para <= unrel {
		t.Errorf("cos(question, paraphrase) = %.3f <= cos(question, unrelated) = %.3f", para, unrel)
	}
	// The vectors share one allocation but must not overlap: appending to
	// one leaves the next one alone.
	before := slices.Clone(vs[1])
	vs[0] = append(vs[0], 1)
	if !slices.Equal(before, vs[1]) {
		t.Error("vectors share memory")
	}
	empty, err := u.Embed(context.Background(), nil)
	if err != nil || len(empty) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want no vectors, no error", empty, err)
	}
}

func TestUSELiteConcurrent(t *testing.T) {
	cases := loadReference(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := NewUSELite() // concurrent first use of the shared weights
			if err != nil {
				errs <- err
				return
			}
			for i := g; i < len(cases); i += 4 {
				v, err := u.Embed(context.Background(), []string{cases[i].Text, cases[(i+1)%len(cases)].Text})
				if err != nil {
					errs <- err
					return
				}
				if d := maxAbsDiff(v[0], cases[i].Vector); d > refTolerance {
					errs <- errors.New(cases[i].Name + ": wrong vector under concurrency")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestUSELiteContext(t *testing.T) {
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	many := make([]string, 100)
	for i := range many {
		many[i] = "a cancelled request"
	}
	if v, err := u.Embed(ctx, many); !errors.Is(err, context.Canceled) || v != nil {
		t.Errorf("Embed(cancelled) = %d vectors, %v; want context.Canceled", len(v), err)
	}
	if _, err := u.Embed(ctx, many[:1]); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed(cancelled, 1 text) error = %v; want context.Canceled", err)
	}
}

// toFloat16Weights rewrites a weights container with every "f32p" matrix
// rounded to float16, as gen_weights.go -dtype f16 would write it.
func toFloat16Weights(t testing.TB, b []byte) []byte {
	t.Helper()
	ts, err := decodeWeights(b)
	if err != nil {
		t.Fatal(err)
	}
	hlen := int(b[8]) | int(b[9])<<8 | int(b[10])<<16 | int(b[11])<<24
	var h struct {
		Tensors []struct {
			Name  string `json:"name"`
			DType string `json:"dtype"`
			Shape []int  `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(b[12:12+hlen], &h); err != nil {
		t.Fatal(err)
	}
	var body []byte
	for i, tt := range h.Tensors {
		for _, v := range ts[tt.Name].data {
			if tt.DType == "f32p" {
				u := float32ToHalf(v)
				body = append(body, byte(u), byte(u>>8))
			} else {
				u := math.Float32bits(v)
				body = append(body, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
			}
		}
		if tt.DType == "f32p" {
			h.Tensors[i].DType = "f16"
		}
	}
	hj, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(fileMagic), byte(len(hj)), byte(len(hj)>>8), byte(len(hj)>>16), byte(len(hj)>>24))
	out = append(out, hj...)
	return append(out, body...)
}

// float32ToHalf rounds f to the nearest binary16 (ties to even); normal
// range only, which is all the weights need (checked by the caller).
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	man := b & 0x7fffff
	if exp <= 0 || exp >= 0x1f {
		// Subnormal or out of range in binary16: go through float64
		// scaling, exact enough for the few tiny weights.
		if exp >= 0x1f {
			return sign | 0x7c00
		}
		q := math.RoundToEven(math.Abs(float64(f)) * (1 << 24))
		return sign | uint16(q)
	}
	h := uint32(exp)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// TestFloat16WeightsTolerance measures what shipping float16 weights would
// cost, which is why float32 ships: vectors move by up to ~3e-4 and the
// cosine between two texts by up to ~3e-4, far above 1e-5, although a
// vector's cosine to its float32 reference stays above 1-1e-6.
func TestFloat16WeightsTolerance(t *testing.T) {
	cases := loadReference(t)
	u := newUSELiteWith(t, haveSIMD, func(b []byte) []byte { return toFloat16Weights(t, b) })
	got, err := u.Embed(context.Background(), texts(cases))
	if err != nil {
		t.Fatal(err)
	}
	var maxDiff, maxSelf, maxPair float64
	for i, c := range cases {
		maxDiff = math.Max(maxDiff, maxAbsDiff(got[i], c.Vector))
		maxSelf = math.Max(maxSelf, 1-cosine(got[i], c.Vector))
		for j := range cases {
			maxPair = math.Max(maxPair, math.Abs(cosine(got[i], got[j])-cosine(c.Vector, cases[j].Vector)))
		}
	}
	t.Logf("float16 weights: max |v - js| = %.3g, max 1-cos(v, js) = %.3g, max |Δ pairwise cosine| = %.3g",
		maxDiff, maxSelf, maxPair)
	if maxSelf > 1e-5 || maxPair > 1e-3 || maxDiff > 1e-3 {
		t.Errorf("float16 weights drift more than measured when float32 was chosen")
	}
	if maxPair <= refTolerance {
		t.Errorf("float16 weights now keep pairwise cosines within %g: reconsider shipping them (half the size)", refTolerance)
	}
}

func TestHalfToFloat(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := halfToFloat(uint16(h))
		exp := h >> 10 & 0x1f
		man := h & 0x3ff
		var want float64
		switch {
		case exp == 0x1f && man != 0:
			if !math.IsNaN(float64(f)) {
				t.Fatalf("halfToFloat(%#04x) = %v, want NaN", h, f)
			}
			continue
		case exp == 0x1f:
			want = math.Inf(1)
		case exp == 0:
			want = float64(man) * math.Pow(2, -24)
		default:
			want = (1 + float64(man)/1024) * math.Pow(2, float64(exp-15))
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("halfToFloat(%#04x) = %v, want %v", h, f, want)
		}
		if exp != 0x1f && float32ToHalf(f) != uint16(h) {
			t.Fatalf("float32ToHalf(halfToFloat(%#04x)) = %#04x", h, float32ToHalf(f))
		}
	}
}

// container builds a weights container around a JSON header and a body.
func container(header string, body ...byte) []byte {
	n := len(header)
	b := append([]byte(fileMagic), byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(append(b, header...), body...)
}

func TestDecodeWeights(t *testing.T) {
	one := math.Float32bits(1.5)
	f32 := []byte{byte(one), byte(one >> 8), byte(one >> 16), byte(one >> 24)}
	const hdr = `{"tensors":[{"name":"a","dtype":"f32","shape":[1]},{"name":"b","dtype":"f32p","shape":[2]},{"name":"c","dtype":"f16","shape":[]}]}`
	// b = [1.5, 1.5] as byte planes; c = 0x3c00 = 1.0 in float16.
	body := append(slices.Clone(f32), f32[0], f32[0], f32[1], f32[1], f32[2], f32[2], f32[3], f32[3], 0x00, 0x3c)
	ts, err := decodeWeights(container(hdr, body...))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ts["a"].data, []float32{1.5}) || !slices.Equal(ts["b"].data, []float32{1.5, 1.5}) ||
		!slices.Equal(ts["c"].data, []float32{1}) || !slices.Equal(ts["b"].shape, []int{2}) {
		t.Errorf("decoded %+v", ts)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"bad magic": append([]byte("NOTUSE!!"), container(hdr, body...)[8:]...),
		"truncated": container(hdr, body[:len(body)-1]...),
		"trailing":  container(hdr, append(slices.Clone(body), 0)...),
		"header":    container(`{"tensors":`, body...),
		"long hdr":  append([]byte(fileMagic), 0xff, 0xff, 0xff, 0x00),
		"dtype":     container(`{"tensors":[{"name":"a","dtype":"i8","shape":[1]}]}`, 1),
	} {
		if _, err := decodeWeights(b); err == nil {
			t.Errorf("%s: decodeWeights accepted it", name)
		}
	}
	if _, err := newModel(map[string]tensor{}, false); err == nil {
		t.Error("newModel accepted no tensors")
	}
	if _, err := newModel(map[string]tensor{"embeddings": {shape: []int{8002, 255}, data: make([]float32, 8002*255)}}, false); err == nil {
		t.Error("newModel accepted a wrongly shaped embedding table")
	}
	v, err := readGzip(vocabFile)
	if err != nil {
		t.Fatal(err)
	}
	if voc, err := decodeVocab(v); err != nil || len(voc) != 8000 || voc[9].piece != "\u2581the" {
		t.Errorf("decodeVocab: %d pieces, %v", len(voc), err)
	}
	if _, err := decodeVocab(v[:100]); err == nil {
		t.Error("decodeVocab accepted a truncated vocabulary")
	}
}
