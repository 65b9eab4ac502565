package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/sessionlog"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestSessionEventsFromIndex: a session's events come from the sessionlog
// index (source "index") and are exactly the records a scan of its
// partition finds, in the same order; the answer also carries its
// evaluation and the memories distilled from it, each with its log
// position; another scope's session of the same id is not mixed in.
func TestSessionEventsFromIndex(t *testing.T) {
	p, srv := setup(t)
	for _, scope := range []string{"project:a", "project:b"} {
		envs, _ := sessionIn(t, 2, scope, "IDX")
		b, _ := json.Marshal(envs)
		if code, m := post(t, srv, b); code != 202 {
			t.Fatalf("%d %v", code, m)
		}
	}
	envs, sid := sessionIn(t, 2, "project:a", "IDX")
	waitCaughtUp(t, p)
	type logged struct {
		Topic, Position string
		Partition       int32
		Offset          int64
		Event           json.RawMessage
	}
	var got struct {
		Source                                     string
		Events, Evaluations, Memories, PairContext []logged
	}
	if code := get(t, srv, "/v1/sessions/"+url.PathEscape(sid)+"/events?scope=project:a", &got); code != 200 {
		t.Fatalf("status %d", code)
	}
	if got.Source != "index" {
		t.Fatalf("source %q, want index", got.Source)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	scan, err := httpapi.ReadSessionLog(ctx, p.Broker.Addrs(), events.EntityKey("project:a", sid), "project:a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(envs) || len(scan) != len(envs) {
		t.Fatalf("index %d events, scan %d, posted %d", len(got.Events), len(scan), len(envs))
	}
	for i := range scan {
		if got.Events[i].Offset != scan[i].Offset || got.Events[i].Partition != scan[i].Partition || string(got.Events[i].Event) != string(scan[i].Event) {
			t.Fatalf("event %d: index %s, scan %d:%d", i, got.Events[i].Position, scan[i].Partition, scan[i].Offset)
		}
	}
	if len(got.Evaluations) != 1 {
		t.Fatalf("%d evaluations, want 1", len(got.Evaluations))
	}
	var ev events.Envelope
	if err := json.Unmarshal(got.Evaluations[0].Event, &ev); err != nil || ev.Type != events.EvaluationCompleted || ev.EffectiveScope() != "project:a" {
		t.Fatalf("evaluation %+v: %v", ev, err)
	}
	if len(got.Memories) == 0 {
		t.Fatalf("no memories distilled from the session")
	}
	for _, m := range got.Memories {
		var env events.Envelope
		if err := json.Unmarshal(m.Event, &env); err != nil {
			t.Fatal(err)
		}
		var d events.MemoryRecordedData
		if err := env.Decode(&d); err != nil || env.Type != events.MemoryRecorded || d.SourceSession != sid || env.EffectiveScope() != "project:a" {
			t.Fatalf("memory record %s: %+v %v", m.Position, d, err)
		}
		if m.Topic != string(events.TopicMemories) {
			t.Fatalf("memory on %s", m.Topic)
		}
	}
	// the reader skips positions the log does not hold (past its end)
	rd, err := sessionlog.NewReader(p.Broker.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	first := projections.Position{Topic: got.Events[0].Topic, Partition: got.Events[0].Partition, Offset: got.Events[0].Offset}
	gone := projections.Position{Topic: first.Topic, Partition: first.Partition, Offset: 1 << 40}
	recs, err := rd.Fetch(ctx, []projections.Position{gone, first})
	if err != nil || len(recs) != 1 || recs[first] == nil {
		t.Fatalf("fetch of a held and a missing position: %d records, %v", len(recs), err)
	}
}

// TestMemoryHistoryRoute: GET /v1/memories/{id}/history names the
// recording token as the author of "created" with its log position, and
// lists the searches that returned the memory (token, query, position).
func TestMemoryHistoryRoute(t *testing.T) {
	p, _, base := scopedServer(t)
	code, rec := call(t, base, "tok-a", "POST", "/v1/memories", map[string]any{"title": "Read the fare class", "description": "d", "content": "Basic economy cannot be changed.", "outcome": "success"})
	if code != 202 {
		t.Fatalf("%d %v", code, rec)
	}
	id := rec["id"].(string)
	waitCaughtUp(t, p)
	if code, m := call(t, base, "tok-a", "GET", "/v1/memories/search?min_confidence=0&query="+url.QueryEscape("fare class economy"), nil); code != 200 {
		t.Fatalf("search %d %v", code, m)
	}
	waitCaughtUp(t, p)
	code, h := call(t, base, "tok-a", "GET", "/v1/memories/"+id+"/history", nil)
	if code != 200 {
		t.Fatalf("history %d %v", code, h)
	}
	first := h["changes"].([]any)[0].(map[string]any)
	if first["reason"] != "created" || first["author"] != "token:a" || !strings.HasPrefix(first["position"].(string), "chronicle.memories:0:") {
		t.Fatalf("created entry %v", first)
	}
	rs := h["retrievals"].([]any)
	if len(rs) != 1 {
		t.Fatalf("retrievals %v", rs)
	}
	r := rs[0].(map[string]any)
	if r["source"] != "token:a" || r["query"] != "fare class economy" || !strings.HasPrefix(r["position"].(string), "chronicle.memories:0:") {
		t.Fatalf("retrieval %v", r)
	}
}

// GET /v1/sessions/{id}/events pages the session's events: limit (1 to
// SessionEventsMaxLimit) and about SessionEventsPageBytes per page, with
// next_cursor; the pages together are the whole answer, in order, with
// the evaluations and memories on every page. Before, every event came
// in one body (25 MB for one analyst's session) and ?limit= was ignored.
func TestSessionEventsArePaged(t *testing.T) {
	p, srv := setup(t)
	envs, sid := sessionIn(t, 2, "project:a", "PG")
	b, _ := json.Marshal(envs)
	if code, m := post(t, srv, b); code != 202 {
		t.Fatalf("%d %v", code, m)
	}
	waitCaughtUp(t, p)
	type page struct {
		Source      string
		NextCursor  string `json:"next_cursor"`
		Events      []struct{ Position string }
		Evaluations []json.RawMessage
	}
	base := "/v1/sessions/" + url.PathEscape(sid) + "/events?scope=project:a"
	var whole page
	if code := get(t, srv, base, &whole); code != 200 || whole.NextCursor != "" || len(whole.Events) != len(envs) {
		t.Fatalf("one page: %d, %d events, cursor %q; want all %d and none", code, len(whole.Events), whole.NextCursor, len(envs))
	}
	walk := func(limit string) []string {
		var got []string
		cursor := ""
		for range len(envs) + 1 {
			var pg page
			if code := get(t, srv, base+"&limit="+limit+"&cursor="+url.QueryEscape(cursor), &pg); code != 200 {
				t.Fatalf("limit %s cursor %q: %d", limit, cursor, code)
			}
			if n, _ := strconv.Atoi(limit); len(pg.Events) > n {
				t.Fatalf("limit %s: a page of %d events", limit, len(pg.Events))
			}
			if len(pg.Evaluations) != len(whole.Evaluations) {
				t.Fatalf("a page has %d evaluations, the whole answer %d", len(pg.Evaluations), len(whole.Evaluations))
			}
			for _, e := range pg.Events {
				got = append(got, e.Position)
			}
			if cursor = pg.NextCursor; cursor == "" {
				return got
			}
		}
		t.Fatalf("limit %s: no last page after %d pages", limit, len(envs)+1)
		return nil
	}
	var want []string
	for _, e := range whole.Events {
		want = append(want, e.Position)
	}
	if got := walk("2"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("pages of 2: %v, want %v", got, want)
	}
	// the scan, for a session the index does not hold, pages alike; it
	// starts at the cursor and stops after the page (before, each page
	// scanned the partition from offset 0 to its end)
	restore := httpapi.ScanSessionEvents()
	var scanned page
	if code := get(t, srv, base, &scanned); code != 200 || scanned.Source != "scan" || len(scanned.Events) != len(envs) {
		t.Fatalf("scan: %d, source %q, %d events; want %d from the scan", code, scanned.Source, len(scanned.Events), len(envs))
	}
	scanWalk := func(limit string) []string {
		var got []string
		cursor := ""
		for range len(envs) + 1 {
			var pg page
			if code := get(t, srv, base+"&limit="+limit+"&cursor="+url.QueryEscape(cursor), &pg); code != 200 || pg.Source != "scan" {
				t.Fatalf("scan, limit %s cursor %q: %d %q", limit, cursor, code, pg.Source)
			}
			for _, e := range pg.Events {
				got = append(got, e.Position)
			}
			if cursor = pg.NextCursor; cursor == "" {
				return got
			}
		}
		t.Fatalf("scan, limit %s: no last page", limit)
		return nil
	}
	for _, limit := range []string{"1", "2", "3"} {
		if got := scanWalk(limit); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("scan, pages of %s: %v, want %v", limit, got, want)
		}
	}
	var none map[string]any
	if code := get(t, srv, "/v1/sessions/nope-PG/events?scope=project:a", &none); code != 404 {
		t.Fatalf("scan of a session without events: %d %v, want 404", code, none)
	}
	restore()
	// the byte bound: each page ends before the event that takes it past
	defer func(n int) { httpapi.SessionEventsPageBytes = n }(httpapi.SessionEventsPageBytes)
	httpapi.SessionEventsPageBytes = 1
	var one page
	if code := get(t, srv, base, &one); code != 200 || len(one.Events) != 1 || one.NextCursor == "" {
		t.Fatalf("a 1-byte page: %d, %d events, cursor %q; want one event and a cursor", code, len(one.Events), one.NextCursor)
	}
	if got := walk("500"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("pages of one event by bytes: %v, want %v", got, want)
	}
	// a cursor of another partition than the session's (its offsets were
	// taken as the session's: a re-test)
	other := 1 - int(wholePartition(t, whole.Events[0].Position))
	for _, q := range []string{"&limit=0", "&limit=501", "&cursor=nope", "&cursor=chronicle.memories:0:1", fmt.Sprintf("&cursor=chronicle.sessions:%d:0", other)} {
		var e map[string]any
		if code := get(t, srv, base+q, &e); code != 400 || !strings.Contains(fmt.Sprint(e["error"]), strings.Split(strings.TrimPrefix(q, "&"), "=")[0]) {
			t.Errorf("%s: %d %v, want a 400 naming the parameter", q, code, e)
		}
	}
}

// wholePartition is the partition of a position "topic:partition:offset".
func wholePartition(t *testing.T, pos string) int32 {
	t.Helper()
	parts := strings.Split(pos, ":")
	p, err := strconv.ParseInt(parts[len(parts)-2], 10, 32)
	if err != nil {
		t.Fatalf("position %q: %v", pos, err)
	}
	return int32(p)
}
