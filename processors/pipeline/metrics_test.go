package pipeline_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// Every metric a pipeline registers follows Prometheus' naming and help
// conventions as promtool check metrics checks them (client_golang's
// promlint: snake_case, base units as suffixes, _total only on counters,
// a help text), after a few sessions went through, so that the labelled
// counters and histograms have children to gather.
func TestMetricsLint(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, envs := range sampleEvents(t, 3) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "chronicle_") {
			ours = append(ours, mf.GetName())
		}
	}
	for _, mf := range mfs {
		// both lag collectors got their lag from the broker
		if mf.GetName() == "chronicle_lag_collector_up" {
			if len(mf.Metric) != 2 {
				t.Errorf("chronicle_lag_collector_up: %d series, want 2 (processor, worker)", len(mf.Metric))
			}
			for _, m := range mf.Metric {
				if v := m.GetGauge().GetValue(); v != 1 {
					t.Errorf("chronicle_lag_collector_up %v = %v with the broker up", m.GetLabel(), v)
				}
			}
		}
		// one series per worker, 0 once caught up (WaitCaughtUp counts the workers too)
		if mf.GetName() == "chronicle_worker_lag_records" {
			if len(mf.Metric) != len(p.Workers) {
				t.Errorf("chronicle_worker_lag_records: %d series for %d workers", len(mf.Metric), len(p.Workers))
			}
			for _, m := range mf.Metric {
				if v := m.GetGauge().GetValue(); v != 0 {
					t.Errorf("chronicle_worker_lag_records %v = %v after catching up", m.GetLabel(), v)
				}
			}
		}
	}
	// the processors' lag under its unit-suffixed name, and under its
	// first (deprecated) name with the same series and values
	series := map[string]map[string]float64{}
	for _, mf := range mfs {
		if n := mf.GetName(); n == "chronicle_processor_lag_records" || n == "chronicle_processor_lag" {
			series[n] = map[string]float64{}
			for _, m := range mf.Metric {
				series[n][fmt.Sprint(m.GetLabel())] = m.GetGauge().GetValue()
			}
		}
	}
	if now, old := series["chronicle_processor_lag_records"], series["chronicle_processor_lag"]; len(now) == 0 || !maps.Equal(now, old) {
		t.Errorf("chronicle_processor_lag_records %v and chronicle_processor_lag %v differ or are empty", now, old)
	}
	for _, want := range []string{"chronicle_processor_events_total", "chronicle_engine_batch_events", "chronicle_outbox_rows", "chronicle_processor_lag_records", "chronicle_worker_lag_records", "chronicle_lag_collector_up"} {
		if !strings.Contains(strings.Join(ours, " "), want) {
			t.Errorf("%s not gathered (%v)", want, ours)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("%s: %s", pr.Metric, pr.Text)
	}
	t.Logf("%d metric families (%d chronicle_*: %v), %d problems", len(mfs), len(ours), ours, len(problems))
}

// The workers' handler-time histogram reaches two minutes: a worker calls
// a model (the distiller, the judge) or drives a tree search, for seconds
// to tens of seconds, and Watermill's default buckets stop at 1 s, so
// every such call fell in +Inf and no quantile above 1 s could be read
// (an observability walkthrough, 2026-12-06).
func TestWorkerHandlerBucketsReachMinutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// the pair worker (serve's) handles every evaluation
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", PAIR: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, envs := range sampleEvents(t, 1) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	// the handler's time is observed once the worker acknowledged the
	// session's evaluation
	var handled *dto.MetricFamily
	for handled == nil {
		mfs, err := p.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "chronicle_router_handler_execution_time_seconds" {
				handled = mf
			}
		}
		if handled != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no worker handled a message: chronicle_router_handler_execution_time_seconds not gathered")
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, m := range handled.GetMetric() {
		var top float64
		for _, b := range m.GetHistogram().GetBucket() {
			top = max(top, b.GetUpperBound())
		}
		if top < 60 {
			t.Errorf("%v: largest finite bucket %v s, want at least 60 s", m.GetLabel(), top)
		}
	}
}
