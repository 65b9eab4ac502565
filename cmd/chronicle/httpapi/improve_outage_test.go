package httpapi_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Concurrent POST …/improve while the broker takes produce requests and
// never answers them: each session's retrieval runs at once (sessions do
// not queue behind each other's publish) and is answered 503 with
// Retry-After within ImproveWait, as is a second request for a session
// whose retrieval is in flight (it takes that retrieval's outcome instead
// of publishing again). Before, one lock served every session and a
// publish cut by the route's deadline counted as "nothing published":
// every request was a 202 AWAITING_CONTEXT, a context nobody was writing
// (a review of a cluster walkthrough's outage). Once the broker answers
// again, asking again gets the revision.
func TestImproveWhileTheBrokerHangs(t *testing.T) {
	t.Parallel() // mostly waiting: the deadlines and the client's request timeouts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, p := kfakePipeline(ctx, t)
	const wait = 3 * time.Second // below the producer's 15 s publish timeout: the route's deadline cuts the publish
	api := &httpapi.Server{P: p, ImproveWait: wait}
	srv := httptest.NewServer(conforming(t, api.Handler())) // every answer checked against openapi.json
	t.Cleanup(func() { srv.Close(); _ = p.Close() })

	scopes := []string{"project:a", "project:b", "project:c"}
	var sid string
	for _, sc := range scopes {
		envs, id := sessionIn(t, 3, sc, "HUNG")
		sid = id
		if code, m := call(t, srv.URL, "", "POST", "/v1/events", envs); code != 202 {
			t.Fatalf("session in %s: %d %v", sc, code, m)
		}
	}
	waitCaughtUp(t, p)
	path := func(sc string) string {
		return "/v1/sessions/" + url.PathEscape(sid) + "/improve?scope=" + url.QueryEscape(sc)
	}
	for _, sc := range scopes {
		if code, v := call(t, srv.URL, "", "GET", "/v1/sessions/"+url.PathEscape(sid)+"/improvement?scope="+url.QueryEscape(sc), nil); code != 200 || v["status"] != pair.LoopAwaitingContext || v["evaluated"] != true {
			t.Fatalf("%s before: %d %v", sc, code, v)
		}
	}

	resume := hangProduce(cluster)
	asks := make([]improveAsk, 0, len(scopes)+1)
	for _, sc := range scopes {
		asks = append(asks, improveAsk{who: sc, base: srv.URL, path: path(sc)})
	}
	// a second request for a session whose retrieval is in flight (its
	// deadline a little after the first's, so the first's outcome is in
	// before it)
	asks = append(asks, improveAsk{who: "project:a again", base: srv.URL, path: path("project:a"), delay: 500 * time.Millisecond})
	got := askConcurrently(t, asks)
	for _, a := range got {
		t.Logf("%s: %d in %v", a.who, a.code, a.took.Round(time.Millisecond))
		if a.code != 503 || a.took > wait+2*time.Second {
			t.Errorf("%s: %d in %v %v; want 503 within %v", a.who, a.code, a.took.Round(time.Millisecond), a.body, wait+2*time.Second)
		}
	}
	if t.Failed() {
		return
	}

	resume()
	back := time.Now()
	for deadline := back.Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, v := call(t, srv.URL, "", "POST", path("project:a"), map[string]any{})
		if code == 200 && v["status"] == pair.LoopRevisionReady {
			t.Logf("the revision %v after the broker answers again", time.Since(back).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("improve 60 s after the broker answers again: %d %v", code, v)
		}
	}
}

// hangProduce makes cluster take every produce request and never answer
// it (the request hangs, as on a broker stopped mid-request) until resume
// is called.
func hangProduce(cluster *kfake.Cluster) (resume func()) {
	var hung atomic.Bool
	hung.Store(true)
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		return nil, nil, hung.Load() // handled without an answer: the request hangs
	})
	return func() { hung.Store(false) }
}

// improveAsk is one POST …/improve of askConcurrently: sent to base with
// token after delay.
type improveAsk struct {
	who, base, token, path string
	delay                  time.Duration
}

// improveAnswer is how an improveAsk was answered, and how long it took.
type improveAnswer struct {
	who  string
	code int
	took time.Duration
	body map[string]any
}

// askConcurrently sends every ask at once (each after its delay) and
// returns the answers once all are in, in the order they came.
func askConcurrently(t *testing.T, asks []improveAsk) []improveAnswer {
	t.Helper()
	var (
		mu  sync.Mutex
		got []improveAnswer
		wg  sync.WaitGroup
	)
	for _, a := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(a.delay)
			st := time.Now()
			code, body := call(t, a.base, a.token, "POST", a.path, map[string]any{})
			mu.Lock()
			got = append(got, improveAnswer{a.who, code, time.Since(st), body})
			mu.Unlock()
		}()
	}
	wg.Wait()
	return got
}
