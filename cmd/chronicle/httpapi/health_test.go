package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// gate is a test processor of chronicle.sessions whose Apply blocks while
// the gate is closed: a processor that makes no progress.
type gate struct {
	mu   sync.Mutex
	open chan struct{}
}

func (g *gate) Name() string           { return "test-gate" }
func (g *gate) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }
func (g *gate) StatePerKey() bool      { return true }
func (g *gate) close()                 { g.mu.Lock(); g.open = make(chan struct{}); g.mu.Unlock() }
func (g *gate) release()               { g.mu.Lock(); close(g.open); g.mu.Unlock() }
func (g *gate) wait() chan struct{}    { g.mu.Lock(); defer g.mu.Unlock(); return g.open }
func (g *gate) Apply(tx *projections.Tx, env *events.Envelope) error {
	<-g.wait()
	return tx.Set(events.EntityKey(env.EffectiveScope(), env.SessionID), []byte(env.ID))
}

type healthBody struct {
	Status      string `json:"status"`
	Lag         int64  `json:"lag"`
	Rebalancing bool   `json:"rebalancing"`
	Partitions  []processors.PartitionHealth
}

func health(t *testing.T, srv *httptest.Server) (int, healthBody) {
	t.Helper()
	var h healthBody
	code := get(t, srv, "/healthz", &h)
	return code, h
}

// TestHealthStalledAndBack: a processor whose Apply blocks holds its
// partition behind with no commit; after the configured stall time
// /healthz says "stalled" with 503 and names the partition; released, it
// returns to "ok" with 200.
func TestHealthStalledAndBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	g := &gate{open: make(chan struct{})}
	close(g.open)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2,
		Processors: []processors.Processor{sessions.Processor{}, g}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p, StallAfter: 700 * time.Millisecond}).Handler()))
	t.Cleanup(func() { srv.Close(); _ = p.Close() })

	if code, h := health(t, srv); code != 200 || h.Status != processors.HealthOK || len(h.Partitions) != 2 {
		t.Fatalf("idle: %d %+v", code, h)
	}
	g.close()
	released := false
	defer func() {
		if !released {
			g.release() // let Close finish
		}
	}()
	body, id := sessionJSON(t, 0)
	if code, m := post(t, srv, body); code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	part := stalledPartition(t, srv, 10*time.Second)
	t.Logf("stalled: partition %d of %s (session %s)", part.Partition, part.Topic, id)
	if part.Topic != string(events.TopicSessions) || part.Lag == 0 || part.SinceProgressMS < 700 {
		t.Fatalf("stalled partition detail: %+v", part)
	}

	g.release()
	released = true
	waitHealth(t, srv, 10*time.Second, func(code int, h healthBody) string {
		if code != 200 || h.Status != processors.HealthOK || h.Lag != 0 {
			return fmt.Sprintf("after release: %d %+v", code, h)
		}
		return ""
	})
}

// stalledPartition waits for /healthz to answer 503 "stalled" and returns
// the stalled partition.
func stalledPartition(t *testing.T, srv *httptest.Server, within time.Duration) processors.PartitionHealth {
	t.Helper()
	var out processors.PartitionHealth
	waitHealth(t, srv, within, func(code int, h healthBody) string {
		if code != http.StatusServiceUnavailable || h.Status != processors.HealthStalled {
			return fmt.Sprintf("not stalled: %d %+v", code, h)
		}
		for _, ph := range h.Partitions {
			if ph.Status == processors.HealthStalled {
				out = ph
				return ""
			}
		}
		return fmt.Sprintf("stalled with no stalled partition: %+v", h)
	})
	return out
}

func waitHealth(t *testing.T, srv *httptest.Server, within time.Duration, cond func(int, healthBody) string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var h healthBody
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		why := cond(resp.StatusCode, h)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReadWhileRestoringIsNotA404: an instance restoring a partition of
// chronicle.sessions from the log (here: a processor new to the data
// directory, held at its first record) answers a session it has applied
// with 200 as ever, but one it does not find with 503 RestoringError and
// Retry-After, since that session may be in a record not applied yet;
// once restored, 404. Before, an instance started after kill -9 answered
// 404 for sessions it had applied before the crash while it restored.
func TestReadWhileRestoringIsNotA404(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 1, Processors: []processors.Processor{sessions.Processor{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	body, id := sessionJSON(t, 0)
	if code, m := post(t, srv, body); code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	g := &gate{open: make(chan struct{})} // closed: holds the restore at its first record
	p, err = pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 1, Processors: []processors.Processor{sessions.Processor{}, g}})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	released := false
	t.Cleanup(func() {
		if !released {
			g.release()
		}
		srv.Close()
		_ = p.Close()
	})
	waitHealth(t, srv, 20*time.Second, func(code int, h healthBody) string {
		if h.Status != processors.HealthRestoring {
			return fmt.Sprintf("not restoring: %d %+v", code, h)
		}
		return ""
	})
	if code := get(t, srv, "/v1/sessions/"+url.PathEscape(id), nil); code != http.StatusOK {
		t.Fatalf("an applied session while restoring: %d, want 200", code)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/sessions/no-such-session", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var re httpapi.RestoringError
	_ = json.NewDecoder(resp.Body).Decode(&re)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || re.Topic != string(events.TopicSessions) || len(re.Partitions) != 1 || re.Partitions[0].Remaining <= 0 {
		t.Fatalf("an unknown session while restoring: %d Retry-After %q %+v, want 503 RestoringError", resp.StatusCode, resp.Header.Get("Retry-After"), re)
	}
	g.release()
	released = true
	waitHealth(t, srv, 20*time.Second, func(code int, h healthBody) string {
		if code != 200 || h.Status != processors.HealthOK {
			return fmt.Sprintf("after release: %d %+v", code, h)
		}
		return ""
	})
	if code := get(t, srv, "/v1/sessions/no-such-session", nil); code != http.StatusNotFound {
		t.Fatalf("an unknown session once restored: %d, want 404", code)
	}
}
