package pipeline

import (
	"context"
	"net"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type oneWorker struct{}

func (oneWorker) Name() string                                   { return "w" }
func (oneWorker) Topic() events.Topic                            { return events.TopicSessions }
func (oneWorker) Handle(context.Context, *events.Envelope) error { return nil }

// With the brokers unreachable the lag collectors say so as
// chronicle_lag_collector_up 0 (one series per collector) beside the
// error that leaves their lag out, so GET /metrics, which serves what
// could be collected, shows the outage as a value (found by an operator's
// walkthrough: the scrape answered 500).
func TestLagCollectorsReportUp(t *testing.T) {
	// a port just freed: nothing listens there (a fixed one may be another
	// process's, a second test run's on the same machine)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p := &Pipeline{Processors: nil, admin: kadm.NewClient(cl)}
	p.Processors = append(p.Processors, twoTopics{})
	p.Workers = append(p.Workers, oneWorker{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(&lagCollector{p: p}, workerLagCollector{p})
	mfs, err := reg.Gather()
	if err == nil {
		t.Fatal("gathered the lag without a broker")
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "chronicle_lag_collector_up" {
			for _, m := range mf.Metric {
				for _, l := range m.GetLabel() {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if v, ok := got["processor"]; !ok || v != 0 {
		t.Errorf("chronicle_lag_collector_up{collector=processor}: %v (%v), want 0", v, ok)
	}
	if v, ok := got["worker"]; !ok || v != 0 {
		t.Errorf("chronicle_lag_collector_up{collector=worker}: %v (%v), want 0", v, ok)
	}
}
