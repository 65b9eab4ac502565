package passes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

func pass(t *testing.T, scope, task, id string, n int, d events.ReasoningPassData) events.Envelope {
	t.Helper()
	d.TaskID, d.PassNumber = task, n
	if d.Phase == "" {
		d.Phase = "C"
	}
	env, err := events.New(events.ReasoningPassCompleted, "test/passes-replay", id, time.Date(2026, 5, 6, 7, 8, n, 0, time.UTC), d)
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = scope
	return env
}

// Passes of several tasks in two scopes go through the live pipeline (two
// partitions of chronicle.reasoning); a refinement naming an unknown step
// is dead-lettered with the field in the reason; a replay of the log into
// a new store gives the same projection, bit for bit.
func TestLiveEqualsReplayAndDeadLetter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	plan := &events.Plan{Steps: []events.PlanStep{{StepID: "s1", Description: "search"}, {StepID: "s2", Description: "answer"}}}
	var evs []events.Envelope
	for _, scope := range []string{"project:a", "project:b"} {
		for _, task := range []string{"t1", "t2", "t3"} {
			evs = append(evs,
				pass(t, scope, task, scope+task+"p1", 1, events.ReasoningPassData{Plan: plan, TTLRemaining: 1, Convergence: events.ConvergenceScores{Completeness: 0.5, Coherence: 1, Consistency: 1}}),
				pass(t, scope, task, scope+task+"p2", 2, events.ReasoningPassData{TTLRemaining: 0,
					RefinementActions: []events.RefinementAction{{Type: "ADD", Target: "s1a", Changes: &events.StepChanges{ParentID: ptr("s1"), Description: ptr("search the band")}}},
					Convergence:       events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 0.95, Consistency: 0.9}, Output: "2004"}))
		}
	}
	poison := pass(t, "project:a", "t1", "poison", 3, events.ReasoningPassData{TTLRemaining: 1,
		RefinementActions: []events.RefinementAction{{Type: "MODIFY", Target: "nope", Changes: &events.StepChanges{Description: ptr("x")}}},
		Convergence:       events.ConvergenceScores{Completeness: 1, Coherence: 1, Consistency: 1}})
	evs = append(evs, poison)
	if err := p.Producer.Publish(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	task, ok, err := passes.Get(p.Store, events.EntityKey("project:b", "t3"))
	if err != nil || !ok || task.Passes != 2 || task.Status != passes.TaskConverged || len(task.Plan.Steps) != 3 {
		t.Fatalf("project:b/t3: %+v %v %v", task, ok, err)
	}
	if a1, _, _ := passes.Get(p.Store, events.EntityKey("project:a", "t1")); a1.Passes != 2 {
		t.Fatalf("the poison pass was applied: %+v", a1)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicDeadLetter)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())) // as Chronicle's consumers read: an aborted transaction's copy is not in the log
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := cl.PollFetches(ctx).Records()
	if len(recs) != 1 {
		t.Fatalf("%d dead-lettered records, want 1", len(recs))
	}
	var reason, topic string
	for _, h := range recs[0].Headers {
		switch h.Key {
		case processors.HeaderError:
			reason = string(h.Value)
		case processors.HeaderOriginalTopic:
			topic = string(h.Value)
		}
	}
	if !strings.Contains(reason, "/data/refinement_actions/0/target") || !strings.Contains(reason, `unknown step id "nope"`) || topic != string(events.TopicReasoning) {
		t.Fatalf("dead-letter reason %q from %q", reason, topic)
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
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rep, Processors: []processors.Processor{passes.Processor{}}}); err != nil {
		t.Fatal(err)
	}
	rd, err := rep.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if live.Rows[passes.Name] == 0 || rd.Projections[passes.Name] != live.Projections[passes.Name] {
		t.Fatalf("passes projection: live %s (%d rows), replay %s", live.Projections[passes.Name], live.Rows[passes.Name], rd.Projections[passes.Name])
	}
}

func ptr(s string) *string { return &s }
