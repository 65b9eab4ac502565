package pipeline_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// A replayed directory is bound to the log it was replayed from: served
// with another log (here a longer one, so that no stored offset is beyond
// its end), it is refused naming the topic. Before, the replay recorded
// no topic id, the service adopted the other log's, and applied its
// records from the replayed offsets on, silently (an operator's
// walkthrough, 2026-11-30). And a store whose replay did not finish is
// refused by the service as digest and audit refuse it (before, serve
// took it, and the offline tools then refused the directory for good).
func TestReplayedStoreIsBoundToItsLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(dir string, sessions int, also func(*pipeline.Pipeline)) {
		t.Helper()
		p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for _, envs := range sampleEvents(t, sessions) {
			if err := p.Producer.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if also != nil {
			also(p)
		}
	}
	replayed := t.TempDir()
	run(t.TempDir(), 2, func(p *pipeline.Pipeline) {
		st, err := projections.Open(pipeline.ProjectionsDir(replayed), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: st, Processors: pipeline.DefaultProcessors()}); err != nil {
			t.Fatal(err)
		}
	})
	other := t.TempDir()
	run(other, 6, nil)
	if err := os.RemoveAll(pipeline.ProjectionsDir(other)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(pipeline.ProjectionsDir(replayed), pipeline.ProjectionsDir(other)); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Start(ctx, pipeline.Config{DataDir: other, KafkaListen: "127.0.0.1:0", Partitions: 1})
	if !errors.Is(err, pipeline.ErrForeignLog) {
		t.Fatalf("a replayed store served with another log: %v, want ErrForeignLog", err)
	}
	t.Log(err)

	// a replay killed half-way leaves its mark
	unfinished := t.TempDir()
	st, err := projections.Open(pipeline.ProjectionsDir(unfinished), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkReplayStarted(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Start(ctx, pipeline.Config{DataDir: unfinished, KafkaListen: "127.0.0.1:0", Partitions: 1})
	if !errors.Is(err, projections.ErrReplayIncomplete) {
		t.Fatalf("a store whose replay did not finish: %v, want ErrReplayIncomplete", err)
	}
}
