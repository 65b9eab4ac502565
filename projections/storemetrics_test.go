package projections_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestStoreMetrics: the snapshot behind /metrics' chronicle_store_* moves
// with the store (memtables after writes, a flush, files on disk, block
// reads after a flush), and a closed store has none instead of a panic in
// Pebble.
func TestStoreMetrics(t *testing.T) {
	st, err := projections.Open(t.TempDir(), projections.Options{CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	m0, ok := st.Metrics()
	if !ok {
		t.Fatal("an open store has no metrics")
	}
	if m0.BlockCacheLimitBytes != 8<<20 || m0.Flushes != 0 {
		t.Fatalf("a new store: cache limit %d (want %d), flushes %d (want 0)", m0.BlockCacheLimitBytes, 8<<20, m0.Flushes)
	}
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for i := range 2000 {
		env, err := events.New(events.WorkflowTaskCompleted, "agent/metrics", fmt.Sprintf("c%d", i), at,
			events.TaskCompletedData{WorkflowID: "s1", TaskID: fmt.Sprintf("c%d", i), ToolID: "get_reservation_details", Success: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Apply("count", projections.Position{Topic: "t", Offset: int64(i)}, &env, func(tx *projections.Tx, _ *events.Envelope) error {
			return tx.Set(fmt.Sprintf("row-%05d", i), []byte(fmt.Sprintf(`{"n":%d,"pad":"%0200d"}`, i, i)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	m1, _ := st.Metrics()
	if m1.MemTableBytes <= m0.MemTableBytes || m1.MemTables < 1 {
		t.Fatalf("after 2,000 writes: memtables %d holding %d bytes (before: %d bytes)", m1.MemTables, m1.MemTableBytes, m0.MemTableBytes)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if _, ok, err := st.Get("count", fmt.Sprintf("row-%05d", i)); err != nil || !ok {
			t.Fatalf("row-%05d: %v %v", i, ok, err)
		}
	}
	m2, _ := st.Metrics()
	if m2.Flushes < 1 || m2.DiskBytes == 0 {
		t.Fatalf("after a flush: %d flushes, %d bytes on disk", m2.Flushes, m2.DiskBytes)
	}
	if m2.BlockCacheBytes == 0 || m2.BlockCacheMisses == 0 || m2.BlockCacheHits == 0 {
		t.Fatalf("after reading 2,000 flushed rows: cache %d bytes, %d hits, %d misses", m2.BlockCacheBytes, m2.BlockCacheHits, m2.BlockCacheMisses)
	}
	if m2.ReadAmplification < 1 {
		t.Fatalf("a store with an sstable: read amplification %d", m2.ReadAmplification)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Metrics(); ok {
		t.Fatal("a closed store still reports metrics")
	}
}
