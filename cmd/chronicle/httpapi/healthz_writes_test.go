package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker that refuses writes (its disk full: the embedded broker then
// answers UNKNOWN_SERVER_ERROR) while it still answers metadata and
// offsets turns /healthz into 503 "broker rejects writes" with the error
// and since when, and back to ok after the next acknowledged write. It
// said ok, with lag 0, while every POST /v1/events answered 503.
func TestHealthzWhenTheBrokerRejectsWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, srv, health := kfakeService(ctx, t)
	body, _ := sessionJSON(t, 0)
	if code, m := post(t, srv, body); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("POST before the fault: %d %v", code, m)
	}
	if code, m := health(); code != 200 || m["status"] != "ok" {
		t.Fatalf("/healthz before the fault: %d %v", code, m)
	}

	var refusing atomic.Bool
	refusing.Store(true)
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if !refusing.Load() {
			return nil, nil, false
		}
		return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), kerr.UnknownServerError.Code), nil, true
	})
	body, _ = sessionJSON(t, 1)
	if code, m := post(t, srv, body); code != http.StatusServiceUnavailable {
		t.Fatalf("POST while the broker refuses writes: %d %v", code, m)
	}
	code, m := health()
	if code != http.StatusServiceUnavailable || m["status"] != "broker rejects writes" || !strings.Contains(m["error"].(string), "UNKNOWN_SERVER_ERROR") || m["failing_since"] == nil {
		t.Fatalf("/healthz while the broker refuses writes: %d %v", code, m)
	}

	refusing.Store(false)
	if code, m := post(t, srv, body); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("POST after the fault: %d %v", code, m)
	}
	// the relay's own produce of derived events, begun while the broker
	// refused, may still end in a failure just after the POST: the next
	// acknowledged write (the relay retries its outbox) clears it
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, m := health()
		if code == 200 && m["status"] == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz 10 s after an acknowledged write: %d %v", code, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHealthzOKOnceWorkersWriteAgain: after the broker refused a write,
// the processors' relay and the workers writing again (their own
// transactional clients, no HTTP write) end "broker rejects writes" as an
// acknowledged HTTP write does. Before, only the HTTP producer's writes
// did: after a broker outage /healthz answered 503 for the rest of
// WriteFailureWindow (60 s) while the pipeline was writing again (an SRE
// drill: 44 s after a SIGSTOPped broker was resumed).
func TestHealthzOKOnceWorkersWriteAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, srv, health := kfakeService(ctx, t)
	var refusing atomic.Bool
	refusing.Store(true)
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if !refusing.Load() {
			return nil, nil, false
		}
		return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), kerr.UnknownServerError.Code), nil, true
	})
	body, _ := sessionJSON(t, 0)
	if code, m := post(t, srv, body); code != http.StatusServiceUnavailable {
		t.Fatalf("POST while the broker refuses writes: %d %v", code, m)
	}
	if code, m := health(); code != http.StatusServiceUnavailable || m["status"] != "broker rejects writes" {
		t.Fatalf("/healthz while the broker refuses writes: %d %v", code, m)
	}
	refusing.Store(false)

	// a producer of its own writes a session straight to Kafka: the
	// pipeline evaluates it and its relay and workers write derived events
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[1])
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range envs {
		r, err := events.Record(&envs[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, m := health()
		if code == 200 && m["status"] == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz 15 s after the pipeline wrote again, no HTTP write: %d %v", code, m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRecordNotAcknowledgedSaysHowToRetry: POST /v1/memories that the
// broker did not acknowledge is a 503 that says the outcome is unknown and
// how to retry: under the same Idempotency-Key, or, without one, that a
// retry may count the evidence twice. Before, it answered the broker's
// error alone ("events: not acknowledged by the broker: …"), which
// memory_record passed to the agent as it was (an SRE drill).
func TestRecordNotAcknowledgedSaysHowToRetry(t *testing.T) {
	srv, refuse := refusableService(t)
	refuse()
	for _, key := range []string{"", "k-1"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/memories", strings.NewReader(`{"title":"t","description":"d","content":"c","outcome":"success"}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(httpapi.IdempotencyKeyHeader, key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		msg, _ := m["error"].(string)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, httpapi.NotRecordedMessage) || !strings.Contains(msg, httpapi.IdempotencyKeyHeader) ||
			!strings.Contains(msg, "UNKNOWN_SERVER_ERROR") || (key == "") != strings.Contains(msg, "twice") || resp.Header.Get("Retry-After") != "5" {
			t.Fatalf("POST /v1/memories (key %q) while the broker refuses writes: %d %v, Retry-After %q", key, resp.StatusCode, m, resp.Header.Get("Retry-After"))
		}
	}
	// POST /v1/events says when to retry too, as openapi.json now
	// declares (it answered 503 without Retry-After: a Python
	// integrator's walkthrough, 2026-12-01)
	body, _ := sessionJSON(t, 0)
	resp, err := http.Post(srv.URL+"/v1/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("POST /v1/events while the broker refuses writes: %d, Retry-After %q; want 503 with 5", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// kfakePipeline is a pipeline on a kfake cluster (one broker) whose
// requests a test can intercept (ControlKey); both end with the test.
func kfakePipeline(ctx context.Context, t *testing.T) (*kfake.Cluster, *pipeline.Pipeline) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: cluster.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	return cluster, p
}

// kfakeService is a pipeline on a kfake cluster (one broker) whose
// requests a test can intercept (ControlKey), an HTTP server on it, and a
// function reading its /healthz (status code and body).
func kfakeService(ctx context.Context, t *testing.T) (*kfake.Cluster, *httptest.Server, func() (int, map[string]any)) {
	t.Helper()
	cluster, p := kfakePipeline(ctx, t)
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	t.Cleanup(func() { srv.Close(); _ = p.Close() })
	health := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("/healthz %d %s", resp.StatusCode, b)
		}
		return resp.StatusCode, m
	}
	return cluster, srv, health
}

// TestWritesNotAcknowledgedSayTheOutcomeIsUnknown: a memory's feedback
// and a workflow's write that the broker did not acknowledge are 503s
// that say the event may still be written and how to tell or retry
// safely: the feedback has no idempotency key (a retry records it again:
// look at the memory's history first), a workflow write takes its
// event_id again. Before, both answered the broker's error alone, and in
// a cluster walkthrough (2026-11-30) both such feedbacks and a complete
// were applied once the broker came back.
func TestWritesNotAcknowledgedSayTheOutcomeIsUnknown(t *testing.T) {
	srv, refuse := refusableService(t)
	// the id of a 2xx answer, else the error
	post := func(path string, body map[string]any) (int, string) {
		t.Helper()
		code, m := call(t, srv.URL, "", "POST", path, body)
		if code/100 != 2 {
			msg, _ := m["error"].(string)
			return code, msg
		}
		id, _ := m["id"].(string)
		return http.StatusOK, id
	}
	code, mid := post("/v1/memories", map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "success"})
	if code != http.StatusOK || mid == "" {
		t.Fatalf("POST /v1/memories: %d %q", code, mid)
	}
	if code, msg := post("/v1/workflows/w-1/updates", map[string]any{"channel": "messages", "update": "hi"}); code != http.StatusOK {
		t.Fatalf("POST /v1/workflows/w-1/updates: %d %s", code, msg)
	}
	refuse()
	if code, msg := post("/v1/memories/"+mid+"/feedback", map[string]any{"helpful": true}); code != http.StatusServiceUnavailable ||
		!strings.Contains(msg, "may still be recorded") || !strings.Contains(msg, "/v1/memories/"+mid+"/history") || !strings.Contains(msg, "UNKNOWN_SERVER_ERROR") {
		t.Errorf("feedback while the broker refuses writes: %d %q", code, msg)
	}
	if code, msg := post("/v1/workflows/w-1/complete", map[string]any{"outcome": "success", "event_id": "done-1"}); code != http.StatusServiceUnavailable ||
		!strings.Contains(msg, "may still be written") || !strings.Contains(msg, `"event_id": "done-1"`) || !strings.Contains(msg, "UNKNOWN_SERVER_ERROR") {
		t.Errorf("complete while the broker refuses writes: %d %q", code, msg)
	}
}

// refusableService is a pipeline on a kfake cluster (one broker) and an
// HTTP server on it; refuse makes the broker refuse every produce from
// then on (UNKNOWN_SERVER_ERROR).
func refusableService(t *testing.T) (*httptest.Server, func()) {
	t.Helper()
	return refusingService(t, kerr.UnknownServerError.Code)
}

// refusingService is refusableService with the broker's answer code.
func refusingService(t *testing.T, code int16) (*httptest.Server, func()) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: cluster.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	t.Cleanup(func() { srv.Close(); _ = p.Close() })
	return srv, func() {
		cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
			cluster.KeepControl()
			return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), code), nil, true
		})
	}
}

// TestRefusedWritesSayNothingWasWritten: a broker that refuses a write
// before appending it (TOPIC_AUTHORIZATION_FAILED: the cluster's ACL)
// makes each write route answer a 503 without Retry-After saying the write
// was not written and that a retry is refused again, naming the code. The
// routes answered "may still be written … retry" (the unknown outcome of
// TestWritesNotAcknowledgedSayTheOutcomeIsUnknown), with Retry-After: 5,
// after five attempts.
func TestRefusedWritesSayNothingWasWritten(t *testing.T) {
	srv, refuse := refusingService(t, kerr.TopicAuthorizationFailed.Code)
	code, m := call(t, srv.URL, "", "POST", "/v1/memories", map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "success"})
	mid, _ := m["id"].(string)
	if code != http.StatusAccepted || mid == "" {
		t.Fatalf("POST /v1/memories: %d %v", code, m)
	}
	refuse()
	ev := map[string]any{"specversion": "1.0", "id": "refused-1", "source": "test", "type": "memory.feedback.v1",
		"data": map[string]any{"memory_id": mid, "signal": "task_completion", "positive": true}}
	for _, c := range []struct {
		path string
		body any
		says string
	}{
		{"/v1/events", []any{ev}, "the event was not written"},
		{"/v1/memories", map[string]any{"title": "t2", "description": "d2", "content": "c2", "outcome": "success"}, "the memory was not recorded"},
		{"/v1/memories/" + mid + "/feedback", map[string]any{"helpful": true}, "the feedback was not recorded"},
		{"/v1/workflows/w-9/updates", map[string]any{"channel": "messages", "update": "hi"}, "the event was not written"},
	} {
		req, err := http.NewRequest("POST", srv.URL+c.path, bytes.NewReader(mustJSON(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "" ||
			!strings.Contains(body.Error, "refused by the broker: "+c.says) || !strings.Contains(body.Error, "TOPIC_AUTHORIZATION_FAILED") || strings.Contains(body.Error, "may still") {
			t.Errorf("POST %s while the broker refuses: %d (Retry-After %q) %q", c.path, resp.StatusCode, resp.Header.Get("Retry-After"), body.Error)
		}
	}
}
