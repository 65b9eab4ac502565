package memories_test

import (
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
)

func (b *bank) signalFrom(id, source string, positive bool, at time.Time) {
	b.t.Helper()
	if err := b.send(events.MemoryFeedback, at, "project:a", events.MemoryFeedbackData{MemoryID: id, Signal: "task_completion", Positive: positive, Source: source}); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bank) retrieved(id string, data map[string]any, at time.Time) {
	b.t.Helper()
	data["memory_id"] = id
	if err := b.send(events.MemoryRetrieved, at, "project:a", data); err != nil {
		b.t.Fatal(err)
	}
}

// Two signals of one source never make consensus (issue 11: two clicks of
// one client 27 ms apart did): a young memory (0.8) stays at 0.8 after two
// of token:alice; token:bob's agreeing signal then applies alice's first
// and bob's (+0.1 each → 1.0), and alice's second is a repeat without a
// delta.
func TestConsensusNeedsDistinctSources(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	b.signalFrom("m", "token:alice", false, t0.Add(time.Hour))
	b.signalFrom("m", "token:alice", false, t0.Add(time.Hour+27*time.Millisecond))
	if m := b.get("m"); m.Confidence != 0.8 || m.UsageCount != 1 {
		t.Fatalf("after two signals of one source: confidence %v usage %d, want 0.8 and 1", m.Confidence, m.UsageCount)
	}
	b.signalFrom("m", "token:bob", false, t0.Add(2*time.Hour))
	m := b.get("m")
	if !near(m.Confidence, 0.7) || m.UsageCount != 2 {
		t.Fatalf("after bob agrees: confidence %v usage %d, want 0.8 − 2 × 0.05 = 0.7 and usage 2", m.Confidence, m.UsageCount)
	}
	_, signals, err := memories.History(b.store, events.EntityKey("project:a", "m"))
	if err != nil {
		t.Fatal(err)
	}
	if len(signals) != 3 || !signals[0].Applied || signals[0].Repeat || !signals[1].Applied || !signals[1].Repeat || !signals[2].Applied || signals[2].Repeat {
		t.Fatalf("signals %+v, want alice applied, alice repeat, bob applied", signals)
	}
}

// A task_completion signal without a source is counted by the session of
// its event (the sessionid attribute): two from one session wait.
func TestConsensusSessionOfEvent(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	for i := 0; i < 2; i++ {
		env, err := events.New(events.MemoryFeedback, "test", "fs"+string(rune('a'+i)), t0.Add(time.Duration(i)*time.Minute),
			events.MemoryFeedbackData{MemoryID: "m", Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope, env.SessionID = "project:a", "sess-1"
		if _, err := b.store.Apply(memories.Name, nextPos(b), &env, memories.Processor{}.Apply); err != nil {
			t.Fatal(err)
		}
	}
	if m := b.get("m"); m.Confidence != 0.8 {
		t.Fatalf("two task_completion signals of one session moved confidence to %v", m.Confidence)
	}
}

// Usage counts distinct sources (issue 11: three searches raised it to 3,
// after which one signal applied without consensus): three searches of
// one session raise it to 1, so a single signal still waits; other
// callers raise it to 4, after which a signal applies alone. A search is
// counted by its session when it has one, else by its caller. Retrievals
// without session or source count one each, as before.
func TestUsageCountsDistinctSources(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	for i := 0; i < 3; i++ {
		b.retrieved("m", map[string]any{"session_id": "s-1", "source": "token:alice"}, t0)
	}
	if u := b.get("m").UsageCount; u != 1 {
		t.Fatalf("three searches of one session: usage %d, want 1", u)
	}
	b.signalFrom("m", "token:alice", true, t0.Add(time.Minute))
	if c := b.get("m").Confidence; c != 0.8 {
		t.Fatalf("a single signal at usage 1 applied: %v", c)
	}
	b.retrieved("m", map[string]any{"source": "token:bob"}, t0)
	b.retrieved("m", map[string]any{"source": "token:bob"}, t0)
	b.retrieved("m", map[string]any{"source": "token:carol"}, t0)
	if u := b.get("m").UsageCount; u != 4 {
		t.Fatalf("session s-1 (three searches), token:alice (its signal), token:bob (two searches), token:carol: usage %d, want 4", u)
	}
	b.signalFrom("m", "token:dave", false, t0.Add(2*time.Minute))
	if c := b.get("m").Confidence; !near(c, 0.75) {
		t.Fatalf("at usage 3 a single signal applies alone: %v, want 0.75", c)
	}
	b.retrieved("m", map[string]any{}, t0)
	b.retrieved("m", map[string]any{}, t0)
	if u := b.get("m").UsageCount; u != 7 {
		t.Fatalf("two retrievals without source after usage 5 (dave's signal): %d, want 7", u)
	}
}

func nextPos(b *bank) projections.Position {
	p := projections.Position{Topic: "chronicle.memories", Offset: b.off}
	b.off++
	return p
}

// On a memory used by 3 sources or more a signal applies alone, but one
// source has one vote per polarity per 7 days (a walkthrough pruned a
// memory three distinct callers used with three clicks of one token in
// 104 ms): alice's second and third negatives are repeats, recorded
// without a delta; bob's negative and alice's positive apply; alice's
// negative 8 days after her first applies again.
func TestOneVotePerSourceOnAUsedMemory(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	for _, who := range []string{"token:alice", "token:bob", "token:carol"} {
		b.retrieved("m", map[string]any{"source": who}, t0)
	}
	for i := 0; i < 3; i++ {
		b.signalFrom("m", "token:alice", false, t0.Add(time.Hour+time.Duration(i)*35*time.Millisecond))
	}
	if c := b.get("m").Confidence; !near(c, 0.75) {
		t.Fatalf("three negatives of one source: confidence %v, want 0.8 − 0.05 = 0.75 (the two repeats change nothing)", c)
	}
	b.signalFrom("m", "token:bob", false, t0.Add(2*time.Hour))
	b.signalFrom("m", "token:alice", true, t0.Add(3*time.Hour))
	if c := b.get("m").Confidence; !near(c, 0.8) {
		t.Fatalf("bob's negative and alice's positive: confidence %v, want 0.75 − 0.05 + 0.1 = 0.8", c)
	}
	b.signalFrom("m", "token:alice", false, t0.Add(8*24*time.Hour+time.Hour))
	if c := b.get("m").Confidence; !near(c, 0.75) {
		t.Fatalf("alice's negative after 8 days: confidence %v, want 0.75", c)
	}
	changes, signals, err := memories.History(b.store, events.EntityKey("project:a", "m"))
	if err != nil {
		t.Fatal(err)
	}
	repeats := 0
	for _, c := range changes {
		if c.Reason == memories.ReasonRepeat {
			repeats++
		}
	}
	if len(signals) != 6 || !signals[1].Repeat || !signals[2].Repeat || signals[3].Repeat || signals[4].Repeat || signals[5].Repeat || repeats != 2 {
		t.Fatalf("signals %+v, %d repeat changes; want alice's 2nd and 3rd repeats (2 changes), the rest applied", signals, repeats)
	}
}

// A memory whose id extends another's ("mx/child", ids may hold "/") keeps
// its signals and history to itself: one signal on the child and one on
// "mx" made "mx"'s consensus (confidence 1.0 after one signal) and put the
// child's changes in "mx"'s history, since both scanned the prefix
// s/<key>/ (found by a tenant-isolation walkthrough).
func TestSignalsOfAnIDThatExtendsAnother(t *testing.T) {
	b := newBank(t)
	b.record("mx", "explicit", "success", t0)
	b.record("mx/child", "explicit", "success", t0)
	b.signalFrom("mx/child", "token:alice", true, t0.Add(time.Hour))
	b.signalFrom("mx", "token:admin", true, t0.Add(2*time.Hour))
	if m := b.get("mx"); m.Confidence != 0.8 {
		t.Fatalf("mx after its one signal: confidence %v, want 0.8 (no consensus yet)", m.Confidence)
	}
	if m := b.get("mx/child"); m.Confidence != 0.8 {
		t.Fatalf("mx/child after its one signal: confidence %v, want 0.8", m.Confidence)
	}
	changes, signals, err := memories.History(b.store, events.EntityKey("project:a", "mx"))
	if err != nil {
		t.Fatal(err)
	}
	if len(signals) != 1 || signals[0].Source != "token:admin" {
		t.Fatalf("mx's signals %+v, want admin's only", signals)
	}
	for _, c := range changes {
		if c.Author == "token:alice" {
			t.Fatalf("mx's history holds the child's change %+v", c)
		}
	}
}

// One vote per source and polarity counts 7 days on either side of an
// applied vote: signals each dated a moment before the source's last one
// (a producer's time on POST /v1/events, within the route's clock skew)
// were never "within 7 days" after it, since the window only looked
// back, and each applied: one token pruned a memory three sources used.
func TestOneVoteHoldsForAnEarlierDatedSignal(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	for _, who := range []string{"token:alice", "token:bob", "token:carol"} {
		b.retrieved("m", map[string]any{"source": who}, t0)
	}
	at := t0.Add(time.Hour)
	for i := 0; i < 4; i++ {
		b.signalFrom("m", "token:bob", false, at.Add(-time.Duration(i)*time.Second))
	}
	if m := b.get("m"); !near(m.Confidence, 0.75) || m.Pruned {
		t.Fatalf("four negatives of one source, each dated a second before the last: confidence %v pruned %v, want 0.75, not pruned", m.Confidence, m.Pruned)
	}
	b.signalFrom("m", "token:bob", false, at.Add(-8*24*time.Hour))
	if c := b.get("m").Confidence; !near(c, 0.7) {
		t.Fatalf("bob's negative dated 8 days before his vote: confidence %v, want 0.7 (outside the 7 days)", c)
	}
}

// Agreement is judged by the signals' times, either side: a signal that
// arrives after another but is dated before it (a producer's time, or two
// requests stamped concurrently) agrees with it. Before, only stored
// signals dated at or before the new one counted: alice's and bob's
// agreeing signals both stayed pending, and carol's then applied with
// them as if alone (a walkthrough, 2026-11-30).
func TestConsensusCountsASignalDatedBefore(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	b.signalFrom("m", "token:alice", false, t0.Add(2*time.Hour))
	b.signalFrom("m", "token:bob", false, t0.Add(time.Hour)) // arrives second, dated first
	if m := b.get("m"); !near(m.Confidence, 0.7) {
		t.Fatalf("after alice and bob agree: confidence %v, want 0.8 − 2 × 0.05 = 0.7", m.Confidence)
	}
	_, signals, err := memories.History(b.store, events.EntityKey("project:a", "m"))
	if err != nil {
		t.Fatal(err)
	}
	if len(signals) != 2 || !signals[0].Applied || signals[0].Repeat || !signals[1].Applied || signals[1].Repeat {
		t.Fatalf("signals %+v, want both applied", signals)
	}
}

// A recording with a memory's title and content but the other outcome is
// no evidence for it: the memory keeps its evidence and outcome, and its
// history lists the recording as "ignored: outcome differs". Before, it was
// merged as evidence (evidence 2, outcome success kept) and its outcome
// dropped without a word (a walkthrough, 2026-11-30).
func TestRecordingWithTheOtherOutcomeIsNoEvidence(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	b.record("m", "explicit", "failure", t0.Add(time.Hour))
	m := b.get("m")
	if m.Evidence != 1 || m.Outcome != "success" || m.Confidence != 0.8 {
		t.Fatalf("after a failure recording of the same title and content: evidence %d outcome %s confidence %v; want 1, success, 0.8", m.Evidence, m.Outcome, m.Confidence)
	}
	changes, _, err := memories.History(b.store, events.EntityKey("project:a", "m"))
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[1].Reason != memories.ReasonIgnoredOutcome {
		t.Fatalf("history %+v; want created, then %q", changes, memories.ReasonIgnoredOutcome)
	}
	b.record("m", "explicit", "success", t0.Add(2*time.Hour))
	if m := b.get("m"); m.Evidence != 2 {
		t.Fatalf("a recording with the same outcome: evidence %d, want 2", m.Evidence)
	}
}
