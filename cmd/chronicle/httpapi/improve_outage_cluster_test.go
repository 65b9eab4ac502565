package httpapi_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/chronicle-dev/chronicle/processors/pair"
)

// Concurrent POST …/improve at the members that do not own the sessions,
// while the brokers take produce requests and never answer them: each is
// forwarded to the session's owner, which runs its retrieval and answers
// 503 when its publish is not acknowledged within ImproveWait; the
// forwarding member relays that 503 within its forward budget
// (ForwardTimeout + ImproveWait), never a 504 of its own. Then, the
// brokers answering again, a forwarded improve gets the revision. The
// cluster side of TestImproveWhileTheBrokerHangs: on the code before
// c4e576d (one lock for every session's retrieval, a cut publish taken
// for nothing published) all four were 202 AWAITING_CONTEXT.
func TestForwardedImproveWhileTheBrokerHangs(t *testing.T) {
	t.Parallel() // mostly waiting: the deadlines and the forward budget
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	const (
		fwd  = 2 * time.Second
		wait = 3 * time.Second // below the producer's 15 s publish timeout: the owner's deadline cuts the publish
	)
	m1 := startMember(ctx, t, "m1", cluster.ListenAddrs(), fwd)
	m2 := startMember(ctx, t, "m2", cluster.ListenAddrs(), fwd)
	ms := []*member{m1, m2}
	for _, m := range ms {
		m.api.ImproveWait = wait // before the first request to it
	}
	waitCluster(t, ms)

	// sessions of project:a failing their criterion, two owned by each
	// member at least
	others := map[*member][]string{} // member → sessions the other owns
	for i := 0; i < 40 && (len(others[m1]) < 2 || len(others[m2]) < 2); i++ {
		envs, id := sessionIn(t, i, "project:a", "HUNG")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if !ownsSession(m, id) && len(others[m]) < 2 {
				others[m] = append(others[m], id)
			}
		}
	}
	if len(others[m1]) < 2 || len(others[m2]) < 2 {
		t.Fatalf("sessions owned by the other member: m1 %v, m2 %v", others[m1], others[m2])
	}
	waitCluster(t, ms)
	path := func(id string) string { return "/v1/sessions/" + url.PathEscape(id) + "/improve" }
	// each session evaluated and awaiting its context, as seen by the
	// member that will forward its improve (the evaluation is a derived
	// event: it may be projected a moment after the members caught up)
	for _, m := range ms {
		for _, id := range others[m] {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				code, v := call(t, m.srv.URL, "tok-a", "GET", "/v1/sessions/"+url.PathEscape(id)+"/improvement", nil)
				if code == 200 && v["evaluated"] == true {
					if v["status"] != pair.LoopAwaitingContext {
						t.Fatalf("%s: %s before: %v, want %s", m.name, id, v["status"], pair.LoopAwaitingContext)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s GET improvement of %s before: %d %v", m.name, id, code, v)
				}
			}
		}
	}

	resume := hangProduce(cluster)
	var asks []improveAsk
	for _, m := range ms {
		for _, id := range others[m] {
			asks = append(asks, improveAsk{who: m.name + " " + id, base: m.srv.URL, token: "tok-a", path: path(id)})
		}
	}
	got := askConcurrently(t, asks)
	budget := fwd + wait + 2*time.Second
	for _, a := range got {
		t.Logf("%s: %d in %v", a.who, a.code, a.took.Round(time.Millisecond))
		if a.code != 503 || a.took > budget {
			t.Errorf("forwarded improve %s while the broker hangs: %d in %v %v; want the owner's 503 within %v", a.who, a.code, a.took.Round(time.Millisecond), a.body, budget)
		}
	}
	if t.Failed() {
		return
	}

	resume()
	back := time.Now()
	id := others[m1][0]
	for deadline := back.Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, v := call(t, m1.srv.URL, "tok-a", "POST", path(id), map[string]any{})
		if code == 200 && v["status"] == pair.LoopRevisionReady {
			t.Logf("the revision through m1 %v after the broker answers again", time.Since(back).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("forwarded improve 60 s after the broker answers again: %d %v", code, v)
		}
	}
}
