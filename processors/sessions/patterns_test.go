package sessions

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/projections"
)

func openStore(t *testing.T) *projections.Store {
	t.Helper()
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPatternsFromTauBench feeds the bundled 200 real sessions through the
// processor and checks every pattern against the sessions themselves: each
// session with successful calls is in exactly the pattern of its own tool
// sequence, Succeeded is exactly its sessions that met their criteria, and
// the confidence is Laplace's rule over those counts.
func TestPatternsFromTauBench(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	store := openStore(t)
	var off int64
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		for i := range envs {
			if _, err := store.Apply(Name, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &envs[i], Processor{LLMDistillation: true}.Apply); err != nil {
				t.Fatal(err)
			}
			off++
		}
	}
	var pats []Pattern
	if err := EachPattern(store, func(p Pattern) bool { pats = append(pats, p); return true }); err != nil {
		t.Fatal(err)
	}
	inPattern := map[string]string{}
	for _, p := range pats {
		if p.ID != PatternID(p.Scope, p.Steps) {
			t.Fatalf("pattern %s: id is not the address of its steps", p.ID)
		}
		for _, sid := range p.Sessions {
			if prev, dup := inPattern[sid]; dup {
				t.Fatalf("session %s in patterns %s and %s", sid, prev, p.ID)
			}
			inPattern[sid] = p.ID
		}
		want := (float64(len(p.Succeeded)) + 1) / (float64(len(p.Sessions)) + 2)
		if math.Abs(p.Confidence()-want) > 1e-12 {
			t.Fatalf("pattern %s: confidence %v, want %v", p.ID, p.Confidence(), want)
		}
	}
	succeeded, counted := 0, 0
	for _, r := range recs {
		sid := taubench.SessionID(r.TaskID, r.Trial)
		in, ok, err := Input(store, sid)
		if err != nil || !ok {
			t.Fatalf("session %s: %v %v", sid, ok, err)
		}
		v, _, err := Get(store, sid)
		if err != nil || v.Evaluation == nil {
			t.Fatalf("session %s: no evaluation (%v)", sid, err)
		}
		steps := distill.Steps(in.Calls)
		if len(steps) == 0 {
			if _, ok := inPattern[sid]; ok {
				t.Fatalf("session %s without successful calls is in a pattern", sid)
			}
			continue
		}
		counted++
		id := PatternID(v.Scope, steps)
		if inPattern[sid] != id {
			t.Fatalf("session %s: in pattern %q, want %q", sid, inPattern[sid], id)
		}
		p, _, _ := GetPattern(store, id)
		met := v.Evaluation.Recommendation == events.MeetsCriteria
		if slices.Contains(p.Succeeded, sid) != met {
			t.Fatalf("session %s: in Succeeded %v, meets criteria %v", sid, !met, met)
		}
		if met {
			succeeded++
		}
	}
	if counted < 150 || succeeded < 50 || len(pats) < 50 {
		t.Fatalf("%d sessions in %d patterns, %d succeeded: the sample should give more", counted, len(pats), succeeded)
	}
	shared := 0
	for _, p := range pats {
		if len(p.Sessions) > 1 {
			shared++
		}
	}
	t.Logf("%d sessions, %d patterns (%d shared by several sessions), %d sessions met their criteria", counted, len(pats), shared, succeeded)
}

// TestCountPatternRevision: a re-evaluation that no longer meets the
// criteria takes the session out of Succeeded (and back in), without
// counting it twice.
func TestCountPatternRevision(t *testing.T) {
	store := openStore(t)
	s := &Session{ID: "s1", Scope: "project:a"}
	in := flux.Input{SessionID: "s1", Task: "You want to cancel reservation ABC123.",
		Criteria: []events.Criterion{{ID: "c1", Weight: 1, Check: events.Check{Kind: events.CheckToolCall, Name: "cancel_reservation"}}},
		Calls: []events.TaskCompletedData{{ToolID: "get_reservation_details", Inputs: []byte(`{"reservation_id":"ABC123"}`), Success: true},
			{ToolID: "cancel_reservation", Inputs: []byte(`{"reservation_id":"ABC123"}`), Success: true}}}
	var off int64
	count := func(rec string) Pattern {
		t.Helper()
		env, err := events.New(events.SessionCompleted, "test", fmt.Sprint("e", off), time.Unix(0, 0), map[string]any{"outcome": "success"})
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID = "s1"
		if _, err := store.Apply(Name, projections.Position{Topic: "t", Offset: off}, &env, func(tx *projections.Tx, _ *events.Envelope) error {
			return countPattern(tx, s, in, events.EvaluationData{Recommendation: rec})
		}); err != nil {
			t.Fatal(err)
		}
		off++
		p, ok, err := GetPattern(store, PatternID("project:a", distill.Steps(in.Calls)))
		if err != nil || !ok {
			t.Fatalf("pattern: %v %v", ok, err)
		}
		return p
	}
	p := count(events.MeetsCriteria)
	if len(p.Sessions) != 1 || len(p.Succeeded) != 1 || p.Outcome() != events.OutcomeSuccess || math.Abs(p.Confidence()-2.0/3) > 1e-12 {
		t.Fatalf("after success: %+v (confidence %v)", p, p.Confidence())
	}
	if p.Category != "cancel_reservation" || p.Task != "the user wants to cancel reservation ABC123" {
		t.Fatalf("category %q task %q", p.Category, p.Task)
	}
	if p.Title() != "Pattern: get_reservation_details → cancel_reservation" {
		t.Fatalf("title %q", p.Title())
	}
	p = count(events.NeedsImprovement)
	if len(p.Sessions) != 1 || len(p.Succeeded) != 0 || p.Outcome() != events.OutcomeFailure || math.Abs(p.Confidence()-1.0/3) > 1e-12 {
		t.Fatalf("after re-score below: %+v", p)
	}
	p = count(events.MeetsCriteria)
	if len(p.Sessions) != 1 || len(p.Succeeded) != 1 {
		t.Fatalf("after re-score above: %+v", p)
	}
}
