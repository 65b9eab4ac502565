package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// TestWorkflowRetryAndReusedID: a workflow write retried with its
// event_id is a plain duplicate (200, the earlier result, nothing
// dead-lettered), and the same event_id with another write is a 409
// naming /event_id that writes nothing. Found by a new user's walkthrough:
// the route stamped the wall clock on every request, so a byte-identical
// retry was dead-lettered as a conflicting duplicate, while a different
// write under a used id answered 200 and was silently dropped.
func TestWorkflowRetryAndReusedID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	defer srv.Close()
	post := func(body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/workflows/wf2/updates", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	end := func() int64 {
		t.Helper()
		l, err := p.Lag(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, x := range l {
			if x.Processor == workflows.Name {
				n += x.End
			}
		}
		return n
	}
	first := `{"event_id":"e-1","channel":"messages","update":"first"}`
	for i := range 2 {
		if code, m := post(first); code != http.StatusOK {
			t.Fatalf("write %d: %d %v", i+1, code, m)
		}
	}
	logged := end()
	code, m := post(`{"event_id":"e-1","channel":"messages","update":"DIFFERENT"}`)
	if code != http.StatusConflict || m["pointer"] != "/event_id" {
		t.Fatalf("another write under a used event_id: %d %v; want 409 naming /event_id", code, m)
	}
	if got := end(); got != logged {
		t.Fatalf("the refused write reached the log: %d records, %d before", got, logged)
	}
	st, _, err := workflows.Get(p.Store, "org:default/wf2")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 1 {
		t.Fatalf("messages %s; want the one first write", st.Messages)
	}
	// the retry was a plain duplicate: no conflicting duplicate counted
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "chronicle_conflicting_duplicates_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Fatalf("chronicle_conflicting_duplicates_total %v after a retry; want 0", v)
			}
		}
	}
}
