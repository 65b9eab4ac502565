package sessions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A trace row written as raw bytes reads back as the TraceItem encoding/json
// would have written, data included.
func TestTraceRowRoundTrip(t *testing.T) {
	env, err := events.New(events.MinuteRecorded, "test", `id "<quoted>" & more`, time.Unix(1700000000, 0),
		events.MinuteData{EventType: "message", Actor: "assistant", Data: []byte(`{"content":"a <b> & c","n":[1,2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	env.Data = append([]byte(" \n"), env.Data...) // whitespace around the data as a producer may send it
	row, err := traceRow(&env)
	if err != nil {
		t.Fatal(err)
	}
	var got TraceItem
	if err := json.Unmarshal(row, &got); err != nil {
		t.Fatalf("row %s: %v", row, err)
	}
	var wantData, gotData any
	_ = json.Unmarshal(env.Data, &wantData)
	_ = json.Unmarshal(got.Data, &gotData)
	if got.ID != env.ID || got.Type != env.Type || got.Time != env.Time || !reflect.DeepEqual(gotData, wantData) {
		t.Fatalf("read back %+v from %s", got, row)
	}
}

// traceKey writes what fmt's "t/%s/%s/%06d" writes (t/%s/%06d without a
// trace position) below 1,000,000, the layout stored rows have, and
// projections.SeqKey's from there on, which sorts after them (%06d's
// 1000000 sorted between 100000 and 100001).
func TestTraceKeyAsSprintf(t *testing.T) {
	at := traceAt(projections.Position{Topic: "chronicle.sessions", Partition: 3, Offset: 1234})
	if want := "chronicle.sessions/000003/00000000000000001234"; at != want {
		t.Fatalf("traceAt = %q, want %q", at, want)
	}
	for _, seq := range []int{0, 7, 42, 99999, 999999, 1000000, 123456789} {
		n := fmt.Sprintf("%06d", seq)
		if seq >= 1_000_000 {
			n = fmt.Sprintf("~%02d%d", len(fmt.Sprint(seq)), seq)
		}
		if got, want := traceKey("", "project:x/s-1", seq), fmt.Sprintf("t/%s/%s", "project:x/s-1", n); got != want {
			t.Errorf("traceKey(%d) = %q, want %q", seq, got, want)
		}
		if got, want := traceKey(at, "project:x/s-1", seq), fmt.Sprintf("t/%s/%s/%s", at, "project:x/s-1", n); got != want {
			t.Errorf("traceKey(%q, %d) = %q, want %q", at, seq, got, want)
		}
	}
	if a, b := traceKey(at, "project:x/s-1", 999999), traceKey(at, "project:x/s-1", 1000000); a >= b {
		t.Errorf("trace row 999999 %q sorts at or after row 1000000 %q", a, b)
	}
}

// traceTypeData reads the type and the data of a row as a TraceItem decode
// does: on traceRow's rows (ids with quotes and escapes, data with a
// `,"data":` inside a string) and on rows of another shape, which it
// decodes.
func TestTraceTypeDataAsDecode(t *testing.T) {
	var rows [][]byte
	for _, id := range []string{"m-1", `id "<quoted>" & more`, `back\slash`} {
		env, err := events.New(events.MinuteRecorded, "test", id, time.Unix(1700000000, 0),
			events.MinuteData{EventType: "message", Actor: "assistant", Data: []byte(`{"content":"x,\"data\":1","n":[1,2]}`)})
		if err != nil {
			t.Fatal(err)
		}
		row, err := traceRow(&env)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	rows = append(rows,
		[]byte(`{"data":{"a":1},"id":"x","type":"workflow.task.completed.v1","time":"t"}`), // data first
		[]byte(`{"id":"x", "type" : "coordination.minute.recorded.v1","time":"t","data":{"b":2}}`),
		[]byte(`{"id":"y","type":"workflow.task.completed.v1","time":"t","data":{"tool_id":"a"}}`),
	)
	fast := 0
	for _, row := range rows {
		typ, data, err := traceTypeData(row)
		var want TraceItem
		if werr := json.Unmarshal(row, &want); err != nil || werr != nil || typ != want.Type || string(data) != string(want.Data) {
			t.Errorf("row %s: traceTypeData = %q, %s, %v; decode %q, %s", row, typ, data, err, want.Type, want.Data)
		}
		if p, r := uintptr(unsafe.Pointer(unsafe.SliceData(data))), uintptr(unsafe.Pointer(unsafe.SliceData(row))); p >= r && p < r+uintptr(len(row)) {
			fast++ // data aliases the row: read without a decode
		}
	}
	if fast != 2 { // the plain rows: m-1's and y's
		t.Fatalf("the fast path read %d of %d rows, want 2", fast, len(rows))
	}
}
