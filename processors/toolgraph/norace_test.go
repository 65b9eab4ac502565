//go:build !race

package toolgraph

const raceEnabled = false
