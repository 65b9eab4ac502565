package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestRouteBodiesRefuseRepeatedMembers: a member repeated within one
// object of a route body, at any depth, is a 400 naming its JSON pointer
// and the reason, as on POST /v1/events, and nothing is written. Before,
// encoding/json kept the last one silently: a workflow write with two
// event_ids (its idempotency key) was written under the second, two
// channels or titles wrote the second (found by a new user's walkthrough).
func TestRouteBodiesRefuseRepeatedMembers(t *testing.T) {
	_, post, logged := workflowAPI(t)
	if code, m := post("/v1/workflows/w/updates", `{"event_id":"e-0","channel":"messages","update":"a"}`); code != http.StatusOK {
		t.Fatalf("a first update: %d %v", code, m)
	}
	before := logged()
	for _, c := range []struct{ path, body, pointer string }{
		{"/v1/workflows/w/updates", `{"event_id":"e-1","event_id":"e-2","channel":"messages","update":"a"}`, "/event_id"},
		{"/v1/workflows/w/updates", `{"channel":"messages","channel":"context","update":{"a":1}}`, "/channel"},
		{"/v1/workflows/w/updates", `{"channel":"context","update":{"a":1,"b":{"c":1,"c":2}}}`, "/update/b/c"},
		{"/v1/workflows/w/updates", `{"channel":"tasks","update":[{"x":1},{"y":1,"y":2}]}`, "/update/1/y"},
		{"/v1/memories", `{"title":"x","title":"y","description":"d","content":"c","outcome":"success"}`, "/title"},
		{"/v1/memories/m1/feedback", `{"helpful":true,"helpful":false}`, "/helpful"},
		{"/v1/dags", `{"tools":[{"name":"a","name":"b"}]}`, "/tools/0/name"},
	} {
		code, m := post(c.path, c.body)
		msg, _ := m["error"].(string)
		if code != http.StatusBadRequest || !strings.Contains(msg, c.pointer+": ") || !strings.Contains(msg, "appears twice") {
			t.Errorf("POST %s %s: %d %q; want 400 naming %s and that it appears twice", c.path, c.body, code, msg, c.pointer)
		}
	}
	if n := logged(); n != before {
		t.Errorf("the workflow log grew from %d to %d records: a refused body wrote something", before, n)
	}
	// the same bodies without the repeat are taken
	if code, m := post("/v1/workflows/w/updates", `{"event_id":"e-1","channel":"messages","update":"a"}`); code != http.StatusOK {
		t.Errorf("an update without a repeat: %d %v", code, m)
	}
}
