//go:build !unix

package bench_test

import "time"

// cpuTime is 0 where getrusage does not exist: the CPU metrics read 0.
func cpuTime() time.Duration { return 0 }
