package embedder

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// modelFS holds the shipped model: weights, vocabulary and licence.
//
//go:embed model/use-lite-512.weights.gz model/vocab.json.gz model/LICENSE model/NOTICE
var modelFS embed.FS

const (
	weightsFile = "model/use-lite-512.weights.gz"
	vocabFile   = "model/vocab.json.gz"
	fileMagic   = "USELITE1"
)

// tensor is one named weight, decoded to float32.
type tensor struct {
	shape []int
	data  []float32
}

// readGzip returns the decompressed content of the embedded file name.
func readGzip(name string) ([]byte, error) {
	f, err := modelFS.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// decodeWeights parses the weights container written by gen_weights.go:
// the magic "USELITE1", a little-endian uint32 header length, a JSON header
// listing the tensors (name, dtype, shape) and their data in header order.
// dtype is "f32" (little-endian binary32), "f32p" (binary32 split into four
// byte planes: byte 0 of every value, then byte 1, ...; lossless and ~10%
// smaller once compressed) or "f16" (little-endian binary16).
func decodeWeights(b []byte) (map[string]tensor, error) {
	if len(b) < 12 || string(b[:8]) != fileMagic {
		return nil, fmt.Errorf("weights: bad magic")
	}
	hlen := int(binary.LittleEndian.Uint32(b[8:12]))
	if 12+hlen > len(b) {
		return nil, fmt.Errorf("weights: truncated header")
	}
	var h struct {
		Tensors []struct {
			Name  string `json:"name"`
			DType string `json:"dtype"`
			Shape []int  `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(b[12:12+hlen], &h); err != nil {
		return nil, fmt.Errorf("weights: header: %w", err)
	}
	data := b[12+hlen:]
	out := make(map[string]tensor, len(h.Tensors))
	for _, t := range h.Tensors {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		v := make([]float32, n)
		switch t.DType {
		case "f32":
			if len(data) < 4*n {
				return nil, fmt.Errorf("weights: %s truncated", t.Name)
			}
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			data = data[4*n:]
		case "f32p":
			if len(data) < 4*n {
				return nil, fmt.Errorf("weights: %s truncated", t.Name)
			}
			p0, p1, p2, p3 := data[:n], data[n:2*n], data[2*n:3*n], data[3*n:4*n]
			for i := range v {
				v[i] = math.Float32frombits(uint32(p0[i]) | uint32(p1[i])<<8 | uint32(p2[i])<<16 | uint32(p3[i])<<24)
			}
			data = data[4*n:]
		case "f16":
			if len(data) < 2*n {
				return nil, fmt.Errorf("weights: %s truncated", t.Name)
			}
			for i := range v {
				v[i] = halfToFloat(binary.LittleEndian.Uint16(data[2*i:]))
			}
			data = data[2*n:]
		default:
			return nil, fmt.Errorf("weights: %s has unknown dtype %q", t.Name, t.DType)
		}
		out[t.Name] = tensor{shape: t.Shape, data: v}
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("weights: %d trailing bytes", len(data))
	}
	return out, nil
}

// halfToFloat widens an IEEE-754 binary16 value to float32 (exactly).
func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		man &= 0x3ff
		return math.Float32frombits(sign | e<<23 | man<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// vocabEntry is one SentencePiece piece with its unigram log-probability.
type vocabEntry struct {
	piece string
	score float64
}

// decodeVocab parses vocab.json: an array of [piece, score] pairs.
func decodeVocab(b []byte) ([]vocabEntry, error) {
	var raw [][2]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	out := make([]vocabEntry, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r[0], &out[i].piece); err != nil {
			return nil, fmt.Errorf("vocab[%d]: %w", i, err)
		}
		if err := json.Unmarshal(r[1], &out[i].score); err != nil {
			return nil, fmt.Errorf("vocab[%d]: %w", i, err)
		}
	}
	return out, nil
}
