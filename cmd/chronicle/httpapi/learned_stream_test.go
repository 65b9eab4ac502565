package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	ID, Event, Data string
}

// sseReader parses a text/event-stream as the WHATWG HTML standard's
// "event stream interpretation" does: lines split on LF, "field: value"
// (one optional space after the colon), comments start with ':', a blank
// line dispatches the event, data lines join with LF.
type sseReader struct {
	sc       *bufio.Scanner
	comments []string
	lastID   string
	retry    int // the last retry: field's milliseconds
	// positions counts the position blocks read (LearnedPositionEvent),
	// which next does not return
	positions int
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	return &sseReader{sc: sc}
}

// next returns the next event, or false at the end of the stream.
func (s *sseReader) next() (sseEvent, bool) {
	var ev sseEvent
	var data []string
	has := false
	for s.sc.Scan() {
		line := strings.TrimSuffix(s.sc.Text(), "\r")
		if line == "" {
			if has && ev.Event == httpapi.LearnedPositionEvent {
				// a position block: the id only, as a client that
				// listens to the learned types takes it
				s.positions++
				ev, data, has = sseEvent{}, nil, false
				continue
			}
			if has {
				ev.Data = strings.Join(data, "\n")
				ev.ID = s.lastID
				return ev, true
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			s.comments = append(s.comments, strings.TrimSpace(line[1:]))
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			s.lastID = value
		case "event":
			ev.Event, has = value, true
		case "data":
			data, has = append(data, value), true
		case "retry":
			if n, err := strconv.Atoi(value); err == nil {
				s.retry = n
			}
		}
	}
	return ev, false
}

func openStream(t *testing.T, ctx context.Context, url, lastID string) (*http.Response, *sseReader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return openStreamRequest(t, req)
}

// openStreamRequest sends req as an EventSource does (Accept:
// text/event-stream) and wants a 200 event stream.
func openStreamRequest(t *testing.T, req *http.Request) (*http.Response, *sseReader) {
	t.Helper()
	url := req.URL.String()
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp, newSSEReader(resp.Body)
}

func recordIn(t *testing.T, srv *httptest.Server, scope, title string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"title": title, "description": "A memory for the stream test.", "content": "content of " + title, "outcome": "success", "scope": scope})
	resp, err := http.Post(srv.URL+"/v1/memories", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("POST /v1/memories: %d %s", resp.StatusCode, body)
	}
}

// ceOf decodes an event's data as a structured CloudEvent and checks the
// SSE event name is its type.
func ceOf(t *testing.T, ev sseEvent) events.Envelope {
	t.Helper()
	env, err := events.ParseEvent([]byte(ev.Data))
	if err != nil {
		t.Fatalf("data is not a valid CloudEvent: %v\n%s", err, ev.Data)
	}
	if string(env.Type) != ev.Event {
		t.Fatalf("event: %q, data type %q", ev.Event, env.Type)
	}
	return env
}

// collect reads n events from rd (failing on the stream's end).
func collect(t *testing.T, rd *sseReader, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	for len(out) < n {
		ev, ok := rd.next()
		if !ok {
			t.Fatalf("stream ended after %d of %d events: %v", len(out), n, rd.sc.Err())
		}
		out = append(out, ev)
	}
	return out
}

// TestLearnedStream follows chronicle.learned over SSE as a client
// without a Kafka client would: memories recorded in two scopes arrive as
// memory.created.v1 events whose data is the structured CloudEvent; after
// a disconnect, resuming from the Last-Event-ID of the last event received
// delivers exactly the events after it (no gap, no repeat) compared with
// a caught-up read of the whole topic; ?scope= filters by a full scope and
// by a kind; keep-alive comments flow while nothing happens.
func TestLearnedStream(t *testing.T) {
	oldKA := httpapi.LearnedKeepAlive
	httpapi.LearnedKeepAlive = 300 * time.Millisecond
	t.Cleanup(func() { httpapi.LearnedKeepAlive = oldKA })
	_, srv := setup(t) // 2 partitions
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for i := range 3 {
		recordIn(t, srv, "project:a", fmt.Sprintf("Stream memory a%d", i))
		recordIn(t, srv, "project:b", fmt.Sprintf("Stream memory b%d", i))
	}
	// first connection: read 4 of the 6 memory.created events, then drop it
	c1, cancel1 := context.WithCancel(ctx)
	resp, rd := openStream(t, c1, srv.URL+"/v1/learned/stream?types=memory.created.v1", "")
	first := collect(t, rd, 4)
	cancel1()
	resp.Body.Close()
	lastID := first[len(first)-1].ID
	if _, err := httpapi.ParseLearnedCursor(lastID); err != nil {
		t.Fatalf("id %q: %v", lastID, err)
	}
	// more learned events while disconnected
	for i := 3; i < 5; i++ {
		recordIn(t, srv, "project:a", fmt.Sprintf("Stream memory a%d", i))
	}
	c2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	resp2, rd2 := openStream(t, c2, srv.URL+"/v1/learned/stream?types=memory.created.v1", lastID)
	defer resp2.Body.Close()
	second := collect(t, rd2, 4) // 2 left of the first 6, and the 2 new ones
	got := map[string]int{}
	var order []string
	for _, ev := range append(first, second...) {
		env := ceOf(t, ev)
		got[env.ID]++
		order = append(order, env.ID)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	// the whole topic, caught up and closed: the same 8 events
	resp3, rd3 := openStream(t, ctx, srv.URL+"/v1/learned/stream?follow=false&types=memory.created.v1", "")
	var all []string
	for {
		ev, ok := rd3.next()
		if !ok {
			break
		}
		all = append(all, ceOf(t, ev).ID)
	}
	resp3.Body.Close()
	if len(all) != 8 || len(got) != 8 {
		t.Fatalf("whole topic %d events, resumed stream %d distinct (%v): want 8", len(all), len(got), order)
	}
	for _, id := range all {
		if got[id] != 1 {
			t.Errorf("event %s of the topic missing from the resumed stream", id)
		}
	}
	// keep-alive comments on the idle resumed stream (every 300 ms here)
	go func() { time.Sleep(1500 * time.Millisecond); cancel2() }()
	for {
		if _, ok := rd2.next(); !ok {
			break
		}
	}
	if !slicesContains(rd2.comments, "keep-alive") {
		t.Errorf("no keep-alive comment on an idle stream: %q", rd2.comments)
	}

	// scope filters: a full scope, and a kind
	scopes := func(q string) map[string]int {
		resp, rd := openStream(t, ctx, srv.URL+"/v1/learned/stream?follow=false&types=memory.created.v1&scope="+q, "")
		defer resp.Body.Close()
		m := map[string]int{}
		for {
			ev, ok := rd.next()
			if !ok {
				return m
			}
			env := ceOf(t, ev)
			m[env.EffectiveScope()]++
		}
	}
	if m := scopes("project:b"); len(m) != 1 || m["project:b"] != 3 {
		t.Errorf("scope=project:b: %v, want only project:b ×3", m)
	}
	if m := scopes("project"); m["project:a"] != 5 || m["project:b"] != 3 {
		t.Errorf("scope=project: %v, want project:a ×5, project:b ×3", m)
	}
	if m := scopes("team"); len(m) != 0 {
		t.Errorf("scope=team: %v, want none", m)
	}
	// scope=all is every readable scope, as on the searches and GET
	// /v1/sessions (it was a 400)
	if m := scopes("all"); m["project:a"] != 5 || m["project:b"] != 3 {
		t.Errorf("scope=all: %v, want project:a ×5, project:b ×3", m)
	}
	// types= repeated, as many HTTP clients send a list: every value
	// counts (only the first did, so this kept no event)
	resp4, rd4 := openStream(t, ctx, srv.URL+"/v1/learned/stream?follow=false&types=memory.pruned.v1&types=memory.created.v1", "")
	n4 := 0
	for {
		if _, ok := rd4.next(); !ok {
			break
		}
		n4++
	}
	if n := n4; n != 8 {
		t.Errorf("types=memory.pruned.v1&types=memory.created.v1: %d events, want the 8 memory.created.v1", n)
	}
	resp4.Body.Close()
	// a cursor beyond a partition's end is no position a stream gave:
	// resuming there would skip what is written up to it (400, not a
	// stream that silently starts later)
	// Each refusal names its parameter (the cursor's too, by where it
	// came from: it had the text alone, a subscriber walkthrough,
	// 2026-12-06).
	for _, c := range []struct{ q, header, param string }{
		{"scope=nope:", "", "scope"}, {"after=x", "", "after"}, {"types=memory.recorded.v1", "", "types"}, {"follow=maybe", "", "follow"},
		{"after=0:100000&follow=false", "", "after"}, {"after=7:1&follow=false", "", "after"}, {"follow=false", "0:100000", "Last-Event-ID"},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/learned/stream?"+c.q, nil)
		if c.header != "" {
			req.Header.Set("Last-Event-ID", c.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct{ Parameter, Reason string }
		_ = json.Unmarshal(b, &body)
		if resp.StatusCode != 400 || body.Parameter != c.param || body.Reason == "" {
			t.Errorf("?%s (Last-Event-ID %q): %d %s, want a 400 naming parameter %q with a reason", c.q, c.header, resp.StatusCode, b, c.param)
		}
	}
}

func slicesContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestLearnedStreamTokenScopes: without a filter, a scoped token's stream
// carries only its own scope's learned events; a token that reads every
// scope sees both.
func TestLearnedStreamTokenScopes(t *testing.T) {
	_, _, base := scopedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for tok, title := range map[string]string{"tok-a": "Only for a SECRET-LS-1", "tok-b": "Only for b"} {
		if code, m := call(t, base, tok, "POST", "/v1/memories", map[string]any{"title": title, "description": "d", "content": "c " + title, "outcome": "success"}); code != 202 {
			t.Fatalf("%s: %d %v", tok, code, m)
		}
	}
	stream := func(tok, q string) (*http.Response, *sseReader) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/learned/stream?types=memory.created.v1"+q, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", tok, resp.StatusCode)
		}
		return resp, newSSEReader(resp.Body)
	}
	resp, rd := stream("tok-admin", "")
	for _, ev := range collect(t, rd, 2) { // both relayed
		ceOf(t, ev)
	}
	resp.Body.Close()
	for tok, scope := range map[string]string{"tok-a": "project:a", "tok-b": "project:b"} {
		resp, rd := stream(tok, "&follow=false")
		n := 0
		for {
			ev, ok := rd.next()
			if !ok {
				break
			}
			env := ceOf(t, ev)
			if env.EffectiveScope() != scope {
				t.Errorf("%s sees an event of %s", tok, env.EffectiveScope())
			}
			if tok == "tok-b" && strings.Contains(ev.Data, "SECRET-LS-1") {
				t.Errorf("tok-b sees project:a's secret")
			}
			n++
		}
		resp.Body.Close()
		if n != 1 {
			t.Errorf("%s: %d events, want 1", tok, n)
		}
	}
}

// TestLearnedStreamBrokerGone: when the broker stops answering, the stream
// keeps sending keep-alives for LearnedBrokerWait, then ends with an
// "event: error" that names the error and the cursor to resume from.
func TestLearnedStreamBrokerGone(t *testing.T) {
	oldKA, oldWait := httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait
	httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait = 200*time.Millisecond, time.Second
	t.Cleanup(func() { httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait = oldKA, oldWait })
	p, srv := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// the wait runs from the broker's last answer, which is at the latest
	// the stream's start (its end offsets): measure from before it
	start := time.Now()
	resp, rd := openStream(t, ctx, srv.URL+"/v1/learned/stream?from=end", "")
	defer resp.Body.Close()
	p.Broker.Close()
	ev, ok := rd.next()
	if !ok || ev.Event != "error" {
		t.Fatalf("got %+v (ok %v), want an error event", ev, ok)
	}
	var body struct{ Error, Resume string }
	if err := json.Unmarshal([]byte(ev.Data), &body); err != nil || body.Error == "" || body.Resume == "" {
		t.Fatalf("error data %q: %v", ev.Data, err)
	}
	if _, err := httpapi.ParseLearnedCursor(body.Resume); err != nil {
		t.Fatalf("resume %q: %v", body.Resume, err)
	}
	// the id: line holds the cursor too, so an EventSource's reconnect
	// resumes there (it was in data only: a walkthrough)
	if ev.ID != body.Resume {
		t.Fatalf("error event id %q, want the resume cursor %q", ev.ID, body.Resume)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("gave up after %v, before LearnedBrokerWait", took)
	}
	if _, ok := rd.next(); ok {
		t.Fatalf("the stream goes on after the error event")
	}
}

// TestLearnedStreamBrokerGoneWithoutKeepAlive: the broker's liveness is
// checked on its own clock, not on the keep-alive tick: with a keep-alive
// interval far longer than LearnedBrokerWait, the stream still ends with
// "event: error" about LearnedBrokerWait after the broker went away (it
// used to wait for a keep-alive tick, then a ping, then another tick:
// about 45 s with the defaults).
func TestLearnedStreamBrokerGoneWithoutKeepAlive(t *testing.T) {
	const wait = 1500 * time.Millisecond
	oldKA, oldWait := httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait
	httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait = time.Hour, wait
	t.Cleanup(func() { httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait = oldKA, oldWait })
	p, srv := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	opened := time.Now()
	resp, rd := openStream(t, ctx, srv.URL+"/v1/learned/stream?from=end", "")
	defer resp.Body.Close()
	type arrival struct {
		ev sseEvent
		ok bool
		at time.Time
	}
	got := make(chan arrival, 1)
	go func() {
		ev, ok := rd.next()
		got <- arrival{ev, ok, time.Now()}
	}()
	// the broker answers for twice the wait: the stream stays open
	time.Sleep(2 * wait)
	killed := time.Now()
	p.Broker.Close()
	a := <-got
	ev := a.ev
	if !a.ok || ev.Event != "error" {
		t.Fatalf("after %v: got %+v (ok %v), want an error event within about %v", a.at.Sub(killed), ev, a.ok, wait)
	}
	if a.at.Before(killed) {
		t.Fatalf("stream ended %v after it opened, while the broker still answered", a.at.Sub(opened))
	}
	took := a.at.Sub(killed)
	t.Logf("error event %v after the broker went away (LearnedBrokerWait %v)", took, wait)
	if took > wait+2*time.Second {
		t.Fatalf("error event %v after the broker went away, want at most about %v", took, wait)
	}
	var body struct{ Error, Resume string }
	if err := json.Unmarshal([]byte(ev.Data), &body); err != nil || !strings.Contains(body.Error, "did not answer") || body.Resume == "" {
		t.Fatalf("error data %q: %v", ev.Data, err)
	}
	for _, c := range rd.comments {
		if c == "keep-alive" {
			t.Fatalf("a keep-alive was written with a keep-alive interval of an hour")
		}
	}
}

// A learned topic written in transactions (as a fenced relay writes it in
// a cluster) streams only committed events and, with follow=false, ends
// at the end the topic had: its last offset is a transaction marker,
// which no event reaches. (Read uncommitted and without the markers, the
// stream showed the aborted copy and never ended: the access suite on an
// external broker waited 30 s for each such request.)
func TestLearnedStreamTransactions(t *testing.T) {
	p, srv := setup(t) // 2 partitions
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recordIn(t, srv, "project:a", "Committed memory")
	recordIn(t, srv, "project:a", "Aborted memory")
	// the two memory.created records, as the relay wrote them
	var created []*kgo.Record
	rd, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicLearned)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for len(created) < 2 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d memory.created records found", len(created))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if strings.Contains(string(r.Value), "memory.created.v1") || headerType(r) == string(events.MemoryCreated) {
				created = append(created, r)
			}
		})
	}
	// a copy of each, in a committed and in an aborted transaction, on
	// the same partitions
	tx, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.TransactionalID("learned-stream-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for i, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		src := created[i]
		cp := &kgo.Record{Topic: src.Topic, Partition: src.Partition, Key: src.Key, Value: src.Value, Headers: src.Headers}
		if err := tx.ProduceSync(ctx, cp).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	resp, sr := openStream(t, sctx, srv.URL+"/v1/learned/stream?follow=false&types=memory.created.v1", "")
	defer resp.Body.Close()
	got := map[string]int{}
	for {
		ev, ok := sr.next()
		if !ok {
			break
		}
		got[ceOf(t, ev).ID]++
	}
	if sctx.Err() != nil {
		t.Fatalf("follow=false did not end within 10 s (events so far %v)", got)
	}
	ids := make([]string, 2)
	for i, r := range created {
		env, err := events.FromRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = env.ID
	}
	t.Logf("caught up and closed in %v: %v", time.Since(start), got)
	if got[ids[0]] != 2 || got[ids[1]] != 1 || len(got) != 2 {
		t.Errorf("events %v: want %s twice (original, committed copy) and %s once (its copy aborted)", got, ids[0], ids[1])
	}
}

func headerType(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "ce_type" {
			return string(h.Value)
		}
	}
	return ""
}

// A stream open when the server shuts down ends at once with a last
// event, "error" naming the shutdown and the position to resume from, so
// that it does not hold the shutdown up (serve used to wait its 10 s for
// it and exit 1).
func TestLearnedStreamEndsAtShutdown(t *testing.T) {
	_, api, base := scopedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/learned/stream?from=end", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	rd := newSSEReader(resp.Body)
	time.Sleep(300 * time.Millisecond) // the stream is polling
	start := time.Now()
	api.StopStreams()
	ev, ok := rd.next()
	var body map[string]string
	if !ok || ev.Event != "error" || json.Unmarshal([]byte(ev.Data), &body) != nil || !strings.Contains(body["error"], "shutting down") {
		t.Fatalf("last event %+v (%v); want an error event naming the shutdown", ev, ok)
	}
	if _, err := httpapi.ParseLearnedCursor(body["resume"]); err != nil {
		t.Fatalf("resume %q: %v", body["resume"], err)
	}
	if _, more := rd.next(); more {
		t.Fatal("the stream went on after its last event")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the stream ended %s after StopStreams", d)
	}
	api.StopStreams() // twice is fine
}

// A memory search while the broker is down still answers from the
// projection, within memories.UsageWait, saying that its usage was not
// recorded (it used to fail with 503 after the producer's 15 s).
func TestSearchAnswersWithoutTheBroker(t *testing.T) {
	old := memories.UsageWait
	memories.UsageWait = 500 * time.Millisecond
	t.Cleanup(func() { memories.UsageWait = old })
	p, srv := setup(t)
	recordIn(t, srv, "project:a", "Search without a broker")
	waitCaughtUp(t, p)
	p.Broker.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL + "/v1/memories/search?min_confidence=0&query=" + url.QueryEscape("Search without a broker"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res search.Result
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || len(res.Memories) == 0 || !strings.Contains(res.UsageNotRecorded, "did not acknowledge") {
		t.Fatalf("search with the broker down: %d %+v", resp.StatusCode, res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the search took %s", d)
	}
}

// A cursor is what a stream gave: a partition named twice is refused
// (the last value silently won), as are malformed parts.
func TestParseLearnedCursor(t *testing.T) {
	if c, err := httpapi.ParseLearnedCursor("0:5,1:7"); err != nil || c.String() != "0:5,1:7" {
		t.Fatalf("0:5,1:7: %v %v", c, err)
	}
	for in, want := range map[string]string{"0:5,0:6": "partition 0 is named twice", "0:x": "is not <partition>:<next offset>", "-1:3": "is not"} {
		if _, err := httpapi.ParseLearnedCursor(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", in, err, want)
		}
	}
}

// A stream that reads one record batch a fetch (LearnedFetchBytes at its
// least: the broker still answers one batch whole) delivers the same
// events as one with the default bound (across partitions the order of a
// stream is not defined): the bound limits what a catching-up stream
// holds, never what it delivers.
func TestLearnedStreamInSmallFetches(t *testing.T) {
	_, srv := setup(t) // 2 partitions
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 4 {
		recordIn(t, srv, "project:a", fmt.Sprintf("Fetch memory a%d", i))
		recordIn(t, srv, "project:b", fmt.Sprintf("Fetch memory b%d", i))
	}
	read := func() []string {
		resp, rd := openStream(t, ctx, srv.URL+"/v1/learned/stream?follow=false&types=memory.created.v1", "")
		defer resp.Body.Close()
		var ids []string
		for {
			ev, ok := rd.next()
			if !ok {
				return ids
			}
			ids = append(ids, ceOf(t, ev).ID)
		}
	}
	// the memory.created events reach the topic through the outbox relay,
	// after recordIn returned: wait for the eight
	whole := read()
	for deadline := time.Now().Add(10 * time.Second); len(whole) < 8 && time.Now().Before(deadline); whole = read() {
		time.Sleep(50 * time.Millisecond)
	}
	old := httpapi.LearnedFetchBytes
	httpapi.LearnedFetchBytes = 1
	t.Cleanup(func() { httpapi.LearnedFetchBytes = old })
	small := read()
	sort.Strings(whole)
	sort.Strings(small)
	if len(whole) < 8 || strings.Join(small, ",") != strings.Join(whole, ",") {
		t.Fatalf("one batch a fetch delivered %d events %v, the default bound %d %v", len(small), small, len(whole), whole)
	}
}
