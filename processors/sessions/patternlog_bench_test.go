package sessions_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/keylog"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// BenchmarkPatternLog reads the history of a pattern of 20 records on a
// partition of chronicle.patterns that holds 10,000 records of other
// patterns: without the cache (a scan from offset 0 each call), the first
// call with the store's cache (the cache emptied before each), and a call
// after one (the cache reaches the end: no record fetched).
func BenchmarkPatternLog(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, string(events.TopicPatterns)))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		b.Fatal(err)
	}
	const scope, id, others, mine = "project:a", "pat-bench", 10000, 20
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for i := range others + mine {
		pid, sid := fmt.Sprintf("pat-other-%d", i%500), fmt.Sprintf("s-%d", i)
		if i%((others+mine)/mine) == 0 {
			pid = id
		}
		env, err := events.New(events.PatternCounted, "chronicle/sessions", fmt.Sprint("e", i), at,
			sessions.PatternCountedData{PatternID: pid, SessionID: sid, Steps: []string{"search", "book"}, Category: "booking", Task: "book a flight", First: true, Met: i%3 == 0})
		if err != nil {
			b.Fatal(err)
		}
		env.Scope = scope
		r, err := events.Record(&env)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	store, err := projections.Open(b.TempDir(), projections.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	read := func(b *testing.B, cache keylog.Cache) {
		steps, err := sessions.PatternLog(ctx, brokers, cache, scope, id)
		if err != nil || len(steps) != mine {
			b.Fatalf("%d steps, %v; want %d", len(steps), err, mine)
		}
	}
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			read(b, nil)
		}
	})
	b.Run("cached-first", func(b *testing.B) {
		for b.Loop() {
			if err := store.DeleteCachePrefix(keylog.CachePrefix); err != nil {
				b.Fatal(err)
			}
			read(b, store)
		}
	})
	b.Run("cached-again", func(b *testing.B) {
		read(b, store)
		for b.Loop() {
			read(b, store)
		}
	})
}
