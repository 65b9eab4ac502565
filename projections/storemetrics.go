package projections

// StoreMetrics is a snapshot of what Pebble holds for a store: its memory
// outside the Go heap (the block cache and the memtables, which a cgo build
// allocates with calloc, so go_memstats_* never count them), its files on
// disk and its compaction backlog. /metrics exposes it as chronicle_store_*
// (processors/pipeline). Sizes are in bytes.
type StoreMetrics struct {
	// BlockCacheBytes is the block cache's size now: it fills as sstable
	// blocks are read, up to BlockCacheLimitBytes, and then stays there,
	// so a resident set that climbs for a while after start and then
	// levels off is mostly this.
	BlockCacheBytes int64
	// BlockCacheLimitBytes is Options.CacheSize (default 256 MiB).
	BlockCacheLimitBytes int64
	// BlockCacheHits and BlockCacheMisses count block reads since the
	// store opened, found in the cache or read from a file.
	BlockCacheHits, BlockCacheMisses int64
	// MemTableBytes is what the memtables hold, the mutable one and those
	// queued for a flush (each up to Options.MemTableSize, default
	// 64 MiB); MemTables is how many there are.
	MemTableBytes uint64
	MemTables     int64
	// DiskBytes is the space the store's files take on disk: sstables,
	// blob files, write-ahead logs (live and obsolete) and the manifest
	// (Pebble's Metrics.DiskSpaceUsage).
	DiskBytes uint64
	// CompactionDebtBytes is Pebble's estimate of the bytes compactions
	// must still rewrite for the tree to reach its shape; it grows while
	// writes outrun the compactions.
	CompactionDebtBytes uint64
	// ReadAmplification is the number of sublevels a point read may visit
	// (Pebble's ReadAmp: L0's sublevels plus the other non-empty levels).
	ReadAmplification int
	// Flushes and Compactions count the memtable flushes and the
	// compactions since the store opened.
	Flushes, Compactions int64
}

// Metrics returns a snapshot of the store's Pebble metrics, and false for
// a closed store (a scrape that raced the shutdown), which has none.
func (s *Store) Metrics() (StoreMetrics, bool) {
	s.metricsMu.RLock()
	defer s.metricsMu.RUnlock()
	if s.closing.Load() {
		return StoreMetrics{}, false
	}
	m := s.db.Metrics()
	limit := s.opts.CacheSize
	if limit == 0 {
		limit = defaultCacheSize
	}
	return StoreMetrics{
		BlockCacheBytes:      m.BlockCache.Size,
		BlockCacheLimitBytes: limit,
		BlockCacheHits:       m.BlockCache.Hits,
		BlockCacheMisses:     m.BlockCache.Misses,
		MemTableBytes:        m.MemTable.Size,
		MemTables:            m.MemTable.Count,
		DiskBytes:            m.DiskSpaceUsage(),
		CompactionDebtBytes:  m.Compact.EstimatedDebt,
		ReadAmplification:    m.ReadAmp(),
		Flushes:              m.Flush.Count,
		Compactions:          m.Compact.Count,
	}, true
}
