package distill_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
)

func TestParseResponse(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, c := range []struct {
		name, raw string
		n         int
		err       string
	}{
		{"none", "NO_EXTRACTIONS", 0, ""},
		{"none with trailing text", "NO_EXTRACTIONS\nnothing reusable here", 0, ""},
		{"two", "Here you go.\n## Memory 1\n**Title**: A\n**Description**: when a\n**Content**: steps\n**Tags**: x, y\n**Outcome**: success\n\n## Memory 2\n**Title**: B\n**Description**: when b\n**Content**: 1. one\n2. two\n**Outcome**: Failure\n", 2, ""},
		{"four kept to three", strings.Repeat("## Memory\n**Title**: T\n**Description**: D\n**Content**: C\n**Outcome**: success\n", 4), 3, ""},
		{"missing content", "## Memory 1\n**Title**: A\n**Description**: d\n**Outcome**: success\n", 0, "**Content**"},
		{"bad outcome", "## Memory 1\n**Title**: A\n**Description**: d\n**Content**: c\n**Outcome**: maybe\n", 0, "not success or failure"},
		{"prose", "I think the agent did fine.", 0, "NO_EXTRACTIONS"},
		{"title clipped", "## Memory 1\n**Title**: " + long + "\n**Description**: d\n**Content**: c\n**Outcome**: success\n", 1, ""},
	} {
		mems, err := distill.ParseResponse(c.raw)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || len(mems) != c.n {
			t.Errorf("%s: %d memories, %v", c.name, len(mems), err)
			continue
		}
		for _, m := range mems {
			if utf8.RuneCountInString(m.Title) > distill.MaxTitle || m.Outcome == "" {
				t.Errorf("%s: %+v", c.name, m)
			}
		}
		if c.name == "two" && (mems[1].Outcome != "failure" || mems[1].Content != "1. one\n2. two" || len(mems[0].Tags) != 2) {
			t.Errorf("two: %+v", mems)
		}
	}
}

// The client retries 429/5xx with backoff (3 attempts), not other 4xx.
func TestLLMRetries(t *testing.T) {
	var calls atomic.Int32
	codes := []int{503, 429, 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1) - 1
		if r.Header.Get("Authorization") != "Bearer k3y" {
			http.Error(w, "no key", 401)
			return
		}
		if c := codes[min(int(n), len(codes)-1)]; c != 200 {
			http.Error(w, "busy", c)
			return
		}
		w.Write([]byte(`{"choices":[{"message":{"content":"NO_EXTRACTIONS"}}]}`))
	}))
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "k3y")
	// OnRetry hears of each attempt tried again, with its error (a hung
	// endpoint kept a command silent: a walkthrough)
	var retried []string
	llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL, Model: "m", APIKeyEnv: "TEST_LLM_KEY", InitialBackoff: time.Millisecond, RatePerSecond: 1000,
		OnRetry: func(err error, wait time.Duration) { retried = append(retried, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := llm.Complete(context.Background(), "hi")
	if err != nil || got != "NO_EXTRACTIONS" || calls.Load() != 3 {
		t.Fatalf("%q %v after %d calls", got, err, calls.Load())
	}
	if len(retried) != 2 || !strings.Contains(retried[0], "attempt 1:") || !strings.Contains(retried[0], "503") || !strings.Contains(retried[1], "429") {
		t.Fatalf("OnRetry heard %q; want attempts 1 (503) and 2 (429)", retried)
	}
	calls.Store(0)
	t.Setenv("TEST_LLM_KEY", "wrong")
	llm, _ = distill.NewLLM(distill.LLMConfig{URL: srv.URL, Model: "m", APIKeyEnv: "TEST_LLM_KEY", InitialBackoff: time.Millisecond, RatePerSecond: 1000})
	if _, err := llm.Complete(context.Background(), "hi"); err == nil || !strings.Contains(err.Error(), "401") || calls.Load() != 1 {
		t.Fatalf("401 must not be retried: %v after %d calls", err, calls.Load())
	}
	if _, err := distill.NewLLM(distill.LLMConfig{Model: "m"}); err == nil || !strings.Contains(err.Error(), "URL") {
		t.Fatalf("missing URL: %v", err)
	}
}

// The deterministic extractor on the real tau-bench sessions: a strategy
// for every session that meets its criteria, 1-3 anti-patterns for the
// others, within the limits, specific to the session's tools.
func TestDeterministicOnTaubench(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	withMemory, total := 0, 0
	ids := map[string]bool{}
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		in, err := flux.InputFromEvents(envs)
		if err != nil {
			t.Fatal(err)
		}
		s := distill.NewSession(in, flux.Evaluate(in))
		mems, err := distill.Deterministic{}.Extract(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(mems) > 3 {
			t.Fatalf("%d memories", len(mems))
		}
		if len(mems) > 0 {
			withMemory++
		}
		for _, m := range mems {
			total++
			ids[distill.MemoryID("project:taubench-airline", m.Title, m.Content)] = true
			if m.Title == "" || utf8.RuneCountInString(m.Title) > 50 || m.Description == "" || utf8.RuneCountInString(m.Description) > 200 || m.Content == "" {
				t.Fatalf("limits: %+v", m)
			}
			if m.Outcome != s.Outcome {
				t.Fatalf("outcome %s for a %s session", m.Outcome, s.Outcome)
			}
			if s.Outcome == "success" && !strings.HasPrefix(m.Title, "Strategy: ") || s.Outcome == "failure" && !strings.HasPrefix(m.Title, "Avoid: ") {
				t.Fatalf("title %q", m.Title)
			}
		}
	}
	t.Logf("%d sessions with memories, %d memories, %d distinct", withMemory, total, len(ids))
	if withMemory < 190 || len(ids) >= total {
		t.Fatalf("%d sessions with memories, %d memories, %d distinct: want nearly all sessions covered and some duplicates merged", withMemory, total, len(ids))
	}
}

func BenchmarkDeterministic(b *testing.B) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	var sessions []distill.Session
	for _, r := range recs {
		envs, _ := taubench.Events(r)
		in, _ := flux.InputFromEvents(envs)
		sessions = append(sessions, distill.NewSession(in, flux.Evaluate(in)))
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := (distill.Deterministic{}).Extract(context.Background(), sessions[i%len(sessions)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sessions/s")
}

// The goal sentence, not a leading statement of the date or a role line
// (issue 11), and tau-bench's "You want …" sentence as before.
func TestTaskSummaryGoalSentence(t *testing.T) {
	for _, c := range []struct{ task, want string }{
		{"Your user id is mia_li_3668. You want to fly from New York to Seattle on May 20 (one way). You do not want to fly before 11am est.",
			"the user wants to fly from New York to Seattle on May 20 (one way)"},
		{"Today is 2024-05-15. The customer needs a refund for order #W123 because the item arrived broken.",
			"the customer needs a refund for order #W123 because the item arrived broken"},
		{"The current time is 10:00 EST. Which magazine was started first, Arthur's Magazine or First for Women?",
			"which magazine was started first, Arthur's Magazine or First for Women?"},
		{"Monday, May 6. Summarise the open incidents of the payments service.", "summarise the open incidents of the payments service"},
		{"You are a support agent. Reset the password of account 42.", "reset the password of account 42"},
		// an initial or a title ends no sentence (it was cut after "J.": a
		// walkthrough, 2026-11-30)
		{"How many different schools does the university, in which Andrew J. Elliot is a professor of psychology, have?",
			"how many different schools does the university, in which Andrew J. Elliot is a professor of psychology, have?"},
		{"Dr. Ada Lovelace wants the notes of her last lecture. Send them today.", "Dr. Ada Lovelace wants the notes of her last lecture"},
		{"The report is due. Plan B. Send it by mail.", "the report is due"},
		{"Which book did J.R.R. Tolkien write first? Answer briefly.", "which book did J.R.R. Tolkien write first?"},
		{"Which team did A.J. Elliot coach? Answer briefly.", "which team did A.J. Elliot coach?"},
		{"Gen. George Patton wants the sum of 2 and 3. Be brief.", "Gen. George Patton wants the sum of 2 and 3"},
	} {
		if got := distill.TaskSummary(c.task); got != c.want {
			t.Errorf("TaskSummary(%q) = %q, want %q", c.task, got, c.want)
		}
	}
}

// TaskSummary lowercases its first letter only for an ordinary
// capitalised word (the summary continues "When …" and PAIR's gap query):
// acronyms, all-capital words, "I" and a name the task writes capitalised
// within a sentence keep their capitals. Before, "SECRET ALPHASECRET book
// a flight" became "sECRET ALPHASECRET book a flight" (found by a new
// user's walkthrough). The bundled tau-bench goals all start "You…" or
// "Your…" and become "the user …"/"their …" as before.
func TestTaskSummaryKeepsCapitals(t *testing.T) {
	for _, c := range []struct{ task, want string }{
		{"SECRET ALPHASECRET book a flight", "SECRET ALPHASECRET book a flight"},
		{"NASA wants a launch report for the board.", "NASA wants a launch report for the board"},
		{"I want to book a flight to Paris.", "I want to book a flight to Paris"},
		{"I'd like a refund for order 7.", "I'd like a refund for order 7"},
		{"McDonald's wants to cater the event.", "McDonald's wants to cater the event"},
		{"Mia needs a refund. Please help Mia with it.", "Mia needs a refund"},
		{"Mia needs a refund. Help her, Mia is waiting.", "Mia needs a refund"},
		{"A customer needs a refund. Please help.", "a customer needs a refund"},
		{"Book a flight to Paris.", "book a flight to Paris"},
		{"Mia needs a refund. Mia is waiting.", "mia needs a refund"}, // no evidence of a name
		{"Your user id is mia_li_3668. You want to fly from New York to Seattle.", "the user wants to fly from New York to Seattle"},
	} {
		if got := distill.TaskSummary(c.task); got != c.want {
			t.Errorf("TaskSummary(%q) = %q, want %q", c.task, got, c.want)
		}
	}
}

// Advice comes from the session's own evidence: no strategy or
// anti-pattern of the 200 bundled sessions carries the old airline advice
// or any other sentence shared by every memory of its kind; and a session
// that could not be evaluated gives no memory.
func TestDeterministicAdviceFromEvidence(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	lastLines := map[string]map[string]int{}
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		in, err := flux.InputFromEvents(envs)
		if err != nil {
			t.Fatal(err)
		}
		mems, err := distill.Deterministic{}.Extract(context.Background(), distill.NewSession(in, flux.Evaluate(in)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			for _, banned := range []string{"Look up the records first", "confirm the exact change with the user", "against policy", "the user asked for"} {
				if strings.Contains(m.Content, banned) {
					t.Fatalf("memory %q carries domain advice %q:\n%s", m.Title, banned, m.Content)
				}
			}
			lines := strings.Split(strings.TrimSpace(m.Content), "\n")
			if lastLines[m.Outcome] == nil {
				lastLines[m.Outcome] = map[string]int{}
			}
			lastLines[m.Outcome][lines[len(lines)-1]]++
		}
	}
	for outcome, lines := range lastLines {
		if len(lines) < 5 {
			t.Errorf("%s memories end in only %d distinct lines: %v", outcome, len(lines), lines)
		}
	}

	// A session whose only weighted criterion is a judge one, without an
	// LLM: not_evaluated, nothing distilled.
	in := flux.Input{SessionID: "s", Task: "Write a haiku about the sea.", Output: "waves", Criteria: []events.Criterion{
		{ID: "j", Weight: 1, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"is a haiku"}}},
	}}
	ev := flux.Evaluate(in)
	if ev.Recommendation != events.NotEvaluated {
		t.Fatalf("recommendation %s, want not_evaluated", ev.Recommendation)
	}
	if mems, err := (distill.Deterministic{}).Extract(context.Background(), distill.NewSession(in, ev)); err != nil || len(mems) != 0 {
		t.Fatalf("distilled %d memories from a session that could not be evaluated (%v)", len(mems), err)
	}
}

// BenchmarkTaskSummary summarises the bundled sessions' task texts, one
// after the other (a completed session's pattern count, strategy and
// anti-patterns share one summary, Session.Summary).
func BenchmarkTaskSummary(b *testing.B) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		b.Fatal(err)
	}
	var tasks []string
	for _, r := range recs {
		envs, _ := taubench.Events(r)
		in, _ := flux.InputFromEvents(envs)
		tasks = append(tasks, in.Task)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		distill.TaskSummary(tasks[i%len(tasks)])
	}
}

// ClipWords never ends inside a word: the cut falls on a space or before a
// "(" in the second half of the limit, dangling separators go, and a
// string without such a break is cut as Clip cuts it.
func TestClipWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short enough", 50, "short enough"},
		{"  trimmed  ", 50, "trimmed"},
		{"Strategy: update_reservation_flights + cancel_reservation", 50, "Strategy: update_reservation_flights…"},
		{"When the user wants a refund: call update_reservation_flights(reservation_id=OWZ4XL)", 70, "When the user wants a refund: call update_reservation_flights…"},
		{"Pattern: get_user_details → get_reservation_details → cancel_reservation", 60, "Pattern: get_user_details → get_reservation_details…"},
		{"one, two, three, four, five, six", 20, "one, two, three…"},
		{"exactly ten", 11, "exactly ten"},
		{"supercalifragilisticexpialidocious", 10, "supercali…"}, // no break: as Clip
		{"When the user wants a refund: call update_reservation_flights(reservation_id=OWZ4XL)", 60, "When the user wants a refund: call…"},
		{"a supercalifragilisticexpialidocious", 10, "a superca…"},                                                     // the only break is in the first half: as Clip
		{"Avoid: wrong update_reservation_flights arguments", 50, "Avoid: wrong update_reservation_flights arguments"}, // 50: fits
		{"ümlaut wörter überall hier", 12, "ümlaut…"},
	} {
		got := distill.ClipWords(c.in, c.n)
		if got != c.want {
			t.Errorf("ClipWords(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if utf8.RuneCountInString(got) > c.n {
			t.Errorf("ClipWords(%q, %d) = %q: %d characters", c.in, c.n, got, utf8.RuneCountInString(got))
		}
	}
}

// A 429 with Retry-After is tried again no sooner than the server asked
// (capped at MaxRetryAfter). Before, the client retried after its own 1 s
// and 2 s whatever the header said, so a rate-limited endpoint asking for
// 10 s had every call fail within 3 s: the distiller's and the judge's
// evaluations dead-lettered, the PAIR revision written as an error.
func TestLLMHonoursRetryAfter(t *testing.T) {
	var calls atomic.Int32
	var times [3]time.Time
	ra := "1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1) - 1
		times[min(int(n), 2)] = time.Now()
		if n == 0 {
			w.Header().Set("Retry-After", ra)
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(`{"choices":[{"message":{"content":"NO_EXTRACTIONS"}}]}`))
	}))
	defer srv.Close()
	llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL, Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := llm.Complete(context.Background(), "hi"); err != nil || got != "NO_EXTRACTIONS" || calls.Load() != 2 {
		t.Fatalf("%q %v after %d calls", got, err, calls.Load())
	}
	if d := times[1].Sub(times[0]); d < 900*time.Millisecond {
		t.Fatalf("Retry-After: 1 was not waited for: second attempt %v after the 429", d)
	}
	// an HTTP date, and a wait above MaxRetryAfter is capped
	calls.Store(0)
	ra = time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	llm, _ = distill.NewLLM(distill.LLMConfig{URL: srv.URL, Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000, MaxRetryAfter: 200 * time.Millisecond})
	if _, err := llm.Complete(context.Background(), "hi"); err != nil || calls.Load() != 2 {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	if d := times[1].Sub(times[0]); d < 150*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("Retry-After an hour away, capped at 200ms: second attempt %v after the 429", d)
	}
}

// A failed call names the endpoint it asked, whatever the failure: an
// HTTP status and an answer that is no chat completion named only the
// model, where a refused connection named the URL (net/http's error).
func TestLLMErrorNamesTheEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, "500 Internal Server Error: boom"},
		{"malformed", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"choices": [`)) }, "answer is not a chat completion"},
	} {
		srv := httptest.NewServer(tc.h)
		llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL + "/v1/", Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000})
		if err != nil {
			t.Fatal(err)
		}
		_, err = llm.Complete(context.Background(), "hi")
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "POST "+srv.URL+"/v1/chat/completions: ") || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "model m after 3 attempts: ") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// An answer larger than MaxAnswerBytes fails at once, saying so: it was
// read cut at 4 MiB, called "not a chat completion" and asked for twice
// more (an LLM-failure walkthrough).
func TestLLMAnswerTooLarge(t *testing.T) {
	var calls atomic.Int32
	big := `{"choices":[{"message":{"content":"` + strings.Repeat("a", distill.MaxAnswerBytes) + `"}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Write([]byte(big))
	}))
	defer srv.Close()
	llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL + "/v1/", Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	_, err = llm.Complete(context.Background(), "hi")
	if err == nil || !strings.Contains(err.Error(), "larger than 4194304 bytes") || calls.Load() != 1 {
		t.Fatalf("%d calls: %v; want one call and an error saying the answer is too large", calls.Load(), err)
	}
}

// An empty, null or filtered content is no answer: it is retried and then
// an error naming the finish reason, never returned as the model's answer
// (it was logged as judge_raw "" and raw_response "", which the
// processors then dead-lettered: a walkthrough, 2026-11-30).
func TestLLMEmptyContentIsNoAnswer(t *testing.T) {
	for _, answer := range []string{
		`{"choices":[{"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`,
		`{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"length"}]}`,
		`{"choices":[{"message":{"role":"assistant","content":" \n"},"finish_reason":"stop"}]}`,
	} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Write([]byte(answer))
		}))
		llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL + "/v1", Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out, err := llm.Complete(context.Background(), "hi")
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "content is empty (finish_reason") || calls.Load() != 3 {
			t.Errorf("%s: %q, %v after %d calls; want an error after 3", answer, out, err, calls.Load())
		}
	}
}

// A body cut off (the connection closed before its Content-Length) is a
// read error, said so, not "not a chat completion" of the bytes that came.
func TestLLMCutAnswerSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte(`{"id": "x", "object": "chat.completion", "choices": [`))
	}))
	defer srv.Close()
	llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL + "/v1", Model: "m", InitialBackoff: time.Millisecond, RatePerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	_, err = llm.Complete(context.Background(), "hi")
	if err == nil || !strings.Contains(err.Error(), "reading the answer after") || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("%v; want a read error naming the unexpected EOF", err)
	}
}

// --llm-url must be an http(s) URL with a host and a valid port: "notaurl"
// and port 99999 started, and every call failed (a walkthrough).
func TestLLMConfigURL(t *testing.T) {
	for _, u := range []string{"notaurl", "ftp://x/v1", "http://127.0.0.1:99999/v1", "http:///v1", "127.0.0.1:8080"} {
		if err := (distill.LLMConfig{URL: u, Model: "m"}).Validate(); err == nil || !strings.Contains(err.Error(), "--llm-url") {
			t.Errorf("URL %q: %v, want an error naming --llm-url", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:11434/v1", "https://api.example.com/v1", "http://localhost/v1"} {
		if err := (distill.LLMConfig{URL: u, Model: "m"}).Validate(); err != nil {
			t.Errorf("URL %q: %v", u, err)
		}
	}
}

// An --llm-url refused names its user, never its password, whether it
// parses or not: the error printed it whole (a security walkthrough,
// 2026-12-05).
func TestLLMConfigURLErrorHidesThePassword(t *testing.T) {
	for _, u := range []string{"ftp://user:s3cret@host/v1", "http://user:s3cret@%zz/v1", "http://user:s3cret@127.0.0.1:99999/v1"} {
		err := (distill.LLMConfig{URL: u, Model: "m"}).Validate()
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "user:xxxxx@") {
			t.Errorf("URL %q: %v, want an error with the password replaced by xxxxx", u, err)
		}
	}
}

// A negative Timeout or InitialBackoff is refused naming the field: a
// negative Timeout reached http.Client as "no timeout".
func TestLLMConfigNegativeDurations(t *testing.T) {
	for _, c := range []struct {
		cfg   distill.LLMConfig
		field string
	}{
		{distill.LLMConfig{URL: "http://127.0.0.1:9/v1", Model: "m", Timeout: -time.Second}, "LLMConfig.Timeout"},
		{distill.LLMConfig{URL: "http://127.0.0.1:9/v1", Model: "m", InitialBackoff: -time.Millisecond}, "LLMConfig.InitialBackoff"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.field)
		}
		if _, err := distill.NewLLM(c.cfg); err == nil {
			t.Errorf("NewLLM(%+v) accepted it", c.cfg)
		}
	}
}

// Timeout bounds an attempt even with a caller-given HTTPClient that has
// none: a hung endpoint held the worker for ever.
func TestLLMTimeoutBoundsAGivenClient(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	llm, err := distill.NewLLM(distill.LLMConfig{URL: srv.URL + "/v1", Model: "m", Attempts: 2, InitialBackoff: time.Millisecond,
		RatePerSecond: 1000, Timeout: 150 * time.Millisecond, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := llm.Complete(context.Background(), "hi"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Fatalf("%v; want both attempts to end at their deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Complete still waiting after 10 s on a hung endpoint with Timeout 150 ms")
	}
}
