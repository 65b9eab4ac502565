package httpapi

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chronicle-dev/chronicle/processors/sessionlog"
)

// The session-log reader cache keeps at most maxReaders broker lists
// open: past that, the least recently used reader is closed, at once when
// no request holds it, else when its last request releases it. Before, a
// process kept one franz-go client per broker list it ever read, for
// ever.
func TestReaderCacheIsBounded(t *testing.T) {
	var closed []*sessionlog.Reader
	c := readerCache{entries: map[string]*readerEntry{}, close: func(r *sessionlog.Reader) {
		closed = append(closed, r)
		r.Close()
	}}
	defer func() {
		for _, e := range c.entries {
			e.r.Close()
		}
	}()
	list := func(i int) []string { return []string{fmt.Sprintf("127.0.0.1:%d", 1+i)} } // nothing listens there
	held, release, err := c.get(list(0))
	if err != nil {
		t.Fatal(err)
	}
	var second *sessionlog.Reader
	for i := 1; i <= maxReaders+1; i++ {
		r, rel, err := c.get(list(i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			second = r
		}
		rel()
	}
	if n := c.open(); n != maxReaders {
		t.Fatalf("%d readers open after %d broker lists, want maxReaders (%d)", n, maxReaders+2, maxReaders)
	}
	if !slices.Equal(closed, []*sessionlog.Reader{second}) {
		t.Fatalf("closed %d readers, want only the second list's (least recently used, no request holds it; the first is held)", len(closed))
	}
	release()
	if !slices.Equal(closed, []*sessionlog.Reader{second, held}) {
		t.Fatalf("closed %d readers, want the first list's too once its request released it", len(closed))
	}
	// a cached list is reused, not opened again, and a use keeps it
	r1, rel1, _ := c.get(list(2))
	r2, rel2, _ := c.get(list(2))
	rel1()
	rel2()
	if r1 != r2 || c.open() != maxReaders {
		t.Fatal("a cached broker list got a second reader")
	}
	if _, _, err := c.get(list(100)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.entries[list(2)[0]]; !ok {
		t.Fatal("a list just used was evicted before older ones")
	}
}
