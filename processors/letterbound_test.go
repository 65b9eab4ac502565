package processors_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// A letter of a record too large to copy stays within MaxLetterBytes: it
// keeps the headers, says the value's size (HeaderValueOmitted) and holds
// the event's attributes without its data, so LetterOf still names the
// event and its scope. Before, the letter was the record plus its headers:
// a record written by another client near the broker's limit gave a
// letter the relay could never produce, which held the relay for good (a
// Node.js integrator's walkthrough, 2026-12-01). A small record's letter
// keeps its value.
func TestLetterOfALargeRecordIsBounded(t *testing.T) {
	big := `{"specversion":"1.0","id":"kbig-1","source":"kafkajs","type":"coordination.session.started.v1","scope":"project:a","sessionid":"kbig-1","data":{"pad":"` + strings.Repeat("x", 1_040_000) + `"}}`
	rec := &kgo.Record{Topic: string(events.TopicSessions), Key: []byte("project:a/kbig-1"), Value: []byte(big), Partition: 2, Offset: 7}
	letter := processors.DeadLetterRecord(sessions.Processor{}, rec, &events.ValidationError{Index: -1, Pointer: "/data/original_task", Reason: "required"})
	size := len(letter.Key) + len(letter.Value)
	omitted := ""
	for _, h := range letter.Headers {
		size += len(h.Key) + len(h.Value)
		if h.Key == processors.HeaderValueOmitted {
			omitted = string(h.Value)
		}
	}
	if size > processors.MaxLetterBytes || omitted != strconv.Itoa(len(big)) {
		t.Fatalf("letter of %d bytes, omitted %q; want at most %d and the value's size %d", size, omitted, processors.MaxLetterBytes, len(big))
	}
	var stub map[string]any
	if err := json.Unmarshal(letter.Value, &stub); err != nil || stub["id"] != "kbig-1" || stub["data"] != nil {
		t.Fatalf("letter value %.200s (%v): want the event's attributes without data", letter.Value, err)
	}
	d, err := processors.LetterOf(asRecord(letter))
	if err != nil || d.EventID != "kbig-1" || d.Scope != "project:a" || d.Offset != 7 || d.Partition != 2 || d.ValueOmitted != len(big) {
		t.Fatalf("LetterOf: %+v %v; want the event, its scope and the omitted value's size %d (GET /v1/deadletters' value_omitted)", d, err, len(big))
	}
	// a small record with a 1 MB key, header, attribute or member name
	// (which the reason and pointer repeat): within the bound too (a
	// re-test: each made a letter of about 1 MB, which wedged the relay)
	mb := strings.Repeat("k", 1<<20)
	smallEvent := func(attr, member string) []byte {
		return []byte(`{"specversion":"1.0","id":"s1","source":"py","type":"coordination.session.started.v1","sessionid":"` + attr + `","data":{"` + member + `":1}}`)
	}
	for name, r := range map[string]*kgo.Record{
		"key":         {Topic: string(events.TopicSessions), Key: []byte(mb), Value: smallEvent("s1", "x")},
		"header":      {Topic: string(events.TopicSessions), Key: []byte("k"), Value: smallEvent("s1", "x"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(mb)}}},
		"attribute":   {Topic: string(events.TopicSessions), Key: []byte("k"), Value: smallEvent(mb, "x")},
		"member name": {Topic: string(events.TopicSessions), Key: []byte("k"), Value: smallEvent("s1", mb)},
		"many headers": {Topic: string(events.TopicSessions), Key: []byte("k"), Value: smallEvent("s1", "x"), Headers: func() []kgo.RecordHeader {
			hs := make([]kgo.RecordHeader, 400)
			for i := range hs {
				hs[i] = kgo.RecordHeader{Key: "h" + strconv.Itoa(i), Value: []byte(strings.Repeat("v", 4000))}
			}
			return hs
		}()},
	} {
		reason := &events.ValidationError{Index: -1, Pointer: "/data/" + mb, Reason: "unknown property " + mb}
		l := processors.DeadLetterRecord(sessions.Processor{}, r, reason)
		if n := len(l.Key) + len(l.Value) + func() (n int) {
			for _, h := range l.Headers {
				n += len(h.Key) + len(h.Value)
			}
			return n
		}(); n > processors.MaxLetterBytes {
			t.Errorf("a record with a large %s: a letter of %d bytes, above %d", name, n, processors.MaxLetterBytes)
		}
		if d, err := processors.LetterOf(asRecord(l)); err != nil || d.Topic != string(events.TopicSessions) {
			t.Errorf("a record with a large %s: LetterOf %+v %v", name, d, err)
		}
	}
	small := &kgo.Record{Topic: string(events.TopicSessions), Key: []byte("project:a/s"), Value: []byte(`{"id":"s"}`)}
	if l := processors.DeadLetterRecord(sessions.Processor{}, small, errTest); string(l.Value) != `{"id":"s"}` {
		t.Fatalf("a small record's letter holds %s; want its value", l.Value)
	}
}

var errTest = &events.ValidationError{Index: -1, Pointer: "/", Reason: "test"}

// The relay takes out of the outbox the rows the broker acknowledged even
// when another row of the same call fails for good, and sends only the
// failed ones again. Before, Once acked nothing on any failure, so every
// row of the call was produced again every round: a walkthrough counted
// one memory.created.v1 245 times on the learned stream behind a row the
// broker refused as too large.
func TestRelayAcksWhatTheBrokerAcknowledged(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "deferred fence"}[deferred], func(t *testing.T) {
			relayAcksWhatTheBrokerAcknowledged(t, deferred)
		})
	}
}

// ownsT owns partition 0 of topic "t" with every record applied up to
// next: the deferred fence relays the rows it sourced below that.
type ownsT struct{ next int64 }

func (o ownsT) Ownership() processors.Ownership {
	return processors.Ownership{Partitions: []processors.OwnedPartition{{Topic: "t", Partition: 0, Next: o.next}}}
}

// relayAcksWhatTheBrokerAcknowledged runs the test on a plain relay, or on
// one with a deferred fence: the path serve takes on its embedded broker
// (the first fix covered only the plain one, and a re-test still saw
// derived events re-sent every round).
func relayAcksWhatTheBrokerAcknowledged(t *testing.T, deferred bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brk, store := brokerAndStore(ctx, t)
	// four rejected items whose letters go to the outbox: the third is
	// larger than any batch the producer sends (franz-go's 1,000,012 bytes)
	topic := string(events.TopicDeadLetter)
	items := make([]projections.Item, 4)
	for i := range items {
		val := []byte("letter " + strconv.Itoa(i))
		if i == 2 {
			val = []byte(strings.Repeat("x", 1_200_000))
		}
		items[i] = projections.Item{Pos: projections.Position{Topic: "t", Offset: int64(i)}, Err: errTest,
			DeadLetter: func(error) projections.OutboxRecord {
				return projections.OutboxRecord{Topic: topic, Key: "k", Value: val, Headers: []projections.Header{{Key: "h", Value: []byte("v")}}}
			}}
	}
	if _, err := store.ApplyBatch("p", items, func(*projections.Tx, *events.Envelope) error { return nil }); err != nil {
		t.Fatal(err)
	}
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brk.Addrs(), PublishTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	relay := &processors.Relay{Store: store, Producer: prod}
	if deferred {
		relay.Fence = &processors.Fence{Brokers: brk.Addrs(), Owner: ownsT{next: 4}, Deferred: true}
	}
	for round := 0; round < 3; round++ {
		n, err := relay.Once(ctx)
		if err == nil {
			t.Fatalf("round %d: no error; want the large row's", round)
		}
		if want := map[bool]int{true: 3, false: 0}[round == 0]; n != want {
			t.Fatalf("round %d: relayed %d, want %d (%v)", round, n, want, err)
		}
		if store.OutboxLen() != 1 {
			t.Fatalf("round %d: %d rows left in the outbox, want the large one", round, store.OutboxLen())
		}
	}
	// each small letter reached the topic once
	cl, err := kgo.NewClient(kgo.SeedBrokers(brk.Addrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]int{}
	total := 0
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; total++ })
	}
	if total != 3 || seen["letter 0"] != 1 || seen["letter 1"] != 1 || seen["letter 3"] != 1 {
		t.Fatalf("the topic holds %d records %v; want each small letter once", total, seen)
	}
}

// The letter of a binary-mode record refused before its envelope was built
// (a content-type other than JSON) names the event from its ce_ headers,
// and its scope. Before, it named none, so the letter belonged to no
// tenant's GET /v1/deadletters and `deadletter list` showed no id (a
// Python integrator's walkthrough, 2026-12-01).
func TestLetterOfABinaryRecordNamesItsEvent(t *testing.T) {
	rec := &kgo.Record{Topic: string(events.TopicMemories), Key: []byte("project:a/m1"), Value: []byte("plain text"), Headers: []kgo.RecordHeader{
		{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("b7")}, {Key: "ce_source", Value: []byte("py")},
		{Key: "ce_type", Value: []byte("memory.feedback.v1")}, {Key: "ce_scope", Value: []byte("project:a")}, {Key: "content-type", Value: []byte("text/plain")}}}
	_, perr := events.FromRecord(rec)
	if perr == nil {
		t.Fatal("a text/plain binary record parsed")
	}
	letter := processors.DeadLetterRecord(sessions.Processor{}, rec, perr)
	d, err := processors.LetterOf(asRecord(letter))
	if err != nil || d.EventID != "b7" || d.EventType != "memory.feedback.v1" || d.Scope != "project:a" {
		t.Fatalf("LetterOf: %+v %v; want event b7 of project:a", d, err)
	}
}

// asRecord is the record the relay produces for an outbox row.
func asRecord(o projections.OutboxRecord) *kgo.Record {
	r := &kgo.Record{Topic: o.Topic, Key: []byte(o.Key), Value: o.Value}
	for _, h := range o.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return r
}

// The letter of a record refused for its content-type names its event
// too when that type is a CloudEvents one: a record whose content-type
// says structured mode while its attributes are ce_ headers (the value,
// the data, has no id) names the headers' event; a JSON Batch Format
// record (no batched mode in the Kafka binding) names its first event and
// the scope all of its events share, and none when they differ (showing
// it to one tenant would show the others' events). Before, these letters
// named no event, so no tenant's GET /v1/deadletters listed them.
func TestLetterOfACloudEventsContentTypeRecordNamesItsEvent(t *testing.T) {
	attrs := []kgo.RecordHeader{{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("b7")}, {Key: "ce_source", Value: []byte("py")},
		{Key: "ce_type", Value: []byte("memory.feedback.v1")}, {Key: "ce_scope", Value: []byte("project:a")}}
	ev := func(id, scope string) string {
		sc := ""
		if scope != "" {
			sc = `,"scope":"` + scope + `"`
		}
		return `{"specversion":"1.0","id":"` + id + `","source":"js","type":"memory.feedback.v1"` + sc + `,"data":{"memory_id":"m1","signal":"task_completion","positive":false}}`
	}
	for _, c := range []struct {
		name, ct, value string
		withAttrs       bool
		id, scope       string // "" scope: no letter scope (LetterOf fails)
	}{
		{"structured content-type, binary attributes", events.ContentTypeCloudEvents, `{"memory_id":"m1","signal":"task_completion","positive":false}`, true, "b7", "project:a"},
		{"batch content-type, binary attributes", events.ContentTypeBatch, `{"memory_id":"m1","signal":"task_completion","positive":false}`, true, "b7", "project:a"},
		{"batch of one scope", events.ContentTypeBatch, "[" + ev("e1", "project:a") + "," + ev("e2", "project:a") + "]", false, "e1", "project:a"},
		{"batch without scopes", events.ContentTypeBatch, "[" + ev("e1", "") + "," + ev("e2", "") + "]", false, "e1", events.DefaultScope},
		{"batch of two scopes", events.ContentTypeBatch, "[" + ev("e1", "project:a") + "," + ev("e2", "project:b") + "]", false, "", ""},
	} {
		rec := &kgo.Record{Topic: string(events.TopicMemories), Key: []byte("project:a/m1"), Value: []byte(c.value), Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte(c.ct)}}}
		if c.withAttrs {
			rec.Headers = append(rec.Headers, attrs...)
		}
		_, perr := events.FromRecord(rec)
		if perr == nil {
			t.Fatalf("%s: the record parsed", c.name)
		}
		d, err := processors.LetterOf(asRecord(processors.DeadLetterRecord(sessions.Processor{}, rec, perr)))
		if c.scope == "" {
			if err == nil {
				t.Errorf("%s: LetterOf: %+v; want no scope for events of two tenants", c.name, d)
			}
			continue
		}
		if err != nil || d.EventID != c.id || d.EventType != "memory.feedback.v1" || d.Scope != c.scope {
			t.Errorf("%s: LetterOf: %+v %v; want event %s of %s", c.name, d, err, c.id, c.scope)
		}
	}
}

// The letter of a record whose attributes ride in the HTTP binding's ce-
// headers (refused: a Kafka record's are ce_) names the event and scope
// those headers give; before, it named no event, so no tenant's
// GET /v1/deadletters listed it (a kafkajs walkthrough). ce_ headers, when
// a record has both, win.
func TestLetterOfARecordWithHTTPBindingHeadersNamesItsEvent(t *testing.T) {
	hs := []kgo.RecordHeader{{Key: "ce-specversion", Value: []byte("1.0")}, {Key: "ce-id", Value: []byte("k9")}, {Key: "ce-source", Value: []byte("js")},
		{Key: "ce-type", Value: []byte("memory.feedback.v1")}, {Key: "ce-scope", Value: []byte("project:a")}, {Key: "content-type", Value: []byte(events.ContentTypeJSON)}}
	rec := &kgo.Record{Topic: string(events.TopicMemories), Key: []byte("project:a/m1"), Value: []byte(`{"memory_id":"m1","signal":"task_completion","positive":false}`), Headers: hs}
	_, perr := events.FromRecord(rec)
	if perr == nil {
		t.Fatal("the record parsed")
	}
	d, err := processors.LetterOf(asRecord(processors.DeadLetterRecord(sessions.Processor{}, rec, perr)))
	if err != nil || d.EventID != "k9" || d.EventType != "memory.feedback.v1" || d.EventSource != "js" || d.Scope != "project:a" {
		t.Fatalf("LetterOf: %+v %v; want event k9 of project:a", d, err)
	}
	rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "ce_id", Value: []byte("u1")}, kgo.RecordHeader{Key: "ce_type", Value: []byte("memory.retrieved.v1")})
	_, perr = events.FromRecord(rec)
	if perr == nil {
		t.Fatal("the record with ce_ headers too parsed")
	}
	if d, err := processors.LetterOf(asRecord(processors.DeadLetterRecord(sessions.Processor{}, rec, perr))); err != nil || d.EventID != "u1" || d.EventType != "memory.retrieved.v1" {
		t.Fatalf("LetterOf with ce_ headers too: %+v %v; want the ce_ headers' event u1", d, err)
	}
}

// TestRelayFailedRoundWaitsForTheTicker: a row the broker refuses for
// good fails each round at once, so the relay waits its Idle interval
// after a failed round instead of starting one on every commit. Before,
// a busy engine's commits (one every 2 ms here) each started a round
// against the broker, refused again: a round per commit.
func TestRelayFailedRoundWaitsForTheTicker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brk, store := brokerAndStore(ctx, t)
	letter := func(off int64, val []byte) projections.Item {
		return projections.Item{Pos: projections.Position{Topic: "t", Offset: off}, Err: errTest,
			DeadLetter: func(error) projections.OutboxRecord {
				return projections.OutboxRecord{Topic: string(events.TopicDeadLetter), Key: "k", Value: val}
			}}
	}
	apply := func(it projections.Item) {
		t.Helper()
		if _, err := store.ApplyBatch("p", []projections.Item{it}, func(*projections.Tx, *events.Envelope) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	apply(letter(0, []byte(strings.Repeat("x", 1_200_000)))) // above franz-go's batch limit: refused at once, every round
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brk.Addrs(), PublishTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var rounds atomic.Int32
	rctx, stop := context.WithCancel(ctx)
	relay := &processors.Relay{Store: store, Producer: prod, Idle: 200 * time.Millisecond, OnError: func(error) { rounds.Add(1) }}
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	start := time.Now()
	for off := int64(1); time.Since(start) < time.Second; off++ {
		apply(letter(off, []byte("small"))) // a commit with an outbox row: a notification
		time.Sleep(2 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// one round at the start, then one per Idle interval, give or take
	t.Logf("%d failed rounds", rounds.Load())
	if n := rounds.Load(); n < 2 || n > 9 {
		t.Fatalf("%d failed rounds in a second of commits every 2 ms with Idle 200 ms, want about 6", n)
	}
}

// brokerAndStore starts an embedded broker (one partition a topic) and
// opens a store, both closed when t ends.
func brokerAndStore(ctx context.Context, t *testing.T) (*broker.Broker, *projections.Store) {
	t.Helper()
	brk, err := broker.Start(ctx, broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(brk.Close)
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return brk, store
}
