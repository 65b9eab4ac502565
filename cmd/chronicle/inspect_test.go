package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
	"github.com/cockroachdb/pebble/v2"
)

// TestInspectReplayedAsOf builds a log of two sessions, replays it
// --until a time between them into a new directory, and serves that
// directory with the read-only API of chronicle inspect: the first session
// is there, the second is not (the as-of state), writes answer 405 naming
// read-only mode, the log routes 503, and the directory is unchanged.
func TestInspectReplayedAsOf(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: data, KafkaListen: "127.0.0.1:0", Partitions: 1, Embedder: noEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var until time.Time
	for i := range 2 {
		envs, err := taubench.Events(recs[i])
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, envs[0].SessionID)
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			time.Sleep(20 * time.Millisecond)
			until = time.Now().UTC()
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	asOf := filepath.Join(t.TempDir(), "asof")
	out, err := exec.Command(binary, "replay", "--data", data, "--into", asOf, "--until", until.Format(time.RFC3339Nano)).CombinedOutput()
	if err != nil {
		t.Fatalf("replay --until: %v\n%s", err, out)
	}
	before := dirDigest(t, asOf)

	s, closeStore, err := openInspect(asOf)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.P.Search.Index.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	req := func(method, path, body string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := req("GET", "/v1/sessions/"+url.PathEscape(ids[0]), "")
	var sess map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &sess) != nil || sess["id"] != ids[0] {
		t.Errorf("GET session %s (before --until): %d %s", ids[0], code, body)
	}
	if code, body := req("GET", "/v1/sessions/"+url.PathEscape(ids[1]), ""); code != 404 {
		t.Errorf("GET session %s (after --until): %d %s, want 404", ids[1], code, body)
	}
	if code, body := req("GET", "/v1/sessions", ""); code != 200 || !strings.Contains(body, ids[0]) || strings.Contains(body, ids[1]) {
		t.Errorf("GET /v1/sessions: %d %s, want only %s", code, body, ids[0])
	}
	// the memory distilled from the first session is found (the search
	// index is built from the read-only projections)
	code, body = req("GET", "/v1/memories/search?min_confidence=0&query="+url.QueryEscape("book a reservation with certificates"), "")
	var found struct {
		Memories []struct {
			ID    string `json:"id"`
			Scope string `json:"scope"`
		} `json:"memories"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &found) != nil || len(found.Memories) == 0 {
		t.Errorf("memory search: %d %s, want the first session's memory", code, body)
	}
	var sources []string
	for _, h := range found.Memories {
		var m struct {
			SourceSessions []string `json:"source_sessions"`
		}
		code, body := req("GET", "/v1/memories/"+url.PathEscape(h.ID)+"?scope="+url.QueryEscape(h.Scope), "")
		if code != 200 || json.Unmarshal([]byte(body), &m) != nil {
			t.Fatalf("GET memory %s: %d %s", h.ID, code, body)
		}
		sources = append(sources, m.SourceSessions...)
	}
	if !slices.Contains(sources, ids[0]) || slices.Contains(sources, ids[1]) {
		t.Errorf("source sessions of the memories found: %v, want %s and not %s (after --until)", sources, ids[0], ids[1])
	}
	for _, path := range []string{"/v1/digest", "/v1/graph/tools", "/healthz", "/openapi.json"} {
		if code, body := req("GET", path, ""); code != 200 {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	for _, w := range [][2]string{{"POST", "/v1/events"}, {"POST", "/v1/memories"}, {"POST", "/v1/sessions/" + url.PathEscape(ids[0]) + "/improve"}, {"POST", "/mcp"}} {
		if code, body := req(w[0], w[1], "{}"); code != 405 || !strings.Contains(body, "read-only") {
			t.Errorf("%s %s: %d %s, want 405 naming read-only", w[0], w[1], code, body)
		}
	}
	// Allow names what this server serves on the path: GET, HEAD where a
	// read route does, nothing on /mcp (whose every method is MCP) or a
	// write-only path; never a method it refuses (RFC 9110 §15.5.6)
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/mcp", ""}, {"POST", "/mcp", ""}, {"POST", "/v1/events", ""},
		{"PUT", "/v1/memories/x", "GET, HEAD"}, {"POST", "/v1/memories/x/feedback", ""}, {"POST", "/v1/workflows/wf1/updates", ""},
	} {
		rq, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("{}"))
		rq.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if allow, has := resp.Header["Allow"]; resp.StatusCode != 405 || !has || strings.Join(allow, ",") != c.allow {
			t.Errorf("%s %s read-only: %d, Allow %q (present %v), want 405 with Allow %q", c.method, c.path, resp.StatusCode, allow, has, c.allow)
		}
	}
	if code, body := req("GET", "/v1/whoami", ""); code != 200 || !strings.Contains(body, `"write":[]`) || !strings.Contains(body, `"default_write_scope":""`) {
		t.Errorf("GET /v1/whoami read-only: %d %s, want no write scope", code, body)
	}
	if code, body := req("GET", "/v1/sessions/"+url.PathEscape(ids[0])+"/events", ""); code != 503 || !strings.Contains(body, "read-only") {
		t.Errorf("GET session events: %d %s, want 503 naming read-only", code, body)
	}
	srv.Close()
	closeStore()
	if after := dirDigest(t, asOf); after != before {
		t.Errorf("inspect changed the directory:\nbefore %s\nafter  %s", before, after)
	}
}

// dirDigest lists every file of dir with its size and modification time
// (but Pebble's LOCK, whose lock a read-only open takes too).
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b bytes.Buffer
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() && info.Name() != "LOCK" { // Pebble's file lock, taken even read-only
			fmt.Fprintf(&b, "%s %d %s\n", strings.TrimPrefix(path, dir), info.Size(), info.ModTime())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestInspectWorkflowState: chronicle inspect serves a workflow's state,
// its checkpoint history and its state as of a checkpoint id from the
// projections, over a stopped service's directory and over the directory
// replay --until the first checkpoint's id rebuilds (the as-of state: the
// first checkpoint is the last there, the second is unknown). Before,
// every /v1/workflows/{id}... path answered 503 "reads the Kafka log",
// though GET /v1/workflows listed the same workflow with its checkpoint
// id. A directory whose checkpoints have no recorded ids (cpid/ rows,
// removed here as a Chronicle older than them left it) is named only
// from the log: 503 naming read-only mode and the reason.
func TestInspectWorkflowState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: data, KafkaListen: "127.0.0.1:0", Partitions: 1, Embedder: noEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	live := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	c := client.New(live.URL, "")
	must := func(r workflows.WriteResult, err error) workflows.WriteResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	must(c.Update(ctx, "w", 0, events.ChannelTasks, map[string]any{"id": "t1"}))
	cp1 := must(c.Checkpoint(ctx, "w", 0)).CheckpointID
	must(c.Update(ctx, "w", 1, events.ChannelTasks, map[string]any{"id": "t2"}))
	cp2 := must(c.Checkpoint(ctx, "w", 1)).CheckpointID
	live.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if cp1 == "" || cp2 == "" || cp1 == cp2 {
		t.Fatalf("checkpoint ids %q %q", cp1, cp2)
	}

	// inspect serves dir's read API; get answers a GET's status and body
	inspect := func(dir string) (*client.Client, func(string) (int, string)) {
		t.Helper()
		s, closeStore, err := openInspect(dir)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(func() { srv.Close(); closeStore() })
		return client.New(srv.URL, ""), func(path string) (int, string) {
			t.Helper()
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
	}
	tasks := func(st workflows.State) int { return len(st.Tasks) }

	// the stopped service's directory: both checkpoints
	ic, get := inspect(data)
	v, err := ic.State(ctx, "w")
	if err != nil || v.CheckpointID != cp2 || tasks(v.State) != 2 {
		t.Fatalf("inspect: state %+v %v, want checkpoint %s and 2 tasks", v, err, cp2)
	}
	h, err := ic.History(ctx, "w")
	if err != nil || len(h) != 2 || h[0].CheckpointID != cp1 || h[1].CheckpointID != cp2 {
		t.Fatalf("inspect: history %+v %v, want %s, %s", h, err, cp1, cp2)
	}
	at, err := ic.StateAt(ctx, "w", cp1)
	if err != nil || at.CheckpointID != cp1 || tasks(at.State) != 1 || at.Layer != 0 {
		t.Fatalf("inspect: state at %s: %+v %v, want 1 task at layer 0", cp1, at, err)
	}
	if code, body := get("/v1/workflows/w/checkpoints/" + url.PathEscape(string(events.TopicWorkflows)+":0:999")); code != 404 {
		t.Errorf("inspect: state at a position that is no checkpoint: %d %s, want 404", code, body)
	}
	if code, body := get("/v1/workflows/nope"); code != 404 {
		t.Errorf("inspect: an unknown workflow: %d %s, want 404", code, body)
	}

	// replay --until the first checkpoint's id: the as-of state
	asOf := filepath.Join(t.TempDir(), "asof")
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", asOf, "--until", cp1).CombinedOutput(); err != nil {
		t.Fatalf("replay --until %s: %v\n%s", cp1, err, out)
	}
	ac, aget := inspect(asOf)
	if v, err := ac.State(ctx, "w"); err != nil || v.CheckpointID != cp1 || tasks(v.State) != 1 {
		t.Fatalf("inspect --until %s: state %+v %v, want checkpoint %s and 1 task", cp1, v, err, cp1)
	}
	if h, err := ac.History(ctx, "w"); err != nil || len(h) != 1 || h[0].CheckpointID != cp1 {
		t.Fatalf("inspect --until %s: history %+v %v, want %s only", cp1, h, err, cp1)
	}
	if at, err := ac.StateAt(ctx, "w", cp1); err != nil || tasks(at.State) != 1 {
		t.Fatalf("inspect --until %s: state at it: %+v %v", cp1, at, err)
	}
	if code, body := aget("/v1/workflows/w/checkpoints/" + url.PathEscape(cp2)); code != 404 {
		t.Errorf("inspect --until %s: state at %s, after --until: %d %s, want 404", cp1, cp2, code, body)
	}

	// a directory without the cpid/ rows (a Chronicle older than them):
	// its checkpoints are named from the log only: 503 naming why
	old := filepath.Join(t.TempDir(), "old")
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", old).CombinedOutput(); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	db, err := pebble.Open(pipeline.ProjectionsDir(old), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("p/" + workflows.Name + "/cpid/")
	if err := db.DeleteRange(prefix, append(bytes.Clone(prefix[:len(prefix)-1]), '/'+1), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, oget := inspect(old)
	for _, path := range []string{"/v1/workflows/w", "/v1/workflows/w/checkpoints", "/v1/workflows/w/checkpoints/" + url.PathEscape(cp1)} {
		if code, body := oget(path); code != 503 || !strings.Contains(body, "read-only") || !strings.Contains(body, "cpid/") || !strings.Contains(body, "replay --into") {
			t.Errorf("inspect of a directory without checkpoint ids: GET %s: %d %s, want 503 naming read-only mode, the missing cpid/ rows and replay --into", path, code, body)
		}
	}
	if code, body := oget("/v1/workflows"); code != 200 || !strings.Contains(body, `"w"`) {
		t.Errorf("inspect of a directory without checkpoint ids: GET /v1/workflows: %d %s", code, body)
	}
}

// TestInspectBusyPortFailsBeforeIndexing: inspect takes its --http
// address before it builds the search index, so a busy port is refused
// without the seconds of embedding first (an analyst's walkthrough).
func TestInspectBusyPortFailsBeforeIndexing(t *testing.T) {
	data, stop := logOfOneSession(t)
	stop()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	busy := strings.TrimPrefix(srv.URL, "http://")
	out, err := exec.Command(binary, "inspect", "--data", data, "--http", busy).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--http "+busy) || strings.Contains(string(out), "search index built") {
		t.Fatalf("inspect on a busy port: %v\n%s\nwant a refusal naming --http, before the index is built", err, out)
	}
}
