package projections

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// A workflow write (or a memory tool's event) is now built with
// events.NewVerbatim ('<', '>' and '&' kept), where it was built with
// events.New (json.Marshal's \u003c escapes). A retry of a write applied
// before, under the same id, is the same event for a fresh replay
// (version-5 keys hash the canonical data, where \u003c and '<' are one)
// and must be for an upgraded store too (sameAsSpelled: "an upgraded
// store decides as a replay does"); a version-3 key hashes the data as
// written, so the retry is refused as another write (ErrIDReused, a
// conflicting duplicate).
func TestRetryReencodedByNewVerbatimAgainstAVersion3Key(t *testing.T) {
	d := events.MemoryRecordedData{MemoryID: "m1", Title: "<b>fares & fees</b>", Description: "d", Content: "c", Outcome: "success", Source: "explicit"}
	at := time.Unix(1700000000, 0)
	before, err := events.New(events.MemoryRecorded, "chronicle/memory-tools", "e1", at, d)
	if err != nil {
		t.Fatal(err)
	}
	now, err := events.NewVerbatim(events.MemoryRecorded, "chronicle/memory-tools", "e1", at, d)
	if err != nil {
		t.Fatal(err)
	}
	replay := sameContent(dedupValue(1, ContentHash(&before)), &now, ContentHash(&now))
	if !replay {
		t.Fatal("a version-5 key: the re-encoded retry is not the same event")
	}
	for _, v := range []byte{3, 4} {
		key := append(append(binary.BigEndian.AppendUint64(nil, 1), v), contentHash(&before, int(v))...)
		if got := sameContent(key, &now, ContentHash(&now)); got != replay {
			t.Errorf("a version-%d key: same=%v for the retry Chronicle now encodes verbatim; a fresh replay says %v", v, got, replay)
		}
	}
}
