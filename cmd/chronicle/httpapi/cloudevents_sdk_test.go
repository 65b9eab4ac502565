package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
)

const testTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// sdkEvent is env as the official Go SDK's event, without time and with
// the distributed-tracing extension.
func sdkEvent(t *testing.T, env events.Envelope) cloudevents.Event {
	t.Helper()
	ev := cloudevents.NewEvent()
	ev.SetID(env.ID)
	ev.SetSource(env.Source)
	ev.SetType(string(env.Type))
	for k, v := range map[string]string{"sessionid": env.SessionID, "scope": env.Scope, "causationid": env.CausationID, "correlationid": env.CorrelationID,
		"traceparent": testTraceparent, "tracestate": "rojo=00f067aa0ba902b7"} {
		if v != "" {
			ev.SetExtension(k, v)
		}
	}
	if err := ev.SetData(cloudevents.ApplicationJSON, []byte(env.Data)); err != nil {
		t.Fatal(err)
	}
	return ev
}

// The official CloudEvents Go SDK as a client: its HTTP sender in binary
// and structured mode (and a batch), events without time and with the
// tracing extension land, are processed, and read back with the
// extension and the Kafka record's time.
func TestCloudEventsSDKClient(t *testing.T) {
	p, srv := setup(t)
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	id := envs[0].SessionID
	proto, err := cehttp.New(cehttp.WithTarget(srv.URL + "/v1/events"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := cloudevents.NewClient(proto) // no WithTimeNow: the events carry no time
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last := len(envs) - 2 // the last two go as one batch
	for i, env := range envs[:last] {
		sctx := cloudevents.WithEncodingBinary(ctx)
		if i%2 == 1 {
			sctx = cloudevents.WithEncodingStructured(ctx)
		}
		res := client.Send(sctx, sdkEvent(t, env))
		var hr *cehttp.Result
		if !cloudevents.ResultAs(res, &hr) || hr.StatusCode != http.StatusAccepted {
			t.Fatalf("event %d (%s): %v", i, env.Type, res)
		}
	}
	var batch []json.RawMessage
	for _, env := range envs[last:] {
		b, err := json.Marshal(sdkEvent(t, env))
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, b)
	}
	body, _ := json.Marshal(batch)
	if code, msg := postAs(t, srv.URL, "application/cloudevents-batch+json", body, nil); code != http.StatusAccepted {
		t.Fatalf("batched mode: %d %s", code, msg)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var view struct {
		Status string `json:"status"`
	}
	if code := get(t, srv, "/v1/sessions/"+id, &view); code != 200 || view.Status != "completed" {
		t.Fatalf("GET session: %d %+v", code, view)
	}
	var log struct {
		Events []struct {
			Event json.RawMessage `json:"event"`
		} `json:"events"`
		Evaluations []struct {
			Event json.RawMessage `json:"event"`
		} `json:"evaluations"`
	}
	if code := get(t, srv, "/v1/sessions/"+id+"/events", &log); code != 200 || len(log.Events) != len(envs) {
		t.Fatalf("session log: %d, %d events, want %d", code, len(log.Events), len(envs))
	}
	for i, le := range log.Events {
		var back events.Envelope
		if err := json.Unmarshal(le.Event, &back); err != nil {
			t.Fatal(err)
		}
		if back.Extensions["traceparent"] != testTraceparent || back.Extensions["tracestate"] != "rojo=00f067aa0ba902b7" {
			t.Fatalf("event %d: extensions %v in %s", i, back.Extensions, le.Event)
		}
		if _, err := back.EventTime(); err != nil {
			t.Fatalf("event %d: the record's time did not stand in: %v", i, err)
		}
	}
	// the evaluation Chronicle derived continues the producer's trace: the
	// same trace id, a span of its own, the tracestate
	if len(log.Evaluations) == 0 {
		t.Fatal("no evaluation in the session's log")
	}
	var eval events.Envelope
	if err := json.Unmarshal(log.Evaluations[0].Event, &eval); err != nil {
		t.Fatal(err)
	}
	tp, _ := eval.Extensions["traceparent"].(string)
	if !strings.HasPrefix(tp, testTraceparent[:36]) || len(tp) != len(testTraceparent) || tp == testTraceparent || eval.Extensions["tracestate"] != "rojo=00f067aa0ba902b7" {
		t.Fatalf("the evaluation's trace context %v; want the trace of %s with a span of its own", eval.Extensions, testTraceparent)
	}
}

func postAs(t *testing.T, base, ct string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A bad binary-mode request is a 400 that says binary mode and names the
// header; the SDK's sender reports it as a failed send.
func TestBinaryModeErrors(t *testing.T) {
	_, srv := setup(t)
	data := []byte(`{"memory_id":"m1","signal":"explicit_feedback","positive":true}`)
	base := map[string]string{"ce-specversion": "1.0", "ce-id": "b1", "ce-source": "test", "ce-type": "memory.feedback.v1"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		headers map[string]string
		ct      string
		body    []byte
		code    int
		want    string
	}{
		{with("ce-id", ""), "application/json", data, 400, "header ce-id is missing"},
		{with("ce-type", "no.such.v1"), "application/json", data, 400, "header ce-type"},
		{with("ce-time", "yesterday"), "application/json", data, 400, "header ce-time"},
		{with("ce-trace_parent", "x"), "application/json", data, 400, "header ce-trace_parent"},
		{base, "text/plain", data, 415, "header Content-Type"},
		{base, "application/json", []byte(`{"memory_id":"m1"}`), 400, "the body (data) at /data"},
		{base, "application/json", nil, 400, "the body (data) is empty"},
		// %FF and %FE both became U+FFFD: two events under one id
		{with("ce-id", "%FF"), "application/json", data, 400, "header ce-id: not valid UTF-8"},
		{with("ce-source", "test%FE"), "application/json", data, 400, "header ce-source: not valid UTF-8"},
	} {
		code, msg := postAs(t, srv.URL, c.ct, c.body, c.headers)
		if code != c.code || !strings.Contains(msg, "binary mode") || !strings.Contains(msg, c.want) {
			t.Errorf("%v %s: %d %s, want %d naming %q", c.headers, c.ct, code, msg, c.code, c.want)
		}
	}
	if code, msg := postAs(t, srv.URL, "application/cloudevents-batch+json", []byte(`{}`), nil); code != 400 || !strings.Contains(msg, "batched mode") {
		t.Errorf("batched mode with an object: %d %s", code, msg)
	}

	proto, err := cehttp.New(cehttp.WithTarget(srv.URL + "/v1/events"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := cloudevents.NewClient(proto)
	if err != nil {
		t.Fatal(err)
	}
	ev := cloudevents.NewEvent()
	ev.SetID("b2")
	ev.SetSource("test")
	ev.SetType("memory.feedback.v1")
	_ = ev.SetData(cloudevents.ApplicationJSON, []byte(`{"memory_id":"m1"}`))
	res := client.Send(cloudevents.WithEncodingBinary(context.Background()), ev)
	var hr *cehttp.Result
	if cloudevents.IsACK(res) || !cloudevents.ResultAs(res, &hr) || hr.StatusCode != 400 {
		t.Fatalf("SDK send of an invalid event: %v", res)
	}
}

// TestSDKRetryIsADuplicate: the SDK's usual client
// (cloudevents.NewClientHTTP, which stamps the time of each send) sending
// one event twice — a retry — is applied once and counted as a plain
// duplicate, not dead-lettered as a conflicting one. Found by a new user's
// walkthrough: the content check counted the time.
func TestSDKRetryIsADuplicate(t *testing.T) {
	p, srv := setup(t)
	client, err := cloudevents.NewClientHTTP(cehttp.WithTarget(srv.URL + "/v1/events"))
	if err != nil {
		t.Fatal(err)
	}
	ev := cloudevents.NewEvent()
	ev.SetID("retry-1")
	ev.SetSource("qa/retry")
	ev.SetType("memory.recorded.v1")
	ev.SetExtension("scope", "org:default")
	_ = ev.SetData(cloudevents.ApplicationJSON, map[string]any{"memory_id": "mem-retry-1", "title": "Confirm the cabin before changing a flight", "description": "Cabin changes", "content": "Ask which cabin, then change.", "outcome": "success", "source": "explicit"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		// Send stamps the time on its copy of ev (client.WithTimeNow), so
		// the two records differ in time; 2 ms apart, as RFC 3339 with
		// milliseconds tells them apart
		res := client.Send(ctx, ev)
		var hr *cehttp.Result
		if !cloudevents.ResultAs(res, &hr) || hr.StatusCode != http.StatusAccepted {
			t.Fatalf("send %d: %v", i+1, res)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	duplicates := 0.0 // the memory bank's: the retry reached it and was taken as one
	for _, mf := range mfs {
		if mf.GetName() == "chronicle_conflicting_duplicates_total" {
			for _, m := range mf.GetMetric() {
				if v := m.GetCounter().GetValue(); v != 0 {
					t.Fatalf("chronicle_conflicting_duplicates_total %v after an SDK retry; want 0", v)
				}
			}
		}
		if mf.GetName() == "chronicle_processor_events_total" {
			for _, m := range mf.GetMetric() {
				lbl := map[string]string{}
				for _, l := range m.GetLabel() {
					lbl[l.GetName()] = l.GetValue()
				}
				if lbl["processor"] == "memories" && lbl["result"] == "duplicate" {
					duplicates += m.GetCounter().GetValue()
				}
			}
		}
	}
	if duplicates != 1 {
		t.Fatalf("the memory bank counted %v duplicates after an SDK retry; want 1 (the second send)", duplicates)
	}
	dl, err := deadletter.List(ctx, p.Broker.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 0 {
		t.Fatalf("an SDK retry was dead-lettered: %+v", dl)
	}
}
