//go:build !race

package toolsearch_test

const raceEnabled = false
