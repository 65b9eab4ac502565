//go:build !unix

package bench

import "time"

// CPUTime is 0 where getrusage does not exist: the CPU metrics read 0.
func CPUTime() time.Duration { return 0 }
