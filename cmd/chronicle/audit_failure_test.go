package main

import (
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// audit's failure says why and what to do when the first difference is
// only how a time is written (a store of a Chronicle before 2026-12-06
// against today's replay), and nothing more for any other difference.
func TestAuditFailureNamesAnOlderStoresTimes(t *testing.T) {
	times := &projections.Difference{Key: "p/pairloop/l/x", Left: []byte(`{"evaluated_at":"2024-05-18T13:00:34+02:00"}`), Right: []byte(`{"evaluated_at":"2024-05-18T11:00:34Z"}`)}
	msg := auditFailure(times, "/srv/data")
	for _, want := range []string{"audit failed: live projections differ from replay", `first difference at key "p/pairloop/l/x"`,
		"differ only in how a time is written", "chronicle replay --data /srv/data --into NEW", "Rolling upgrades"} {
		if !strings.Contains(msg, want) {
			t.Errorf("audit's message does not say %q:\n%s", want, msg)
		}
	}
	other := &projections.Difference{Key: "p/sessions/s/x", Left: []byte(`{"n":1}`), Right: []byte(`{"n":2}`)}
	if msg := auditFailure(other, "/srv/data"); strings.Contains(msg, "time is written") || strings.Contains(msg, "chronicle replay") {
		t.Errorf("another difference is explained as a time's spelling:\n%s", msg)
	}
}
