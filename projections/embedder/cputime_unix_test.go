//go:build unix

package embedder

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) used by the process so far,
// which the benchmarks report next to wall time because a shared machine
// can slow the wall clock down.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
