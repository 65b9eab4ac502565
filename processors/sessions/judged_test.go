package sessions

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Session "p" with judge criterion "x/tone" and session "p/x" with judge
// criterion "tone" keep their judge answers apart: with j/<key>/<criterion
// id> for every id the two shared one row, so the answer for "p/x" scored
// "p"'s criterion, which no answer of its own had scored.
func TestJudgedCriterionOfAnIDThatExtendsAnother(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := openStore(t)
	off := 0
	apply := func(sid string, typ events.Type, data any) {
		t.Helper()
		env, err := events.New(typ, "test/judged", fmt.Sprintf("%s-%d", sid, off), at.Add(time.Duration(off)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = sid, "project:a"
		pos := projections.Position{Topic: string(events.TopicSessions), Offset: int64(off)}
		off++
		if err := ApplyLocally(store, Processor{}, pos, &env); err != nil {
			t.Fatalf("%s %s: %v", sid, typ, err)
		}
	}
	judge := func(id string) events.Criterion {
		return events.Criterion{ID: id, Description: id, Weight: 1, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"polite", "apologised"}}}
	}
	apply("p", events.SessionStarted, events.SessionStartedData{OriginalTask: "Refund order 7.",
		SuccessCriteria: []events.Criterion{judge("x/tone"), judge("clarity")}})
	apply("p/x", events.SessionStarted, events.SessionStartedData{OriginalTask: "Refund order 8.",
		SuccessCriteria: []events.Criterion{judge("tone")}})
	for _, sid := range []string{"p", "p/x"} {
		apply(sid, events.SessionCompleted, events.SessionCompletedData{Output: "Refunded.", Outcome: "success"})
	}
	answer := func(sid, criterion, raw string) {
		apply(sid, events.JudgeCompleted, map[string]any{"session_id": sid, "criterion_id": criterion,
			"model": "m", "critic_raw": "-", "judge_raw": raw})
	}
	answer("p/x", "tone", "- [x] polite\n- [x] apologised")
	answer("p", "clarity", "- [ ] polite\n- [ ] apologised")

	scores := func(sid string) map[string]*float64 {
		t.Helper()
		v, _, err := Get(store, events.EntityKey("project:a", sid))
		if err != nil || v.Evaluation == nil {
			t.Fatalf("session %s: %+v %v", sid, v, err)
		}
		out := map[string]*float64{}
		for _, c := range v.Evaluation.Criteria {
			if c.Evaluated {
				out[c.ID] = c.Score
			} else {
				out[c.ID] = nil
			}
		}
		return out
	}
	p := scores("p")
	if p["x/tone"] != nil {
		t.Errorf(`session p: criterion "x/tone" scored %v, from session p/x's answer for "tone"; want not evaluated`, *p["x/tone"])
	}
	if s := p["clarity"]; s == nil || *s != 0 {
		t.Errorf(`session p: criterion "clarity" = %v, want 0`, s)
	}
	if s := scores("p/x")["tone"]; s == nil || *s != 100 {
		t.Errorf(`session p/x: criterion "tone" = %v, want 100`, s)
	}
	// and the other way round: p's own answer for "x/tone" leaves p/x's alone
	answer("p", "x/tone", "- [ ] polite\n- [x] apologised")
	if s := scores("p")["x/tone"]; s == nil || *s != 50 {
		t.Errorf(`session p: criterion "x/tone" = %v after its own answer, want 50`, s)
	}
	if s := scores("p/x")["tone"]; s == nil || *s != 100 {
		t.Errorf(`session p/x: criterion "tone" = %v after p's answer, want 100 still`, s)
	}
}
