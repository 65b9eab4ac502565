//go:build !race

package passes_test

const raceDetector = false
