package deadletter_test

import (
	"reflect"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/deadletter"
)

// RefusedAgain names the waiting letters whose record is a redrive refused
// again for the same reasons, reading a reason's own position as equal,
// and no other: not a first refusal, not a refusal for another reason,
// not one by a handler that had not refused the record before.
func TestRefusedAgain(t *testing.T) {
	const h1, h2 = "sessions@chronicle.sessions", "sessionlog@chronicle.sessions"
	never := func(id string) string { return "at " + id + ": session s1 was never started" }
	l := func(id, handler, reason, to string) deadletter.Letter {
		return deadletter.Letter{ID: id, Handler: handler, Reason: reason, RedrivenTo: to}
	}
	ls := []deadletter.Letter{
		// redriven to :9, refused there again alike
		l("chronicle.sessions:0:5", h1, never("chronicle.sessions:0:5"), "chronicle.sessions:0:9"),
		l("chronicle.sessions:0:9", h1, never("chronicle.sessions:0:9"), ""),
		// a first refusal
		l("chronicle.sessions:0:12", h1, never("chronicle.sessions:0:12"), ""),
		// redriven to :25, refused there for another reason
		l("chronicle.sessions:0:20", h1, never("chronicle.sessions:0:20"), "chronicle.sessions:0:25"),
		l("chronicle.sessions:0:25", h1, "at chronicle.sessions:0:25: session s1 completed twice", ""),
		// refused by two handlers, redriven, refused again by one of them alike
		l("chronicle.sessions:0:30", h1, never("chronicle.sessions:0:30"), "chronicle.sessions:0:31"),
		l("chronicle.sessions:0:30", h2, "conflicting duplicate", "chronicle.sessions:0:31"),
		l("chronicle.sessions:0:31", h1, never("chronicle.sessions:0:31"), ""),
		// redriven, refused again alike and by a handler new to it
		l("chronicle.sessions:0:40", h1, never("chronicle.sessions:0:40"), "chronicle.sessions:0:41"),
		l("chronicle.sessions:0:41", h1, never("chronicle.sessions:0:41"), ""),
		l("chronicle.sessions:0:41", h2, "conflicting duplicate", ""),
		// refused again alike, and redriven since by --id: not waiting
		l("chronicle.sessions:0:50", h1, never("chronicle.sessions:0:50"), "chronicle.sessions:0:51"),
		l("chronicle.sessions:0:51", h1, never("chronicle.sessions:0:51"), "chronicle.sessions:0:52"),
	}
	want := map[string]bool{"chronicle.sessions:0:9": true, "chronicle.sessions:0:31": true}
	if got := deadletter.RefusedAgain(ls); !reflect.DeepEqual(got, want) {
		t.Fatalf("RefusedAgain = %v, want %v", got, want)
	}
}
