//go:build race

package suggest

// raceEnabled: the race detector slows USE lite about twentyfold, so the
// leave-one-task-out test runs on a subset, without the embedder, under it.
const raceEnabled = true
