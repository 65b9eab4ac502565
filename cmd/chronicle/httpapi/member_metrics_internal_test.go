package httpapi

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Each request to another member is counted, and each that got no answer
// about the data by why: a member that hangs past the forward timeout, one
// nobody listens for, one that refuses the member's request (401) and one
// that answers 500, through a fan-out and a forward alike; and the open
// learned streams are a gauge. Before, /metrics had none of them (the last
// closing note's gap): an operator saw neither the subscriptions nor a
// member the others could not reach.
func TestMemberRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := &Server{P: &pipeline.Pipeline{Registry: reg}, ForwardTimeout: 300 * time.Millisecond}
	hang := make(chan struct{})
	servers := map[string]http.HandlerFunc{
		"ok": func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) },
		"hangs": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		},
		"refuses": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) },
		"fails":   func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
	}
	v := &groupView{self: "self", urls: map[string]string{"self": "http://self.invalid"}}
	for name, h := range servers {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		v.urls[name] = srv.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v.urls["gone"] = "http://" + ln.Addr().String()
	ln.Close() // nobody listens there now
	for m := range v.urls {
		v.members = append(v.members, m)
	}
	defer close(hang)

	if got := testutil.ToFloat64(s.metrics().requests.WithLabelValues(memberFanOut)); got != 0 {
		t.Fatalf("fan-out requests before any: %v", got)
	}
	r := httptest.NewRequest("GET", "/v1/sessions", nil)
	s.fanOut(r, v, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) }, false)
	want := map[string]float64{failTimeout: 1, failUnreachable: 1, failRefused: 1, failStatus: 1}
	for reason, n := range want {
		if got := testutil.ToFloat64(s.metrics().failures.WithLabelValues(memberFanOut, reason)); got != n {
			t.Errorf("fan-out failures %s: %v, want %v", reason, got, n)
		}
	}
	if got := testutil.ToFloat64(s.metrics().requests.WithLabelValues(memberFanOut)); got != 5 {
		t.Errorf("fan-out requests: %v, want 5 (one per other member)", got)
	}

	for _, owner := range []string{"ok", "hangs", "gone", "refuses", "fails"} {
		w := httptest.NewRecorder()
		s.forward(w, httptest.NewRequest("GET", "/v1/sessions/x", nil), v, owner, "chronicle.sessions", 0, s.forwardTimeout())
		if (owner == "ok") != (w.Code == http.StatusOK) {
			t.Errorf("forward to %s answered %d", owner, w.Code)
		}
	}
	for reason, n := range want {
		if got := testutil.ToFloat64(s.metrics().failures.WithLabelValues(memberForward, reason)); got != n {
			t.Errorf("forward failures %s: %v, want %v", reason, got, n)
		}
	}
	if got := testutil.ToFloat64(s.metrics().requests.WithLabelValues(memberForward)); got != 5 {
		t.Errorf("forward requests: %v, want 5", got)
	}

	s.openStreams.Add(2)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
		if mf.GetName() == "chronicle_learned_streams_open" {
			if g := mf.GetMetric()[0].GetGauge().GetValue(); g != 2 {
				t.Errorf("chronicle_learned_streams_open %v, want 2", g)
			}
		}
	}
	for _, n := range []string{"chronicle_learned_streams_open", "chronicle_member_requests_total", "chronicle_member_request_failures_total"} {
		if !strings.Contains(strings.Join(names, " "), n) {
			t.Errorf("the registry has no %s: %v", n, names)
		}
	}
	// the names and help follow Prometheus' conventions, as promtool
	// check metrics checks them
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	// a second Server of the same pipeline counts into the same series
	s2 := &Server{P: s.P}
	s2.metrics().memberRequest(memberForward, nil, 200, false)
	if got := testutil.ToFloat64(s.metrics().requests.WithLabelValues(memberForward)); got != 6 {
		t.Errorf("forward requests after another Server's: %v, want 6", got)
	}
}
