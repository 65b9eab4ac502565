package events_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A time more than MaxTimeAhead (1 h) ahead of the producing host's clock
// is refused on producer paths naming /time and the clock: an event's time
// is when its occurrence happened. Before, "9999-12-31T23:59:59Z" was
// acknowledged and kept, and one such workflow.task.completed.v1 made its
// transition the "most recent" successor of its tool for good, taking the
// recency term of the tool's other successors from 1 to 7e-7
// (toolgraph.RecencyBoost); a local time sent as UTC from a zone east of
// UTC+1 is caught the same way. The processors' parse still takes it, so
// a log written before replays as it did; times in the past, however far
// (0000-01-01 included), and a moment ahead (a producer's clock a little
// fast) are accepted.
func TestProducerTimeFarAheadIsRefused(t *testing.T) {
	now := time.Now().UTC()
	var refused []producerCase
	for _, at := range []string{"9999-12-31T23:59:59Z", now.Add(2 * time.Hour).Format(time.RFC3339Nano),
		now.Add(9*time.Hour).Format("2006-01-02T15:04:05") + "Z"} {
		refused = append(refused, producerCase{`"time":"` + at + `"`, "/time"})
	}
	checkProducerOnly(t, refused, `"time":"0000-01-01T00:00:00Z"`, `"time":"1969-07-20T20:17:40Z"`,
		`"time":"`+now.Add(5*time.Minute).Format(time.RFC3339Nano)+`"`,
		`"time":"`+now.Add(50*time.Minute).In(time.FixedZone("JST", 9*3600)).Format(time.RFC3339)+`"`)
	_, err := events.ParseProducerEvent([]byte(`{"specversion":"1.0","id":"e1","source":"test","type":"memory.feedback.v1","time":"9999-12-31T23:59:59Z","data":{"memory_id":"m1","signal":"explicit_feedback","positive":true}}`))
	if ve := (*events.ValidationError)(nil); !errors.As(err, &ve) || !strings.Contains(ve.Reason, "ahead of this host's clock") || !strings.Contains(ve.Reason, " days ahead") || !strings.Contains(ve.Reason, "is 29121") {
		t.Errorf("got %v, want a reason saying how far ahead of the clock (2,912,1xx days)", err)
	}
}

// TimeUTC writes an offset time in UTC and returns a UTC one as sent.
func TestTimeUTC(t *testing.T) {
	for in, want := range map[string]string{
		"2026-12-06T10:40:00+05:30":        "2026-12-06T05:10:00Z",
		"2026-12-06T05:12:19.366906+00:00": "2026-12-06T05:12:19.366906Z",
		"2026-12-05T23:00:00.100-02:00":    "2026-12-06T01:00:00.1Z",
		"2026-12-06T05:12:19.3830Z":        "2026-12-06T05:12:19.3830Z", // as sent, trailing zero kept
		"":                                 "",
	} {
		e := events.Envelope{Time: in}
		if got := e.TimeUTC(); got != want {
			t.Errorf("TimeUTC(%q) = %q, want %q", in, got, want)
		}
	}
}
