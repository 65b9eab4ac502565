package keylog_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/keylog"
)

// memCache is a keylog.Cache in memory (projections.Store's GetCache and
// SetCache in the service).
type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCache) GetCache(k string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok, nil
}

func (c *memCache) SetCache(k string, v []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[k] = v
	return nil
}

const topic = "t.keylog"

// cluster starts a one-broker kfake cluster with topic (one partition,
// so every key shares it) and returns its addresses.
func cluster(t testing.TB) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produce writes n records to topic, every every-th keyed key (the others
// keyed other), valued tag/i.
func produce(t testing.TB, brokers []string, n, every int, key, tag string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		k := "other"
		if every > 0 && i%every == 0 {
			k = key
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: fmt.Appendf(nil, "%s/%d", tag, i),
			Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("x/" + tag)}}})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// locate is keylog.Locate with a client of its own.
func locate(t testing.TB, brokers []string, key string) keylog.Place {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pl, err := keylog.Locate(context.Background(), cl, topic, key)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// read is what fn sees of each record: offset, value, headers, time.
func read(t testing.TB, scan func(fn func(*kgo.Record)) error) string {
	t.Helper()
	var b strings.Builder
	if err := scan(func(r *kgo.Record) {
		fmt.Fprintf(&b, "%s:%d:%d %s %q %v %s %v\n", r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp.UTC().Format(time.RFC3339Nano), r.Timestamp.IsZero())
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func uncached(t testing.TB, brokers []string, pl keylog.Place, key string) string {
	return read(t, func(fn func(*kgo.Record)) error {
		return keylog.Scan(context.Background(), brokers, topic, pl.Part, pl.End, key, fn)
	})
}

func cached(t testing.TB, brokers []string, c keylog.Cache, pl keylog.Place, key string) string {
	return read(t, func(fn func(*kgo.Record)) error {
		return keylog.ScanCached(context.Background(), brokers, c, topic, pl, key, fn)
	})
}

// ScanCached answers what Scan answers: the first call, a second after
// new records arrived (which fetches only those), and a call with an end
// below what the cache holds (an as-of read), which must leave out the
// key's records at or after that end.
func TestScanCachedAnswersAsScan(t *testing.T) {
	brokers := cluster(t)
	c := &memCache{}
	produce(t, brokers, 300, 7, "k", "a")
	pl1 := locate(t, brokers, "k")
	if pl1.TopicID == "" {
		t.Fatal("no topic id from kfake: the cache would never be used")
	}
	want := uncached(t, brokers, pl1, "k")
	if got := cached(t, brokers, c, pl1, "k"); got != want || got == "" {
		t.Fatalf("first call:\n%s\nwant\n%s", got, want)
	}
	produce(t, brokers, 100, 9, "k", "b")
	pl2 := locate(t, brokers, "k")
	want = uncached(t, brokers, pl2, "k")
	_, before := keylog.Counts()
	got := cached(t, brokers, c, pl2, "k")
	_, after := keylog.Counts()
	if got != want {
		t.Fatalf("after new records:\n%s\nwant\n%s", got, want)
	}
	if n := after - before; n > pl2.End-pl1.End {
		t.Fatalf("the second call fetched %d records; want at most the %d new ones", n, pl2.End-pl1.End)
	}
	// an as-of end inside the first batch: only the key's records below it
	asOf := pl2
	asOf.End = 150
	want = uncached(t, brokers, asOf, "k")
	if got := cached(t, brokers, c, asOf, "k"); got != want || strings.Contains(got, "b/") {
		t.Fatalf("as of offset 150:\n%s\nwant\n%s", got, want)
	}
	// and the cache still answers the whole log afterwards
	if got := cached(t, brokers, c, pl2, "k"); got != uncached(t, brokers, pl2, "k") {
		t.Fatalf("after the as-of read:\n%s", got)
	}
}

// A cache entry written while another log was read (the same topic name on
// another cluster: a data directory served with a new broker) is not
// used: the answer is the new log's records.
func TestScanCachedIgnoresAnotherLogsEntry(t *testing.T) {
	a, b := cluster(t), cluster(t)
	c := &memCache{}
	produce(t, a, 200, 5, "k", "a")
	produce(t, b, 100, 3, "k", "b")
	pla, plb := locate(t, a, "k"), locate(t, b, "k")
	if got := cached(t, a, c, pla, "k"); got != uncached(t, a, pla, "k") {
		t.Fatalf("log a:\n%s", got)
	}
	want := uncached(t, b, plb, "k")
	if got := cached(t, b, c, plb, "k"); got != want {
		t.Fatalf("log b with log a's cache:\n%s\nwant\n%s", got, want)
	}
}

// Records of an aborted transaction are never answered, and never cached:
// a later call (which reads them from the cache) leaves them out too.
func TestScanCachedLeavesOutAbortedRecords(t *testing.T) {
	brokers := cluster(t)
	c := &memCache{}
	produce(t, brokers, 20, 2, "k", "a")
	tx, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("tx-keylog"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ctx := context.Background()
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: fmt.Appendf(nil, "tx/%v", commit)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	pl := locate(t, brokers, "k")
	want := uncached(t, brokers, pl, "k")
	for i := range 2 {
		got := cached(t, brokers, c, pl, "k")
		if got != want || strings.Contains(got, "tx/false") || !strings.Contains(got, "tx/true") {
			t.Fatalf("call %d:\n%s\nwant the committed record and not the aborted one:\n%s", i+1, got, want)
		}
	}
}

// Concurrent callers, while records arrive, each get Scan's answer for
// their end, and the cache ends holding the furthest read.
func TestScanCachedConcurrentCallers(t *testing.T) {
	brokers := cluster(t)
	c := &memCache{}
	produce(t, brokers, 100, 3, "k", "a")
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for round := range 4 {
		produce(t, brokers, 50, 4, "k", fmt.Sprint("r", round))
		pl := locate(t, brokers, "k")
		want := uncached(t, brokers, pl, "k")
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got := cached(t, brokers, c, pl, "k"); got != want {
					errs <- fmt.Sprintf("end %d:\n%s\nwant\n%s", pl.End, got, want)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	pl := locate(t, brokers, "k")
	want := uncached(t, brokers, pl, "k")
	_, before := keylog.Counts()
	if got := cached(t, brokers, c, pl, "k"); got != want {
		t.Fatalf("after the concurrent calls:\n%s", got)
	}
	if _, after := keylog.Counts(); after != before {
		t.Fatalf("a call after the others fetched %d records; want none (the cache reaches the end)", after-before)
	}
}
