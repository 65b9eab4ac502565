package projections

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
)

// A dead-lettered time-less event that another processor applied under a
// dedup-version-2 idempotency key (a data directory upgraded from before
// version 3) stays a plain duplicate for that processor when it is
// redriven. deadletter.Redrive stamps the original record time into the
// event (stampTime: a "time" member, or a ce_time header), so the
// redriven event carries a *sent* time where the original took its time
// from the log; a version-2 hash counts a sent time, so the upgraded store
// dead-lettered the redriven copy as a conflicting duplicate while a fresh
// replay (version-5 keys) calls it a duplicate (found by a review).
func TestRedrivenTimelessEventIsADuplicateForAVersion2Key(t *testing.T) {
	t0 := time.UnixMilli(1700000000123).UTC()
	structured := kgo.Record{Timestamp: t0, Value: []byte(`{"specversion":"1.0","id":"e1","source":"s","type":"memory.feedback.v1","data":{"memory_id":"m1","signal":"task_completion","positive":true}}`)}
	binaryRec := kgo.Record{Timestamp: t0, Value: []byte(`{"memory_id":"m1","signal":"task_completion","positive":true}`), Headers: []kgo.RecordHeader{
		{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("e1")}, {Key: "ce_source", Value: []byte("s")},
		{Key: "ce_type", Value: []byte("memory.feedback.v1")}, {Key: "content-type", Value: []byte("application/json")}}}
	for name, c := range map[string]struct {
		orig  kgo.Record
		stamp func(kgo.Record) kgo.Record // what deadletter.stampTime does to the record
	}{
		"structured": {structured, func(r kgo.Record) kgo.Record {
			v, err := events.StructuredJSON(&r)
			if err != nil {
				t.Fatal(err)
			}
			r.Value = v
			return r
		}},
		"binary": {binaryRec, func(r kgo.Record) kgo.Record {
			r.Headers = append(append([]kgo.RecordHeader(nil), r.Headers...), kgo.RecordHeader{Key: "ce_time", Value: []byte(events.RecordTime(r.Timestamp))})
			return r
		}},
	} {
		orig, err := events.FromRecord(&c.orig)
		if err != nil || !orig.TimeFromLog {
			t.Fatalf("%s: %v %+v", name, err, orig)
		}
		redriven := c.stamp(c.orig)
		redriven.Timestamp = t0.Add(time.Hour) // the redrive's time
		again, err := events.FromRecord(&redriven)
		if err != nil || again.Time != orig.Time {
			t.Fatalf("%s: redriven %v %+v", name, err, again)
		}
		v2 := append(append(binary.BigEndian.AppendUint64(nil, 7), 2), contentHashV2(&orig)...)
		if !sameContent(v2, &again, ContentHash(&again)) {
			t.Errorf("%s: the redriven copy of a time-less event is a conflicting duplicate for a processor that applied the original under a version-2 key (a fresh replay calls it a duplicate)", name)
		}
		if !sameContent(dedupValue(7, ContentHash(&orig)), &again, ContentHash(&again)) {
			t.Errorf("%s: version 5 key: not a duplicate", name)
		}
	}
}
