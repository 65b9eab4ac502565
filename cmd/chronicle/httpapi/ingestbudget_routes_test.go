package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// budgetWait is the IngestWait of these tests' servers: a request the
// budget holds back is a 429 after it.
const budgetWait = 200 * time.Millisecond

// bodyRoutes are requests to every route that reads a body, each one its
// route would serve (or refuse for its content, never with a 429) while
// the budget has room.
var bodyRoutes = []struct{ method, path, contentType, body string }{
	{"POST", "/v1/events", "application/cloudevents+json", string(loadEvent("budget-1"))},
	{"POST", "/v1/memories", "application/json", `{"title":"budget","content":"held back"}`},
	{"POST", "/v1/memories/m-1/feedback", "application/json", `{"outcome":"success"}`},
	{"POST", "/v1/workflows/wf-1/updates", "application/json", `{"channel":"c","value":1}`},
	{"POST", "/v1/workflows/wf-1/complete", "application/json", `{}`},
	{"POST", "/v1/workflows/suggest", "application/json", `{"goal":"g"}`},
	{"POST", "/v1/workflows/suggest/feedback", "application/json", `{"suggestion_id":"s"}`},
	{"POST", "/v1/dags", "application/json", `{"tasks":[]}`},
	{"POST", "/v1/searches/ts-1/resume", "application/json", `{"decision":"continue"}`},
	{"POST", "/v1/sessions/s-1/improve", "application/json", `{}`},
	{"POST", "/mcp", "application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
}

// send sends one request of bodyRoutes' kind to base and returns its
// status, Retry-After and body.
func send(t *testing.T, base, method, path, contentType, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// check429 fails t unless code, retryAfter and body are the ingest
// budget's 429: Retry-After 1, index -1, pointer / and a reason naming
// the budget and that nothing was written, as POST /v1/events' has been.
func check429(t *testing.T, what string, code int, retryAfter string, body []byte) {
	t.Helper()
	if code != http.StatusTooManyRequests {
		t.Errorf("%s with the ingest budget held: %d %s, want 429", what, code, body)
		return
	}
	if retryAfter != strconv.Itoa(httpapi.IngestRetryAfter) {
		t.Errorf("%s: 429's Retry-After %q, want %d", what, retryAfter, httpapi.IngestRetryAfter)
	}
	var eb struct {
		Error   string `json:"error"`
		Index   *int   `json:"index"`
		Pointer string `json:"pointer"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(body, &eb); err != nil || eb.Index == nil || *eb.Index != -1 || eb.Pointer != "/" ||
		!strings.Contains(eb.Reason, "ingest budget") || !strings.Contains(eb.Reason, "(IngestBudget)") || !strings.Contains(eb.Reason, "nothing was written") ||
		eb.Error != "body: "+eb.Reason {
		t.Errorf("%s: 429's body %s: want POST /v1/events' shape, index -1, pointer / and a reason naming the ingest budget and that nothing was written", what, body)
	}
}

// Every route that reads a body shares POST /v1/events' ingest budget:
// while it is held, each answers 429 with Retry-After naming the budget,
// in the shape POST /v1/events has, and serves again once it is given
// back. Before, only POST /v1/events was budgeted, and 128 clients could
// hold 4 MiB each through the others.
func TestIngestBudgetCoversEveryBodyRoute(t *testing.T) {
	p := loadPipeline(t)
	s := &httpapi.Server{P: p, IngestWait: budgetWait}
	srv := httptest.NewServer(conforming(t, s.Handler()))
	defer srv.Close()

	release := s.HoldIngestBudget(httpapi.DefaultIngestBudget)
	for _, rt := range bodyRoutes {
		code, ra, body := send(t, srv.URL, rt.method, rt.path, rt.contentType, rt.body)
		check429(t, rt.method+" "+rt.path, code, ra, body)
	}
	release()
	for _, rt := range bodyRoutes {
		if code, _, body := send(t, srv.URL, rt.method, rt.path, rt.contentType, rt.body); code == http.StatusTooManyRequests {
			t.Errorf("%s %s with the budget given back: %d %s, want its route's answer", rt.method, rt.path, code, body)
		}
	}
}

// A GET takes nothing from the budget and is never held back by it, nor
// is a request without a body, while the same routes' writes with a body
// are answered 429.
func TestIngestBudgetLeavesGETAndEmptyBodiesAlone(t *testing.T) {
	p := loadPipeline(t)
	s := &httpapi.Server{P: p, IngestWait: budgetWait}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	release := s.HoldIngestBudget(httpapi.DefaultIngestBudget)
	defer release()

	// the budget is held: a write with a body waits and is refused
	code, ra, body := send(t, srv.URL, "POST", "/v1/workflows/wf-1/updates", "application/json", `{"channel":"c","value":1}`)
	check429(t, "POST /v1/workflows/wf-1/updates", code, ra, body)

	for _, path := range []string{"/v1/whoami", "/v1/workflows/wf-1", "/v1/memories/search?query=x", "/healthz", "/openapi.json"} {
		start := time.Now()
		code, _, body := send(t, srv.URL, "GET", path, "", "")
		if code == http.StatusTooManyRequests || time.Since(start) >= budgetWait {
			t.Errorf("GET %s with the ingest budget held: %d after %v %s, want its answer at once", path, code, time.Since(start), body)
		}
	}
	// Content-Length: 0 — the route's own refusal of an empty body
	code, _, body = send(t, srv.URL, "POST", "/v1/workflows/wf-1/updates", "application/json", "")
	if code == http.StatusTooManyRequests {
		t.Errorf("POST /v1/workflows/wf-1/updates without a body with the ingest budget held: %d %s, want the route's own answer", code, body)
	}
}

// metricValue is the value of one series (name and labels, as the text
// format writes them) at GET /metrics of base, -1 when it is absent.
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f
		}
	}
	return -1
}

// waitMetric waits (at most 10 s) for series to read want.
func waitMetric(t *testing.T, base, series string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := metricValue(t, base, series)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", series, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The budget's series: its size, the bytes held by a body still arriving
// on POST /v1/memories (its Content-Length, until it goes), and the 429s
// by route pattern, at 0 for every body route from the start.
func TestIngestBudgetMetricsMove(t *testing.T) {
	p := loadPipeline(t)
	s := &httpapi.Server{P: p, IngestWait: budgetWait}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	const (
		held     = "chronicle_ingest_budget_held_bytes"
		limit    = "chronicle_ingest_budget_limit_bytes"
		memories = `chronicle_ingest_budget_rejections_total{route="POST /v1/memories"}`
		events   = `chronicle_ingest_budget_rejections_total{route="POST /v1/events"}`
		mcp      = `chronicle_ingest_budget_rejections_total{route="/mcp"}`
	)
	if got := metricValue(t, srv.URL, limit); got != httpapi.DefaultIngestBudget {
		t.Errorf("%s = %v, want %d", limit, got, httpapi.DefaultIngestBudget)
	}
	for _, series := range []string{held, memories, events, mcp} {
		if got := metricValue(t, srv.URL, series); got != 0 {
			t.Errorf("before any request: %s = %v, want 0", series, got)
		}
	}

	// a body that declares 1 MiB and stops after its first byte holds
	// 1 MiB while it arrives
	const size = 1 << 20
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // on a failure too: srv.Close waits for its handler
	if _, err := fmt.Fprintf(c, "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", size); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, srv.URL, held, size)
	_ = c.Close()
	waitMetric(t, srv.URL, held, 0)

	release := s.HoldIngestBudget(httpapi.DefaultIngestBudget)
	code, ra, body := send(t, srv.URL, "POST", "/v1/memories", "application/json", `{"title":"budget","content":"held back"}`)
	check429(t, "POST /v1/memories", code, ra, body)
	if got := metricValue(t, srv.URL, held); got != httpapi.DefaultIngestBudget {
		t.Errorf("with the budget held: %s = %v, want %d", held, got, httpapi.DefaultIngestBudget)
	}
	if got := metricValue(t, srv.URL, memories); got != 1 {
		t.Errorf("after one 429 of POST /v1/memories: %s = %v, want 1", memories, got)
	}
	if got := metricValue(t, srv.URL, events); got != 0 {
		t.Errorf("after one 429 of POST /v1/memories: %s = %v, want 0", events, got)
	}
	release()
	if got := metricValue(t, srv.URL, held); got != 0 {
		t.Errorf("with the budget given back: %s = %v, want 0", held, got)
	}
}

// A small body is not held back by large ones: with the budget's main
// part held (by large bodies, or large waiters queued in it), a 40-byte
// POST /v1/memories takes its room in the reserve at once, while a body
// above 64 KiB still waits in main's queue and is a 429. Before, bodies
// waited in one queue in order: a single event sent among 24 clients'
// 3.9 MB batches was answered after 5 s at the median, or 429.
func TestIngestBudgetReserveLetsSmallBodiesPass(t *testing.T) {
	p := loadPipeline(t)
	s := &httpapi.Server{P: p, IngestWait: budgetWait}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	release := s.HoldIngestBudget(httpapi.DefaultIngestBudget - httpapi.DefaultIngestBudget/32)
	defer release()

	start := time.Now()
	code, _, body := send(t, srv.URL, "POST", "/v1/memories", "application/json", `{"title":"small","content":"passes"}`)
	if code == http.StatusTooManyRequests || code >= 500 {
		t.Errorf("a small POST /v1/memories with the budget's main part held: %d after %v %s, want its answer (the reserve's room)", code, time.Since(start), body)
	}
	large := `{"title":"large","content":"` + strings.Repeat("x", 80<<10) + `"}`
	code, ra, body := send(t, srv.URL, "POST", "/v1/memories", "application/json", large)
	check429(t, "an 80 KiB POST /v1/memories with the budget's main part held", code, ra, body)
}

// An /mcp tool's call of the API, made in process within its /mcp
// request, takes no room of its own: the /mcp body's room is its. With
// the budget held but for the /mcp body's bytes, memory_record (POST
// /v1/memories in process) records the memory; weighed again, it waited
// for room the /mcp request itself held and was a 429.
func TestIngestBudgetWeighsAnMCPToolCallOnce(t *testing.T) {
	p := loadPipeline(t)
	s := &httpapi.Server{P: p, IngestWait: budgetWait}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"weighed once","description":"d","content":"c","outcome":"success"}}}`
	release := s.HoldIngestBudget(httpapi.DefaultIngestBudget - int64(len(call)))
	defer release()

	code, _, body := send(t, srv.URL, "POST", "/mcp", "application/json", call)
	if code != http.StatusOK || strings.Contains(string(body), `"isError":true`) || !strings.Contains(string(body), "memory recorded") {
		t.Fatalf("memory_record over /mcp with room for its body alone: %d %s, want the recorded memory", code, body)
	}
	// the budget is full now: another /mcp request is held back
	code, ra, body := send(t, srv.URL, "POST", "/mcp", "application/json", call+" ")
	check429(t, "a second /mcp request", code, ra, body)
}
