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
			if err := ApplyLocally(store, Processor{LLMDistillation: true}, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &envs[i]); err != nil {
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
		if p.SessionCount != len(p.Sessions) || p.SucceededCount != len(p.Succeeded) {
			t.Fatalf("pattern %s: counts %d/%d, lists %d/%d (below MaxPatternSessions they agree)", p.ID, p.SucceededCount, p.SessionCount, len(p.Succeeded), len(p.Sessions))
		}
		want := (float64(len(p.Succeeded)) + 1) / (float64(len(p.Sessions)) + 2)
		if math.Abs(p.Confidence()-want) > 1e-12 {
			t.Fatalf("pattern %s: confidence %v, want %v", p.ID, p.Confidence(), want)
		}
	}
	succeeded, counted := 0, 0
	for _, r := range recs {
		sid := taubench.SessionID(r.TaskID, r.Trial)
		in, ok, err := Input(store, events.EntityKey(taubench.Scope, sid))
		if err != nil || !ok {
			t.Fatalf("session %s: %v %v", sid, ok, err)
		}
		v, _, err := Get(store, events.EntityKey(taubench.Scope, sid))
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

// patternCounter applies countPattern for sessions that all follow the
// same two-call sequence, and returns the pattern after each.
type patternCounter struct {
	t     *testing.T
	store *projections.Store
	in    flux.Input
	off   int64
}

func newPatternCounter(t *testing.T) *patternCounter {
	return &patternCounter{t: t, store: openStore(t), in: flux.Input{Task: "You want to cancel reservation ABC123.",
		Criteria: []events.Criterion{{ID: "c1", Weight: 1, Check: events.Check{Kind: events.CheckToolCall, Name: "cancel_reservation"}}},
		Calls: []events.TaskCompletedData{{ToolID: "get_reservation_details", Inputs: []byte(`{"reservation_id":"ABC123"}`), Success: true},
			{ToolID: "cancel_reservation", Inputs: []byte(`{"reservation_id":"ABC123"}`), Success: true}}}}
}

func (c *patternCounter) count(sid, rec string) Pattern {
	t := c.t
	t.Helper()
	env, err := events.New(events.SessionCompleted, "test", fmt.Sprint("e", c.off), time.Unix(0, 0), map[string]any{"outcome": "success"})
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = sid
	s := &Session{ID: sid, Scope: "project:a"}
	var emitted []projections.OutboxRecord
	if _, err := c.store.Apply(Name, projections.Position{Topic: "t", Offset: c.off}, &env, func(tx *projections.Tx, _ *events.Envelope) error {
		err := countPattern(tx, s, c.in, events.EvaluationData{Recommendation: rec}, distill.TaskSummary(c.in.Task))
		emitted = tx.Emitted()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, r := range emitted { // what chronicle.patterns carries to the patterns processor
		pc, err := events.ParseEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.store.Apply(PatternsName, projections.Position{Topic: string(events.TopicPatterns), Offset: c.off}, &pc, PatternsProcessor{}.Apply); err != nil {
			t.Fatal(err)
		}
	}
	c.off++
	p, ok, err := GetPattern(c.store, PatternID("project:a", distill.Steps(c.in.Calls)))
	if err != nil || !ok {
		t.Fatalf("pattern: %v %v", ok, err)
	}
	return p
}

// TestCountPatternRevision: a re-evaluation that no longer meets the
// criteria takes the session out of Succeeded (and back in), without
// counting it twice.
func TestCountPatternRevision(t *testing.T) {
	pc := newPatternCounter(t)
	count := func(rec string) Pattern { t.Helper(); return pc.count("s1", rec) }
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
	if len(p.Sessions) != 1 || len(p.Succeeded) != 1 || p.SessionCount != 1 || p.SucceededCount != 1 {
		t.Fatalf("after re-score above: %+v", p)
	}
	if p = count(events.MeetsCriteria); p.SessionCount != 1 || p.SucceededCount != 1 || len(p.Succeeded) != 1 {
		t.Fatalf("the same verdict again changed the pattern: %+v", p)
	}
}

// A common sequence keeps exact counts but names only its last
// MaxPatternSessions sessions; re-scoring a session that fell off the list
// still moves the counts.
func TestPatternBounded(t *testing.T) {
	pc := newPatternCounter(t)
	n := MaxPatternSessions + 50
	var p Pattern
	for i := 0; i < n; i++ {
		rec := events.NeedsImprovement
		if i%2 == 0 {
			rec = events.MeetsCriteria
		}
		p = pc.count(fmt.Sprintf("s%03d", i), rec)
	}
	if p.SessionCount != n || p.SucceededCount != n/2 || len(p.Sessions) != MaxPatternSessions || len(p.Succeeded) != MaxPatternSessions/2+25 {
		t.Fatalf("counts %d/%d, lists %d/%d", p.SucceededCount, p.SessionCount, len(p.Succeeded), len(p.Sessions))
	}
	if p.Sessions[0] != fmt.Sprintf("s%03d", n-MaxPatternSessions) || p.Sessions[len(p.Sessions)-1] != fmt.Sprintf("s%03d", n-1) {
		t.Fatalf("sessions kept: %s … %s", p.Sessions[0], p.Sessions[len(p.Sessions)-1])
	}
	want := float64(n/2+1) / float64(n+2)
	if math.Abs(p.Confidence()-want) > 1e-12 {
		t.Fatalf("confidence %v, want %v", p.Confidence(), want)
	}
	p = pc.count("s000", events.NeedsImprovement) // an old success re-scored below
	if p.SessionCount != n || p.SucceededCount != n/2-1 || len(p.Sessions) != MaxPatternSessions {
		t.Fatalf("after re-scoring s000: counts %d/%d, %d listed", p.SucceededCount, p.SessionCount, len(p.Sessions))
	}
}
