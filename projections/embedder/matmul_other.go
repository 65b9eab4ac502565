//go:build !amd64 || purego

package embedder

// haveSIMD is false: only the portable Go kernel exists on this platform
// (or with the purego build tag).
var haveSIMD = false

// gemm4x16 is never called when haveSIMD is false.
func gemm4x16(k int, a *float32, lda int, b *float32, c *float32, ldc int) {
	panic("embedder: gemm4x16 without SIMD support")
}

// dotsInt8x16 is never called when haveSIMD is false.
func dotsInt8x16(k int, q *float32, b *int8, out *float32) {
	panic("embedder: dotsInt8x16 without SIMD support")
}

// gemm4x16pf is never called when haveSIMD is false.
func gemm4x16pf(k int, a *float32, lda int, b *float32, c *float32, ldc int) {
	panic("embedder: gemm4x16pf without SIMD support")
}

// dots8Rows is never called when haveSIMD is false.
func dots8Rows(k int, q *float32, rows *float32, idx *int32, out *float32) {
	panic("embedder: dots8Rows without SIMD support")
}
