package passes

import "github.com/chronicle-dev/chronicle/events"

// TTL is phase A's allocation for a pass, in executed steps:
// events.TaskProfile.TTL, where the formula and its source are (the
// producer paths check a pass's ttl_remaining against it too).
func TTL(p events.TaskProfile) int { return p.TTL() }
