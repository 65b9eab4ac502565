package pair_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// The PAIR loop state on a running Chronicle: the failed session gets a
// revision (REVISION_READY, next iteration 2, a tool sequence to follow),
// its successful revision is SUCCESS, a failed third iteration
// MAX_ITERATIONS_REACHED; a replay of the log rebuilds the pairloop
// projection bit for bit.
func TestPipelineLoopState(t *testing.T) {
	sc := getScenario(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logs := newCaptureLogger()
	defer logs.reportRetries(t)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2, Embedder: sharedEmbedder(t), PAIR: true, Logger: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if !slices.ContainsFunc(p.Workers, func(w processors.Worker) bool { return w.Name() == "pair" }) {
		t.Fatal("pipeline.Start with PAIR runs no pair worker")
	}
	publish := func(envs []events.Envelope) {
		t.Helper()
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		// twice: the worker's context lands after the evaluation
		for range 2 {
			if err := p.WaitCaughtUp(ctx, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, envs := range append(sc.others, sc.good) {
		publish(envs)
	}
	publish(sc.failed)
	r2, r3 := "loop-it/revision-2", "loop-it/revision-3"
	publish(rekey(t, sc.good, r2, 2, sc.failedID))
	publish(rekey(t, sc.failed, r3, 3, r2))
	scope := sc.failed[0].EffectiveScope()
	state := func(id, want string) pair.LoopState {
		t.Helper()
		// 90 s: under CI's load (-race, every package at once) the pair
		// worker once needed more than 30 s for the first context
		deadline := time.Now().Add(90 * time.Second)
		for {
			st, ok, err := pair.GetLoop(p.Store, events.EntityKey(scope, id))
			if err != nil {
				t.Fatal(err)
			}
			if ok && st.Status == want {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v (found %v), want status %s; %s; %s; the pipeline's log:\n%s", id, st, ok, want, behind(ctx, p), logTypes(ctx, t, p, events.TopicLearned), logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := state(sc.failedID, pair.LoopRevisionReady)
	if first.Revision == nil || first.Revision.NextIteration != 2 || len(first.Revision.FollowSequence) == 0 || len(first.Revision.Recommendations) == 0 || first.Revision.Rationale == "" {
		t.Fatalf("revision of the failed session: %+v", first.Revision)
	}
	state(r2, pair.LoopSuccess)
	if last := state(r3, pair.LoopMaxIterations); last.Iteration != 3 || last.ParentSession != r2 {
		t.Fatalf("iteration 3: %+v", last)
	}
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rep, Processors: []processors.Processor{pair.Loop{}}}); err != nil {
		t.Fatal(err)
	}
	rd, _ := rep.Digest()
	if live.Rows[pair.LoopName] == 0 || rd.Projections[pair.LoopName] != live.Projections[pair.LoopName] {
		t.Fatalf("pairloop: live %s (%d rows), replay %s", live.Projections[pair.LoopName], live.Rows[pair.LoopName], rd.Projections[pair.LoopName])
	}
}
