package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/broker"
)

// TestHealthzNotOKBeforeTheFirstAssignment: a member joins a running one
// (cooperative-sticky: the first round assigns it nothing, the second its
// partitions). From the moment it serves, /healthz never says "ok" while
// it owns no partition of the four (it says "joining", 503); it says ok
// once it owns its share.
// Before, it said {"partitions":[],"rebalancing":false,"status":"ok"} 200
// between the two rounds (an operator's walkthrough: ~0.3 s after a
// member restarted), so a readiness probe passed a member that could not
// serve its own reads yet.
func TestHealthzNotOKBeforeTheFirstAssignment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	startMember(ctx, t, "m1", b.Addrs(), time.Second)
	m2 := startMember(ctx, t, "m2", b.Addrs(), time.Second)
	var seen []string
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, body, _ := fetch(t, m2.srv.URL, "", "/healthz")
		var h struct {
			Status     string            `json:"status"`
			Partitions []json.RawMessage `json:"partitions"`
		}
		_ = json.Unmarshal(body, &h)
		if len(seen) == 0 || seen[len(seen)-1] != h.Status {
			seen = append(seen, h.Status)
			t.Logf("m2 /healthz: %d %.200s", code, body)
		}
		if h.Status == "ok" {
			if len(h.Partitions) == 0 {
				t.Fatalf("m2 /healthz says ok owning no partition: %d %s (statuses %v)", code, body, seen)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("m2 /healthz never ok: statuses %v", seen)
		}
	}
	if code, body, _ := fetch(t, m2.srv.URL, "", "/healthz"); code != 200 {
		t.Fatalf("m2 /healthz after its assignment: %d %s", code, body)
	}
}
