package projections

import "testing"

// Result prints as its constant's name, so a test's or a log's "got %v"
// says Duplicate rather than 2.
func TestResultString(t *testing.T) {
	for r, want := range map[Result]string{Applied: "Applied", AlreadyApplied: "AlreadyApplied", Duplicate: "Duplicate",
		DeadLettered: "DeadLettered", Marker: "Marker", Ignored: "Ignored", Result(42): "Result(42)"} {
		if got := r.String(); got != want {
			t.Errorf("Result(%d).String() = %q, want %q", int(r), got, want)
		}
	}
}
