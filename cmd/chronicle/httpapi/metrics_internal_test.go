package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/prometheus/client_golang/prometheus"
)

// flaky is a collector that fails while failing is set, as the lag
// collectors do while the brokers are down.
type flaky struct{ failing atomic.Bool }

var flakyDesc = prometheus.NewDesc("test_flaky_records", "A collector that fails on demand.", nil, nil)

func (f *flaky) Describe(ch chan<- *prometheus.Desc) { ch <- flakyDesc }
func (f *flaky) Collect(ch chan<- prometheus.Metric) {
	if f.failing.Load() {
		ch <- prometheus.NewInvalidMetric(flakyDesc, errors.New("processors: end offsets: unable to dial"))
		return
	}
	ch <- prometheus.MustNewConstMetric(flakyDesc, prometheus.GaugeValue, 7)
}

// GET /metrics serves the metrics that could be collected when a collector
// fails: it answered 500 with the collector's error whenever the broker
// was down, so the whole scrape (dead-letter counts, runtime metrics) was
// lost during an outage (found by an operator's walkthrough). The failure
// is logged once per outage, not per scrape, and its end once.
func TestMetricsServeWhatCouldBeCollected(t *testing.T) {
	reg := prometheus.NewRegistry()
	ok := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_ok_records", Help: "Always collected."})
	ok.Set(3)
	f := &flaky{}
	f.failing.Store(true)
	reg.MustRegister(ok, f)
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))

	var h http.Handler
	for _, r := range (&Server{P: &pipeline.Pipeline{Registry: reg}}).Routes() {
		if r.Pattern == "GET /metrics" {
			h = r.Handler
		}
	}
	scrape := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Code, rec.Body.String()
	}
	for range 3 {
		code, body := scrape()
		if code != http.StatusOK || !strings.Contains(body, "test_ok_records 3") || strings.Contains(body, "test_flaky_records") {
			t.Fatalf("with a failing collector: %d\n%s\nwant 200 with test_ok_records and without test_flaky_records", code, body)
		}
	}
	if n := strings.Count(logged.String(), "a collector failed"); n != 1 || !strings.Contains(logged.String(), "unable to dial") {
		t.Fatalf("three failing scrapes logged %d times, want once naming the error:\n%s", n, logged.String())
	}
	f.failing.Store(false)
	for range 2 {
		if code, body := scrape(); code != http.StatusOK || !strings.Contains(body, "test_flaky_records 7") {
			t.Fatalf("after the collector recovered: %d\n%s", code, body)
		}
	}
	if n := strings.Count(logged.String(), "every collector answers again"); n != 1 {
		t.Fatalf("the recovery logged %d times, want once:\n%s", n, logged.String())
	}
}
