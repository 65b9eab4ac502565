package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// GET /metrics counts the requests the API answered by route pattern and
// status, refusals included, and times them by route; a session id in the
// path is never a label value. Before, /metrics had no HTTP series: a 403,
// a 404 or a 400 was in the request log only, so an operator could not
// alert on a rate of refusals or errors (an observability walkthrough,
// 2026-12-06).
func TestHTTPRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := &Server{P: &pipeline.Pipeline{Registry: reg}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path, host string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// a server without tokens refuses a non-loopback Host (DNS rebinding)
	for _, id := range []string{"secret-session-1", "secret-session-2"} {
		if c := get("/v1/sessions/"+id, "evil.example"); c != http.StatusForbidden {
			t.Fatalf("rebound request: %d, want 403", c)
		}
	}
	if c := get("/v1/no-such-route", ""); c != http.StatusNotFound {
		t.Fatalf("no route: %d, want 404", c)
	}
	if c := get("/v1/sessions?a=%zz", ""); c != http.StatusBadRequest {
		t.Fatalf("malformed query: %d, want 400", c)
	}
	if c := get("/metrics", ""); c != http.StatusOK {
		t.Fatalf("GET /metrics: %d", c)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	var timed uint64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "secret-session") || strings.Contains(l.GetValue(), "no-such-route") {
					t.Errorf("%s has a path as a label value: %s=%q", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
			switch mf.GetName() {
			case "chronicle_http_requests_total":
				counts[labels(m)] = m.GetCounter().GetValue()
			case "chronicle_http_request_duration_seconds":
				timed += m.GetHistogram().GetSampleCount()
			}
		}
	}
	want := map[string]float64{
		"code=403,route=GET /v1/sessions/{id...}": 2,
		"code=404,route=unmatched":                1,
		"code=400,route=GET /v1/sessions":         1,
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("chronicle_http_requests_total{%s} = %v, want %v (all: %v)", k, counts[k], n, counts)
		}
	}
	// the scrape is counted once it is answered: the 4 requests before it
	if timed < 4 {
		t.Errorf("chronicle_http_request_duration_seconds: %d requests timed, want at least 4", timed)
	}
	if problems, err := testutil.GatherAndLint(reg, "chronicle_http_requests_total", "chronicle_http_request_duration_seconds"); err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", problems, err)
	}
}

// labels is m's labels as "name=value,…" in the order Gather sorts them.
func labels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}
