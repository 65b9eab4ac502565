package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections/search"
)

func TestMemorySearchRecordFeedback(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, envs := range sampleEvents(t, 12) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := p.Search.Search(ctx, search.Query{Text: "cancel the user's reservation", Limit: 3, MinConfidence: new(float64)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Memories) == 0 || len(res.Memories) > 3 || res.TotalFound < len(res.Memories) || res.TokensUsed == 0 {
		t.Fatalf("search: %+v", res)
	}
	for i := 1; i < len(res.Memories); i++ {
		if res.Memories[i].Relevance > res.Memories[i-1].Relevance {
			t.Fatalf("not sorted by relevance: %+v", res.Memories)
		}
	}
	top := res.Memories[0]
	if !strings.Contains(strings.ToLower(top.Title+top.Content), "cancel") {
		t.Errorf("top memory for a cancellation query: %q", top.Title)
	}
	// each returned memory wrote a memory.retrieved usage event
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	m, _, _ := memories.Get(p.Store, events.EntityKey(top.Scope, top.ID))
	if m.UsageCount != top.UsageCount+1 {
		t.Fatalf("usage %d after a retrieval, was %d", m.UsageCount, top.UsageCount)
	}

	// an explicit memory in project:x
	rec, err := p.Search.Record(ctx, search.Record{Title: "Quote the refund total", Description: "When cancelling, state the exact refund amount.",
		Content: "Compute the refund with calculate, then tell the user the amount before cancelling.", Outcome: "success", Scope: "project:x"})
	if err != nil || rec.InitialConfidence == nil || *rec.InitialConfidence != 0.8 || rec.ID == "" {
		t.Fatalf("record: %+v %v", rec, err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	only := func(scope string) bool { return scope == "project:x" }
	res, err = p.Search.Search(ctx, search.Query{Text: "tell the user the refund amount", Readable: only})
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != rec.ID || res.Memories[0].Scope != "project:x" {
		t.Fatalf("scoped search: %+v %v", res, err)
	}
	if res, _ := p.Search.Search(ctx, search.Query{Text: "tell the user the refund amount", Scope: "team"}); len(res.Memories) != 0 {
		t.Fatalf("scope kind team found %+v", res.Memories)
	}

	// feedback: the memory now has usage 1 (one retrieval), so consensus applies
	fb, err := p.Search.Feedback(ctx, search.Feedback{MemoryID: rec.ID, Helpful: true})
	if err != nil || !fb.Success || fb.NewConfidence == nil || *fb.NewConfidence != 0.8 || !strings.Contains(fb.Message, "consensus") {
		t.Fatalf("first feedback: %+v %v", fb, err)
	}
	fb, err = p.Search.Feedback(ctx, search.Feedback{MemoryID: rec.ID, Helpful: true})
	if err != nil || fb.NewConfidence == nil || *fb.NewConfidence != 1 || !strings.Contains(fb.Message, "applied") {
		t.Fatalf("second feedback: %+v %v", fb, err)
	}
	// usage is now 3: each negative applies alone, 1 → 0.8 → 0.6 → 0.4 → 0.2 (pruned)
	for i := 0; i < 4; i++ {
		if fb, err = p.Search.Feedback(ctx, search.Feedback{MemoryID: rec.ID, Helpful: false}); err != nil {
			t.Fatal(err)
		}
	}
	if fb.NewConfidence == nil || *fb.NewConfidence != 0.2 || !strings.Contains(fb.Message, "the memory is pruned") {
		t.Fatalf("after four negatives: %+v (the answer that prunes says so)", fb)
	}
	res, _ = p.Search.Search(ctx, search.Query{Text: "tell the user the refund amount", Readable: only, MinConfidence: new(float64)})
	if len(res.Memories) != 0 {
		t.Fatalf("a pruned memory was returned: %+v", res.Memories)
	}
	if _, err := p.Search.Feedback(ctx, search.Feedback{MemoryID: rec.ID, Helpful: true, Writable: func(string) bool { return false }}); !errors.Is(err, search.ErrNotFound) {
		t.Fatalf("feedback without write access: %v", err)
	}
	if _, err := p.Search.Search(ctx, search.Query{Text: "x", Limit: 21}); !errors.Is(err, search.ErrInvalid) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("limit 21: %v", err)
	}
}

// Coordination patterns and tools of real sessions are searchable by
// meaning, with the same ranking and filters as memories, and searching
// them writes no memory usage events.
func TestPatternAndToolSearch(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, envs := range sampleEvents(t, 40) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	before, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}

	res, err := p.Search.Search(ctx, search.Query{Text: "cancel a reservation", Collection: search.Patterns, Outcome: "success", Limit: 3})
	if err != nil || len(res.Memories) == 0 {
		t.Fatalf("pattern search: %+v %v", res, err)
	}
	for _, h := range res.Memories {
		pat, ok, err := sessions.GetPattern(p.Store, h.ID)
		if err != nil || !ok {
			t.Fatalf("hit %s is not a pattern of the projection (%v)", h.ID, err)
		}
		if h.Outcome != "success" || len(pat.Succeeded) == 0 || h.Confidence != pat.Confidence() || h.Confidence <= 0.5 {
			t.Fatalf("hit %+v for pattern %+v", h, pat)
		}
	}
	if top, _, _ := sessions.GetPattern(p.Store, res.Memories[0].ID); top.Category != "cancel_reservation" {
		t.Errorf("top pattern for a cancellation: category %q, title %q", top.Category, res.Memories[0].Title)
	}
	// a failed pattern has confidence 1/3 (a success rate): an explicit low
	// bound, or outcome failure's default of 0, lets it through
	failed, err := p.Search.Search(ctx, search.Query{Text: "cancel a reservation", Collection: search.Patterns, Outcome: "failure", MinConfidence: new(float64), Limit: 20})
	if err != nil || len(failed.Memories) == 0 {
		t.Fatalf("failed patterns: %+v %v", failed, err)
	}
	for _, h := range failed.Memories {
		if h.Outcome != "failure" || h.Confidence >= 0.5 {
			t.Fatalf("failure filter let through %+v", h)
		}
	}
	// outcome failure without min_confidence finds the same (the 0.5 it
	// had hid every failure pattern; a subscriber's walkthrough), and the
	// default outcome (all) keeps 0.5: no failed pattern
	if res, _ := p.Search.Search(ctx, search.Query{Text: "cancel a reservation", Collection: search.Patterns, Outcome: "failure", Limit: 20}); len(res.Memories) != len(failed.Memories) {
		t.Fatalf("outcome failure, default min_confidence: %d patterns, with 0: %d", len(res.Memories), len(failed.Memories))
	}
	all, err := p.Search.Search(ctx, search.Query{Text: "cancel a reservation", Collection: search.Patterns, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range all.Memories {
		if h.Outcome == "failure" || h.Confidence < 0.5 {
			t.Fatalf("outcome all, default min_confidence 0.5 let through %+v", h)
		}
	}

	tools, err := p.Search.Search(ctx, search.Query{Text: "look up a direct flight between two airports", Collection: search.Tools, Limit: 3})
	if err != nil || len(tools.Memories) == 0 {
		t.Fatalf("tool search: %+v %v", tools, err)
	}
	found := false
	for _, h := range tools.Memories {
		found = found || h.ID == "search_direct_flight"
	}
	if !found {
		t.Errorf("search_direct_flight not in the top 3 tools: %+v", tools.Memories)
	}

	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	after, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if after.Projections[memories.Name] != before.Projections[memories.Name] {
		t.Fatal("pattern and tool searches changed the memory bank (usage events)")
	}
	if _, err := p.Search.Search(ctx, search.Query{Text: "x", Collection: "Widgets"}); !errors.Is(err, search.ErrInvalid) || !strings.Contains(err.Error(), "collection") {
		t.Fatalf("unknown collection: %v", err)
	}
}

// TestUsageCountsKnownSessionsOnly: a retrieval counts by its session_id
// only when that session exists in a scope the caller reads; three
// searches of one token with made-up session ids count once (by the
// token), so one signal cannot apply without consensus. Found by a new
// user's walkthrough: usage went 1 → 4 with three invented ids.
func TestUsageCountsKnownSessionsOnly(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var real []string
	for _, envs := range sampleEvents(t, 2) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		real = append(real, envs[0].SessionID)
	}
	rec, err := p.Search.Record(ctx, search.Record{Title: "Quote the seat map first", Description: "Show the seat map before changing seats.",
		Content: "Read the seat map, then confirm the seat with the user.", Outcome: "success", Scope: "project:x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	usage := func() int {
		t.Helper()
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		m, ok, err := memories.Get(p.Store, events.EntityKey("project:x", rec.ID))
		if err != nil || !ok {
			t.Fatalf("memory %s: %v %v", rec.ID, ok, err)
		}
		return m.UsageCount
	}
	find := func(session string, readable func(string) bool) {
		t.Helper()
		res, err := p.Search.Search(ctx, search.Query{Text: "seat map", Limit: 1, MinConfidence: new(float64), SessionID: session, Source: "token:alice", Readable: readable})
		if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != rec.ID {
			t.Fatalf("search as session %q: %+v %v", session, res, err)
		}
	}
	before := usage()
	for _, s := range []string{"made-up-1", "made-up-2", "made-up-3"} {
		find(s, nil)
	}
	if got := usage(); got != before+1 {
		t.Fatalf("three searches of one token with made-up session ids: usage %d → %d, want +1 (the token)", before, got)
	}
	// a real session the caller cannot read counts as the token too
	onlyX := func(scope string) bool { return scope == "project:x" }
	find(real[0], onlyX)
	if got := usage(); got != before+1 {
		t.Fatalf("a session in a scope the caller does not read: usage %d, want %d", got, before+1)
	}
	for _, s := range real {
		find(s, nil)
	}
	if got := usage(); got != before+3 {
		t.Fatalf("two real sessions: usage %d, want %d (each session once)", got, before+3)
	}
}
