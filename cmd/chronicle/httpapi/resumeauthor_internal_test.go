package httpapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// Two callers who read a search paused and send the same decision: the
// first is written, the second is its own decision, not a retry of the
// first, so it is a 409 naming who decided (errResumedAlready); a retry
// by the first caller is answered as the first. Before, the content hash,
// which leaves the author out, made the second read as a retry: six
// callers approving at once were all answered 202 while the search named
// one of them (a concurrency walkthrough, 2026-12-03).
func TestSameDecisionFromAnotherCallerIsNoRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const id, scope = "s-author", "project:a"
	parent, h, f, score := "r", 0.0, 0.5, 1.0
	evs := []struct {
		typ  events.Type
		data any
	}{
		{events.SearchStarted, events.SearchStartedData{SearchID: id, Goal: "obtain 24", RootState: "root",
			Config:   events.SearchConfig{BeamWidth: 2, K: 4, MaxDepth: 3, CostPerStep: 0.5},
			Proposer: events.SearchComponent{Name: "p", Version: "1"}, Evaluator: events.SearchComponent{Name: "e", Version: "1"}}},
		{events.SearchQuotaReserved, events.SearchQuotaReservedData{SearchID: id, Expansion: 1, NodeID: "r", Tokens: 10}},
		{events.SearchNodeExpanded, events.SearchNodeData{SearchID: id, NodeID: "r.0", ParentID: &parent, Expansion: 1, Depth: 1, State: "a",
			StateDigest: treesearch.Digest("a"), Candidate: "step", G: 0.5, H: &h, F: &f, Score: &score, NeedsHuman: true}},
		{events.SearchFrontierDecided, events.SearchFrontierDecidedData{SearchID: id, Expansion: 1, NodeID: "r", Children: []string{"r.0"}, Kept: []string{"r.0"}, Dropped: []string{}, TokensUsed: 10}},
		{events.SearchPaused, events.SearchPausedData{SearchID: id, NodeID: "r.0", Question: "allowed?"}},
	}
	for i, e := range evs {
		env, err := events.New(e.typ, "test", fmt.Sprintf("%s-%d", id, i), time.Now(), e.data)
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		if err := p.Producer.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	key := events.EntityKey(scope, id)
	paused, ok, err := treesearch.Get(p.Store, key)
	if err != nil || !ok || paused.Status != treesearch.StatusPaused {
		t.Fatalf("the search: %+v %v %v", paused, ok, err)
	}
	s := &Server{P: p}
	if _, err := s.publishResume(ctx, key, paused, "approve", "same", "token:u1"); err != nil {
		t.Fatalf("the first decision: %v", err)
	}
	// the second caller read the search while it was still paused
	if _, err := s.publishResume(ctx, key, paused, "approve", "same", "token:u2"); !errors.Is(err, errResumedAlready) {
		t.Fatalf("the same decision from another caller: %v, want errResumedAlready", err)
	}
	if _, err := s.publishResume(ctx, key, paused, "approve", "same", "token:u1"); err != nil {
		t.Fatalf("the first caller's retry: %v", err)
	}
}
