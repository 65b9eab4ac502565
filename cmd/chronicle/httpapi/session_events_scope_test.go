package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// TestSessionEventsNamesTheScopeLookedIn: GET /v1/sessions/{id}/events
// for a session no projection holds, with a token that reads * and no
// ?scope=, reads org:default (documented); its 404 names that scope and
// says to add ?scope=, as the 409 for a session projected in several
// scopes does (found by a new user's walkthrough: it said only `session
// "orph" has no events in the log` for a session that exists in
// project:b). With ?scope= the 404 names the scope given.
func TestSessionEventsNamesTheScopeLookedIn(t *testing.T) {
	_, _, base := scopedServer(t)
	envs, sid := sessionIn(t, 3, "project:b", "O")
	// only a completion: the sessions processor dead-letters it, the log keeps it
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", []events.Envelope{envs[len(envs)-1]}); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	path := "/v1/sessions/" + url.PathEscape(sid) + "/events"
	code, m := call(t, base, "tok-admin", "GET", path, nil)
	msg := fmt.Sprint(m["error"])
	if code != 404 || !strings.Contains(msg, "org:default") || !strings.Contains(msg, "?scope=") || !strings.Contains(msg, "GET /v1/deadletters") {
		t.Errorf("GET %s with a token that reads *: %d %v, want 404 naming org:default and ?scope=", path, code, m)
	}
	code, m = call(t, base, "tok-admin", "GET", path+"?scope=project:a", nil)
	if msg := fmt.Sprint(m["error"]); code != 404 || !strings.Contains(msg, "project:a") {
		t.Errorf("GET %s?scope=project:a: %d %v, want 404 naming project:a", path, code, m)
	}
	if code, m := call(t, base, "tok-admin", "GET", path+"?scope=project:b", nil); code != 200 || len(m["events"].([]any)) != 1 {
		t.Errorf("GET %s?scope=project:b, as the 404 suggests: %d %v, want its one event", path, code, m)
	}
}
