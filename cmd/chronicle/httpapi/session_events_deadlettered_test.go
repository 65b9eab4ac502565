package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
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
	check := func(name, base, token string, wantMarked bool) {
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
			case ce.ID == again.ID && !wantMarked:
				if len(e.DeadLettered) > 0 {
					t.Errorf("%s: the second completion at %s is marked %+v by a letter the state does not hold", name, e.Position, e.DeadLettered)
				}
				marked++
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
	check("serve, from the index", base, "tok-b", true)
	restore := httpapi.ScanSessionEvents()
	check("serve, by the scan", base, "tok-b", true)
	restore()
	ro := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, ReadOnly: true, LogBrokers: p.Broker.Addrs()}).Handler()))
	defer ro.Close()
	check("inspect --brokers", ro.URL, "", true)

	// an as-of state that applied every record but no letter (a replay
	// stopped at chronicle.deadletter's start): the completion is listed,
	// unmarked, as the state stood; the log's letter does not count
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := projections.Open(filepath.Join(t.TempDir(), "asof"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: st, Processors: pipeline.DefaultProcessors(),
		StopAt: func(_, topic string, _ int32) int64 {
			if topic == string(events.TopicDeadLetter) {
				return 0
			}
			return math.MaxInt64
		}}); err != nil {
		t.Fatal(err)
	}
	asOf := httptest.NewServer(conforming(t, (&httpapi.Server{P: &pipeline.Pipeline{Store: st, Registry: prometheus.NewRegistry()}, ReadOnly: true, LogBrokers: p.Broker.Addrs()}).Handler()))
	defer asOf.Close()
	check("inspect --brokers of a state without the letter", asOf.URL, "", false)
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
	whole, err := httpapi.ParseLearnedCursor(last)
	if err != nil {
		t.Fatal(err)
	}

	// an as-of state that read one record of each partition of
	// chronicle.learned: the stream ends there, though the log given holds
	// more
	st, err := projections.Open(filepath.Join(t.TempDir(), "asof"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: st, Processors: pipeline.DefaultProcessors(),
		StopAt: func(_, topic string, _ int32) int64 {
			if topic == string(events.TopicLearned) {
				return 1
			}
			return math.MaxInt64
		}}); err != nil {
		t.Fatal(err)
	}
	asOf := httptest.NewServer((&httpapi.Server{P: &pipeline.Pipeline{Store: st, Registry: prometheus.NewRegistry()}, ReadOnly: true, LogBrokers: p.Broker.Addrs()}).Handler())
	defer asOf.Close()
	resp2, rd2 := openStream(t, ctx, asOf.URL+"/v1/learned/stream", "")
	defer resp2.Body.Close()
	last = ""
	for {
		ev, ok := rd2.next()
		if !ok {
			break
		}
		last = ev.ID
	}
	end, err := httpapi.ParseLearnedCursor(last)
	if ctx.Err() != nil || err != nil {
		t.Fatalf("the as-of stream did not end with its position within 30s: %q %v", last, err)
	}
	past := false
	for part, o := range end {
		if o > 1 {
			t.Errorf("the as-of stream ended at %s: partition %d past the state's 1", last, part)
		}
		past = past || whole[part] > 1
	}
	if !past {
		t.Fatalf("the whole stream ended at %s: nothing past the as-of state's positions to leave out", whole)
	}
}
