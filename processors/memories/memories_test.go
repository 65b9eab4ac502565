package memories_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// bank feeds events to the memory-bank processor through a real store.
type bank struct {
	t     *testing.T
	store *projections.Store
	off   int64
}

func newBank(t *testing.T) *bank {
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &bank{t: t, store: s}
}

func (b *bank) send(typ events.Type, at time.Time, scope string, data any) error {
	b.t.Helper()
	env, err := events.New(typ, "test", fmt.Sprintf("e%d", b.off), at, data)
	if err != nil {
		b.t.Fatal(err)
	}
	env.Scope = scope
	_, err = b.store.Apply(memories.Name, projections.Position{Topic: "chronicle.memories", Offset: b.off}, &env, memories.Processor{}.Apply)
	b.off++
	return err
}

func (b *bank) record(id, source, outcome string, at time.Time) {
	b.t.Helper()
	d := events.MemoryRecordedData{MemoryID: id, Title: "t " + id, Description: "d", Content: "c " + id, Outcome: outcome, Source: source}
	if source == "distilled" {
		d.SourceSession = "s1"
	}
	if err := b.send(events.MemoryRecorded, at, "project:a", d); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bank) signal(id, sig string, positive bool, at time.Time) {
	b.t.Helper()
	if err := b.send(events.MemoryFeedback, at, "project:a", events.MemoryFeedbackData{MemoryID: id, Signal: sig, Positive: positive}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bank) use(id string, n int, at time.Time) {
	b.t.Helper()
	for i := 0; i < n; i++ {
		if err := b.send(events.MemoryRetrieved, at, "project:a", map[string]any{"memory_id": id}); err != nil {
			b.t.Fatal(err)
		}
	}
}

func (b *bank) tick(at time.Time) {
	b.t.Helper()
	if err := b.send(events.ClockTick, at, "", map[string]any{"interval_seconds": 86400}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bank) get(id string) memories.Memory {
	b.t.Helper()
	m, ok, err := memories.Get(b.store, events.EntityKey("project:a", id))
	if err != nil || !ok {
		b.t.Fatalf("memory %s: %v %v", id, ok, err)
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestInitialConfidence(t *testing.T) {
	b := newBank(t)
	b.record("ds", "distilled", "success", t0)
	b.record("df", "distilled", "failure", t0)
	b.record("ex", "explicit", "success", t0)
	for id, want := range map[string]float64{"ds": 0.7, "df": 0.6, "ex": 0.8} {
		if c := b.get(id).Confidence; !near(c, want) {
			t.Errorf("%s: %v want %v", id, c, want)
		}
	}
}

// Hand-computed consensus cases (ReasoningBank design: below usage 3 a
// signal waits for a second agreeing one within 7 days; from usage 3 a
// signal applies alone).
func TestConsensus(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		name    string
		usage   int
		signals []struct {
			sig string
			pos bool
			at  time.Duration
		}
		want float64
	}{
		{name: "one signal, young memory: stored, no change", want: 0.8, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"explicit_feedback", true, day}}},
		{name: "two agreeing within 7 days: both deltas apply, 0.8+0.3+0.1 clamps to 1", want: 1.0, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"explicit_feedback", true, day}, {"task_completion", true, 3 * day}}},
		{name: "two negative agreeing: 0.8-0.2-0.05 = 0.55", want: 0.55, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"explicit_feedback", false, day}, {"task_completion", false, 2 * day}}},
		{name: "mixed polarity: no consensus, no change", want: 0.8, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"explicit_feedback", true, day}, {"explicit_feedback", false, 2 * day}}},
		{name: "agreeing but 8 days apart: no consensus", want: 0.8, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"code_stability", false, day}, {"code_stability", false, 9 * day}}},
		{name: "mixed then agreeing: +,-,+ → the two positives apply, 0.8+0.3+0.2 → 1", want: 1.0, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"explicit_feedback", true, day}, {"task_completion", false, 2 * day}, {"code_stability", true, 3 * day}}},
		{name: "usage 3: a single signal applies, 0.8-0.15 = 0.65", usage: 3, want: 0.65, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"code_stability", false, day}}},
		{name: "usage 2: first signal waits (usage→3), second applies alone: 0.8-0.05 = 0.75", usage: 2, want: 0.75, signals: []struct {
			sig string
			pos bool
			at  time.Duration
		}{{"explicit_feedback", true, day}, {"task_completion", false, 2 * day}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBank(t)
			b.record("m", "explicit", "success", t0)
			b.use("m", c.usage, t0)
			for _, s := range c.signals {
				b.signal("m", s.sig, s.pos, t0.Add(s.at))
			}
			if got := b.get("m").Confidence; !near(got, c.want) {
				t.Fatalf("confidence %v, want %v", got, c.want)
			}
		})
	}
}

// Decay: −0.05 per 30-day month of tick time, from the first tick the
// memory sees. The first tick (at t0) starts the clock and changes
// nothing; ticks at 30, 60 and 90 days take a distilled success (0.7) to
// 0.65, 0.60, 0.55; a tick earlier than the last decay changes nothing.
func TestDecayOverThreeMonths(t *testing.T) {
	b := newBank(t)
	b.record("m", "distilled", "success", t0.AddDate(-2, 0, 0)) // the recording's time is not the clock
	b.tick(t0)
	if m := b.get("m"); m.Confidence != 0.7 || m.DecayClock == "" || m.Changes != 1 {
		t.Fatalf("first tick: %+v, want confidence 0.7, the clock started, no change", m)
	}
	for i, want := range []float64{0.65, 0.60, 0.55} {
		b.tick(t0.Add(time.Duration(i+1) * memories.Month))
		if got := b.get("m").Confidence; !near(got, want) {
			t.Fatalf("after %d months: %v, want %v", i+1, got, want)
		}
	}
	b.tick(t0.Add(memories.Month)) // a late tick from the past
	if got := b.get("m").Confidence; !near(got, 0.55) {
		t.Fatalf("a past tick changed confidence to %v", got)
	}
	// half a month later: −0.025
	b.tick(t0.Add(3*memories.Month + memories.Month/2))
	if got := b.get("m").Confidence; !near(got, 0.525) {
		t.Fatalf("pro-rata decay: %v, want 0.525", got)
	}
}

// Prune below 0.3: a distilled failure (0.6) with usage 3 and two negative
// explicit feedbacks: 0.6-0.2 = 0.4, then 0.2 → pruned, one memory.pruned
// event; it stays in history. Pruned is final: later signals, negative or
// positive, are recorded as ignored and move nothing (a positive one used
// to raise a pruned memory's confidence to 0.4 while it stayed pruned).
func TestPruneIsFinal(t *testing.T) {
	b := newBank(t)
	b.record("m", "distilled", "failure", t0)
	b.use("m", 3, t0)
	b.signal("m", "explicit_feedback", false, t0.Add(time.Hour))
	if m := b.get("m"); !near(m.Confidence, 0.4) || m.Pruned {
		t.Fatalf("after one negative: %+v", m)
	}
	b.signal("m", "explicit_feedback", false, t0.Add(2*time.Hour))
	m := b.get("m")
	if !near(m.Confidence, 0.2) || !m.Pruned || m.PrunedAt == "" {
		t.Fatalf("after two negatives: %+v", m)
	}
	b.signal("m", "explicit_feedback", false, t0.Add(3*time.Hour))
	b.signal("m", "explicit_feedback", true, t0.Add(4*time.Hour))
	if m := b.get("m"); !near(m.Confidence, 0.2) || !m.Pruned {
		t.Fatalf("signals after the prune moved it: %+v", m)
	}
	changes, signals, err := memories.History(b.store, events.EntityKey("project:a", "m"))
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, c := range changes {
		reasons = append(reasons, c.Reason)
	}
	want := `["created","signal","signal","pruned","ignored: pruned","ignored: pruned"]`
	if got, _ := json.Marshal(reasons); string(got) != want {
		t.Fatalf("history %s, want %s", got, want)
	}
	if len(signals) != 2 || !signals[1].Applied {
		t.Fatalf("signals %+v; want the two applied before the prune only", signals)
	}
	// decay skips pruned memories
	b.tick(t0.Add(5 * memories.Month))
	b.tick(t0.Add(6 * memories.Month))
	if m := b.get("m"); !near(m.Confidence, 0.2) || len(changes) != b.get("m").Changes {
		t.Fatalf("tick touched a pruned memory: %+v", m)
	}
}

func TestClamp(t *testing.T) {
	for _, c := range [][2]float64{{1.2, 1}, {-0.1, 0}, {0.7 + 0.1, 0.8}, {0.30000000001, 0.3}} {
		if got := memories.Clamp(c[0]); got != c[1] {
			t.Errorf("Clamp(%v) = %v, want %v", c[0], got, c[1])
		}
	}
}

// Equal title and content in one scope merge: evidence and source sessions
// grow, no second memory. Another scope keeps its own.
func TestDuplicatesMerge(t *testing.T) {
	b := newBank(t)
	d := events.MemoryRecordedData{MemoryID: "a", Title: "Confirm first", Description: "d1", Content: "List   the details.", Outcome: "success", Source: "explicit"}
	if err := b.send(events.MemoryRecorded, t0, "project:a", d); err != nil {
		t.Fatal(err)
	}
	d.MemoryID, d.Title, d.Content, d.Description = "b", "confirm FIRST", "list the details.", "d2"
	if err := b.send(events.MemoryRecorded, t0, "project:a", d); err != nil {
		t.Fatal(err)
	}
	d.MemoryID = "c"
	if err := b.send(events.MemoryRecorded, t0, "project:b", d); err != nil {
		t.Fatal(err)
	}
	if m := b.get("a"); m.Evidence != 2 || m.UsageCount != 1 {
		t.Fatalf("merged memory %+v", m)
	}
	if _, ok, _ := memories.Get(b.store, events.EntityKey("project:a", "b")); ok {
		t.Fatal("duplicate created a second memory")
	}
	if m, ok, _ := memories.Get(b.store, events.EntityKey("project:b", "c")); !ok || m.Evidence != 1 {
		t.Fatalf("other scope: %v %+v", ok, m)
	}
	st, _ := memories.ComputeStats(b.store)
	if st.Memories != 2 || st.DuplicatesMerged != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Issue 9, defect C: feedback and usage events of one scope naming another
// scope's memory id are rejected (dead-lettered by the runner) and leave
// that memory unchanged; the same id in the other scope is another memory.
func TestFeedbackNeverCrossesScopes(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	for i := 0; i < 4; i++ {
		err := b.send(events.MemoryFeedback, t0.Add(time.Duration(i)*time.Minute), "project:b", events.MemoryFeedbackData{MemoryID: "m", Signal: "explicit_feedback", Positive: false})
		if !errors.Is(err, memories.ErrUnknownMemory) {
			t.Fatalf("feedback %d from project:b on project:a's memory: %v, want ErrUnknownMemory", i, err)
		}
	}
	if err := b.send(events.MemoryRetrieved, t0, "project:b", map[string]any{"memory_id": "m"}); !errors.Is(err, memories.ErrUnknownMemory) {
		t.Fatalf("usage from project:b: %v", err)
	}
	if m := b.get("m"); m.Confidence != 0.8 || m.Pruned || m.UsageCount != 0 || m.Signals != 0 {
		t.Fatalf("project:a's memory changed: %+v", m)
	}
	// project:b squats the id: a memory of its own, project:a's untouched
	d := events.MemoryRecordedData{MemoryID: "m", Title: "squat", Description: "d", Content: "other", Outcome: "failure", Source: "explicit"}
	if err := b.send(events.MemoryRecorded, t0, "project:b", d); err != nil {
		t.Fatal(err)
	}
	if m := b.get("m"); m.Title != "t m" || m.Scope != "project:a" {
		t.Fatalf("project:a's memory after the squat: %+v", m)
	}
	scopes, err := memories.Scopes(b.store, "m")
	if err != nil || len(scopes) != 2 || scopes[0] != "project:a" || scopes[1] != "project:b" {
		t.Fatalf("scopes of m: %v %v", scopes, err)
	}
}

// Feedback or a retrieval naming a memory the scope does not hold is
// ErrUnknownMemory, pointing at /data/memory_id (the engine keeps the
// pointer in the dead letter; it had none: an analyst's walkthrough).
func TestFeedbackForUnknownMemoryIsAProcessingError(t *testing.T) {
	b := newBank(t)
	for typ, data := range map[events.Type]any{
		events.MemoryFeedback:  events.MemoryFeedbackData{MemoryID: "ghost", Signal: "task_completion", Positive: true},
		events.MemoryRetrieved: map[string]any{"memory_id": "ghost"},
	} {
		err := b.send(typ, t0, "project:a", data)
		if !errors.Is(err, memories.ErrUnknownMemory) {
			t.Fatalf("%s: got %v", typ, err)
		}
		var pe interface{ MemberPointer() string }
		if !errors.As(err, &pe) || pe.MemberPointer() != "/data/memory_id" {
			t.Fatalf("%s: %v names no member /data/memory_id", typ, err)
		}
	}
}

// A memory merged from many sessions keeps an exact count and names only
// its last MaxSourceSessions, so its row stays bounded; a session that
// records it again is not counted twice; Stats still counts every session.
func TestSourceSessionsBounded(t *testing.T) {
	b := newBank(t)
	n := memories.MaxSourceSessions + 50
	for i := range n + 1 {
		sid := fmt.Sprintf("s%03d", i%n) // the last one repeats s000
		d := events.MemoryRecordedData{MemoryID: fmt.Sprintf("m%d", i), Title: "same", Description: "d", Content: "same content", Outcome: "success", Source: "distilled", SourceSession: sid}
		if err := b.send(events.MemoryRecorded, t0, "project:a", d); err != nil {
			t.Fatal(err)
		}
	}
	m := b.get("m0")
	if m.SourceSessionCount != n || len(m.SourceSessions) != memories.MaxSourceSessions || m.Evidence != n+1 {
		t.Fatalf("count %d, listed %d, evidence %d; want %d, %d, %d", m.SourceSessionCount, len(m.SourceSessions), m.Evidence, n, memories.MaxSourceSessions, n+1)
	}
	if last := m.SourceSessions[len(m.SourceSessions)-1]; last != fmt.Sprintf("s%03d", n-1) {
		t.Fatalf("last source session %s", last)
	}
	st, err := memories.ComputeStats(b.store)
	if err != nil {
		t.Fatal(err)
	}
	if st.SessionsWithMemory != n {
		t.Fatalf("stats: %d sessions with a memory, want %d", st.SessionsWithMemory, n)
	}
}

// A memory.recorded.v1 with initial_confidence starts there (the PAIR
// improvement memory at final_score / 100); one without starts by source
// and outcome; a later recording of the same content is evidence and
// keeps the first confidence, whatever initial_confidence it carries.
func TestInitialConfidenceCarried(t *testing.T) {
	b := newBank(t)
	c := 0.9666666666
	d := events.MemoryRecordedData{MemoryID: "imp", Title: "PAIR improvement", Description: "d", Content: "c imp", Outcome: events.OutcomeSuccess,
		Source: "distilled", SourceSession: "s2", InitialConfidence: &c}
	if err := b.send(events.MemoryRecorded, t0, "project:a", d); err != nil {
		t.Fatal(err)
	}
	if got := b.get("imp").Confidence; got != 0.966667 {
		t.Fatalf("confidence %v, want 0.966667 (initial_confidence, 6 decimals)", got)
	}
	b.record("plain", "distilled", events.OutcomeSuccess, t0)
	if got := b.get("plain").Confidence; got != 0.7 {
		t.Fatalf("confidence without initial_confidence %v, want 0.7", got)
	}
	other := 1.0
	d.MemoryID, d.SourceSession, d.InitialConfidence = "imp-again", "s3", &other
	if err := b.send(events.MemoryRecorded, t0.Add(time.Hour), "project:a", d); err != nil {
		t.Fatal(err)
	}
	if m := b.get("imp"); m.Confidence != 0.966667 || m.Evidence != 2 {
		t.Fatalf("after a merging recording: confidence %v evidence %d, want 0.966667 and 2", m.Confidence, m.Evidence)
	}
}

// Producers may not set initial_confidence: ParseProducerEvent rejects it
// naming the field; Chronicle's own parse (ParseEvent) accepts it.
func TestInitialConfidenceProducerRejected(t *testing.T) {
	c := 0.99
	env, err := events.New(events.MemoryRecorded, "producer", "m1", t0, events.MemoryRecordedData{MemoryID: "m1", Title: "t", Description: "d",
		Content: "c", Outcome: events.OutcomeSuccess, Source: "explicit", InitialConfidence: &c})
	if err != nil {
		t.Fatal(err)
	}
	env.Scope = "project:a"
	raw, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	var ve *events.ValidationError
	if _, err := events.ParseProducerEvent(raw); !errors.As(err, &ve) || ve.Pointer != "/data/initial_confidence" {
		t.Fatalf("producer event with initial_confidence: %v", err)
	}
	if _, err := events.ParseEvent(raw); err != nil {
		t.Fatalf("derived parse: %v", err)
	}
	bad := 1.5
	env2, _ := events.New(events.MemoryRecorded, "chronicle/pair", "m2", t0, events.MemoryRecordedData{MemoryID: "m2", Title: "t", Description: "d",
		Content: "c", Outcome: events.OutcomeSuccess, Source: "distilled", InitialConfidence: &bad})
	env2.Scope = "project:a"
	if err := events.Validate(&env2); err == nil || !strings.Contains(err.Error(), "initial_confidence") {
		t.Fatalf("initial_confidence 1.5: %v, want a schema error naming the field", err)
	}
}

// A distillation answer that does not parse is refused naming
// /data/raw_response (the engine keeps the pointer in the dead letter,
// which had none) and the session whose answer it was.
func TestUnparsableDistillationNamesTheMember(t *testing.T) {
	b := newBank(t)
	err := b.send(events.DistillationCompleted, t0, "project:a", map[string]any{
		"session_id": "s7", "extractor": "llm", "model": "m", "outcome": "failure", "raw_response": "I cannot help with that."})
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/data/raw_response" || !strings.Contains(ve.Reason, "session s7") {
		t.Fatalf("%v; want a refusal at /data/raw_response naming session s7", err)
	}
}
