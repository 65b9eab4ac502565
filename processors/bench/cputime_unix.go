//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user + system) the process used so far,
// compactions and GC included; the benchmarks report it next to wall time
// because the shared machine slows the wall clock down.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
