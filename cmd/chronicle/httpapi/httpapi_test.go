package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/twmb/franz-go/pkg/kadm"
)

// sampleRecords is the embedded tau-bench sample, decoded once for the
// package's tests (taubench.SampleRecords decodes ~1 MB of JSON per call,
// which sessionIn and others made several times per test: about a tenth
// of a test's CPU under -race). The records are shared: read them, never
// change them.
var sampleRecords = sync.OnceValues(taubench.SampleRecords)

func setup(t *testing.T) (*pipeline.Pipeline, *httptest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	t.Cleanup(func() { srv.Close(); _ = p.Close() })
	return p, srv
}

func post(t *testing.T, srv *httptest.Server, body []byte) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("status %d, body %q is not JSON", resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func get(t *testing.T, srv *httptest.Server, path string, v any) int {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

func sessionJSON(t *testing.T, i int) ([]byte, string) {
	t.Helper()
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[i])
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(envs)
	if err != nil {
		t.Fatal(err)
	}
	return b, envs[0].SessionID
}

func TestIngestAndQuery(t *testing.T) {
	p, srv := setup(t)
	body, id := sessionJSON(t, 0)
	code, m := post(t, srv, body)
	if code != http.StatusAccepted || len(m["ids"].([]any)) == 0 {
		t.Fatalf("POST: %d %v", code, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var view struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		Evaluation *struct {
			Recommendation string  `json:"recommendation"`
			Composite      float64 `json:"composite"`
		} `json:"evaluation"`
	}
	if code := get(t, srv, "/v1/sessions/"+id, &view); code != 200 || view.ID != id || view.Evaluation == nil || view.Status != "completed" {
		t.Fatalf("GET session: %d %+v", code, view)
	}
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if code := get(t, srv, "/v1/sessions?limit=10", &list); code != 200 || len(list.Sessions) != 1 {
		t.Fatalf("list: %d %+v", code, list)
	}
	other := events.OutcomeSuccess
	if list.Sessions[0]["outcome"] == events.OutcomeSuccess {
		other = events.OutcomeFailure
	}
	if code := get(t, srv, "/v1/sessions?outcome="+other, &list); code != 200 || len(list.Sessions) != 0 {
		t.Fatalf("list by the other outcome: %d %+v", code, list)
	}
	var log struct {
		Events []struct {
			Offset int64           `json:"offset"`
			Event  json.RawMessage `json:"event"`
		} `json:"events"`
	}
	if code := get(t, srv, "/v1/sessions/"+id+"/events", &log); code != 200 || len(log.Events) != len(m["ids"].([]any)) {
		t.Fatalf("session log: %d, %d events, want %d", code, len(log.Events), len(m["ids"].([]any)))
	}
	for i := 1; i < len(log.Events); i++ {
		if log.Events[i].Offset <= log.Events[i-1].Offset {
			t.Fatal("session log out of order")
		}
	}
	if code := get(t, srv, "/v1/sessions/nope", nil); code != 404 {
		t.Fatalf("unknown session: %d", code)
	}
	if code := get(t, srv, "/v1/sessions?outcome=great", nil); code != 400 {
		t.Fatalf("bad outcome: %d", code)
	}
	var tools struct {
		Tools []struct {
			Tool     string  `json:"tool"`
			PageRank float64 `json:"pagerank"`
		} `json:"tools"`
	}
	if code := get(t, srv, "/v1/graph/tools", &tools); code != 200 || len(tools.Tools) == 0 {
		t.Fatalf("graph tools: %d %+v", code, tools)
	}
	var next struct {
		Suggestions []map[string]any `json:"suggestions"`
	}
	if code := get(t, srv, "/v1/graph/next?k=2&after="+url.QueryEscape(tools.Tools[0].Tool), &next); code != 200 || len(next.Suggestions) == 0 || len(next.Suggestions) > 2 {
		t.Fatalf("graph next: %d %+v", code, next)
	}
	if code := get(t, srv, "/v1/graph/next?k=0", nil); code != 400 {
		t.Fatalf("k=0: %d", code)
	}
	// failed=: the outcomes known, the route answers with NextCalls, the
	// predictor chronicle eval measures (levels name the outcome ones when
	// their contexts were observed often enough)
	var withOutcomes struct {
		Suggestions []map[string]any `json:"suggestions"`
		Levels      []string         `json:"levels"`
	}
	two := url.QueryEscape(tools.Tools[0].Tool + "," + tools.Tools[0].Tool)
	if code := get(t, srv, "/v1/graph/next?k=3&failed=1&after="+two, &withOutcomes); code != 200 || len(withOutcomes.Suggestions) == 0 ||
		len(withOutcomes.Levels) == 0 || withOutcomes.Levels[len(withOutcomes.Levels)-1] != "unigram" {
		t.Fatalf("graph next with failed=: %d %+v", code, withOutcomes)
	}
	for _, bad := range []string{"2", "-1", "x"} {
		if code := get(t, srv, "/v1/graph/next?failed="+bad+"&after="+two, nil); code != 400 {
			t.Fatalf("failed=%s: %d, want 400", bad, code)
		}
	}
	// text=: the user's last message before the session's first call,
	// whose words the pipeline learned with that call (minute →
	// transitions → tool graph), ranks the first call by them
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	first := ""
	for _, m := range recs[0].Traj {
		if len(m.ToolCalls) > 0 {
			break
		}
		if m.Role == "user" {
			first = m.Text()
		}
	}
	var withText struct {
		Suggestions []map[string]any `json:"suggestions"`
		Levels      []string         `json:"levels"`
		Words       []string         `json:"words"`
	}
	if code := get(t, srv, "/v1/graph/next?k=3&text="+url.QueryEscape(first), &withText); code != 200 || len(withText.Words) == 0 ||
		len(withText.Levels) == 0 || withText.Levels[0] != "words" || len(withText.Suggestions) == 0 {
		t.Fatalf("graph next with text= %q: %d %+v", first, code, withText)
	}
	if code := get(t, srv, "/v1/graph/next?text="+strings.Repeat("é", httpapi.MaxNextText+1), nil); code != 400 {
		t.Fatalf("text= of %d characters: %d, want 400", httpapi.MaxNextText+1, code)
	}
	if code := get(t, srv, "/v1/graph/path?from=nope&to="+tools.Tools[0].Tool, nil); code != 404 {
		t.Fatalf("path from an unknown tool: %d", code)
	}
	var health map[string]any
	if code := get(t, srv, "/healthz", &health); code != 200 || health["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, health)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"chronicle_processor_lag_records{", "chronicle_processor_lag{", "chronicle_processor_events_total{", "chronicle_engine_batch_events_bucket{"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A batch with one bad event is rejected whole: 400 naming the index and
// the field, and none of its events reaches the log.
func TestRejectedBatchWritesNothing(t *testing.T) {
	p, srv := setup(t)
	body, id := sessionJSON(t, 1)
	var arr []map[string]any
	if err := json.Unmarshal(body, &arr); err != nil {
		t.Fatal(err)
	}
	arr[3]["data"].(map[string]any)["actor"] = ""
	bad, _ := json.Marshal(arr)
	code, m := post(t, srv, bad)
	if code != 400 || m["index"] != float64(3) || m["pointer"] != "/data/actor" || m["reason"] == "" {
		t.Fatalf("bad batch: %d %v", code, m)
	}
	if code := get(t, srv, "/v1/sessions/"+url.PathEscape(id)+"/events", nil); code != 404 {
		t.Fatalf("a rejected batch left events in the log (GET events: %d)", code)
	}
	ends, err := p.Admin().ListEndOffsets(context.Background(), string(events.TopicSessions))
	if err != nil {
		t.Fatal(err)
	}
	var written int64
	ends.Each(func(o kadm.ListedOffset) { written += o.Offset })
	if written != 0 {
		t.Fatalf("a rejected batch wrote %d records", written)
	}
	for _, c := range []struct {
		body []byte
		code int
		want string
	}{
		{[]byte("not json"), 400, "not valid JSON at byte 2 (line 1, column 2): invalid character 'o' in literal null"},
		// the position in a batch, counted from the body's first byte
		// (before: "body is not valid JSON" alone, a walkthrough's finding)
		{[]byte("\n[{\"specversion\":\"1.0\"},\n {\"id\": \"é\",}]"), 400, "body: not valid JSON at byte 39 (line 3, column 13): invalid character '}'"},
		{[]byte(""), 400, "empty body"},
		{[]byte(" \n\t"), 400, "empty body"},
		{[]byte("42"), 400, "JSON object"},
		{[]byte(`{"specversion":"1.0"}`), 400, "missing properties"},
		{bytes.Repeat([]byte(" "), httpapi.MaxBodyBytes+1), 413, "larger than"},
	} {
		code, m := post(t, srv, c.body)
		if code != c.code || !strings.Contains(fmt.Sprint(m["error"]), c.want) {
			t.Errorf("body %.20q: %d %v, want %d containing %q", c.body, code, m, c.code, c.want)
		}
		// every refusal says where and why in members (the 413 of a body
		// above MaxBodyBytes had the text alone: a subscriber's walkthrough)
		if m["pointer"] == nil || m["reason"] == nil || m["index"] == nil {
			t.Errorf("body %.20q: %v, want index, pointer and reason", c.body, m)
		}
	}
	// an empty batch is valid (CloudEvents JSON Batch Format §4.3) and
	// writes nothing
	if code, m := post(t, srv, []byte("[]")); code != 202 || fmt.Sprint(m["ids"]) != "[]" {
		t.Fatalf("empty batch: %d %v, want 202 with no ids", code, m)
	}
	if ends, err = p.Admin().ListEndOffsets(context.Background(), string(events.TopicSessions)); err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { written += o.Offset })
	if written != 0 {
		t.Fatalf("an empty batch wrote %d records", written)
	}
}
