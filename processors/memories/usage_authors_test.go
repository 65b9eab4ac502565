package memories_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// lastReason is the reason of memory id's last history entry.
func (b *bank) lastReason(id string) string {
	b.t.Helper()
	changes, _, err := memories.History(b.store, events.EntityKey("project:a", id))
	if err != nil || len(changes) == 0 {
		b.t.Fatalf("history of %s: %v %v", id, changes, err)
	}
	return changes[len(changes)-1].Reason
}

// One token that searches as three sessions of its own is one user
// (issue 11 item 4, a known gap of the last closing note): GET
// /v1/memories/search?session_id= counts a search by its session once the
// session exists, and a token may start sessions itself, so token:mallory
// started three, searched once as each, lifted the memory's usage to 3 and
// then applied a single signal alone, without the consensus of 2 distinct
// sources. Usage still counts the three sessions (usage_count 3), but the
// single-signal rule counts who caused them: one author, so mallory's
// signal waits for consensus. Once two more callers used the memory (three
// authors) a signal of a fourth applies alone, as before.
func TestSessionsOfOneCallerAreOneUser(t *testing.T) {
	b := newBank(t)
	b.record("m", "explicit", "success", t0)
	for _, s := range []string{"mal-1", "mal-2", "mal-3"} {
		b.retrieved("m", map[string]any{"session_id": s, "source": "token:mallory"}, t0.Add(time.Minute))
	}
	if u := b.get("m").UsageCount; u != 3 {
		t.Fatalf("three sessions searched: usage %d, want 3 (usage counts sessions)", u)
	}
	b.signalFrom("m", "token:mallory", false, t0.Add(time.Hour))
	if m := b.get("m"); m.Confidence != 0.8 || b.lastReason("m") != "pending" {
		t.Fatalf("mallory's negative after searching as three sessions of her own: confidence %v (%s), want 0.8, pending: one caller made the usage, so one signal of hers is no consensus",
			m.Confidence, b.lastReason("m"))
	}
	// two other callers use it: three authors (mallory, bob, carol)
	b.retrieved("m", map[string]any{"source": "token:bob"}, t0.Add(2*time.Hour))
	b.retrieved("m", map[string]any{"session_id": "car-1", "source": "token:carol"}, t0.Add(2*time.Hour))
	b.signalFrom("m", "token:dave", true, t0.Add(3*time.Hour))
	if m := b.get("m"); !near(m.Confidence, 0.9) || b.lastReason("m") != "signal" {
		t.Fatalf("dave's positive once three callers used the memory: confidence %v (%s), want 0.8 + 0.1 = 0.9, applied alone", m.Confidence, b.lastReason("m"))
	}
}

// Recordings one token posts naming three sessions (memory.recorded.v1 on
// POST /v1/events with source_session; the route sets recorded_by to the
// token) merge as three sessions' usages, but their author is the token:
// its single signal still waits. Distilled merges (no recorded_by: the
// memory bank's own distiller, the demo's) and usages that name a session
// and no caller (producers writing to Kafka, logs written before usages
// had sources) count each session as a user, as before.
func TestRecordingsNamingSessionsCountTheirRecorder(t *testing.T) {
	b := newBank(t)
	rec := events.MemoryRecordedData{MemoryID: "m", Title: "t m", Description: "d", Content: "c m",
		Outcome: "success", Source: "explicit", RecordedBy: "token:mallory"}
	for i, s := range []string{"", "mal-1", "mal-2", "mal-3"} {
		rec.SourceSession = s
		if err := b.send(events.MemoryRecorded, t0.Add(time.Duration(i)*time.Second), "project:a", rec); err != nil {
			t.Fatal(err)
		}
	}
	if u := b.get("m").UsageCount; u != 3 {
		t.Fatalf("three merges naming sessions: usage %d, want 3", u)
	}
	b.signalFrom("m", "token:mallory", false, t0.Add(time.Hour))
	if c := b.get("m").Confidence; c != 0.8 {
		t.Fatalf("mallory's negative after her three merges naming sessions: confidence %v, want 0.8 (pending)", c)
	}

	// distilled merges of three sessions: three users
	d := events.MemoryRecordedData{MemoryID: "dm", Title: "t dm", Description: "d", Content: "c dm", Outcome: "success", Source: "distilled"}
	for i, s := range []string{"s0", "s1", "s2", "s3"} {
		d.SourceSession = s
		if err := b.send(events.MemoryRecorded, t0.Add(time.Duration(i)*time.Second), "project:a", d); err != nil {
			t.Fatal(err)
		}
	}
	b.signalFrom("dm", "token:alice", true, t0.Add(time.Hour))
	if c := b.get("dm").Confidence; !near(c, 0.8) {
		t.Fatalf("alice's positive on a memory distilled from four sessions: confidence %v, want 0.7 + 0.1 = 0.8", c)
	}

	// usages naming a session and no caller: each session a user
	b.record("k", "explicit", "success", t0)
	for _, s := range []string{"k-1", "k-2", "k-3"} {
		b.retrieved("k", map[string]any{"session_id": s}, t0.Add(time.Minute))
	}
	b.signalFrom("k", "token:alice", false, t0.Add(time.Hour))
	if c := b.get("k").Confidence; !near(c, 0.75) {
		t.Fatalf("alice's negative after three sessions' usages without a caller: confidence %v, want 0.75", c)
	}
}

// One caller alone never moves a memory's confidence, however many
// sessions it names: random sequences of token:mallory's searches (with
// and without session ids), recordings merged under session ids of her
// choosing and signals of either polarity leave a recorded memory at its
// initial confidence.
func TestOneCallerAloneNeverMovesConfidence(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		b := newBank(t)
		rec := events.MemoryRecordedData{MemoryID: "m", Title: "t m", Description: "d", Content: "c m",
			Outcome: "success", Source: "explicit", RecordedBy: "token:mallory"}
		if err := b.send(events.MemoryRecorded, t0, "project:a", rec); err != nil {
			t.Fatal(err)
		}
		at := t0
		var trace []string
		for k := 0; k < 30; k++ {
			at = at.Add(time.Duration(r.Intn(48)) * time.Hour)
			sid := fmt.Sprintf("mal-%d", r.Intn(8))
			switch r.Intn(4) {
			case 0:
				b.retrieved("m", map[string]any{"session_id": sid, "source": "token:mallory"}, at)
				trace = append(trace, "search as "+sid)
			case 1:
				b.retrieved("m", map[string]any{"source": "token:mallory"}, at)
				trace = append(trace, "search")
			case 2:
				rec.SourceSession = sid
				if err := b.send(events.MemoryRecorded, at, "project:a", rec); err != nil {
					t.Fatal(err)
				}
				trace = append(trace, "record naming "+sid)
			default:
				pos := r.Intn(2) == 0
				b.signalFrom("m", "token:mallory", pos, at)
				trace = append(trace, fmt.Sprintf("signal %v", pos))
			}
			if m := b.get("m"); m.Confidence != 0.8 {
				t.Fatalf("seed %d: one caller moved confidence to %v (usage %d) after %v", seed, m.Confidence, m.UsageCount, trace)
			}
		}
	}
}

// The LLM path: the model's answers for four sessions one caller started
// (distillation.completed.v1 with the session's recorded_by) merge into
// one memory whose three merges are that caller's usages, so its single
// signal waits for consensus; the same answers without recorded_by count
// four users, as before.
func TestDistilledAnswersCarryTheSessionsWriter(t *testing.T) {
	raw := "## Memory 1\n**Title**: Confirm before writing\n**Description**: Confirm the change first.\n**Content**: Ask the user to confirm the exact change, then write it.\n**Outcome**: success\n"
	for _, by := range []string{"token:mallory", ""} {
		b := newBank(t)
		for i := 0; i < 4; i++ {
			d := map[string]any{"session_id": fmt.Sprintf("s%d", i), "extractor": "llm", "model": "m", "outcome": "success", "raw_response": raw}
			if by != "" {
				d["recorded_by"] = by
			}
			if err := b.send(events.DistillationCompleted, t0.Add(time.Duration(i)*time.Second), "project:a", d); err != nil {
				t.Fatal(err)
			}
		}
		id := distill.MemoryID("project:a", "Confirm before writing", "Ask the user to confirm the exact change, then write it.")
		m := b.get(id)
		if m.UsageCount != 3 {
			t.Fatalf("recorded_by %q: usage %d, want 3 (three merges)", by, m.UsageCount)
		}
		b.signalFrom(id, "token:mallory", false, t0.Add(time.Hour))
		want := 0.7 // pending: one author
		if by == "" {
			want = 0.65 // four sessions, four users: applied alone (0.7 - 0.05)
		}
		if c := b.get(id).Confidence; !near(c, want) {
			t.Fatalf("recorded_by %q: mallory's negative: confidence %v, want %v", by, c, want)
		}
	}
}
