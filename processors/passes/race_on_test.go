//go:build race

package passes_test

// raceDetector: the race detector slows the store and the embedder about
// tenfold, so the data-heavy tests use less of the data under -race.
const raceDetector = true
