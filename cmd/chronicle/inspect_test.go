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

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
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
	recs, err := taubench.SampleRecords()
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
		{"PUT", "/v1/memories/x", "GET, HEAD"}, {"POST", "/v1/memories/x/feedback", "GET, HEAD"},
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
