package projections_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// batchItems are items at offsets 0.. of topic "t" partition 0 for ids.
func batchItems(t *testing.T, ids ...string) []projections.Item {
	t.Helper()
	items := make([]projections.Item, len(ids))
	for i, id := range ids {
		items[i] = projections.Item{Pos: projections.Position{Topic: "t", Offset: int64(i)}, Env: feedback(t, id)}
		items[i].DeadLetter = func(reason error) projections.OutboxRecord {
			return projections.OutboxRecord{Topic: "dlq", Key: id, Value: []byte(reason.Error())}
		}
	}
	return items
}

// poisonCounter counts like counter, writes a row per event, and refuses
// the events whose id starts with "bad" after writing part of its change.
func poisonCounter(tx *projections.Tx, env *events.Envelope) error {
	if err := tx.Set("seen/"+env.ID, []byte("1")); err != nil {
		return err
	}
	if strings.HasPrefix(env.ID, "bad") {
		return fmt.Errorf("refused %s", env.ID)
	}
	return counter(tx, env)
}

func results(outs []projections.Outcome) string {
	var b strings.Builder
	for _, o := range outs {
		b.WriteString([]string{"A", "a", "D", "X"}[o.Result])
	}
	return b.String()
}

// A rejected event inside a batch costs no neighbour: the others are
// applied, only it is dead-lettered (its record in the outbox), and none of
// its partial writes survive.
func TestApplyBatchPoisonInTheMiddle(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	items := batchItems(t, "a", "b", "bad1", "c", "bad2", "bad3", "d")
	outs, err := s.ApplyBatch("count", items, poisonCounter)
	if err != nil {
		t.Fatal(err)
	}
	if got := results(outs); got != "AAXAXXA" {
		t.Fatalf("results %s, want AAXAXXA", got)
	}
	for _, i := range []int{2, 4, 5} {
		var re *projections.RejectedError
		if !errors.As(outs[i].Err, &re) || !strings.Contains(outs[i].Err.Error(), "refused bad") {
			t.Fatalf("item %d: err %v, want a RejectedError naming it", i, outs[i].Err)
		}
	}
	if got := rows(t, s); got != "xxxx" {
		t.Fatalf("count row %q, want 4 applications", got)
	}
	for _, id := range []string{"bad1", "bad2", "bad3"} {
		if _, ok, _ := s.Get("count", "seen/"+id); ok {
			t.Fatalf("a partial write of rejected %s survived", id)
		}
	}
	if next, _ := s.NextOffset("count", "t", 0); next != 7 {
		t.Fatalf("next offset %d, want 7", next)
	}
	pending, err := s.PendingOutbox(10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range pending {
		keys = append(keys, p.Topic+":"+p.Key)
	}
	if got := strings.Join(keys, ","); got != "dlq:bad1,dlq:bad2,dlq:bad3" {
		t.Fatalf("outbox %s, want one dead-letter record per rejected event", got)
	}
	// applying the same batch again changes nothing
	outs, err = s.ApplyBatch("count", items, poisonCounter)
	if err != nil || results(outs) != "aaaaaaa" {
		t.Fatalf("second application: %s %v, want all already applied", results(outs), err)
	}
}

// Inside one batch, a repeat of an event is a duplicate, the same
// idempotency key with other content a conflicting duplicate (dead-lettered),
// and an item that did not parse is dead-lettered without calling the
// processor — with a record only when the item carries one.
func TestApplyBatchDuplicatesAndUnparsed(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	items := batchItems(t, "a", "a", "b", "c", "d")
	other := feedback(t, "b")
	other.Data = []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`)
	items[3].Env = other // b again, other content (the same memory: the same record key)
	items[4].Env, items[4].Err, items[4].DeadLetter = nil, errors.New("does not parse"), nil
	called := 0
	outs, err := s.ApplyBatch("count", items, func(tx *projections.Tx, env *events.Envelope) error {
		called++
		return counter(tx, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := results(outs); got != "ADAXX" {
		t.Fatalf("results %s, want ADAXX", got)
	}
	if called != 2 || rows(t, s) != "xx" {
		t.Fatalf("processor called %d times, row %q; want 2", called, rows(t, s))
	}
	if !errors.Is(outs[3].Err, projections.ErrConflictingDuplicate) {
		t.Fatalf("item 3: %v, want a conflicting duplicate", outs[3].Err)
	}
	pending, _ := s.PendingOutbox(10)
	if len(pending) != 1 || pending[0].Key != "c" { // item 3's record (built for id c)
		t.Fatalf("outbox %+v, want the conflicting duplicate's record only", pending)
	}
}

// Items of two partitions in one call are refused: a batch commits one
// partition's offset.
func TestApplyBatchOnePartition(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	items := batchItems(t, "a", "b")
	items[1].Pos.Partition = 1
	if _, err := s.ApplyBatch("count", items, counter); err == nil || !strings.Contains(err.Error(), "one topic partition") {
		t.Fatalf("err %v, want one topic partition per call", err)
	}
}

// A processor that panics on an event rejects it: the event is
// dead-lettered with the panic as its reason and its neighbours apply.
func TestApplyBatchPanicIsARejection(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	outs, err := s.ApplyBatch("count", batchItems(t, "a", "boom", "b"), func(tx *projections.Tx, env *events.Envelope) error {
		if env.ID == "boom" {
			var m map[string]int
			m["x"]++ // nil map: panics
		}
		return counter(tx, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := results(outs); got != "AXA" || !strings.Contains(outs[1].Err.Error(), "panicked") {
		t.Fatalf("results %s (%v), want the panicking event dead-lettered alone", got, outs[1].Err)
	}
}

// A skipped item (a type its processor does not handle) only moves the
// offset: no Apply call, no idempotency key, so the same event given
// unskipped later is applied, not a duplicate.
func TestApplyBatchSkip(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	calls := 0
	count := func(tx *projections.Tx, env *events.Envelope) error { calls++; return counter(tx, env) }
	items := batchItems(t, "a", "b", "c")
	items[1].Skip = true
	outs, err := s.ApplyBatch("count", items, count)
	if err != nil {
		t.Fatal(err)
	}
	if outs[1].Result != projections.Ignored || calls != 2 {
		t.Fatalf("results %v, %d calls; want the skipped one Ignored and 2 calls", outs, calls)
	}
	if n, _ := s.NextOffset("count", "t", 0); n != 3 {
		t.Fatalf("offset %d after the batch, want 3", n)
	}
	again := batchItems(t, "b")
	again[0].Pos.Offset = 3
	if outs, err = s.ApplyBatch("count", again, count); err != nil || outs[0].Result != projections.Applied {
		t.Fatalf("the skipped event given again: %v %v, want Applied", outs, err)
	}
	bad := batchItems(t, "x")
	bad[0].Pos.Offset, bad[0].Env, bad[0].Err, bad[0].Skip = 4, nil, errors.New("does not parse"), true
	if outs, err = s.ApplyBatch("count", bad, count); err != nil || outs[0].Result != projections.DeadLettered {
		t.Fatalf("an item with Err and Skip: %v %v, want DeadLettered", outs, err)
	}
}

// A store being rebuilt by a replay (Rebuilding) does not encode derived
// events, since it drops its outbox, but an Emit fails there exactly as it
// does live: one the log could not hold (no key for its topic) is the same
// error, and one that it could leaves the same rows.
func TestRebuildingEmitFailsAsLive(t *testing.T) {
	valid := func(tx *projections.Tx, env *events.Envelope) error {
		if err := tx.Set("seen/"+env.ID, []byte("1")); err != nil {
			return err
		}
		return tx.Emit(events.EvaluationCompleted, events.EvaluationData{
			SessionID: env.ID, Criteria: []events.CriterionResult{}, Gaps: []events.Gap{}, Composite: 100, Recommendation: events.MeetsCriteria,
		})
	}
	keyless := func(tx *projections.Tx, env *events.Envelope) error { // a minute needs the cause's session id for its key
		return tx.Emit(events.MinuteRecorded, events.MinuteData{EventType: "note", Actor: "x", Data: []byte(`{}`)})
	}
	live, rebuilt := open(t, t.TempDir()), open(t, t.TempDir())
	defer live.Close()
	defer rebuilt.Close()
	rebuilt.Rebuilding()
	for i, fn := range []projections.ApplyFunc{valid, keyless} {
		var emitted [2][]projections.OutboxRecord
		var errs [2]string
		for j, s := range []*projections.Store{live, rebuilt} {
			_, err := s.Apply("p", projections.Position{Topic: "t", Offset: int64(i)}, feedback(t, fmt.Sprint("e", i)), func(tx *projections.Tx, env *events.Envelope) error {
				err := fn(tx, env)
				emitted[j] = tx.Emitted()
				return err
			})
			errs[j] = fmt.Sprint(err)
		}
		if errs[0] != errs[1] {
			t.Errorf("apply %d: live %s, rebuilding %s", i, errs[0], errs[1])
		}
		if i == 0 && (len(emitted[0]) != 1 || len(emitted[1]) != 1 || emitted[1][0].Type != events.EvaluationCompleted ||
			emitted[1][0].Topic != emitted[0][0].Topic || emitted[1][0].Key != emitted[0][0].Key || emitted[1][0].Value != nil || emitted[0][0].Value == nil) {
			t.Errorf("emitted live %+v, rebuilding %+v: want the same type, topic and key, and no value when rebuilding", emitted[0], emitted[1])
		}
		if i == 1 && !strings.Contains(errs[0], "session") {
			t.Errorf("a minute emitted without a session id: %s, want its key's error", errs[0])
		}
	}
	if rows(t, live) != rows(t, rebuilt) {
		t.Errorf("rows live %s, rebuilding %s", rows(t, live), rows(t, rebuilt))
	}
	if live.OutboxLen() != 1 || rebuilt.OutboxLen() != 0 {
		t.Errorf("outbox live %d, rebuilding %d: want 1 and 0", live.OutboxLen(), rebuilt.OutboxLen())
	}
}

// Two processors of one topic that both refuse a record, each for its own
// reason, write one letter for it between them: the first to commit its
// refusal, whose outcome is a letter; the other's is Quiet, with no record
// in the outbox, whichever runs first and whether the refusal is the
// processor's, an item error or a conflicting duplicate. Records only one
// of them refuses keep their letter.
func TestOneLetterPerRecordAcrossProcessors(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	refuseBad := func(tx *projections.Tx, env *events.Envelope) error {
		if strings.HasPrefix(env.ID, "bad") {
			return fmt.Errorf("%s refused by the first", env.ID)
		}
		return counter(tx, env)
	}
	refuseBadAndOdd := func(tx *projections.Tx, env *events.Envelope) error {
		if strings.HasPrefix(env.ID, "bad") || strings.HasPrefix(env.ID, "odd") {
			return fmt.Errorf("%s refused by the second", env.ID)
		}
		return counter(tx, env)
	}
	items := batchItems(t, "a", "bad1", "odd1", "b", "bad2")
	outs1, err := s.ApplyBatch("first", items, refuseBad)
	if err != nil {
		t.Fatal(err)
	}
	outs2, err := s.ApplyBatch("second", items, refuseBadAndOdd)
	if err != nil {
		t.Fatal(err)
	}
	if got := results(outs1) + " " + results(outs2); got != "AXAAX AXXAX" {
		t.Fatalf("results %s, want AXAAX AXXAX", got)
	}
	for i, it := range items {
		first, second := it.Lettered(outs1[i]), it.Lettered(outs2[i])
		want := [2]bool{i == 1 || i == 4, i == 2}
		if [2]bool{first, second} != want {
			t.Errorf("item %d (%s): lettered by first %v, by second %v; want %v", i, it.Env.ID, first, second, want)
		}
		if outs2[i].Quiet != (i == 1 || i == 4) {
			t.Errorf("item %d: second's Quiet %v", i, outs2[i].Quiet)
		}
	}
	pending, err := s.PendingOutbox(100)
	if err != nil {
		t.Fatal(err)
	}
	var letters []string
	for _, e := range pending {
		letters = append(letters, e.Key+": "+string(e.Value))
	}
	want := []string{"bad1: bad1 refused by the first", "bad2: bad2 refused by the first", "odd1: odd1 refused by the second"}
	if fmt.Sprint(letters) != fmt.Sprint(want) {
		t.Fatalf("letters %q, want %q", letters, want)
	}
}

// A record a processor refused takes its id for that processor as for the
// processors that applied it: a later record with the id and other content
// is a conflicting duplicate for both (one letter), while a repeat with the
// same content (a retry, a redrive) is judged again and may apply. Before,
// a refusal wrote no idempotency key, so the refuser applied the second
// content while the other processor dead-lettered it as a conflicting
// duplicate (a cluster walkthrough, 2026-12-03: sessionlog and sessions).
func TestRefusedIDIsTakenByItsContent(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	ready := false
	refuseUntilReady := func(tx *projections.Tx, env *events.Envelope) error {
		if !ready {
			return fmt.Errorf("%s: not ready", env.ID)
		}
		return tx.Set("got/"+env.ID, env.Data)
	}
	applyAll := func(tx *projections.Tx, env *events.Envelope) error {
		return tx.Set("got/"+env.ID, env.Data)
	}
	first := feedback(t, "e1")
	other := feedback(t, "e1")
	other.Data = []byte(`{"memory_id":"m2","signal":"task_completion","positive":false}`)
	item := func(off int64, env *events.Envelope) []projections.Item {
		it := projections.Item{Pos: projections.Position{Topic: "t", Offset: off}, Env: env}
		it.DeadLetter = func(reason error) projections.OutboxRecord {
			return projections.OutboxRecord{Topic: "dlq", Key: env.ID, Value: []byte(reason.Error())}
		}
		return []projections.Item{it}
	}
	step := func(off int64, env *events.Envelope) string {
		a, err := s.ApplyBatch("applier", item(off, env), applyAll)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.ApplyBatch("refuser", item(off, env), refuseUntilReady)
		if err != nil {
			t.Fatal(err)
		}
		return results(a) + results(r)
	}
	if got := step(0, first); got != "AX" {
		t.Fatalf("first record: %s, want AX (applied, refused)", got)
	}
	if _, applied, _, err := s.AppliedAt("refuser", first); err != nil || applied {
		t.Fatalf("AppliedAt of a refused event: applied %v, %v", applied, err)
	}
	ready = true
	if got := step(1, other); got != "XX" {
		t.Fatalf("the id with other content: %s, want XX (a conflicting duplicate for both)", got)
	}
	for _, p := range []string{"applier", "refuser"} {
		v, ok, err := s.Get(p, "got/e1")
		if err != nil {
			t.Fatal(err)
		}
		if ok && strings.Contains(string(v), "m2") {
			t.Fatalf("%s holds the second content: %s", p, v)
		}
	}
	if got := step(2, first); got != "DA" {
		t.Fatalf("the first content again: %s, want DA (a duplicate, judged again and applied)", got)
	}
	if _, applied, same, err := s.AppliedAt("refuser", first); err != nil || !applied || !same {
		t.Fatalf("AppliedAt after the retry: applied %v same %v, %v", applied, same, err)
	}
	pending, err := s.PendingOutbox(100)
	if err != nil {
		t.Fatal(err)
	}
	var letters []string
	for _, e := range pending {
		letters = append(letters, string(e.Value))
	}
	want := []string{"e1: not ready", `conflicting duplicate: (source "test", id "e1") was applied before with other content`}
	if fmt.Sprint(letters) != fmt.Sprint(want) {
		t.Fatalf("letters %q, want %q", letters, want)
	}
}
