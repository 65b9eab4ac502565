//go:build race

package toolgraph

// raceEnabled: the race detector slows the leave-one-task-out evaluations
// five- to tenfold; the tuning-choice tests (choiceTest) run without it,
// from make test's second command.
const raceEnabled = true
