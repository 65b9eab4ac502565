package httpapi_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// POST /v1/sessions/{id}/improve on a server without a pair worker (the
// test pipeline runs none): the session is evaluated below 95 and has no
// context, so the route runs PAIR retrieval itself and answers 200 with
// the revision and next_attempt. The context it wrote is the one the pair
// worker would write for that evaluation — the same derived id — so a
// worker that sees the evaluation later writes nothing; a second POST
// publishes nothing either.
func TestImproveStartsTheLoop(t *testing.T) {
	p, api, base := scopedServer(t)
	if len(p.Workers) != 0 {
		t.Fatalf("the test pipeline runs workers %v; this test needs none", p.Workers)
	}
	api.ImproveWait = 25 * time.Second
	envs, sid := sessionIn(t, 3, "project:a", "IMPROVE-ME")
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("session: %d %v", code, m)
	}
	waitCaughtUp(t, p)
	path := "/v1/sessions/" + url.PathEscape(sid)
	if code, before := call(t, base, "tok-a", "GET", path+"/improvement", nil); code != 200 || before["status"] != pair.LoopAwaitingContext || before["evaluated"] != true {
		t.Fatalf("before: %d %v", code, before)
	}
	code, got := call(t, base, "tok-a", "POST", path+"/improve", map[string]any{})
	rev, _ := got["revision"].(map[string]any)
	next, _ := got["next_attempt"].(map[string]any)
	if code != 200 || got["status"] != pair.LoopRevisionReady || rev == nil || rev["rationale"] == "" || next["iteration"] != float64(2) || next["parent_session"] != sid {
		t.Fatalf("improve: %d %v", code, got)
	}
	if code, again := call(t, base, "tok-a", "POST", path+"/improve", nil); code != 200 || again["status"] != pair.LoopRevisionReady {
		t.Fatalf("second improve: %d %v", code, again)
	}
	waitCaughtUp(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evals := records(ctx, t, p, events.TopicEvaluations, events.EvaluationCompleted)
	if len(evals) != 1 {
		t.Fatalf("%d evaluations, want 1", len(evals))
	}
	contexts := records(ctx, t, p, events.TopicLearned, pair.ContextRetrieved)
	if len(contexts) != 1 {
		t.Fatalf("%d contexts on %s, want 1 (two POSTs)", len(contexts), events.TopicLearned)
	}
	if want := events.DerivedID(evals[0].Source, evals[0].ID, pair.ContextRetrieved, 0); contexts[0].ID != want || contexts[0].Source != pair.Source || contexts[0].CausationID != evals[0].ID {
		t.Fatalf("context id %s source %s causation %s, want the worker's derived id %s", contexts[0].ID, contexts[0].Source, contexts[0].CausationID, want)
	}
	// the pair worker, handed the evaluation now, writes nothing
	w := &pair.Worker{Store: p.Store, Index: p.Search.Index, Producer: p.Producer}
	if out, err := w.Derive(ctx, &evals[0]); err != nil || len(out) != 0 {
		t.Fatalf("worker after the route: %d events (%v), want none", len(out), err)
	}
	if _, ok, err := pair.EvaluationEvent(p.Store, events.EntityKey("project:a", sid)); err != nil || ok {
		t.Fatalf("pending evaluation row after the context: %v %v", ok, err)
	}
}

// records reads every event of type typ on topic, to its end offsets.
func records(ctx context.Context, t *testing.T, p *pipeline.Pipeline, topic events.Topic, typ events.Type) []events.Envelope {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(topic)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := p.Admin().ListEndOffsets(ctx, string(topic))
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var out []events.Envelope
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
			env, err := events.FromRecord(r)
			if err == nil && env.Type == typ {
				out = append(out, env)
			}
		})
	}
	return out
}
