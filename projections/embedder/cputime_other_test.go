//go:build !unix

package embedder

import "time"

// cpuTime is unavailable here; the benchmarks then report wall time only.
func cpuTime() time.Duration { return 0 }
