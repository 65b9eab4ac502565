package processors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// ParseUntil reads an RFC 3339 time or topic:partition:offset; a time
// without its zone is named as such, not split at its colons into a
// position (it used to read "2026-11-25T13:58:03" as topic
// "2026-11-25T13", partition 58, offset 3).
func TestParseUntil(t *testing.T) {
	u, err := processors.ParseUntil("2026-11-25T13:58:03Z")
	if err != nil || !u.Time.Equal(time.Date(2026, 11, 25, 13, 58, 3, 0, time.UTC)) || u.Pos != nil {
		t.Fatalf("time: %+v %v", u, err)
	}
	u, err = processors.ParseUntil("chronicle.memories:0:294")
	if err != nil || u.Pos == nil || u.Pos.Topic != "chronicle.memories" || u.Pos.Partition != 0 || u.Pos.Offset != 294 {
		t.Fatalf("position: %+v %v", u, err)
	}
	for in, want := range map[string]string{
		"2026-11-25T13:58:03":    "looks like a time but is not RFC 3339",
		"2026-11-25":             "looks like a time but is not RFC 3339",
		"yesterday":              "neither an RFC 3339 time nor topic:partition:offset",
		"chronicle.memories:x:1": "partition and offset must be non-negative integers",
	} {
		if _, err := processors.ParseUntil(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// untilLog is a one-partition log of the sample's first sessions written
// straight to the broker with the record timestamps stamp gives (by
// index), and the number of records written.
func untilLog(ctx context.Context, t *testing.T, stamp func(i int) time.Time) ([]string, int) {
	t.Helper()
	brokers, recs, _ := sampleLog(ctx, t, broker.Config{Partitions: 1})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for _, r := range recs[:3] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		for i := range envs {
			rec, err := events.Record(&envs[i])
			if err != nil {
				t.Fatal(err)
			}
			rec.Timestamp = stamp(n)
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return brokers, n
}

// --until topic:partition:offset replays the named record and everything
// before it on its partition whatever their timestamps. Before, the
// position's own partition was cut by the time too, so a record stamped
// later than the named one (a producer whose clock runs ahead) left out
// everything from it on, the named record included (an analyst's
// walkthrough: --until chronicle.workflows:0:16, the position the API
// answered, showed the state of offset 6).
func TestReplayUntilPositionKeepsItsPartitionWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	now := time.Now().Truncate(time.Millisecond)
	brokers, n := untilLog(ctx, t, func(i int) time.Time {
		if i == 3 {
			return now.Add(time.Hour) // a clock an hour ahead
		}
		return now.Add(time.Duration(i) * time.Millisecond)
	})
	last := projections.Position{Topic: string(events.TopicSessions), Partition: 0, Offset: int64(n - 1)}
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}, Until: processors.Until{Pos: &last}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != int64(n) {
		t.Fatalf("--until %s replayed %d records (%+v), want all %d up to it", last, st.Records, st, n)
	}
	// a time keeps Kafka's rule: the prefix before the first record
	// stamped after it
	store2, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	st, err = processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store2, Processors: []processors.Processor{sessions.Processor{}}, Until: processors.Until{Time: now.Add(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 3 {
		t.Fatalf("--until a time: %d records, want the 3 before the one stamped an hour ahead", st.Records)
	}
}

// A position that holds no event — a transaction marker, or an aborted
// transaction's record — is refused at once, saying which. Before, the
// replay waited 10 s for a record its client never returned and said
// "context deadline exceeded" (an analyst's walkthrough, on the markers a
// restart after kill -9 writes).
func TestReplayUntilAMarkerOrAnAbortedRecordSaysSo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, n := untilLog(ctx, t, func(int) time.Time { return time.Now() })
	tx, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("until-test"), kgo.DefaultProduceTopic(string(events.TopicSessions)))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, commit := range []bool{false, true} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(ctx, &kgo.Record{Key: []byte("x"), Value: []byte("{}")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// offsets: n the aborted record, n+1 its abort marker, n+2 the
	// committed record, n+3 its commit marker
	for off, want := range map[int64]string{
		int64(n):     fmt.Sprintf("aborted transaction, which a replay skips; the next event of the partition is at offset %d", n+2), // past the abort marker (it named the marker: a re-test)
		int64(n + 1): "transaction marker",
		int64(n + 3): "transaction marker",
	} {
		store, err := projections.Open(t.TempDir(), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pos := projections.Position{Topic: string(events.TopicSessions), Partition: 0, Offset: off}
		began := time.Now()
		_, err = processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}, Until: processors.Until{Pos: &pos}})
		store.Close()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--until %s: %v, want an error saying %q", pos, err, want)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("--until %s took %v to be refused", pos, d)
		}
	}
}

// RFC 3339 lets "T" and "Z" be lowercase (section 5.6); Go's parser does
// not, and --until refused them (an analyst's walkthrough).
func TestParseUntilLowercaseTAndZ(t *testing.T) {
	u, err := processors.ParseUntil("2026-11-30t23:20:21z")
	if err != nil || !u.Time.Equal(time.Date(2026, 11, 30, 23, 20, 21, 0, time.UTC)) {
		t.Fatalf("%+v %v", u, err)
	}
}

// --until TIME leaves out a transaction committed after TIME, and what
// follows its first record on the partition, as the live engine (reading
// committed) had not seen them at TIME; a transaction committed before
// TIME is in. Before, the records' own timestamps (when they were
// produced) decided, so a session whose transaction was still open at
// TIME was in the as-of state while the live service had answered it 404
// (a Python integrator's walkthrough with confluent-kafka, 2026-12-01).
func TestReplayUntilLeavesOutATransactionCommittedLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newTxnLog(ctx, t, "until-txn")
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond) // the records are stamped a minute back
	l.produce(ctx, t, l.plain, 0, t0)
	if err := l.txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	l.produce(ctx, t, l.txn, 1, t0.Add(time.Second))
	l.produce(ctx, t, l.plain, 2, t0.Add(2*time.Second))
	if err := l.txn.EndTransaction(ctx, kgo.TryCommit); err != nil { // its marker: now, a minute after the records
		t.Fatal(err)
	}
	if n := l.replay(ctx, t, processors.Until{Time: t0.Add(30 * time.Second)}); n != 1 {
		t.Fatalf("--until before the commit: %d records, want the 1 before the open transaction", n)
	}
	if n := l.replay(ctx, t, processors.Until{Time: time.Now().Add(time.Minute)}); n != 3 {
		t.Fatalf("--until after the commit: %d records, want all 3", n)
	}
}

// txnLog is a one-partition log for the transaction tests: its brokers,
// record (the sample's i-th event as a record stamped at, zero: now), a
// plain producer and a transactional one (id txnID) with their produce
// (which returns the record's offset).
type txnLog struct {
	brokers    []string
	envs       []events.Envelope
	plain, txn *kgo.Client
}

func newTxnLog(ctx context.Context, t *testing.T, txnID string, opts ...kgo.Opt) *txnLog {
	t.Helper()
	brokers, recs, _ := sampleLog(ctx, t, broker.Config{Partitions: 1})
	envs, err := taubench.Events(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	txn, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.TransactionalID(txnID)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	return &txnLog{brokers: brokers, envs: envs, plain: plain, txn: txn}
}

// produce writes the i-th event through cl, stamped at (zero: now), and
// returns its offset.
func (l *txnLog) produce(ctx context.Context, t *testing.T, cl *kgo.Client, i int, at time.Time) int64 {
	t.Helper()
	rec, err := events.Record(&l.envs[i])
	if err != nil {
		t.Fatal(err)
	}
	rec.Timestamp = at
	res := cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	return res[0].Record.Offset
}

// replay replays the log into a new store with the sessions processor up
// to u and returns the records read, failing the test on an error.
func (l *txnLog) replay(ctx context.Context, t *testing.T, u processors.Until) int64 {
	t.Helper()
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: l.brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}, Until: u})
	if err != nil {
		t.Fatal(err)
	}
	return st.Records
}

// A replay started while a transaction is undecided does not wait for it:
// it reads each partition up to its last stable offset at the start, as
// the live service, reading committed, saw the log then (the open
// transaction's records and those after them on their partition are left
// out). Before, it waited silently for the commit or the abort, up to the
// transaction's timeout (an integrator's walkthrough).
func TestReplayDoesNotWaitForAnOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newTxnLog(ctx, t, "open-txn", kgo.TransactionTimeout(time.Minute))
	l.produce(ctx, t, l.plain, 0, time.Time{})
	if err := l.txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	l.produce(ctx, t, l.txn, 1, time.Time{})
	l.produce(ctx, t, l.plain, 2, time.Time{})
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second) // the transaction's timeout is a minute
	defer rcancel()
	if n := l.replay(rctx, t, processors.Until{}); n != 1 {
		t.Fatalf("with the transaction open: %d records, want the 1 before it", n)
	}
	if err := l.txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if n := l.replay(ctx, t, processors.Until{}); n != 3 {
		t.Fatalf("after the commit: %d records, want all 3", n)
	}
}

// A transaction open at an --until time and aborted after it cuts its
// partition there too: the live service, reading committed, saw nothing
// after its first record until the abort. One aborted in time is left
// out, the records after it in. Before, the replay read committed and
// never saw the aborted records, only their marker, so it did not know
// where to cut (a re-test, 2026-12-01). An --until position on the
// partition is bounded by its offset alone, the aborted records left out.
func TestReplayUntilCutsAtATransactionAbortedLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := newTxnLog(ctx, t, "until-abort")
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	l.produce(ctx, t, l.plain, 0, t0)
	if err := l.txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	l.produce(ctx, t, l.txn, 1, t0.Add(time.Second))
	last := l.produce(ctx, t, l.plain, 2, t0.Add(2*time.Second))
	if err := l.txn.EndTransaction(ctx, kgo.TryAbort); err != nil { // its marker: now, a minute after the records
		t.Fatal(err)
	}
	if n := l.replay(ctx, t, processors.Until{Time: t0.Add(30 * time.Second)}); n != 1 {
		t.Fatalf("--until before the abort: %d records, want the 1 before the open transaction", n)
	}
	if n := l.replay(ctx, t, processors.Until{Time: time.Now().Add(time.Minute)}); n != 2 {
		t.Fatalf("--until after the abort: %d records, want the 2 outside the aborted transaction", n)
	}
	pos := projections.Position{Topic: string(events.TopicSessions), Partition: 0, Offset: last}
	if n := l.replay(ctx, t, processors.Until{Pos: &pos}); n != 2 {
		t.Fatalf("--until %s: %d records, want the 2 outside the aborted transaction", pos, n)
	}
}

// A log whose oldest records were removed (a topic's retention, a
// deletion of records) is refused by a replay, naming the partition and
// where it now starts: the state built from what is left would lack what
// the removed records did. Before, the replay built it and said nothing
// (a review of the Kafka settings, 2026-12-01).
func TestReplayRefusesALogWithoutItsFirstRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 1})
	publishRecords(ctx, t, prod, recs[:2])
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	replay := func() error {
		store, err := projections.Open(t.TempDir(), projections.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		_, err = processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: []processors.Processor{sessions.Processor{}}})
		return err
	}
	if err := replay(); err != nil {
		t.Fatalf("the whole log: %v", err)
	}
	o := kadm.Offsets{}
	o.Add(kadm.Offset{Topic: string(events.TopicSessions), Partition: 0, At: 3})
	if _, err := adm.DeleteRecords(ctx, o); err != nil {
		t.Fatal(err)
	}
	err = replay()
	if !errors.Is(err, processors.ErrLogTruncated) || !strings.Contains(err.Error(), "chronicle.sessions partition 0 starts at offset 3") {
		t.Fatalf("a log without its first 3 records: %v; want ErrLogTruncated naming chronicle.sessions partition 0 and offset 3", err)
	}
}

// Go's time.Parse takes times RFC 3339 does not — a one-digit hour, a
// comma before the fraction, an offset of 24 hours or more, offset minutes
// of 60 — and ParseUntil took them: a typo's "+24:00" replayed the state
// as of a day earlier than meant, without a word. They are refused as not
// RFC 3339 (the events' time attribute refuses them too: its schema's
// date-time format), and so is a position without a topic (":0:1" was
// taken). Offsets, -00:00 and fractions of any length are read as before,
// as the instant they name.
func TestParseUntilIsStrictRFC3339(t *testing.T) {
	for _, in := range []string{"2026-11-25T1:58:03Z", "2026-11-25T13:58:03,5Z", "2026-11-25T13:58:03+24:00", "2026-11-25T13:58:03+09:60", "2026-11-25T13:58:03.Z"} {
		if u, err := processors.ParseUntil(in); err == nil || !strings.Contains(err.Error(), "not RFC 3339") {
			t.Errorf("%q: %+v %v, want refused as not RFC 3339", in, u, err)
		}
	}
	if u, err := processors.ParseUntil(":0:1"); err == nil || !strings.Contains(err.Error(), "topic") {
		t.Errorf(`":0:1": %+v %v, want refused naming the missing topic`, u, err)
	}
	for in, want := range map[string]time.Time{
		"2026-11-01T01:30:00-04:00":            time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // EDT, before New York's clocks go back
		"2026-11-01T01:30:00-05:00":            time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), // EST, the same wall time an hour later
		"2026-11-25T13:58:03-00:00":            time.Date(2026, 11, 25, 13, 58, 3, 0, time.UTC),
		"2026-11-25T22:58:03.1234567891+09:00": time.Date(2026, 11, 25, 13, 58, 3, 123456789, time.UTC),
	} {
		if u, err := processors.ParseUntil(in); err != nil || !u.Time.Equal(want) {
			t.Errorf("%q: %+v %v, want %s", in, u, err, want)
		}
	}
}

// A time of day without its date ("what did the system know at 14:02?")
// is named as such, with an example holding that time: it was split at its
// colons into a position ("14:02:00": topic "14", partition 2, offset 0,
// refused later as "no such topic partition"; "14:02:00Z": "partition and
// offset must be non-negative integers"). A date and time joined by a space
// is told to take a "T": the message asked for "the date, the time and the
// time zone", which the value had (an analyst's walkthrough, 2026-12-07).
func TestParseUntilNamesATimeWithoutADate(t *testing.T) {
	for in, example := range map[string]string{
		"14:02":             "2026-11-25T14:02:00Z",
		"14:02:00":          "2026-11-25T14:02:00Z",
		"14:02:00Z":         "2026-11-25T14:02:00Z",
		"T14:02:00.5+01:00": "2026-11-25T14:02:00Z",
		"9:05":              "2026-11-25T09:05:00Z",
	} {
		u, err := processors.ParseUntil(in)
		if err == nil || !strings.Contains(err.Error(), "time of day without a date") || !strings.Contains(err.Error(), example) {
			t.Errorf("%q: %+v %v, want refused as a time of day without a date, with the example %s", in, u, err, example)
		}
	}
	u, err := processors.ParseUntil("2026-12-07 14:02:00Z")
	if err == nil || !strings.Contains(err.Error(), `join the date and the time with "T"`) || !strings.Contains(err.Error(), "2026-12-07T14:02:00Z") {
		t.Errorf("a space for T: %+v %v, want refused asking for a T, with the corrected value", u, err)
	}
	// positions are still positions, timestamps still timestamps
	if u, err := processors.ParseUntil("chronicle.memories:0:72"); err != nil || u.Pos == nil || u.Pos.Offset != 72 {
		t.Errorf("a position: %+v %v", u, err)
	}
	if u, err := processors.ParseUntil("2026-12-07T14:02:00+01:00"); err != nil || !u.Time.Equal(time.Date(2026, 12, 7, 13, 2, 0, 0, time.UTC)) {
		t.Errorf("a time: %+v %v", u, err)
	}
}
