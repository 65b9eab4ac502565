package processortest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/processortest"
	"github.com/chronicle-dev/chronicle/projections"
)

// toolCalls counts each tool's successful calls and rejects a call of
// the tool "forbidden".
type toolCalls struct{ name string }

func (p toolCalls) Name() string         { return p.name }
func (toolCalls) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }
func (toolCalls) Types() []events.Type   { return []events.Type{events.WorkflowTaskCompleted} }
func (toolCalls) Apply(tx *projections.Tx, env *events.Envelope) error {
	var d events.TaskCompletedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if d.ToolID == "forbidden" {
		return errors.New("the tool forbidden may not be called")
	}
	v, _, err := tx.Get(d.ToolID)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(string(v))
	return tx.Set(d.ToolID, []byte(strconv.Itoa(n+1)))
}

func call(t *testing.T, id, tool string) events.Envelope {
	t.Helper()
	env, err := events.New(events.WorkflowTaskCompleted, "agent/test", id, time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC),
		events.TaskCompletedData{WorkflowID: "s1", TaskID: id, ToolID: tool, Success: true})
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = "s1"
	return env
}

// The tester applies as the engine does: a repeated event is a Duplicate,
// a type the processor does not handle is Ignored, a rejection is
// dead-lettered once with its reason and the next event applies, and a
// producer's refusal writes nothing.
func TestTesterAppliesAsTheEngine(t *testing.T) {
	tt := processortest.New(t, []processors.Processor{toolCalls{"calls"}})
	outs, err := tt.Publish(call(t, "c1", "refund"), call(t, "c2", "refund"), call(t, "c2", "refund"))
	if err != nil {
		t.Fatal(err)
	}
	if got := []projections.Result{outs[0]["calls"].Result, outs[1]["calls"].Result, outs[2]["calls"].Result}; got[0] != projections.Applied || got[1] != projections.Applied || got[2] != projections.Duplicate {
		t.Fatalf("results %v, want Applied, Applied, Duplicate", got)
	}
	if v, _, _ := tt.Store.Get("calls", "refund"); string(v) != "2" {
		t.Fatalf("refund calls = %q, want 2", v)
	}
	start, err := events.New(events.SessionStarted, "agent/test", "start-1", time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC),
		events.SessionStartedData{OriginalTask: "change a flight", SuccessCriteria: []events.Criterion{}})
	if err != nil {
		t.Fatal(err)
	}
	start.SessionID = "s1"
	outs, err = tt.Publish(start, call(t, "c3", "forbidden"), call(t, "c4", "refund"))
	if err != nil {
		t.Fatal(err)
	}
	if r := outs[0]["calls"].Result; r != projections.Ignored {
		t.Fatalf("a session start: %v, want Ignored (not one of the processor's types)", r)
	}
	var rej *projections.RejectedError
	if o := outs[1]["calls"]; o.Result != projections.DeadLettered || !errors.As(o.Err, &rej) {
		t.Fatalf("a call of the forbidden tool: %v %v, want DeadLettered with a *RejectedError", o.Result, o.Err)
	}
	if r := outs[2]["calls"].Result; r != projections.Applied {
		t.Fatalf("the call after the rejected one: %v, want Applied", r)
	}
	letters := tt.DeadLetters()
	if len(letters) != 1 || !strings.Contains(header(letters[0], processors.HeaderError), "the tool forbidden may not be called") || header(letters[0], processors.HeaderOriginalOffset) != "4" {
		t.Fatalf("dead letters %d (%q at offset %q), want one naming the reason and offset 4", len(letters), header(first(letters), processors.HeaderError), header(first(letters), processors.HeaderOriginalOffset))
	}
	if len(tt.DeadLetters()) != 0 {
		t.Fatal("DeadLetters returned the same letter twice")
	}
	// a producer's refusal: nothing written, not even the valid first event
	bad := call(t, "c5", "refund")
	bad.Type = events.EvaluationCompleted // a derived type
	if _, err := tt.Publish(call(t, "c6", "refund"), bad); !errors.Is(err, events.ErrDerivedType) {
		t.Fatalf("Publish of a derived type = %v, want events.ErrDerivedType", err)
	}
	if n := len(tt.Records(events.TopicSessions)); n != 6 {
		t.Fatalf("chronicle.sessions holds %d records, want the 6 accepted before the refused call", n)
	}
	if v, _, _ := tt.Store.Get("calls", "refund"); string(v) != "3" {
		t.Fatalf("refund calls = %q, want 3", v)
	}
}

// A record written straight to Kafka that is no event is dead-lettered
// once, not once per processor of its topic, as the engine does.
func TestTesterDeadLettersABadRecordOnce(t *testing.T) {
	tt := processortest.New(t, []processors.Processor{toolCalls{"a"}, toolCalls{"b"}})
	outs, err := tt.PublishRecord(&kgo.Record{Topic: string(events.TopicSessions), Key: []byte("s1"), Value: []byte(`{"specversion":"1.0"`)})
	if err != nil {
		t.Fatal(err)
	}
	if outs["a"].Result != projections.DeadLettered || outs["b"].Result != projections.DeadLettered {
		t.Fatalf("outcomes %v, want both DeadLettered", outs)
	}
	if n := len(tt.DeadLetters()); n != 1 {
		t.Fatalf("%d dead letters for one bad record, want 1", n)
	}
	if n := len(tt.Records(events.TopicDeadLetter)); n != 1 {
		t.Fatalf("the dead-letter topic holds %d records, want 1", n)
	}
}

// The tester's projections are the engine's: the default processors over
// tau-bench sessions build in the tester a state whose digest equals a
// Replay's of the log the tester wrote (every record it holds, derived
// events and letters included, produced in its order to an embedded
// broker); and their derived evaluations reach Emitted.
func TestTesterDigestEqualsReplayOfItsLog(t *testing.T) {
	for _, parts := range []int32{1, 4} {
		t.Run(strconv.Itoa(int(parts))+" partitions", func(t *testing.T) { testDigestEqualsReplay(t, parts) })
	}
}

func testDigestEqualsReplay(t *testing.T, partitions int32) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	procs := pipeline.DefaultProcessors()
	tt := processortest.New(t, procs, processortest.Partitions(int(partitions)))
	for _, r := range recs[:12] {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tt.Publish(envs...); err != nil {
			t.Fatal(err)
		}
	}
	evaluations := 0
	for _, e := range tt.Emitted() {
		if e.Type == events.EvaluationCompleted {
			evaluations++
		}
	}
	if evaluations != 12 {
		t.Fatalf("%d evaluations emitted for 12 completed sessions, want 12", evaluations)
	}
	want, err := tt.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	processortest.CheckReplay(t, tt) // in process, in polls of two lengths

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	written := 0
	for _, topic := range events.AllTopics {
		for _, r := range tt.Records(topic) {
			c := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
			if err := cl.ProduceSync(ctx, c).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if c.Offset != r.Offset {
				t.Fatalf("%s/%d: written at offset %d, the tester's %d", r.Topic, r.Partition, c.Offset, r.Offset)
			}
			written++
		}
	}
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: b.Addrs(), Store: store, Processors: procs})
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got.All != want.All {
		for name, h := range want.Projections {
			if got.Projections[name] != h {
				t.Errorf("projection %s: replay %s, tester %s", name, got.Projections[name], h)
			}
		}
		t.Fatalf("replay of the tester's log (%d records, %+v) differs from the tester's state", written, st)
	}
	t.Logf("%d records; digest %s; replay %+v", written, want.All, st)
}

func header(r *kgo.Record, key string) string {
	if r == nil {
		return ""
	}
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func first(rs []*kgo.Record) *kgo.Record {
	if len(rs) == 0 {
		return nil
	}
	return rs[0]
}

// PublishRecordTo writes to the partition it is given, 0 included:
// PublishRecord reads a zero Partition as "the key's partition", so a
// record whose key hashes elsewhere could not be put on partition 0 (a
// Go-package walkthrough). A partition the topic lacks is an error.
func TestPublishRecordToForcesThePartition(t *testing.T) {
	tt := processortest.New(t, []processors.Processor{toolCalls{"a"}}, processortest.Partitions(4))
	topic := string(events.TopicSessions)
	key := ""
	for i := 0; key == ""; i++ { // a key that does not hash to partition 0
		if k := fmt.Sprintf("s%d", i); events.Partition(topic, k, 4) != 0 {
			key = k
		}
	}
	if _, err := tt.PublishRecord(&kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tt.PublishRecordTo(&kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(`{}`)}, 0); err != nil {
		t.Fatal(err)
	}
	recs := tt.Records(events.TopicSessions)
	if len(recs) != 2 || recs[0].Partition != 0 || recs[1].Partition != events.Partition(topic, key, 4) {
		t.Fatalf("partitions of the two records: %d, %d; want 0 (PublishRecordTo) then the key's %d", recs[0].Partition, recs[1].Partition, events.Partition(topic, key, 4))
	}
	if _, err := tt.PublishRecordTo(&kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(`{}`)}, 4); err == nil {
		t.Fatal("partition 4 of a 4-partition topic was accepted")
	}
}

// counted numbers its applies in a field, outside the Tx: the state a
// processor must not keep (processors.Processor), which a replay cannot
// rebuild.
type counted struct{ n *int }

func (counted) Name() string           { return "counted" }
func (counted) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }
func (c counted) Apply(tx *projections.Tx, env *events.Envelope) error {
	*c.n++
	return tx.Set(env.ID, []byte(strconv.Itoa(*c.n)))
}

// errorsTB records Errorf instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (r *errorsTB) Helper() {}
func (r *errorsTB) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// CheckReplay passes for a processor that keeps its state in its rows,
// also over several partitions and with a rejection in the log, and fails
// naming the projection for one that keeps state outside the Tx. Before,
// a processor's author had no such check short of copying
// FuzzBatchSplitsAgree's replay (a new contributor's walkthrough).
func TestCheckReplay(t *testing.T) {
	tt := processortest.New(t, []processors.Processor{toolCalls{"calls"}}, processortest.InMemory(), processortest.Partitions(4))
	for i, tool := range []string{"refund", "search", "forbidden", "refund"} {
		env := call(t, "c"+strconv.Itoa(i), tool)
		env.SessionID = "s" + strconv.Itoa(i) // several partitions
		if _, err := tt.Publish(env); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tt.DeadLetters()); n != 1 {
		t.Fatalf("%d dead letters, want the forbidden call's", n)
	}
	processortest.CheckReplay(t, tt)
	one, err := tt.ReplayDigest(1)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := tt.Store.Digest(); one.All != want.All || one.Rows["calls"] != 2 {
		t.Fatalf("replay one record a poll: %s (%d rows), tester %s", one.All, one.Rows["calls"], want.All)
	}

	n := 0
	bad := processortest.New(t, []processors.Processor{counted{&n}}, processortest.InMemory())
	if _, err := bad.Publish(call(t, "c1", "refund"), call(t, "c2", "refund")); err != nil {
		t.Fatal(err)
	}
	rec := &errorsTB{TB: t}
	processortest.CheckReplay(rec, bad)
	if len(rec.errs) != 2 || !strings.Contains(rec.errs[0], `projection "counted"`) {
		t.Fatalf("CheckReplay of a processor with state outside the Tx: %q; want one error per replay naming the projection", rec.errs)
	}
}

// Open is New without a testing.TB: refusals are errors, the store is in
// memory and Close closes it.
func TestOpen(t *testing.T) {
	if _, err := processortest.Open([]processors.Processor{toolCalls{"a"}}, processortest.Partitions(0)); err == nil || !strings.Contains(err.Error(), "Partitions(0)") {
		t.Fatalf("Open with Partitions(0): %v, want an error naming it", err)
	}
	if _, err := processortest.Open([]processors.Processor{toolCalls{"a"}, toolCalls{"a"}}); err == nil {
		t.Fatal("Open with two processors of one name: no error")
	}
	tt, err := processortest.Open([]processors.Processor{toolCalls{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tt.Publish(call(t, "c1", "refund")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := tt.Store.Get("a", "refund"); string(v) != "1" {
		t.Fatalf("refund = %q, want 1", v)
	}
	if err := tt.Close(); err != nil {
		t.Fatal(err)
	}
}

// A record for a topic Chronicle does not create is refused, naming it,
// as the broker refuses the write: before, PublishRecord took a mistyped
// topic ("chronicle.session"), applied nothing and answered no outcome
// and no error, so a test asserting that nothing happened passed (a new
// contributor's walkthrough).
func TestPublishRecordRefusesAnUnknownTopic(t *testing.T) {
	tt := processortest.New(t, []processors.Processor{toolCalls{"a"}}, processortest.InMemory())
	r := &kgo.Record{Topic: "chronicle.session", Key: []byte("s1"), Value: []byte(`{}`)}
	if _, err := tt.PublishRecord(r); err == nil || !strings.Contains(err.Error(), `"chronicle.session"`) || !strings.Contains(err.Error(), "events.AllTopics") {
		t.Fatalf("PublishRecord to chronicle.session: %v, want an error naming the topic", err)
	}
	if _, err := tt.PublishRecordTo(r, 0); err == nil || !strings.Contains(err.Error(), `"chronicle.session"`) {
		t.Fatalf("PublishRecordTo chronicle.session: %v, want an error naming the topic", err)
	}
	if n := len(tt.Records("chronicle.session")); n != 0 {
		t.Fatalf("%d records written to chronicle.session", n)
	}
}
