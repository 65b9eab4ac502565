package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWorkflowEventIDErrorNamesEventID: an event_id the event's id cannot
// be (too long, empty after trimming…) is a 400 whose pointer and text
// name the request's /event_id. Before, an event_id of 257 characters got
// the pointer /id, the derived event's member, which the request does not
// have (found by a new user's walkthrough).
func TestWorkflowEventIDErrorNamesEventID(t *testing.T) {
	_, post, _ := workflowAPI(t)
	for _, path := range []string{"/v1/workflows/w/updates", "/v1/workflows/w/checkpoints"} {
		body := `{"event_id":"` + strings.Repeat("e", 257) + `","channel":"messages","update":"a"}`
		if strings.HasSuffix(path, "checkpoints") {
			body = `{"event_id":"` + strings.Repeat("e", 257) + `","layer":0}`
		}
		code, m := post(path, body)
		msg, _ := m["error"].(string)
		if code != http.StatusBadRequest || m["pointer"] != "/event_id" || !strings.HasPrefix(msg, "event_id: ") {
			t.Errorf("POST %s with an event_id of 257 characters: %d %v; want 400 at /event_id", path, code, m)
		}
	}
}
