package main

import (
	"errors"
)

// exitUsage is the exit status of a command line chronicle refuses before
// it starts anything: an unknown command, flag or help topic, a flag value
// its type does not parse, a wrong number of arguments, a flag value out
// of its range or a combination of flags that means nothing (BSD's
// sysexits.h EX_USAGE, 64). Every other failure exits 1, `audit` finding a
// difference 2, and a store that cannot go on 70 (EX_SOFTWARE). Before,
// usage errors exited 1 like a broker that did not answer, so a script
// could not tell a typo from an outage (left out by several stops, done
// 2026-12-05).
const exitUsage = 64

// usageError is an error of the command line (see exitUsage); its text
// is err's.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// ExitCode is exitUsage.
func (e *usageError) ExitCode() int { return exitUsage }

// usage marks err, when not nil, as an error of the command line: main
// exits with exitUsage for it. An error that already carries an exit
// status keeps it.
func usage(err error) error {
	var ec exitCoder
	if err == nil || errors.As(err, &ec) {
		return err
	}
	return &usageError{err: err}
}
