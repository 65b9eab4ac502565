package httpapi_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// liveAndReplayed waits until p caught up, replays its whole log with the
// default processors into a fresh store and returns each projection's
// digest, live and replayed (the audit's comparison).
func liveAndReplayed(t *testing.T, p *pipeline.Pipeline) (live, replayed map[string]string) {
	t.Helper()
	waitCaughtUp(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full, err := projections.Open(filepath.Join(t.TempDir(), "replay"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: full, Processors: pipeline.DefaultProcessors()}); err != nil {
		t.Fatal(err)
	}
	l, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	r, err := full.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return l.Projections, r.Projections
}
