package projections

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// An upgraded data directory decides a repeated (source, id) as a fresh
// replay of the same log does. A fresh replay writes keys of today's version, where
// no datacontenttype counts; a version-4 key forgave only the pair "" /
// "application/json", and a version-3 key no spelling at all, so an event
// first applied with "application/json; charset=utf-8" or
// "Application/JSON" (both accepted and kept as sent) and retried without
// the attribute was a conflicting duplicate in the upgraded store and a
// duplicate in the replay (found by a review; sameAsSpelled).
func TestVersion4KeyForgivesEveryDataContentTypeAsReplayDoes(t *testing.T) {
	env, err := events.New(events.MemoryFeedback, "test", "a", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	structured := env
	structured.DataContentType = ""
	for _, first := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		prev := env
		prev.DataContentType = first
		replay := sameContent(dedupValue(1, ContentHash(&prev)), &structured, ContentHash(&structured))
		for _, v := range []byte{3, 4} {
			key := append(append(binary.BigEndian.AppendUint64(nil, 1), v), contentHash(&prev, int(v))...)
			if got := sameContent(key, &structured, ContentHash(&structured)); got != replay {
				t.Errorf("first sent with %q, retried without: a version-%d key says same=%v, a fresh replay (version %d) says %v", first, v, got, dedupVersion, replay)
			}
		}
	}
}
