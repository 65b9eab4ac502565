package projections_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

func open(t *testing.T, dir string) *projections.Store {
	t.Helper()
	s, err := projections.Open(dir, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func feedback(t *testing.T, id string) *events.Envelope {
	t.Helper()
	env, err := events.New(events.MemoryFeedback, "test", id, time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
	if err != nil {
		t.Fatal(err)
	}
	return &env
}

// counter counts events into row "n" and emits nothing.
func counter(tx *projections.Tx, env *events.Envelope) error {
	v, _, err := tx.Get("n")
	if err != nil {
		return err
	}
	return tx.Set("n", append(v, 'x'))
}

func rows(t *testing.T, s *projections.Store) string {
	t.Helper()
	v, _, err := s.Get("count", "n")
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func TestApplyOffsetsAndIdempotencyKeys(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	pos := func(o int64) projections.Position { return projections.Position{Topic: "t", Partition: 0, Offset: o} }
	for _, c := range []struct {
		off  int64
		id   string
		want projections.Result
	}{
		{0, "a", projections.Applied},
		{1, "b", projections.Applied},
		{1, "b", projections.AlreadyApplied}, // redelivery of the same offset
		{0, "a", projections.AlreadyApplied},
		{2, "a", projections.Duplicate}, // the same event again at a later offset
		{3, "c", projections.Applied},
	} {
		got, err := s.Apply("count", pos(c.off), feedback(t, c.id), counter)
		if err != nil || got != c.want {
			t.Fatalf("offset %d id %s: %v %v, want %v", c.off, c.id, got, err, c.want)
		}
	}
	if r := rows(t, s); r != "xxx" {
		t.Fatalf("applied %q, want 3 applications", r)
	}
	if n, ok := s.NextOffset("count", "t", 0); !ok || n != 4 {
		t.Fatalf("next offset %d %v", n, ok)
	}
	// a failing apply writes nothing, not even the offset
	boom := errors.New("boom")
	if _, err := s.Apply("count", pos(4), feedback(t, "d"), func(tx *projections.Tx, _ *events.Envelope) error {
		_ = tx.Set("n", []byte("garbage"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if r := rows(t, s); r != "xxx" {
		t.Fatalf("failed apply left %q", r)
	}
	if err := s.Skip("count", pos(4)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if n, _ := s.NextOffset("count", "t", 0); n != 5 {
		t.Fatalf("offset after reopen %d, want 5", n)
	}
	if got, _ := s.Apply("count", pos(5), feedback(t, "b"), counter); got != projections.Duplicate {
		t.Fatalf("idempotency key forgotten after reopen: %v", got)
	}
}

// Processors applying concurrently never share an outbox number, and a
// reopened store numbers after the last pending entry; OutboxLen counts
// the rows all along (from a scan at Open after the reopen).
func TestOutboxConcurrentAndReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	emit := func(tx *projections.Tx, env *events.Envelope) error {
		return tx.Emit(events.EvaluationCompleted, events.EvaluationData{
			SessionID: env.ID, Criteria: []events.CriterionResult{}, Gaps: []events.Gap{}, Composite: 100, Recommendation: events.MeetsCriteria,
		})
	}
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := s.Apply(fmt.Sprintf("proc%d", p), projections.Position{Topic: "t", Offset: int64(i)}, feedback(t, fmt.Sprintf("%d-%d", p, i)), emit); err != nil {
					t.Error(err)
				}
			}
		}(p)
	}
	wg.Wait()
	pending, err := s.PendingOutbox(1000)
	if err != nil || len(pending) != 200 || s.OutboxLen() != 200 {
		t.Fatalf("%d outbox entries (OutboxLen %d), want 200 (%v)", len(pending), s.OutboxLen(), err)
	}
	ids := map[string]bool{}
	for _, e := range pending {
		env, err := events.ParseEvent(e.Value)
		if err != nil || env.CausationID == "" || ids[env.ID] {
			t.Fatalf("outbox entry %s: %v", e.Value, err)
		}
		ids[env.ID] = true
	}
	if err := s.AckOutbox(pending[:150]); err != nil {
		t.Fatal(err)
	}
	kept, _ := s.PendingOutbox(1000) // from the rows this process committed
	if !reflect.DeepEqual(kept, pending[150:]) || s.OutboxLen() != 50 {
		t.Fatalf("after the ack: %d pending (OutboxLen %d), want the last 50 of the 200", len(kept), s.OutboxLen())
	}
	s.Close()
	s = open(t, dir)
	defer s.Close()
	if _, err := s.Apply("proc0", projections.Position{Topic: "t", Offset: 50}, feedback(t, "after"), emit); err != nil {
		t.Fatal(err)
	}
	pending, _ = s.PendingOutbox(1000)
	if len(pending) != 51 || pending[50].Seq <= pending[49].Seq || s.OutboxLen() != 51 {
		t.Fatalf("after reopen: %d pending, last seqs %d %d", len(pending), pending[49].Seq, pending[50].Seq)
	}
	// rows decoded from the store are the rows the first process kept in memory
	if !reflect.DeepEqual(pending[:50], kept) {
		t.Fatalf("decoded after reopen:\n%+v\nkept in memory before:\n%+v", pending[0], kept[0])
	}
}

func TestDigestAndDiff(t *testing.T) {
	a, b := open(t, t.TempDir()), open(t, t.TempDir())
	defer a.Close()
	defer b.Close()
	for i, id := range []string{"a", "b", "c"} {
		for _, s := range []*projections.Store{a, b} {
			if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: int64(i)}, feedback(t, id), counter); err != nil {
				t.Fatal(err)
			}
		}
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da.All != db.All || da.Rows["count"] != 1 {
		t.Fatalf("equal stores, digests %v %v", da, db)
	}
	if d, err := projections.Diff(a, b); err != nil || d != nil {
		t.Fatalf("diff of equal stores: %v %v", d, err)
	}
	// offsets are not part of the digest
	if err := b.Skip("count", projections.Position{Topic: "t", Offset: 3}); err != nil {
		t.Fatal(err)
	}
	if db2, _ := b.Digest(); db2.All != da.All {
		t.Fatal("an offset change changed the digest")
	}
	if _, err := b.Apply("count", projections.Position{Topic: "t", Offset: 4}, feedback(t, "d"), counter); err != nil {
		t.Fatal(err)
	}
	d, err := projections.Diff(a, b)
	if err != nil || d == nil || d.Key != "p/count/n" || string(d.Right) != "xxxx" {
		t.Fatalf("diff: %v %v", d, err)
	}
	if !strings.Contains(d.String(), `"p/count/n"`) {
		t.Fatal(d.String())
	}
}

// A disk that starts failing stops the store (fail-stop through OnFatal)
// before the event is acknowledged: its offset does not advance, so a
// restarted process consumes it again. With Sync the failed sync reaches
// OnFatal through Pebble's logger; without it (serve's default) Pebble
// panics on the failed write-ahead-log append, which crashed the process
// with a Go panic (found by a walkthrough that filled the disk).
func TestDiskFailure(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) { diskFailure(t, sync) })
	}
}

func diskFailure(t *testing.T, sync bool) {
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errors.New("injected: no space left on device")
		}
		return nil
	}))
	fatal := make(chan string, 1)
	s, err := projections.Open("/db", projections.Options{FS: fs, Sync: sync, OnFatal: func(msg string) {
		select {
		case fatal <- msg:
		default: // a second failure: the first was reported
		}
		// OnFatal must not return. It is called from Pebble's log writer
		// too (walGuardFS), whose deferred unlocks a Goexit would run
		// into Pebble's own "unlock of unlocked mutex": block instead, as
		// the process's exit would stop everything
		select {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: 0}, feedback(t, "a"), counter); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if !sync {
		// without a sync the log writer appends in the background: the
		// failure surfaces at a later commit, which must stop the store
		// (the acknowledged offsets are not durable, so a restart consumes
		// those events again)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for off := int64(1); off < 1000; off++ {
				if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: off}, feedback(t, fmt.Sprint("b", off)), counter); err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		select {
		case msg := <-fatal:
			if !strings.Contains(msg, "no space left") {
				t.Fatalf("fatal message %q does not name the cause", msg)
			}
		case <-stopped:
			t.Fatal("applies on a failing disk went on, or failed without stopping the store")
		case <-time.After(10 * time.Second):
			t.Fatal("applies on a failing disk neither failed nor stopped the store")
		}
		return
	}
	returned := make(chan error, 1)
	go func() {
		_, err := s.Apply("count", projections.Position{Topic: "t", Offset: 1}, feedback(t, "b"), counter)
		returned <- err
	}()
	select {
	case msg := <-fatal:
		if !strings.Contains(msg, "no space left") {
			t.Fatalf("fatal message %q does not name the cause", msg)
		}
	case err := <-returned:
		if err == nil {
			t.Fatal("apply on a failing disk succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("apply on a failing disk neither failed nor stopped the store")
	}
	if n, _ := s.NextOffset("count", "t", 0); n != 1 {
		t.Fatalf("offset advanced to %d although the write failed", n)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := projections.Open(t.TempDir(), projections.Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "holds no store") {
		t.Fatalf("read-only open of an empty dir: %v", err)
	}
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	if _, err := projections.Open(dir, projections.Options{}); err == nil || !strings.Contains(err.Error(), "another chronicle process") {
		t.Fatalf("second open of a locked store: %v", err)
	}
}

// A store that cannot be opened because the disk is full (or read-only)
// says so without the hint about another chronicle process, which only a
// held lock deserves: a walkthrough restarting serve on a full disk read
// "(is another chronicle process using it?): … no space left on device".
func TestOpenOnAFullDiskNamesNoOtherProcess(t *testing.T) {
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		path := op.Path
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasPrefix(path, "/db/") { // the directory is made, its files fail
			return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return nil
	}))
	_, err := projections.Open("/db", projections.Options{FS: fs})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "another chronicle process") {
		t.Fatalf("open on a full disk: %v", err)
	}
}

// Issue 9 item 6: an idempotency key seen again with other content is
// refused (ErrConflictingDuplicate, nothing applied) while an exact repeat,
// even re-encoded with other whitespace, is still a plain Duplicate.
func TestConflictingDuplicateIsRefused(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	pos := func(o int64) projections.Position { return projections.Position{Topic: "t", Partition: 0, Offset: o} }
	if got, err := s.Apply("count", pos(0), feedback(t, "a"), counter); err != nil || got != projections.Applied {
		t.Fatal(got, err)
	}
	same := feedback(t, "a")
	same.Data = []byte(`{ "memory_id": "m1", "signal": "task_completion", "positive": true }`) // same content, other spacing
	if got, err := s.Apply("count", pos(1), same, counter); err != nil || got != projections.Duplicate {
		t.Fatalf("exact repeat: %v %v, want Duplicate", got, err)
	}
	other := feedback(t, "a")
	other.Data = []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`)
	if _, err := s.Apply("count", pos(2), other, counter); !errors.Is(err, projections.ErrConflictingDuplicate) {
		t.Fatalf("conflicting repeat: %v, want ErrConflictingDuplicate", err)
	}
	if r := rows(t, s); r != "x" {
		t.Fatalf("applied %q, want the first event only", r)
	}
}

// Issue 9 item 7: a store whose replay did not finish is recognisable.
func TestReplayMark(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	if err := s.CheckComplete(); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkReplayStarted(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckComplete(); !errors.Is(err, projections.ErrReplayIncomplete) {
		t.Fatalf("during replay: %v", err)
	}
	d1, _ := s.Digest()
	if err := s.MarkReplayFinished(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckComplete(); err != nil {
		t.Fatal(err)
	}
	if d2, _ := s.Digest(); d1.String() != d2.String() {
		t.Fatal("the replay mark is part of the digest")
	}
}

// A second Close returns the first one's result instead of Pebble's panic
// (a pipeline closed by its caller and again by a test cleanup).
func TestCloseTwice(t *testing.T) {
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A write-ahead log that cannot be closed while Pebble rotates to a new
// one (a memtable filled, or a flush) goes to OnFatal naming the cause,
// as a failed append does. Pebble panics there after releasing a mutex
// its caller unlocks again, a Go fatal error no recover catches: `serve`
// on a full disk died with "sync: unlock of unlocked mutex" and neither
// exit status 70 nor the disk named (an SRE's walkthrough, 2026-12-03;
// this test crashed the test binary so before walGuardFS).
func TestDiskFailureWhileTheLogRotates(t *testing.T) {
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".log") {
			return errors.New("injected: no space left on device")
		}
		return nil
	}))
	fatal := make(chan string, 1)
	s, err := projections.Open("/db", projections.Options{FS: fs, OnFatal: func(msg string) {
		select {
		case fatal <- msg:
		default:
		}
		select {} // must not return (see diskFailure)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: 0}, feedback(t, "a"), counter); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	go s.Flush() // rotates the log: closes the current one, whose pending tail cannot be written
	go func() {
		for off := int64(1); off < 1000; off++ {
			if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: off}, feedback(t, fmt.Sprint("b", off)), counter); err != nil {
				return
			}
		}
	}()
	select {
	case msg := <-fatal:
		if !strings.Contains(msg, "no space left") || !strings.Contains(msg, "write-ahead log") {
			t.Fatalf("fatal message %q does not name the cause", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a failing log rotation neither failed nor stopped the store")
	}
}

// A store whose manifest is gone, or whose table was cut short, is an
// *UnreadableError that says to rebuild it from the log with replay; it
// was Pebble's error alone, and digest and audit then sent the operator
// looking for a running service (an SRE's walkthrough, 2026-12-03).
func TestDamagedStoreSaysToReplay(t *testing.T) {
	for _, damage := range []string{"manifest", "table"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			s, err := projections.Open(dir, projections.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for off := int64(0); off < 50; off++ {
				if _, err := s.Apply("count", projections.Position{Topic: "t", Offset: off}, feedback(t, fmt.Sprint("a", off)), counter); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			s.Close()
			entries, _ := os.ReadDir(dir)
			damaged := false
			for _, e := range entries {
				p := filepath.Join(dir, e.Name())
				switch {
				case damage == "manifest" && strings.HasPrefix(e.Name(), "MANIFEST-"):
					damaged = os.Remove(p) == nil
				case damage == "table" && strings.HasSuffix(e.Name(), ".sst"):
					fi, _ := e.Info()
					damaged = os.Truncate(p, fi.Size()/2) == nil
				}
			}
			if !damaged {
				t.Fatalf("nothing to damage in %v", entries)
			}
			for _, ro := range []bool{true, false} {
				_, err = projections.Open(dir, projections.Options{ReadOnly: ro})
				var ue *projections.UnreadableError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), "chronicle replay --data") {
					t.Errorf("read-only %v: %v, want an UnreadableError saying to replay", ro, err)
				}
			}
		})
	}
}

// EmitIn with a string that is no scope fails the Apply call naming it:
// the event was written and then dead-lettered by every reader, its letter
// blaming the reader (a Go-package walkthrough, 2026-12-06).
func TestEmitInRefusesANonScope(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	emit := func(scope string) error {
		_, err := s.Apply("emitter", projections.Position{Topic: "chronicle.memories"}, feedback(t, "f-"+scope), func(tx *projections.Tx, env *events.Envelope) error {
			return tx.EmitIn(scope, events.EvaluationCompleted, events.EvaluationData{SessionID: "s1", Composite: 1})
		})
		return err
	}
	err := emit("tenant")
	if err == nil || !strings.Contains(err.Error(), `EmitIn evaluation.completed.v1: scope: "tenant" is not project:<id>, team:<id> or org:<id>`) {
		t.Fatalf("EmitIn(\"tenant\"): %v, want the scope refused", err)
	}
	var rej *projections.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("EmitIn(\"tenant\"): %T, want a rejection (nothing written)", err)
	}
	if err := emit("project:a"); err != nil {
		t.Fatalf("EmitIn(\"project:a\"): %v", err)
	}
}
