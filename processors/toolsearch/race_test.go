//go:build race

package toolsearch_test

// raceEnabled: the race detector slows USE lite about twentyfold, so the
// evaluation test runs on the sessions of a few tasks under it.
const raceEnabled = true
