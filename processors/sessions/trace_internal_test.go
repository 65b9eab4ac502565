package sessions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
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

// traceKey writes what fmt's "t/%s/%06d" writes, past six digits too.
func TestTraceKeyAsSprintf(t *testing.T) {
	for _, seq := range []int{0, 7, 42, 99999, 999999, 1000000, 123456789} {
		if got, want := traceKey("project:x/s-1", seq), fmt.Sprintf("t/%s/%06d", "project:x/s-1", seq); got != want {
			t.Errorf("traceKey(%d) = %q, want %q", seq, got, want)
		}
	}
}
