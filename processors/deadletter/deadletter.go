// Package deadletter lists the records of the dead-letter topic
// (events.TopicDeadLetter) and re-drives them: it re-produces a rejected
// record to its original topic, with its original key, as its producer sent
// it, so that processors apply it once whatever made it fail is fixed (for
// example a completion that arrived before its session's start).
package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Letter is one record of the dead-letter topic.
type Letter struct {
	// ID names the rejected record by its original position,
	// "topic:partition:offset". Several letters share an ID when several
	// handlers rejected the same record; a redrive re-produces it once.
	ID string `json:"id"`
	// Topic, Partition and Offset are the rejected record's position.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Handler is processor@topic or worker@topic; Reason is its error.
	Handler string `json:"handler"`
	Reason  string `json:"reason"`
	// Pointer is the JSON pointer of the event's member the rejection
	// names (e.g. /data/memory_id), empty when it names none: what GET
	// /v1/deadletters answers as pointer (`deadletter list` left it out: a
	// re-test).
	Pointer string `json:"pointer,omitempty"`
	// Key is the original record key.
	Key string `json:"key"`
	// EventID and EventType are the event's id and type when the record
	// holds a JSON event with them (empty otherwise: a record that is no
	// event at all is dead-lettered too).
	EventID   string `json:"event_id,omitempty"`
	EventType string `json:"event_type,omitempty"`
	// EventSource is the event's source attribute, and Scope its scope
	// (processors.LetterData: org:default for an event without the
	// attribute), as GET /v1/deadletters answers them; both empty when
	// the record names none (`deadletter list --json` left them out: a
	// walkthrough's finding).
	EventSource string `json:"event_source,omitempty"`
	Scope       string `json:"scope,omitempty"`
	// DeadLetterPartition and DeadLetterOffset are the letter's own
	// position in the dead-letter topic.
	DeadLetterPartition int32 `json:"dead_letter_partition"`
	DeadLetterOffset    int64 `json:"dead_letter_offset"`
	// DeadLetteredAt is when the log received the letter (RFC 3339, UTC).
	DeadLetteredAt string `json:"dead_lettered_at"`
	// ValueOmitted is the size in bytes of the record's value when the
	// letter left it out (processors.MaxLetterBytes), else 0: a redrive
	// reads the record from its original position.
	ValueOmitted int `json:"value_omitted,omitempty"`
	// RedrivenTo is where a redrive re-produced the record
	// ("topic:partition:offset"), RedrivenAt when (its redrive note's
	// time); both empty while the letter waits for a redrive.
	RedrivenTo string `json:"redriven_to,omitempty"`
	RedrivenAt string `json:"redriven_at,omitempty"`

	original *kgo.Record
	// recordTime is the original record's timestamp when the letter
	// carries it (a worker's letter: kafka_timestamp), else zero.
	recordTime time.Time
}

// Original is the record as its producer sent it (see Restore).
func (l *Letter) Original() *kgo.Record { return l.original }

// letterHeaders are the headers a dead-letter record carries beyond the
// original record's own: the engine's and Watermill's poison-queue
// headers, the kafka_* metadata the workers' messages carry, and
// Watermill's message uuid and partition key, and the engine's pointer.
var letterHeaders = map[string]bool{
	processors.HeaderError: true, processors.HeaderPoisonedTopic: true, processors.HeaderHandler: true, processors.HeaderPointer: true,
	processors.HeaderOriginalTopic: true, processors.HeaderOriginalPartition: true, processors.HeaderOriginalOffset: true,
	kafkapubsub.RecordKeyMetadataKey: true, kafkapubsub.TimestampMetadataKey: true,
	kafkapubsub.UUIDHeaderKey: true, kafkapubsub.MetadataKey: true, middleware.PoisonedSubscriberKey: true,
}

// Parse reads a dead-letter record. It fails, naming the header, when one
// of the original-position headers is missing or malformed.
func Parse(rec *kgo.Record) (Letter, error) {
	hs := map[string]string{}
	for _, h := range rec.Headers {
		hs[h.Key] = string(h.Value)
	}
	l := Letter{Topic: hs[processors.HeaderOriginalTopic], Handler: hs[processors.HeaderHandler], Reason: hs[processors.HeaderError], Pointer: hs[processors.HeaderPointer],
		Key: string(rec.Key), DeadLetterPartition: rec.Partition, DeadLetterOffset: rec.Offset, DeadLetteredAt: events.RecordTime(rec.Timestamp)}
	if d, err := processors.LetterOf(rec); err == nil {
		l.Scope, l.EventSource = d.Scope, d.EventSource
	}
	at := fmt.Sprintf("dead letter %d:%d", rec.Partition, rec.Offset)
	if l.Topic == "" {
		return Letter{}, fmt.Errorf("%s: header %s: missing", at, processors.HeaderOriginalTopic)
	}
	p, err := strconv.ParseInt(hs[processors.HeaderOriginalPartition], 10, 32)
	if err != nil {
		return Letter{}, fmt.Errorf("%s: header %s: %q is not a partition", at, processors.HeaderOriginalPartition, hs[processors.HeaderOriginalPartition])
	}
	o, err := strconv.ParseInt(hs[processors.HeaderOriginalOffset], 10, 64)
	if err != nil {
		return Letter{}, fmt.Errorf("%s: header %s: %q is not an offset", at, processors.HeaderOriginalOffset, hs[processors.HeaderOriginalOffset])
	}
	l.Partition, l.Offset = int32(p), o
	if k, ok := hs[kafkapubsub.RecordKeyMetadataKey]; ok { // a worker's letter
		l.Key = k
	}
	if ts, err := time.Parse(time.RFC3339Nano, hs[kafkapubsub.TimestampMetadataKey]); err == nil {
		l.recordTime = ts
	}
	if n, err := strconv.Atoi(hs[processors.HeaderValueOmitted]); err == nil && n > 0 {
		l.ValueOmitted = n
	}
	l.ID = fmt.Sprintf("%s:%d:%d", l.Topic, l.Partition, l.Offset)
	l.original = Restore(rec, l.Topic, l.Key)
	if raw, err := events.StructuredJSON(l.original); err == nil {
		var ev struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Source string `json:"source"`
		}
		if json.Unmarshal(raw, &ev) == nil {
			l.EventID, l.EventType = ev.ID, ev.Type
			if l.EventSource == "" {
				l.EventSource = ev.Source
			}
		}
	}
	if l.EventID == "" {
		if d, err := processors.LetterOf(rec); err == nil {
			// a binary-mode record that is no event (its content-type, its
			// data) named in its ce_ headers
			l.EventID, l.EventType = d.EventID, d.EventType
			if l.EventSource == "" {
				l.EventSource = d.EventSource
			}
		}
	}
	return l, nil
}

// Restore rebuilds the original record of the dead-letter record rec:
// topic and key as given, the value as is, the headers without the
// letterHeaders. A worker's letter holds the event already converted to
// structured mode (its message payload) next to the original ce_ headers;
// re-producing those would make the record parse as binary mode with the
// whole envelope as data, so when the value is the structured form of the
// ce_ headers' event (same specversion and id), the ce_ headers are
// dropped and content-type says structured mode. A record that was binary
// mode when it was dead-lettered by the engine keeps its ce_ headers.
func Restore(rec *kgo.Record, topic, key string) *kgo.Record {
	var ceID, ceSpec string
	binary := false
	for _, h := range rec.Headers {
		switch strings.ToLower(h.Key) {
		case "ce_id":
			ceID, binary = string(h.Value), true
		case "ce_specversion":
			ceSpec, binary = string(h.Value), true
		}
	}
	converted := false
	if binary {
		var v struct {
			SpecVersion *string `json:"specversion"`
			ID          *string `json:"id"`
		}
		converted = json.Unmarshal(rec.Value, &v) == nil && v.SpecVersion != nil && v.ID != nil && *v.SpecVersion == ceSpec && *v.ID == ceID
	}
	out := &kgo.Record{Topic: topic, Key: []byte(key), Value: rec.Value}
	for _, h := range rec.Headers {
		lk := strings.ToLower(h.Key)
		if letterHeaders[h.Key] || converted && (strings.HasPrefix(lk, "ce_") || lk == "content-type") {
			continue
		}
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	if converted {
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: "content-type", Value: []byte(events.ContentTypeCloudEvents)})
	}
	return out
}

// List reads every letter of the dead-letter topic, from its start to the
// end offsets it has when List is called, in (partition, offset) order.
func List(ctx context.Context, brokers []string) ([]Letter, error) {
	topic := string(events.TopicDeadLetter)
	cl, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("deadletter: end offsets of %s: %w", topic, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("deadletter: end offsets of %s: %w", topic, err)
	}
	starts := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			starts[o.Partition] = kgo.NewOffset().AtStart()
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cons, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), // a fenced relay writes in transactions: never an aborted record, and the markers reach the end
		kgo.DisableFetchSessions()) // see kafkapubsub: avoids a race in franz-go's Close
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	var out []Letter
	notes := map[[2]int64]processors.RedriveData{} // by the letter's partition and offset
	for len(want) > 0 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("deadletter: read %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return nil, fmt.Errorf("deadletter: read %s: %w", topic, ferr)
		}
		for it := fs.RecordIter(); !it.Done(); {
			rec := it.Next()
			end, ok := want[rec.Partition]
			if !ok || rec.Offset >= end {
				continue
			}
			if rec.Attrs.IsControl() { // a transaction marker of a fenced relay
				if rec.Offset+1 >= end {
					delete(want, rec.Partition)
				}
				continue
			}
			if rec.Offset+1 >= end {
				delete(want, rec.Partition)
			}
			if processors.IsRedriveNote(rec) {
				d, err := processors.RedriveOf(rec)
				if err != nil {
					return nil, err
				}
				notes[[2]int64{int64(d.LetterPartition), d.LetterOffset}] = d
				continue
			}
			l, err := Parse(rec)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		}
	}
	for i := range out {
		if d, ok := notes[[2]int64{int64(out[i].DeadLetterPartition), out[i].DeadLetterOffset}]; ok {
			out[i].RedrivenTo, out[i].RedrivenAt = d.RedrivenTo, d.RedrivenAt
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DeadLetterPartition != out[j].DeadLetterPartition {
			return out[i].DeadLetterPartition < out[j].DeadLetterPartition
		}
		return out[i].DeadLetterOffset < out[j].DeadLetterOffset
	})
	return out, nil
}

// Redriven is one re-produced record: the letter's ID and the new
// position of the record on its original topic.
type Redriven struct {
	ID        string `json:"id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Redrive re-produces the original record of each distinct letter ID of
// letters (the first letter of an ID, in order) to its original topic and
// waits for the broker's acknowledgement. The event keeps its id, so a
// processor that had applied it treats it as a duplicate; one that had
// rejected it applies it now, or dead-letters it again with the new
// reason.
//
// The new record's timestamp is the redrive's (when the log received
// it), so `replay --until TIME` before the redrive leaves the redriven
// event out, as the live service had not applied it then; before, the
// record kept the original's timestamp and an as-of state showed, say, a
// session completed that the live service still called running (found by
// an analyst's walkthrough). An event without a time attribute, which
// takes its time from its record on consume, is given the time it had
// (stampTime: the original record's timestamp, read from the original
// topic or from the letter's kafka_timestamp), so it is the same event
// for the processors (time is not part of the idempotency check since
// version 3 either). When the original record is no longer in the log
// and the letter does not carry its timestamp, such an event takes the
// redrive's time.
//
// A record whose event parses is re-produced keyed by the event's key
// (events.Key), so the default partitioner puts it on its entity's
// partition: a record dead-lettered for sitting elsewhere
// (events.PartitionError: another key, or another client's partitioner)
// lands where it belongs; a record keyed right keeps its key.
func Redrive(ctx context.Context, brokers []string, letters []Letter) ([]Redriven, error) {
	// a record the broker took from another client can be larger than
	// franz-go's default batch (1,000,012 bytes): the broker's own limit
	// decides, as it did when the record was first written
	cl, err := kafkaconn.NewClient(brokers, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(15*time.Second),
		kgo.ProducerBatchMaxBytes(64<<20))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	notes, err := kafkaconn.NewClient(brokers, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(15*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner())) // a note goes to its letter's partition
	if err != nil {
		return nil, err
	}
	defer notes.Close()
	byID := map[string][]Letter{}
	for _, l := range letters {
		byID[l.ID] = append(byID[l.ID], l)
	}
	seen := map[string]bool{}
	var out []Redriven
	for _, l := range letters {
		if seen[l.ID] || l.original == nil {
			continue
		}
		seen[l.ID] = true
		rec := *l.original
		rec.Headers = append([]kgo.RecordHeader(nil), l.original.Headers...)
		ts := l.recordTime
		if l.ValueOmitted > 0 {
			// the letter holds the event's attributes only: the record
			// is read back from its position
			orig, err := originalRecord(ctx, brokers, l)
			if err != nil {
				return out, fmt.Errorf("deadletter: redrive %s: %w", l.ID, err)
			}
			if orig == nil {
				return out, fmt.Errorf("deadletter: redrive %s: the letter holds no copy of the record (its %d-byte value was above the letter limit, %d bytes) and the log no longer has it at its position", l.ID, l.ValueOmitted, processors.MaxLetterBytes)
			}
			rec = kgo.Record{Topic: l.Topic, Key: orig.Key, Value: orig.Value, Headers: orig.Headers} // the letter may hold the key and headers cut
			ts = orig.Timestamp
		}
		if _, key, err := events.FromRecordKey(&rec); err == nil {
			rec.Key = []byte(key) // the event's own key: the partition its entity's events are on
		}
		if ts.IsZero() {
			if ts, err = originalTime(ctx, brokers, l); err != nil {
				return out, fmt.Errorf("deadletter: redrive %s: %w", l.ID, err)
			}
		}
		if !ts.IsZero() {
			stampTime(&rec, ts)
		}
		rec.Timestamp = time.Time{} // the time of the redrive: when the log receives it
		res := cl.ProduceSync(ctx, &rec)
		if err := res.FirstErr(); err != nil {
			return out, fmt.Errorf("deadletter: redrive %s: %w", l.ID, err)
		}
		r := res[0].Record
		out = append(out, Redriven{ID: l.ID, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset})
		to := fmt.Sprintf("%s:%d:%d", r.Topic, r.Partition, r.Offset)
		for _, m := range byID[l.ID] {
			if err := writeNote(ctx, notes, m, to); err != nil {
				return out, fmt.Errorf("deadletter: redrive %s: re-produced to %s, but its redrive note: %w", l.ID, to, err)
			}
		}
	}
	return out, nil
}

// writeNote writes the redrive note of letter l, whose record went to
// "topic:partition:offset" to, on l's partition of the dead-letter topic
// (after l), so the deadletters projection, which applies each partition
// in order, marks l's row redriven, and List marks l. When the note
// cannot be written the record was re-produced all the same: l stays
// listed as waiting, and a second redrive re-produces the record again,
// which the processors that applied it take for a duplicate (same id).
func writeNote(ctx context.Context, cl *kgo.Client, l Letter, to string) error {
	d := processors.RedriveData{LetterPartition: l.DeadLetterPartition, LetterOffset: l.DeadLetterOffset, LetterAt: l.DeadLetteredAt, Scope: l.Scope, RedrivenTo: to}
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	rec := &kgo.Record{Topic: string(events.TopicDeadLetter), Partition: l.DeadLetterPartition, Key: []byte(l.Key), Value: v, Headers: []kgo.RecordHeader{
		{Key: processors.HeaderRedriveOf, Value: []byte(fmt.Sprintf("%d:%d", l.DeadLetterPartition, l.DeadLetterOffset))},
		{Key: processors.HeaderRedriveOfTime, Value: []byte(l.DeadLetteredAt)},
		{Key: processors.HeaderRedriveScope, Value: []byte(l.Scope)},
		{Key: processors.HeaderRedrivenTo, Value: []byte(to)},
	}}
	return cl.ProduceSync(ctx, rec).FirstErr()
}

// Pending reports whether l waits for a redrive: no redrive note names it.
func (l *Letter) Pending() bool { return l.RedrivenTo == "" }

// stampTime gives the event of rec, when it has no time attribute, the
// time it had when it was consumed from its original record: ts, the
// original record's timestamp, as events.RecordTime writes it (a binary-mode
// record gets a ce_time header, a structured one a "time" member). So
// the redriven record may carry the redrive's own timestamp while its
// event keeps its time. An event with a time, or a value that is no JSON
// object, is left as it is.
func stampTime(rec *kgo.Record, ts time.Time) {
	binary, timed := false, false
	for _, h := range rec.Headers {
		k := strings.ToLower(h.Key)
		binary = binary || strings.HasPrefix(k, "ce_")
		timed = timed || k == "ce_time"
	}
	if binary {
		if !timed {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "ce_time", Value: []byte(events.RecordTime(ts))})
		}
		return
	}
	withTS := *rec
	withTS.Timestamp = ts
	if v, err := events.StructuredJSON(&withTS); err == nil {
		rec.Value = v
	}
}

// originalTime reads the timestamp of l's original record from its topic;
// zero when the log no longer holds that offset.
func originalTime(ctx context.Context, brokers []string, l Letter) (time.Time, error) {
	rec, err := originalRecord(ctx, brokers, l)
	if err != nil || rec == nil {
		return time.Time{}, err
	}
	return rec.Timestamp, nil
}

// originalRecord reads the record l names from its original position,
// nil when the log no longer has it (retention, compaction). It waits at
// most 10 s.
func originalRecord(ctx context.Context, brokers []string, l Letter) (*kgo.Record, error) {
	cl, err := kafkaconn.NewClient(brokers,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.Topic: {l.Partition: kgo.NewOffset().At(l.Offset)}}),
		kgo.DisableFetchSessions()) // see kafkapubsub: avoids a race in franz-go's Close
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read the original record at %s: %w", l.ID, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if errors.Is(ferr, kerr.OffsetOutOfRange) {
			return nil, nil // retention removed it
		}
		if ferr != nil {
			return nil, fmt.Errorf("read the original record at %s: %w", l.ID, ferr)
		}
		for it := fs.RecordIter(); !it.Done(); {
			rec := it.Next()
			if rec.Offset >= l.Offset {
				if rec.Offset > l.Offset { // compacted away
					return nil, nil
				}
				return rec, nil
			}
		}
	}
}

// RefusedAgain returns the ids of the letters of ls that wait for a
// redrive although their record is itself a redrive, refused again for
// the same reasons: a letter redriven to the id's position (RedrivenTo)
// had, for each of the id's letters, one of the same Handler, Pointer and
// Reason (a reason's own position, the letter's id, read as equal). Such
// a record would be refused a third time unless what it waits for has
// changed since (a session started meanwhile), so `chronicle deadletter
// redrive --all` skips it unless --again, and --id still redrives it.
// Before, each --all re-produced every such record once more, so a log
// whose letters could never be applied grew by their count at every run
// (a resource-leak walkthrough: 16 letters became 3,752 in 25 minutes of
// runs).
func RefusedAgain(ls []Letter) map[string]bool {
	byID := map[string][]Letter{}
	from := map[string][]string{} // a redrive's target id → the redriven ids
	for _, l := range ls {
		byID[l.ID] = append(byID[l.ID], l)
		if l.RedrivenTo != "" && !slices.Contains(from[l.RedrivenTo], l.ID) {
			from[l.RedrivenTo] = append(from[l.RedrivenTo], l.ID)
		}
	}
	same := func(a Letter, b Letter) bool {
		return a.Handler == b.Handler && a.Pointer == b.Pointer &&
			strings.ReplaceAll(a.Reason, a.ID, "\x00") == strings.ReplaceAll(b.Reason, b.ID, "\x00")
	}
	out := map[string]bool{}
	for id, letters := range byID {
		if !slices.ContainsFunc(letters, func(l Letter) bool { return l.Pending() }) {
			continue
		}
		for _, prev := range from[id] {
			if !slices.ContainsFunc(letters, func(l Letter) bool {
				return !slices.ContainsFunc(byID[prev], func(p Letter) bool { return same(l, p) })
			}) {
				out[id] = true
				break
			}
		}
	}
	return out
}
