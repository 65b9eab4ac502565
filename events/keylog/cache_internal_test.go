package keylog

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

type mapCache map[string][]byte

func (c mapCache) GetCache(k string) ([]byte, bool, error) { v, ok := c[k]; return v, ok, nil }
func (c mapCache) SetCache(k string, v []byte) error       { c[k] = v; return nil }

// Of two calls that scanned concurrently, the one that read further keeps
// its entry: a call that finishes last with a shorter read (an earlier
// end) does not take the cache back, which would make the next call scan
// again what was read.
func TestCacheEntryIsNotTakenBack(t *testing.T) {
	c := mapCache{}
	rec := func(o int64) *kgo.Record { return &kgo.Record{Offset: o, Value: []byte("v")} }
	store(c, "k", entry{to: 100, recs: []*kgo.Record{rec(3), rec(70)}})
	store(c, "k", entry{to: 50, recs: []*kgo.Record{rec(3)}})
	e, err := decodeEntry(c["k"], "t", 0, "key")
	if err != nil || e.to != 100 || len(e.recs) != 2 || e.recs[1].Offset != 70 {
		t.Fatalf("entry after a shorter read stored last: to %d, %d records, %v; want to 100 with 2 records", e.to, len(e.recs), err)
	}
	store(c, "k", entry{to: 120, recs: []*kgo.Record{rec(3), rec(70), rec(110)}})
	if e, _ := decodeEntry(c["k"], "t", 0, "key"); e.to != 120 {
		t.Fatalf("a further read was not stored: to %d", e.to)
	}
	// an entry that does not decode is read as none
	for _, b := range [][]byte{nil, {9}, c["k"][:len(c["k"])-1], append(append([]byte{}, c["k"]...), 0)} {
		if _, err := decodeEntry(b, "t", 0, "key"); err == nil {
			t.Fatalf("entry %x decoded", b)
		}
	}
}
