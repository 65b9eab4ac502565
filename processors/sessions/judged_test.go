package sessions

import (
	"errors"
	"fmt"
	"strings"
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

// A session whose only weighted criterion is a judge one is not_evaluated
// at completion, and nothing is distilled from it; the judge revision that
// scores it first says so (FirstScored) and distils it as completion
// would have; a later revision distils nothing more. Before, such a
// session never gave a memory.
func TestFirstScoredRevisionDistils(t *testing.T) {
	store := openStore(t)
	apply := sessionApplier(t, store, "s")
	// what was emitted: the evaluation and the number of memories
	emitted := func(recs []projections.OutboxRecord) (ev events.EvaluationData, memories int) {
		t.Helper()
		evs := evaluationsIn(t, recs)
		if len(evs) > 0 {
			ev = evs[len(evs)-1]
		}
		for _, rec := range recs {
			if rec.Type == events.MemoryRecorded {
				memories++
			}
		}
		return ev, memories
	}
	apply(events.SessionStarted, events.SessionStartedData{OriginalTask: "Refund order 7.", SuccessCriteria: []events.Criterion{
		{ID: "tone", Description: "polite", Weight: 1, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"polite", "apologised"}}}}})
	apply(events.WorkflowTaskCompleted, map[string]any{"tool_id": "refund", "session_id": "s", "success": true})
	ev, n := emitted(apply(events.SessionCompleted, events.SessionCompletedData{Output: "Refunded.", Outcome: "success"}))
	if ev.Recommendation != events.NotEvaluated || ev.FirstScored || n != 0 {
		t.Fatalf("at completion: %s, first_scored %v, %d memories; want not_evaluated and none", ev.Recommendation, ev.FirstScored, n)
	}
	answer := func(raw string) []projections.OutboxRecord {
		return apply(events.JudgeCompleted, map[string]any{"session_id": "s", "criterion_id": "tone", "model": "m", "critic_raw": "-", "judge_raw": raw})
	}
	ev, n = emitted(answer("- [x] polite\n- [x] apologised"))
	if ev.Revision != 1 || !ev.FirstScored || ev.Recommendation == events.NotEvaluated || n == 0 {
		t.Fatalf("first answer: revision %d, %s, first_scored %v, %d memories; want revision 1 first scored, distilled", ev.Revision, ev.Recommendation, ev.FirstScored, n)
	}
	// the stored row keeps the fields it had: a directory a Chronicle
	// without first_scored applied equals its replay (an upgrade
	// walkthrough: audit failed on such a session)
	if v, _, err := Get(store, events.EntityKey("project:a", "s")); err != nil || v.Evaluation == nil || v.Evaluation.FirstScored || v.Evaluation.Revision != 1 {
		t.Fatalf("stored evaluation %+v, %v; want revision 1 without first_scored", v.Evaluation, err)
	}
	ev, n = emitted(answer("- [x] polite\n- [ ] apologised"))
	if ev.Revision != 2 || ev.FirstScored || n != 0 {
		t.Fatalf("second answer: revision %d, first_scored %v, %d memories; want revision 2, distilled already", ev.Revision, ev.FirstScored, n)
	}
}

// sessionApplier applies events of session sid (scope project:a) one by
// one at consecutive offsets of chronicle.sessions, a second apart, with
// the sessions processor, and returns what each emitted.
func sessionApplier(t *testing.T, store *projections.Store, sid string) func(typ events.Type, data any) []projections.OutboxRecord {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	off := 0
	return func(typ events.Type, data any) []projections.OutboxRecord {
		t.Helper()
		env, err := events.New(typ, "test/"+sid, fmt.Sprintf("e-%d", off), at.Add(time.Duration(off)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = sid, "project:a"
		pos := projections.Position{Topic: string(events.TopicSessions), Offset: int64(off)}
		off++
		var emitted []projections.OutboxRecord
		if _, err := store.Apply(Name, pos, &env, func(tx *projections.Tx, env *events.Envelope) error {
			err := Processor{}.Apply(tx, env)
			emitted = tx.Emitted()
			return err
		}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return emitted
	}
}

// evaluationsIn decodes the evaluation.completed.v1 events among recs.
func evaluationsIn(t *testing.T, recs []projections.OutboxRecord) []events.EvaluationData {
	t.Helper()
	var evs []events.EvaluationData
	for _, rec := range recs {
		if rec.Type != events.EvaluationCompleted {
			continue
		}
		env, err := events.ParseEvent(rec.Value)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.EvaluationData
		if err := env.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A judge answer that does not score is refused naming the member at
// fault, as the schema's refusals are: /data/judge_raw for an answer whose
// checklist does not match the rubric, /data/criterion_id for a criterion
// that is not the session's judge one (the dead letter had no pointer).
func TestJudgeAnswerRefusalNamesTheMember(t *testing.T) {
	store := openStore(t)
	apply := sessionApplier(t, store, "s")
	apply(events.SessionStarted, events.SessionStartedData{OriginalTask: "Refund order 7.", SuccessCriteria: []events.Criterion{
		{ID: "tone", Description: "polite", Weight: 1, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"polite", "apologised"}}}}})
	apply(events.SessionCompleted, events.SessionCompletedData{Output: "Refunded.", Outcome: "success"})
	for i, c := range []struct{ criterion, raw, pointer, says string }{
		{"tone", "- [x] polite", "/data/judge_raw", "criterion tone: judge answer has 1 checklist lines, the rubric 2"},
		{"speed", "- [x] polite\n- [x] apologised", "/data/criterion_id", `"speed" is not a judge criterion`},
	} {
		env, err := events.New(events.JudgeCompleted, "test/s", fmt.Sprintf("bad-%d", i), time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC),
			map[string]any{"session_id": "s", "criterion_id": c.criterion, "model": "m", "critic_raw": "-", "judge_raw": c.raw})
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = "s", "project:a"
		_, err = store.Apply(Name, projections.Position{Topic: string(events.TopicSessions), Offset: int64(100 + i)}, &env, Processor{}.Apply)
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.pointer || !strings.Contains(ve.Reason, c.says) {
			t.Errorf("%s %q: %v; want a refusal at %s saying %s", c.criterion, c.raw, err, c.pointer, c.says)
		}
	}
}
