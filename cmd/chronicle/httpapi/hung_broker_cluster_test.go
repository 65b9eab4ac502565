package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
)

// TestHungBrokerHelperProcess is the `chronicle broker` that
// TestReadsBoundedWhileTheBrokerHangs stops with SIGSTOP, in a process of
// its own; it runs only as that test's child.
func TestHungBrokerHelperProcess(t *testing.T) {
	addr := os.Getenv("CHRONICLE_HUNG_BROKER_ADDR")
	if addr == "" {
		t.Skip("the helper process of TestReadsBoundedWhileTheBrokerHangs")
	}
	b, err := broker.Start(context.Background(), broker.Config{DataDir: os.Getenv("CHRONICLE_HUNG_BROKER_DIR"), Listen: addr, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {} // until killed
}

// loopbackAddr returns a loopback address (host:port) no listener holds
// now, for the broker process (a fixed port was taken by another run of
// the package's tests on the same machine, and the helper failed to bind).
func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startBrokerProcess runs a `chronicle broker` on addr in a child process
// (TestHungBrokerHelperProcess) and waits until it accepts connections.
// It is killed at cleanup (continued first, when stopped).
func startBrokerProcess(t *testing.T, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHungBrokerHelperProcess$", "-test.timeout", "10m")
	cmd.Env = append(os.Environ(), "CHRONICLE_HUNG_BROKER_ADDR="+addr, "CHRONICLE_HUNG_BROKER_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker process on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopProcess stops cmd's process (SIGSTOP) and waits until the kernel
// shows it stopped (state T in /proc/<pid>/stat).
func stopProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state …: comm may hold spaces, the state follows its ")"
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "T" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker process not stopped: %s", b)
		}
	}
}

// TestReadsBoundedWhileTheBrokerHangs: two members on a `chronicle
// broker` in a process of its own, which is then stopped (SIGSTOP: it
// accepts connections and never answers, as in an operator's
// walkthrough). For 40 s, rounds of concurrent reads on both members are
// each bounded by DescribeTimeout (2 s) and none is a false 404, and
// /healthz answers 503 "broker unreachable" within HealthTimeout (3 s);
// then GET /v1/sessions/{id}/events at the session's owner answers 503
// within SessionEventsTimeout (30 s) and the group lookup. Before,
// franz-go held the group's description and the lag query queued behind
// a connection attempt bounded by its own 10 s dial timeout, whatever
// their context said, and the description under the directory's lock:
// reads took 10 s (concurrent ones 7–10 s), /healthz 10 s, the session's
// events 32–50 s.
func TestReadsBoundedWhileTheBrokerHangs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	addr := loopbackAddr(t)
	bp := startBrokerProcess(t, addr)
	m1 := startMember(ctx, t, "m1", []string{addr}, time.Second)
	m2 := startMember(ctx, t, "m2", []string{addr}, time.Second)
	waitCluster(t, []*member{m1, m2})
	var ids []string
	for i := 0; i < 8; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitCluster(t, []*member{m1, m2})
	ms := []*member{m1, m2}
	for _, m := range ms {
		for _, id := range ids {
			if code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id)); code != 200 {
				t.Fatalf("before: %s GET %s: %d %s", m.name, id, code, body)
			}
		}
	}

	// per member, one session whose partition it owned before the broker
	// hung (in its store) and one it did not: what the writes below ask
	// about (all eight, one after the other, each waiting out the publish
	// timeout, took two of this test's 3.3 minutes)
	probes := map[*member][]string{}
	for _, m := range ms {
		var owned, other []string
		for _, id := range ids {
			if ownsSession(m, id) {
				owned = append(owned, id)
			} else {
				other = append(other, id)
			}
		}
		probes[m] = slices.Concat(owned[:min(len(owned), 1)], other[:min(len(other), 1)])
	}

	stopProcess(t, bp)
	stopped := time.Now()
	bound := httpapi.DescribeTimeout + 700*time.Millisecond
	var mu sync.Mutex
	var slowest, slowestHealth time.Duration
	var reads, healths, over, healthOver int
	var slowestScrape time.Duration
	var scrapes, scrapeOver int
	for round := 0; time.Since(stopped) < 40*time.Second; round++ {
		var wg sync.WaitGroup
		for _, m := range ms {
			for _, id := range ids[round%2*4 : round%2*4+4] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st := time.Now()
					code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id))
					el := time.Since(st)
					mu.Lock()
					defer mu.Unlock()
					reads++
					slowest = max(slowest, el)
					if el > bound {
						if over++; over <= 3 {
							t.Logf("%.1f s after the stop: %s GET %s: %d in %v", time.Since(stopped).Seconds(), m.name, id, code, el)
						}
					}
					if code == 404 {
						t.Errorf("%s GET %s while the broker hangs: false 404 %s", m.name, id, body)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := time.Now()
				code, body, _ := fetch(t, m.srv.URL, "", "/healthz")
				el := time.Since(st)
				mu.Lock()
				defer mu.Unlock()
				healths++
				slowestHealth = max(slowestHealth, el)
				if code != 503 || el > httpapi.HealthTimeout+700*time.Millisecond {
					if healthOver++; healthOver <= 3 {
						t.Logf("%.1f s after the stop: %s /healthz: %d in %v: %s", time.Since(stopped).Seconds(), m.name, code, el, body)
					}
				}
			}()
			// a scrape: what could be collected, the lag gauges bounded
			// by their 2 s (it took 10 s: franz-go held the lag query)
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := time.Now()
				code, body, _ := fetch(t, m.srv.URL, "", "/metrics")
				el := time.Since(st)
				mu.Lock()
				defer mu.Unlock()
				scrapes++
				slowestScrape = max(slowestScrape, el)
				if code != 200 || el > 2*time.Second+700*time.Millisecond {
					if scrapeOver++; scrapeOver <= 3 {
						t.Logf("%.1f s after the stop: %s /metrics: %d in %v: %.200s", time.Since(stopped).Seconds(), m.name, code, el, body)
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(httpapi.DirectoryTTL + 100*time.Millisecond) // the cache gone stale
	}
	t.Logf("%d reads, slowest %v, %d over %v; %d /healthz, slowest %v, %d not 503 within %v", reads, slowest, over, bound, healths, slowestHealth, healthOver, httpapi.HealthTimeout)
	t.Logf("%d /metrics, slowest %v, %d not 200 within 2 s", scrapes, slowestScrape, scrapeOver)
	if over > 0 || healthOver > 0 || scrapeOver > 0 {
		t.Errorf("while the broker hangs: %d of %d reads took more than %v (slowest %v); %d of %d /healthz were not 503 within %v (slowest %v); %d of %d /metrics were not 200 within 2 s (slowest %v)",
			over, reads, bound, slowest, healthOver, healths, httpapi.HealthTimeout, slowestHealth, scrapeOver, scrapes, slowestScrape)
	}

	// writes and the memory bank's routes at a member that does not hold
	// them: a 503, neither a false 404 (a client drops a write so
	// answered) nor a 200 from a store that lacks the data (a cluster
	// walkthrough, 2026-11-30: feedback and a workflow's complete were
	// 404 "not found", a memory search an empty 200)
	for _, m := range ms {
		// the member's engine has lost its partitions by now: a session
		// in its store is answered (200, or 503 once its request is not
		// acknowledged), one that is not is unknown here
		for _, id := range probes[m] {
			if code, body := call(t, m.srv.URL, "tok-a", "POST", "/v1/sessions/"+url.PathEscape(id)+"/improve", map[string]any{}); code != 200 && code != 503 {
				t.Errorf("%s POST improve of %s while the broker hangs: %d %v, want 200 or 503", m.name, id, code, body)
			}
		}
		// a list: the whole of it or a 503, never one member's part as
		// the page (a cluster walkthrough: 101 of 200 sessions in 20
		// pages answered 200)
		if code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions?limit=500"); code != 503 {
			missing := 0
			for _, id := range ids {
				if !bytes.Contains(body, []byte(`"`+id+`"`)) {
					missing++
				}
			}
			if code != 200 || missing > 0 {
				t.Errorf("%s GET /v1/sessions while the broker hangs: %d without %d of the %d sessions, want 503 or all of them", m.name, code, missing, len(ids))
			}
		}
		if !ownsPartition(m, events.TopicMemories, 0) {
			if code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/memories/search?query=q"); code != 503 {
				t.Errorf("%s memory search without chronicle.memories/0 while the broker hangs: %d %s, want 503", m.name, code, body)
			}
		}
	}

	// at the session's owner (a forward is cut at the forward timeout)
	owner := m1
	part := int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicSessions)).Partition(&kgo.Record{Key: []byte(events.EntityKey("project:a", ids[0]))}, 4))
	for _, op := range m2.p.Runner.Ownership().Partitions {
		if op.Topic == string(events.TopicSessions) && op.Partition == part {
			owner = m2
		}
	}
	st := time.Now()
	code, body, _ := fetch(t, owner.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(ids[0])+"/events")
	el := time.Since(st)
	t.Logf("%s GET /v1/sessions/%s/events: %d in %v: %s", owner.name, ids[0], code, el, body)
	if code != 503 || el > httpapi.SessionEventsTimeout+httpapi.DescribeTimeout+700*time.Millisecond {
		t.Errorf("session events while the broker hangs: %d in %v, want 503 within %v: %s", code, el, httpapi.SessionEventsTimeout+httpapi.DescribeTimeout, body)
	}

	// the broker goes on, so the members close promptly
	if err := bp.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// ownsPartition reports whether m's engine holds partition p of topic.
func ownsPartition(m *member, topic events.Topic, p int32) bool {
	for _, op := range m.p.Runner.Ownership().Partitions {
		if op.Topic == string(topic) && op.Partition == p {
			return true
		}
	}
	return false
}

// ownsSession reports whether m owns the sessions partition of id in
// project:a.
func ownsSession(m *member, id string) bool {
	part := int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicSessions)).Partition(&kgo.Record{Key: []byte(events.EntityKey("project:a", id))}, 4))
	for _, op := range m.p.Runner.Ownership().Partitions {
		if op.Topic == string(events.TopicSessions) && op.Partition == part {
			return true
		}
	}
	return false
}

// TestOutageViewOfAMemberServingForwardedReads: m2 answers only reads
// forwarded to it (which look nothing up) for longer than the group's
// session timeout (8 s here), then the broker hangs (SIGSTOP). A read sent
// to m2 for a session m1 owns is still routed by the last Stable view,
// not a false 404 from m2's store: the forwarded reads kept m2's view of
// the group fresh. Before, the outage view lasted a session timeout from
// m2's last own lookup, so m2 answered from its store at once (an
// operator's walkthrough: 404 "session not found" after 10 s).
func TestOutageViewOfAMemberServingForwardedReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := loopbackAddr(t)
	const sessionTimeout = 8 * time.Second
	bp := startBrokerProcess(t, addr)
	m1 := startMemberTimeout(ctx, t, "m1", []string{addr}, 5*time.Second, sessionTimeout)
	m2 := startMemberTimeout(ctx, t, "m2", []string{addr}, 5*time.Second, sessionTimeout)
	waitCluster(t, []*member{m1, m2})
	var onM1, onM2 []string
	for i := 0; i < 8; i++ {
		envs, id := sessionIn(t, i, "project:a", "s3cret")
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		switch {
		case ownsSession(m1, id):
			onM1 = append(onM1, id)
		case ownsSession(m2, id):
			onM2 = append(onM2, id)
		}
	}
	if len(onM1) == 0 || len(onM2) == 0 {
		t.Fatalf("sessions on m1 %v, on m2 %v: want some on each", onM1, onM2)
	}
	waitCluster(t, []*member{m1, m2})
	if code, body, _ := fetch(t, m2.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(onM1[0])); code != 200 {
		t.Fatalf("m2 GET %s: %d %s", onM1[0], code, body)
	}
	// m2 serves forwarded reads only, past a session timeout
	for st := time.Now(); time.Since(st) < sessionTimeout+2*time.Second; time.Sleep(300 * time.Millisecond) {
		if code, body, by := fetch(t, m1.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(onM2[0])); code != 200 || by == "" {
			t.Fatalf("m1 GET %s (m2's): %d by %q %s", onM2[0], code, by, body)
		}
	}

	stopProcess(t, bp)
	time.Sleep(httpapi.DirectoryTTL + 300*time.Millisecond) // m2's cached view gone stale: the read describes the group, in vain
	st := time.Now()
	code, body, by := fetch(t, m2.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(onM1[0]))
	t.Logf("broker stopped: m2 GET %s (m1's): %d in %v, served by %q: %.120s", onM1[0], code, time.Since(st), by, body)
	if code != 200 || by != m1.p.Runner.MemberID() {
		t.Errorf("m2 GET m1's session %s while the broker hangs: %d served by %q, want 200 from m1 (%s): %s", onM1[0], code, by, m1.p.Runner.MemberID(), body)
	}
	if err := bp.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// A learned stream notices a broker that stopped answering (SIGSTOP: its
// connections stay open) within about LearnedBrokerWait, then an
// EventSource's reconnect while the broker still hangs is a 200 event
// stream saying retry: and ending with an error event holding its cursor,
// so the client tries again by itself, and a client that did not ask for
// an event stream gets a 503 with Retry-After. Before, the stream ended up
// to 50 s after the stop (franz-go's ping outlived its deadline), and the
// reconnect got a 503 without Retry-After, on which an EventSource closes
// for good (a subscriber's walkthrough, 2026-12-01).
func TestLearnedStreamWhileTheBrokerHangs(t *testing.T) {
	const wait = 3 * time.Second
	oldKA, oldWait := httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait
	httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait = time.Second, wait
	t.Cleanup(func() { httpapi.LearnedKeepAlive, httpapi.LearnedBrokerWait = oldKA, oldWait })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := loopbackAddr(t)
	bp := startBrokerProcess(t, addr)
	m := startMember(ctx, t, "m1", []string{addr}, time.Second)
	waitCluster(t, []*member{m})
	req, _ := http.NewRequestWithContext(ctx, "GET", m.srv.URL+"/v1/learned/stream?from=end", nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, rd := openStreamRequest(t, req)
	defer resp.Body.Close()
	got := make(chan time.Time, 1)
	var last sseEvent
	go func() {
		for {
			ev, ok := rd.next()
			if !ok || ev.Event == "error" {
				last = ev
				got <- time.Now()
				return
			}
		}
	}()
	stopProcess(t, bp)
	stopped := time.Now()
	defer func() { _ = bp.Process.Signal(syscall.SIGCONT) }() // the members close promptly
	var at time.Time
	select {
	case at = <-got:
	case <-time.After(6 * wait):
		t.Fatalf("no error event %v after the broker stopped (LearnedBrokerWait %v)", 6*wait, wait)
	}
	took := at.Sub(stopped)
	t.Logf("error event %v after the broker stopped (LearnedBrokerWait %v)", took, wait)
	if last.Event != "error" || took > wait+2*time.Second {
		t.Fatalf("after %v: %+v; want an error event within about %v", took, last, wait)
	}
	// the EventSource's reconnect, with its cursor
	req, _ = http.NewRequestWithContext(ctx, "GET", m.srv.URL+"/v1/learned/stream", nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	req.Header.Set("Last-Event-ID", last.ID)
	resp2, rd2 := openStreamRequest(t, req)
	defer resp2.Body.Close()
	ev, ok := rd2.next()
	if !ok || ev.Event != "error" || ev.ID != last.ID || rd2.retry != httpapi.LearnedRetry {
		t.Fatalf("reconnect while the broker hangs: %+v (ok %v, retry %d); want an error event with id %q and retry: %d", ev, ok, rd2.retry, last.ID, httpapi.LearnedRetry)
	}
	if _, ok := rd2.next(); ok {
		t.Fatal("the reconnect's stream goes on after its error event")
	}
	// a client that asked for no event stream: a 503 saying when to retry
	req, _ = http.NewRequestWithContext(ctx, "GET", m.srv.URL+"/v1/learned/stream", nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	resp3, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp3.Body.Close()
	if resp3.StatusCode != 503 || resp3.Header.Get("Retry-After") == "" {
		t.Fatalf("a plain GET while the broker hangs: %d, Retry-After %q; want 503 with Retry-After", resp3.StatusCode, resp3.Header.Get("Retry-After"))
	}
}
