package sessions

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A session's started_at and completed_at are in UTC, as the API's other
// times, whatever offset the producer wrote its events' time in; the
// trace keeps each event's time as sent. Before, they came back in the
// producer's offset ("…T10:40:00+05:30"), and a Python producer's
// isoformat() and a JavaScript one's toISOString() gave one session
// "+00:00" and "Z" side by side (a producer's walkthrough, 2026-12-06).
func TestSessionTimesAreUTC(t *testing.T) {
	store := openStore(t)
	ist := time.FixedZone("IST", 5*3600+1800)
	for i, e := range []struct {
		typ  events.Type
		data any
		at   time.Time
	}{
		{events.SessionStarted, events.SessionStartedData{OriginalTask: "Book the flight."}, time.Date(2026, 12, 6, 10, 40, 0, 0, ist)},
		{events.SessionCompleted, events.SessionCompletedData{Output: "Done.", Outcome: "success"}, time.Date(2026, 12, 6, 10, 41, 0, 500_000_000, ist)},
	} {
		env, err := events.New(e.typ, "test", "e"+string(rune('0'+i)), e.at, e.data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = "s", "project:a"
		env.Time = e.at.Format(time.RFC3339Nano) // events.New writes UTC; a producer need not
		if err := ApplyLocally(store, Processor{}, projections.Position{Topic: string(events.TopicSessions), Offset: int64(i)}, &env); err != nil {
			t.Fatal(err)
		}
	}
	v, ok, err := Get(store, events.EntityKey("project:a", "s"))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if v.StartedAt != "2026-12-06T05:10:00Z" || v.CompletedAt != "2026-12-06T05:11:00.5Z" {
		t.Fatalf("started_at %q, completed_at %q; want 2026-12-06T05:10:00Z and 2026-12-06T05:11:00.5Z", v.StartedAt, v.CompletedAt)
	}
	tr, err := Trace(store, events.EntityKey("project:a", "s"))
	if err != nil || len(tr) != 2 {
		t.Fatal(len(tr), err)
	}
	if tr[0].Time != "2026-12-06T10:40:00+05:30" {
		t.Fatalf("the trace's first time %q, want it as sent", tr[0].Time)
	}
}
