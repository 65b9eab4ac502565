package main

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
)

// `import reflexion` through the live pipeline: both bundled runs import
// (the same questions, distinct tasks per run), every pass reaches the
// passes projection with its session evaluated, the tool graph learns
// Search and Lookup, and the reflections become memories.
func TestImportReflexionThroughThePipeline(t *testing.T) {
	// 5 minutes: two imports of 3,188 events each through the live
	// pipeline took 124 s on a loaded machine (load average 10) and ran
	// out of the 2 minutes this had; a hang still fails here
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, run := range []string{reflexion.RunReflexion, reflexion.RunBase} {
		if err := importReflexion(ctx, run, p.Broker.Addrs()); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	n, recorded := 0, 0
	if err := passes.Each(p.Store, func(tk passes.Task) error {
		n++
		recorded += tk.Recorded
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 200 || recorded != 998 {
		t.Fatalf("%d tasks, %d passes; want 200 tasks (100 per run), 998 passes", n, recorded)
	}
	run, _ := reflexion.Bundled(reflexion.RunReflexion)
	q := reflexion.Questions(run, reflexion.RunReflexion)[0]
	key := events.EntityKey(reflexion.Scope, q.Task)
	h, err := passes.History(p.Store, key)
	if err != nil || len(h) == 0 || len(h[0].StepsExecuted) == 0 {
		t.Fatalf("history of %s: %v %v", q.Task, len(h), err)
	}
	v, ok, err := sessions.Get(p.Store, events.EntityKey(reflexion.Scope, h[0].SessionID))
	if err != nil || !ok || v.Evaluation == nil {
		t.Fatalf("session of pass 1: %v %v", ok, err)
	}
	g, err := toolgraph.Load(p.Store)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]int{}
	for _, ti := range g.Tools() {
		tools[ti.Tool] = ti.Calls
	}
	if tools["Search"] == 0 || tools["Lookup"] == 0 {
		t.Fatalf("tool graph %v", tools)
	}
	st, err := memories.ComputeStats(p.Store)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("memories %+v, tools %v", st, tools)
}
