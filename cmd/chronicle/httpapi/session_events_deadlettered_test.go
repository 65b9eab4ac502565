package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
)

// TestSessionEventsMarkTheDeadLettered: GET /v1/sessions/{id}/events
// marks an event the processors refused and dead-lettered (here a second
// completion of a completed session) with its letter (dead_lettered:
// handler, reason, the letter's position), on the index's answer and on
// the scan's, and on a read-only server (chronicle inspect --brokers)
// over the same store; the applied events carry no mark. Before, the
// refused completion was listed exactly like the first, applied one (an
// analyst's walkthrough, 2026-12-07).
func TestSessionEventsMarkTheDeadLettered(t *testing.T) {
	p, _, base := scopedServer(t)
	envs, sid := sessionIn(t, 4, "project:b", "R")
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("POST the session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	var again events.Envelope
	for _, e := range envs {
		if e.Type == events.SessionCompleted {
			again = e
		}
	}
	if again.ID == "" {
		t.Fatal("the sample session has no completion")
	}
	again.ID += "-again"
	if code, m := call(t, base, "tok-b", "POST", "/v1/events", []events.Envelope{again}); code != 202 {
		t.Fatalf("POST a second completion: %d %v", code, m)
	}
	key := events.EntityKey("project:b", sid)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, m := call(t, base, "tok-b", "GET", "/v1/deadletters?key="+url.QueryEscape(key), nil)
		if l, _ := m["dead_letters"].([]any); len(l) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second completion of %s was not dead-lettered within 30s: %v", sid, m)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitCaughtUp(t, p)

	type mark struct {
		Handler, Reason, Letter string
		DeadLetteredAt          string `json:"dead_lettered_at"`
	}
	type answer struct {
		Source string `json:"source"`
		Events []struct {
			Position     string          `json:"position"`
			Event        json.RawMessage `json:"event"`
			DeadLettered []mark          `json:"dead_lettered"`
		} `json:"events"`
	}
	check := func(name, base, token string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/sessions/"+url.PathEscape(sid)+"/events?scope=project:b", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var a answer
		if resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		marked := 0
		for _, e := range a.Events {
			var ce struct{ ID string }
			_ = json.Unmarshal(e.Event, &ce)
			switch {
			case ce.ID == again.ID:
				if len(e.DeadLettered) != 1 || e.DeadLettered[0].Handler == "" || e.DeadLettered[0].Reason == "" ||
					!strings.HasPrefix(e.DeadLettered[0].Letter, string(events.TopicDeadLetter)+":") || e.DeadLettered[0].DeadLetteredAt == "" {
					t.Errorf("%s (source %s): the refused second completion at %s: dead_lettered %+v, want its letter", name, a.Source, e.Position, e.DeadLettered)
				}
				marked++
				t.Logf("%s (source %s): %s dead_lettered %+v", name, a.Source, e.Position, e.DeadLettered)
			case len(e.DeadLettered) > 0:
				t.Errorf("%s: the applied event %s at %s is marked dead_lettered %+v", name, ce.ID, e.Position, e.DeadLettered)
			}
		}
		if marked != 1 {
			t.Errorf("%s: the second completion %s listed %d times among %d events, want once", name, again.ID, marked, len(a.Events))
		}
	}
	check("serve, from the index", base, "tok-b")
	restore := httpapi.ScanSessionEvents()
	check("serve, by the scan", base, "tok-b")
	restore()
	ro := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, ReadOnly: true, LogBrokers: p.Broker.Addrs()}).Handler()))
	defer ro.Close()
	check("inspect --brokers", ro.URL, "")
}

// TestInspectServesTheLearnedStream: chronicle inspect --brokers serves
// GET /v1/learned/stream from the log given, up to the state's positions,
// and ends the stream there (a read-only state learns nothing more), with
// the position reached; without --brokers it is a 503 naming --brokers and
// chronicle broker --data. Before, inspect answered it 503 whatever it was
// given (an analyst's walkthrough, 2026-12-07).
func TestInspectServesTheLearnedStream(t *testing.T) {
	p, srv := setup(t)
	for i := range 2 {
		recordIn(t, srv, "project:a", fmt.Sprintf("Inspected memory %d", i))
	}
	waitCaughtUp(t, p)

	bare := httptest.NewServer((&httpapi.Server{P: p, ReadOnly: true}).Handler())
	defer bare.Close()
	resp, err := http.Get(bare.URL + "/v1/learned/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "--brokers") || !strings.Contains(string(b), "chronicle broker --data") {
		t.Errorf("inspect without --brokers: GET /v1/learned/stream: %d %s, want a 503 naming --brokers and chronicle broker --data", resp.StatusCode, b)
	}

	ro := httptest.NewServer((&httpapi.Server{P: p, ReadOnly: true, LogBrokers: p.Broker.Addrs()}).Handler())
	defer ro.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// follow is the default: a read-only stream ends at the state's end all the same
	resp, rd := openStream(t, ctx, ro.URL+"/v1/learned/stream?types=memory.created.v1", "")
	defer resp.Body.Close()
	created, last := 0, ""
	for {
		ev, ok := rd.next()
		if !ok {
			break
		}
		if ev.Event == string(events.MemoryCreated) {
			created++
		}
		last = ev.ID
	}
	if ctx.Err() != nil {
		t.Fatalf("the read-only stream did not end at the state's end within 30s (%d memory.created.v1 read)", created)
	}
	if created != 2 || last == "" {
		t.Errorf("inspect --brokers: the stream gave %d memory.created.v1 and ended at %q, want 2 and the position reached", created, last)
	}
}
