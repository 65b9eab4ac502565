package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// postRaw posts body to path with Content-Type ct (none when "") and the
// admin token, and decodes the JSON answer.
func postRaw(t *testing.T, base, path, ct, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader([]byte(body)))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Authorization", "Bearer tok-admin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// The CloudEvents media types are POST /v1/events' alone: the other JSON
// routes answer them 415 with the reason, as any other media type, and
// take application/json or no Content-Type. Before, every JSON route took
// application/cloudevents+json and application/cloudevents-batch+json,
// which their descriptions do not list (a mutation test).
func TestCloudEventsMediaTypesAreTheEventsRoutes(t *testing.T) {
	_, _, base := scopedServer(t)
	memory := `{"title":"Media types","description":"d","content":"c","outcome":"success"}`
	for _, ct := range []string{"application/cloudevents+json", "application/cloudevents-batch+json"} {
		if code, m := postRaw(t, base, "/v1/memories", ct, memory); code != http.StatusUnsupportedMediaType || m["reason"] != "not application/json" {
			t.Errorf("POST /v1/memories as %s: %d %v, want 415 with the reason", ct, code, m)
		}
		if code, m := postRaw(t, base, "/v1/dags", ct, `{"tools":["get_user_details"]}`); code != http.StatusUnsupportedMediaType {
			t.Errorf("POST /v1/dags as %s: %d %v, want 415", ct, code, m)
		}
	}
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8"} {
		if code, m := postRaw(t, base, "/v1/memories", ct, memory); code != http.StatusAccepted && code != http.StatusOK {
			t.Errorf("POST /v1/memories as %q: %d %v", ct, code, m)
		}
	}
	body, _ := sessionJSON(t, 0)
	if code, m := postRaw(t, base, "/v1/events", "application/cloudevents-batch+json", string(body)); code != http.StatusAccepted {
		t.Errorf("POST /v1/events as a CloudEvents batch: %d %v", code, m)
	}
}

// A member sent as null where its value cannot be null is refused with its
// pointer, on every route that reads a JSON body, instead of being read as
// left out: {"intent": null} was a suggestion without an intent, and an
// estimate's {"seconds": null} one of 0 s. An empty policy name is refused
// too, where it was read as the default policy. Before, both were 200s
// (a mutation test against the routes' description).
func TestNullMembersAreRefused(t *testing.T) {
	_, _, base := scopedServer(t)
	cases := []struct{ path, body, pointer string }{
		{"/v1/workflows/suggest", `{"intent":null,"context_tools":["get_user_details"]}`, "/intent"},
		{"/v1/workflows/suggest", `{"intent":"cancel my reservation","estimates":{"get_reservation_details":{"cost_usd":0.01,"seconds":null}}}`, "/estimates/get_reservation_details/seconds"},
		{"/v1/workflows/suggest", `{"intent":"cancel my reservation","k":null}`, "/k"},
		{"/v1/workflows/w-null/checkpoints", `{"layer":null}`, "/layer"},
		{"/v1/workflows/w-null/updates", `{"channel":"messages","update":"hi","layer":null}`, "/layer"},
		{"/v1/workflows/suggest/feedback", `{"accepted":true,"confidence":0.8,"mode":"suggestion","policy":null}`, "/policy"},
		{"/v1/workflows/suggest/feedback", `{"accepted":true,"confidence":0.8,"mode":"suggestion","policy":""}`, "/policy"},
		{"/v1/memories/m-1/feedback", `{"helpful":null}`, "/helpful"},
	}
	for _, c := range cases {
		code, m := postRaw(t, base, c.path, "application/json", c.body)
		if code != http.StatusBadRequest || m["pointer"] != c.pointer || m["reason"] == nil {
			t.Errorf("POST %s %s: %d %v, want 400 at %s", c.path, c.body, code, m, c.pointer)
		}
	}
	// null stays what the description allows it to be: a memory's tags
	if code, m := postRaw(t, base, "/v1/memories", "application/json", `{"title":"Null tags","description":"d","content":"c","outcome":"success","tags":null}`); code != http.StatusAccepted && code != http.StatusOK {
		t.Errorf("POST /v1/memories with tags null: %d %v", code, m)
	}
}

// An array update with a null element is refused at its element, and the
// workflow's state holds no null (a mutation test: [null] was appended,
// and every answer holding the state then broke its description).
func TestWorkflowNullElementIsRefused(t *testing.T) {
	_, _, base := scopedServer(t)
	code, m := postRaw(t, base, "/v1/workflows/w-elem/updates", "application/json", `{"channel":"messages","update":["hi",null]}`)
	if code != http.StatusBadRequest || m["pointer"] != "/update/1" {
		t.Fatalf("an update [\"hi\", null]: %d %v, want 400 at /update/1", code, m)
	}
}
