package httpapi_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestAsOf: the positions a store's projections stand at, one per
// partition read, the last record every processor of it read; a processor
// ahead of the others is named (AheadTo), and an empty store says so.
func TestAsOf(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if got := httpapi.AsOf(store); len(got) != 0 {
		t.Fatalf("empty store: %+v, want none", got)
	}
	if line := httpapi.AsOfLine(store); !strings.Contains(line, "no record of the log") {
		t.Fatalf("empty store: %q", line)
	}
	for _, s := range []struct {
		processor string
		pos       projections.Position
	}{
		{"sessions", projections.Position{Topic: "chronicle.sessions", Partition: 1, Offset: 9}},
		{"sessions", projections.Position{Topic: "chronicle.sessions", Partition: 0, Offset: 41}},
		{"sessionlog", projections.Position{Topic: "chronicle.sessions", Partition: 0, Offset: 41}},
		{"memories", projections.Position{Topic: "chronicle.memories", Partition: 0, Offset: 72}},
		{"sessionlog.memories", projections.Position{Topic: "chronicle.memories", Partition: 0, Offset: 75}},
	} {
		if err := store.Skip(s.processor, s.pos); err != nil {
			t.Fatal(err)
		}
	}
	want := []httpapi.AsOfPosition{
		{Topic: "chronicle.memories", Partition: 0, Last: 72, Position: "chronicle.memories:0:72", AheadTo: 75},
		{Topic: "chronicle.sessions", Partition: 0, Last: 41, Position: "chronicle.sessions:0:41"},
		{Topic: "chronicle.sessions", Partition: 1, Last: 9, Position: "chronicle.sessions:1:9"},
	}
	if got := httpapi.AsOf(store); !reflect.DeepEqual(got, want) {
		t.Fatalf("AsOf: %+v\nwant %+v", got, want)
	}
	line := httpapi.AsOfLine(store)
	if !strings.Contains(line, "chronicle.memories:0:72 (some processors to 75), chronicle.sessions:0:41, chronicle.sessions:1:9") {
		t.Fatalf("AsOfLine: %q", line)
	}
}
