package projections

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// BenchmarkConflictingDuplicateLegacyKey: what sameContent costs for a
// conflicting duplicate (another memory_id under a used id) of a large
// event, default scope, against an idempotency key of version 2 to 4
// (sameAsSpelled tries every spelling before it says no), per processor.
func BenchmarkConflictingDuplicateLegacyKey(b *testing.B) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true, Comment: strings.Repeat("x", 900<<10)})
	if err != nil {
		b.Fatal(err)
	}
	prev := env
	prev.Data = []byte(strings.Replace(string(env.Data), `"m1"`, `"m2"`, 1))
	for _, v := range []byte{2, 3, 4, dedupVersion} {
		key := dedupValue(1, contentHash(&prev, int(v)))
		if v != dedupVersion {
			key = append(append(binary.BigEndian.AppendUint64(nil, 1), v), contentHash(&prev, int(v))...)
		}
		sum := ContentHash(&env)
		b.Run(fmt.Sprintf("v%d", v), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if sameContent(key, &env, sum) {
					b.Fatal("same")
				}
			}
		})
	}
}
