package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sampleRecords is the embedded tau-bench sample, decoded once for the
// package's tests (taubench.SampleRecords decodes it anew, about 1.3 s
// under -race, and helpers here ran it per test). Shared: read the
// records, never change them (a copy of a Record is safe to change, its
// slices are not).
var sampleRecords = sync.OnceValues(taubench.SampleRecords)

func start(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func sampleEvents(t *testing.T, n int) [][]events.Envelope {
	t.Helper()
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]events.Envelope
	for _, r := range recs[:n] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, envs)
	}
	return out
}

// A poison event — valid against its schema, but the processor cannot
// apply it (a completion for a session that never started) — is retried,
// lands in the dead-letter topic with the error and its original position
// in headers, and the pipeline goes on with the next events.
func TestPoisonEventGoesToDeadLetterTopic(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	poison, err := events.New(events.SessionCompleted, "test/poison", "poison-1", time.Unix(1700000000, 0), events.SessionCompletedData{Output: "done", Outcome: "success"})
	if err != nil {
		t.Fatal(err)
	}
	poison.SessionID = "never-started"
	if err := p.Producer.Publish(ctx, poison); err != nil {
		t.Fatal(err)
	}
	sess := sampleEvents(t, 3)
	for _, envs := range sess {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, envs := range sess {
		v, ok, err := sessions.Get(p.Store, events.EntityKey(envs[0].Scope, envs[0].SessionID))
		if err != nil || !ok || v.Evaluation == nil {
			t.Fatalf("session %s after the poison event: ok=%v err=%v eval=%v", envs[0].SessionID, ok, err, v.Evaluation)
		}
	}
	if _, ok, _ := sessions.Get(p.Store, events.EntityKey(events.DefaultScope, "never-started")); ok {
		t.Fatal("the poison event's changes were kept")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicDeadLetter)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())) // as Chronicle's consumers read: an aborted transaction's copy is not in the log
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fs := cl.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("dead-letter topic holds %d records, want 1 (errors %v)", len(recs), fs.Errors())
	}
	h := map[string]string{}
	for _, x := range recs[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if !strings.Contains(h[processors.HeaderError], sessions.ErrNotStarted.Error()) ||
		h[processors.HeaderOriginalTopic] != string(events.TopicSessions) || h[processors.HeaderOriginalOffset] == "" || h[processors.HeaderOriginalPartition] == "" {
		t.Fatalf("dead-letter headers %v", h)
	}
	env, err := events.ParseEvent(recs[0].Value)
	if err != nil || env.ID != "poison-1" {
		t.Fatalf("dead-letter value is not the original event: %v %s", err, recs[0].Value)
	}
	if got := testCounter(t, p, "chronicle_dead_letter_events_total"); got != 1 {
		t.Fatalf("dead-letter metric %v, want 1", got)
	}
}

// Live projections equal a replay of the log, and derived events reach
// their topic exactly once per id.
func TestLiveEqualsReplay(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess := sampleEvents(t, 12)
	for _, envs := range sess {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	// the same sessions again: duplicates by id must change nothing
	for _, envs := range sess[:4] {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rep, Processors: p.Processors})
	if err != nil {
		t.Fatal(err)
	}
	if st.Duplicates == 0 {
		t.Fatalf("replay saw no duplicates although 4 sessions were sent twice: %+v", st)
	}
	// the derived events were derived and validated, but the log already
	// has them: the rebuilt store keeps none in its outbox
	if pending, err := rep.PendingOutbox(1 << 30); err != nil || len(pending) > 0 || rep.OutboxLen() != 0 {
		t.Fatalf("replayed store's outbox: %d rows (OutboxLen %d), %v", len(pending), rep.OutboxLen(), err)
	}
	d, err := projections.Diff(rep, p.Store)
	if err != nil || d != nil {
		t.Fatalf("replay differs from live: %v %v", d, err)
	}
	rd, _ := rep.Digest()
	if rd.All != live.All || live.Rows[sessions.Name] == 0 {
		t.Fatalf("digest live %s replay %s", live.All, rd.All)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(events.TopicEvaluations)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())) // as Chronicle's consumers read: an aborted transaction's copy is not in the log
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ids := map[string]int{}
	for len(ids) < len(sess) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d evaluations relayed, want %d", len(ids), len(sess))
		}
		fs.EachRecord(func(r *kgo.Record) {
			env, err := events.FromRecord(r)
			if err != nil || env.Type != events.EvaluationCompleted || env.CausationID == "" {
				t.Errorf("derived record %s: %v", r.Value, err)
			}
			ids[env.ID]++
		})
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("evaluation %s relayed %d times", id, n)
		}
	}
	// every record the processors derived is valid against its schema
	// (events.Derive leaves that to the reader) and none was dead-lettered
	derived := 0
	for _, tp := range events.AllTopics {
		recs := readAll(ctx, t, p, tp)
		if tp == events.TopicDeadLetter && len(recs) > 0 {
			t.Errorf("%d records dead-lettered, the first: %s", len(recs), recs[0].Value)
		}
		for _, r := range recs {
			env, err := events.FromRecord(r)
			if err != nil {
				t.Errorf("%s offset %d: %v", tp, r.Offset, err)
			} else if info, _ := events.Lookup(env.Type); info.Derived {
				derived++
			}
		}
	}
	if derived < 100 {
		t.Fatalf("only %d derived records in the log", derived)
	}
	// none lost either: one memory.created.v1 per distinct recording (the
	// memory bank's derived events, relayed beside the session index's
	// global table on the same topic, which once moved the relayed
	// frontier past them)
	recorded, created := map[string]bool{}, 0
	for _, r := range readAll(ctx, t, p, events.TopicMemories) {
		if env, err := events.FromRecord(r); err == nil && env.Type == events.MemoryRecorded {
			recorded[env.ID] = true
		}
	}
	for _, r := range readAll(ctx, t, p, events.TopicLearned) {
		if env, err := events.FromRecord(r); err == nil && env.Type == events.MemoryCreated {
			created++
		}
	}
	if len(recorded) == 0 || created != len(recorded) {
		t.Fatalf("%d memory.created.v1 on %s for %d recordings", created, events.TopicLearned, len(recorded))
	}
}

// readAll reads topic tp from its start to its end offsets.
func readAll(ctx context.Context, t *testing.T, p *pipeline.Pipeline, tp events.Topic) []*kgo.Record {
	t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, string(tp))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	if want == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...), kgo.ConsumeTopics(string(tp)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	seen := int64(0) // records and transaction markers: every offset
	for seen < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %d of %d offsets", tp, seen, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

func testCounter(t *testing.T, p *pipeline.Pipeline, name string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// Issue 10 item 7: a processor's rejection is deterministic, so it is
// dead-lettered at once, without the retry backoff that held every later
// event of the partition (80 such events ahead of a valid session delayed
// it by 24 s). With the old retries (100+200+400 ms each) these 80 would
// take at least 56 s; the bound below is a third of that.
func TestRejectionsAreNotRetried(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var bad []events.Envelope
	for i := range 80 {
		e, err := events.New(events.SessionCompleted, "test/poison", fmt.Sprintf("poison-%d", i), time.Unix(1700000000, 0), events.SessionCompletedData{Output: "done", Outcome: "success"})
		if err != nil {
			t.Fatal(err)
		}
		e.SessionID = "never-started"
		bad = append(bad, e)
	}
	begin := time.Now()
	if err := p.Producer.Publish(ctx, bad...); err != nil {
		t.Fatal(err)
	}
	good := sampleEvents(t, 1)[0]
	if err := p.Producer.Publish(ctx, good...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el > 18*time.Second {
		t.Fatalf("80 rejected events and one session took %v: rejections are being retried", el)
	}
	if v, ok, _ := sessions.Get(p.Store, events.EntityKey(good[0].Scope, good[0].SessionID)); !ok || v.Evaluation == nil {
		t.Fatal("the valid session behind the rejected events was not evaluated")
	}
	if got := testCounter(t, p, "chronicle_dead_letter_events_total"); got != 80 {
		t.Fatalf("dead-lettered %v, want 80", got)
	}
}

// startWithSessions starts a pipeline with cfg, publishes two sample
// sessions and waits until the processors applied them.
func startWithSessions(ctx context.Context, t *testing.T, cfg pipeline.Config) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, envs := range sampleEvents(t, 2) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 10 item 9: a data directory whose projections are not built from
// the log it is served with is refused at start, naming the processor,
// partition and both offsets; a restart on its own log is not.
func TestForeignLogIsRefused(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 1}
	p := startWithSessions(ctx, t, cfg)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// the same directory with its own log starts again
	p, err := pipeline.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("restart on its own log: %v", err)
	}
	_ = p.Close()
	// the projections without their log (what a replayed directory is)
	if err := os.RemoveAll(pipeline.LogDir(dir)); err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Start(ctx, cfg)
	if !errors.Is(err, pipeline.ErrForeignLog) || !strings.Contains(err.Error(), "holds no log") {
		t.Fatalf("projections without their log: %v, want ErrForeignLog naming the missing log", err)
	}
	t.Log(err)
	// refused before the embedded broker started: no new, empty log was
	// left behind for replay, audit and deadletter to read as the
	// directory's (an analyst's walkthrough)
	if _, err := os.Stat(pipeline.LogDir(dir)); !os.IsNotExist(err) {
		t.Fatalf("the refused start left %s behind (%v)", pipeline.LogDir(dir), err)
	}
}

// events.Derive validates only the types on chronicle.learned; the engine
// validates the others where they are read. That holds only while every
// other topic a derived type lands on is read by a default processor.
func TestDerivedTopicsAreRead(t *testing.T) {
	read := map[events.Topic]bool{}
	for _, p := range pipeline.DefaultProcessors() {
		for _, tp := range p.Topics() {
			read[tp] = true
		}
	}
	for _, typ := range events.Types() {
		info, _ := events.Lookup(typ)
		if info.Derived && info.Topic != events.TopicLearned && !read[info.Topic] {
			t.Errorf("derived type %s lands on %s, which no default processor reads: nothing would validate it", typ, info.Topic)
		}
	}
}

// events.Derive and Envelope.MarshalJSON marshal with goccy/go-json; its
// bytes must be encoding/json's (records, stored rows, content hashes and
// digests hold them). Every event of the 200 bundled sessions, produced or
// derived, is marshalled both ways here: a difference fails the producer
// or Derive (which rejects the cause).
func TestEncodingAgrees(t *testing.T) {
	events.CheckEncoding.Store(true)
	defer events.CheckEncoding.Store(false)
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	for _, envs := range sampleEvents(t, len(recs)) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if dl := readAll(ctx, t, p, events.TopicDeadLetter); len(dl) > 0 {
		t.Fatalf("%d records dead-lettered, the first: %s", len(dl), dl[0].Value)
	}
	// a global table's rejection is counted, not dead-lettered
	if n := resultCount(t, p, "dead_lettered") + resultCount(t, p, "rejected"); n > 0 {
		t.Fatalf("%v events rejected by a processor", n)
	}
	derived := 0
	for _, tp := range events.AllTopics {
		for _, r := range readAll(ctx, t, p, tp) {
			if env, err := events.FromRecord(r); err == nil {
				if info, _ := events.Lookup(env.Type); info.Derived {
					derived++
				}
			}
		}
	}
	if derived < 1000 {
		t.Fatalf("only %d derived records: the check did not run over the sample", derived)
	}
	t.Logf("%d derived events marshalled alike by goccy/go-json and encoding/json", derived)
}

// resultCount sums chronicle_processor_events_total over processors for
// one result label.
func resultCount(t *testing.T, p *pipeline.Pipeline, result string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "chronicle_processor_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// A data directory whose log's topic gained partitions since the store
// began to follow it is refused at start, naming the topic and both
// counts (ErrPartitionsChanged): keys hash to other partitions now. Before,
// serve went on, new sessions on the new partitions answered 404, and
// audit failed after a restart (a Kafka platform review, 2026-12-01).
func TestAddedPartitionsAreRefused(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 2}
	p := startWithSessions(ctx, t, cfg)
	// an operator adds partitions to chronicle.sessions
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreatePartitions(ctx, 2, string(events.TopicSessions)); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Start(ctx, cfg)
	if !errors.Is(err, pipeline.ErrPartitionsChanged) || !strings.Contains(err.Error(), "chronicle.sessions has 4 partitions, but it had 2") {
		t.Fatalf("a log whose topic gained partitions: %v; want ErrPartitionsChanged naming chronicle.sessions, 4 and 2", err)
	}
}

// A log that no longer starts at offset 0 is served only by a store that
// has read past its start: rebuilt projections (an empty store) are
// refused at start (processors.ErrLogTruncated), since they would read
// from the log's start and build a state without the removed records.
// Before, they did, and said nothing (a re-test, 2026-12-01).
func TestTruncatedLogIsRefusedToAnEmptyStore(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", Partitions: 1}
	p := startWithSessions(ctx, t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	o := kadm.Offsets{}
	o.Add(kadm.Offset{Topic: string(events.TopicSessions), Partition: 0, At: 2})
	if _, err := kadm.NewClient(cl).DeleteRecords(ctx, o); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// its own store read past the removed records: it starts
	p, err = pipeline.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("the store that read past the log's start: %v", err)
	}
	_ = p.Close()
	// rebuilt projections would read from offset 2
	if err := os.RemoveAll(pipeline.ProjectionsDir(dir)); err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Start(ctx, cfg)
	if !errors.Is(err, processors.ErrLogTruncated) || !strings.Contains(err.Error(), "chronicle.sessions partition 0 starts at offset 2") {
		t.Fatalf("an empty store on a log starting at offset 2: %v; want ErrLogTruncated naming chronicle.sessions partition 0", err)
	}
}
