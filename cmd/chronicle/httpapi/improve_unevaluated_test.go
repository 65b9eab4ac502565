package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pair"
)

// TestImproveOfAnUncompletedSessionIs409: POST /v1/sessions/{id}/improve
// on a session that has not completed (tool calls only, or started and
// tool calls) answers 409 at once, saying it has not completed, even with
// a pair worker to wait for and a long ImproveWait; GET …/improvement
// says AWAITING_EVALUATION, evaluated false. Before, the route answered
// 202 AWAITING_CONTEXT ("evaluated below 95") with evaluated false (an
// agent-runtime walkthrough waited about 20 s for it).
func TestImproveOfAnUncompletedSessionIs409(t *testing.T) {
	p, api, base := scopedServer(t)
	p.Workers = append(p.Workers, namedWorker("pair")) // the route would wait for "the worker"
	api.ImproveWait = 25 * time.Second
	for i, keep := range []map[events.Type]bool{
		{events.WorkflowTaskCompleted: true},
		{events.WorkflowTaskCompleted: true, events.SessionStarted: true},
	} {
		envs, sid := sessionIn(t, 3+i, "project:a", "NOT-DONE")
		var sent []events.Envelope
		for _, e := range envs {
			if keep[e.Type] {
				sent = append(sent, e)
			}
		}
		if code, m := call(t, base, "tok-a", "POST", "/v1/events", sent); code != 202 {
			t.Fatalf("session: %d %v", code, m)
		}
		waitCaughtUp(t, p)
		path := "/v1/sessions/" + url.PathEscape(sid)
		start := time.Now()
		code, m := call(t, base, "tok-a", "POST", path+"/improve", nil)
		took := time.Since(start)
		if code != 409 || !strings.Contains(fmt.Sprint(m["error"]), "has not completed") || !strings.HasPrefix(fmt.Sprint(m["reason"]), "session not") || took > 2*time.Second {
			t.Fatalf("%v: improve: %d %v in %v; want a prompt 409 saying it has not completed", keep, code, m, took)
		}
		if code, m := call(t, base, "tok-a", "GET", path+"/improvement", nil); code != 200 || m["status"] != pair.LoopAwaitingEvaluation || m["evaluated"] != false {
			t.Fatalf("%v: improvement: %d %v; want AWAITING_EVALUATION", keep, code, m)
		}
	}
}

// TestNotEvaluatedIsNotRevised: a session whose only weighted criterion is
// a judge one, with no LLM configured, is evaluated not_evaluated; PAIR
// writes it no context and no revision, GET …/improvement says
// NOT_EVALUATED, and POST …/improve is a 409 saying why. Before, it was
// revised as a failure ("Iteration 1 scored 0.00, below 95, with 0
// weighted gaps", REVISION_READY with a next_attempt: a walkthrough).
func TestNotEvaluatedIsNotRevised(t *testing.T) {
	p, _, base := scopedServer(t)
	started := map[string]any{"specversion": "1.0", "id": "ne-start", "source": "test/ne", "type": "coordination.session.started.v1", "scope": "project:a", "sessionid": "ne-1",
		"data": map[string]any{"original_task": "Summarise the policy.", "success_criteria": []any{
			map[string]any{"id": "j", "description": "a fair summary", "weight": 1, "check": map[string]any{"kind": "judge", "rubric": []string{"Is the summary fair?"}}},
			map[string]any{"id": "w0", "description": "mentions refunds", "weight": 0, "check": map[string]any{"kind": "output_contains", "text": "refund"}},
		}}}
	completed := map[string]any{"specversion": "1.0", "id": "ne-done", "source": "test/ne", "type": "coordination.session.completed.v1", "scope": "project:a", "sessionid": "ne-1",
		"data": map[string]any{"output": "Refunds within 24 hours.", "outcome": "success"}}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", []any{started, completed}); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	code, m := call(t, base, "tok-a", "POST", "/v1/sessions/ne-1/improve", nil)
	if code != 409 || m["reason"] != "session not evaluated" || !strings.Contains(fmt.Sprint(m["error"]), "not_evaluated") {
		t.Fatalf("improve: %d %v; want a 409 saying it was not evaluated", code, m)
	}
	waitCaughtUp(t, p)
	code, m = call(t, base, "tok-a", "GET", "/v1/sessions/ne-1/improvement", nil)
	if code != 200 || m["status"] != pair.LoopNotEvaluated || m["context"] != nil || m["revision"] != nil || m["next_attempt"] != nil {
		t.Fatalf("improvement: %d %v; want NOT_EVALUATED without a context, revision or next attempt", code, m)
	}
	// then the judge answers (a judge worker with a model, here its event
	// as it writes it): the revision that scores the session first says
	// so (first_scored), and PAIR treats it as the evaluation at
	// completion: the session is below PassComposite, so it can be
	// improved. Before, a judge revision was never planned, and the
	// session stayed without a context (the last closing note's gap).
	judged := events.Envelope{SpecVersion: events.SpecVersion, ID: "ne-judged", Source: "chronicle/judge", Type: events.JudgeCompleted,
		Time: time.Now().UTC().Format(time.RFC3339Nano), SessionID: "ne-1", Scope: "project:a",
		Data: []byte(`{"session_id":"ne-1","criterion_id":"j","model":"m","critic_raw":"-","judge_raw":"- [ ] Is the summary fair?"}`)}
	if err := p.Producer.PublishDerived(t.Context(), judged); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, p)
	code, m = call(t, base, "tok-a", "GET", "/v1/sessions/ne-1", nil)
	ev, _ := m["evaluation"].(map[string]any)
	if code != 200 || ev["revision"] != 1.0 || ev["recommendation"] == events.NotEvaluated {
		t.Fatalf("session after the judge's answer: %d %v; want revision 1, scored", code, ev)
	}
	code, m = call(t, base, "tok-a", "POST", "/v1/sessions/ne-1/improve", nil)
	if code != 200 && code != 202 {
		t.Fatalf("improve after the judge's answer: %d %v; want the context", code, m)
	}
	waitCaughtUp(t, p)
	code, m = call(t, base, "tok-a", "GET", "/v1/sessions/ne-1/improvement", nil)
	if code != 200 || m["status"] == pair.LoopNotEvaluated || m["context"] == nil {
		t.Fatalf("improvement after the judge's answer: %d %v; want a context", code, m)
	}
}
