//go:build !race

package suggest

const raceEnabled = false
