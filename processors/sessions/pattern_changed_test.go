package sessions

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestPatternChangedEmitted: each coordination.pattern.counted.v1 the
// patterns processor applies emits coordination.pattern.changed.v1 on
// chronicle.learned, keyed by the pattern's EntityKey, valid against its
// schema, with the pattern's counts and confidence after the count:
// "created" for the first session, "updated" after.
func TestPatternChangedEmitted(t *testing.T) {
	store := openStore(t)
	steps := []string{"get_user_details(user_id)", "cancel_reservation(reservation_id)"}
	id := PatternID("project:a", steps)
	var got []events.PatternChangedData
	for i, c := range []PatternCountedData{
		{PatternID: id, SessionID: "s1", Steps: steps, Category: "cancel_reservation", Task: "cancel", Met: true, First: true},
		{PatternID: id, SessionID: "s2", Steps: steps, Category: "cancel_reservation", Task: "cancel", Met: false, First: true},
		{PatternID: id, SessionID: "s1", Steps: steps, Category: "cancel_reservation", Task: "cancel", Met: false, WasMet: true},
	} {
		env, err := events.New(events.PatternCounted, "test", "pc"+string(rune('0'+i)), time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), c)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		if _, err := store.Apply(PatternsName, projections.Position{Topic: string(events.TopicPatterns), Offset: int64(i)}, &env, func(tx *projections.Tx, env *events.Envelope) error {
			if err := (PatternsProcessor{}).Apply(tx, env); err != nil {
				return err
			}
			out := tx.Emitted()
			if len(out) != 1 || out[0].Type != events.PatternChanged || out[0].Topic != string(events.TopicLearned) || out[0].Key != events.EntityKey("project:a", id) {
				t.Fatalf("emitted %+v", out)
			}
			pc, err := events.ParseEvent(out[0].Value)
			if err != nil {
				t.Fatal(err)
			}
			var d events.PatternChangedData
			if err := pc.Decode(&d); err != nil {
				t.Fatal(err)
			}
			got = append(got, d)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		change         string
		sessions, succ int
		conf           float64
		outcome        string
	}{{"created", 1, 1, 2.0 / 3, "success"}, {"updated", 2, 1, 2.0 / 4, "success"}, {"updated", 2, 0, 1.0 / 4, "failure"}}
	for i, w := range want {
		d := got[i]
		if d.Change != w.change || d.SessionCount != w.sessions || d.SucceededCount != w.succ || d.Confidence != w.conf || d.Outcome != w.outcome || d.PatternID != id {
			t.Fatalf("change %d: %+v, want %+v", i, d, w)
		}
	}
}
