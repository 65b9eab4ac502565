package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronicle-dev/chronicle/projections"
)

// storeCollector exposes a store's Pebble metrics (projections.StoreMetrics)
// as chronicle_store_*, read once per scrape. Before, /metrics showed
// nothing of the memory Pebble holds outside the Go heap (up to 256 MiB of
// block cache and 64 MiB memtables), so a resident set that climbed from
// 176 to 407 MB over a soak could not be told from a leak (the cluster
// soak, 2026-12-07).
type storeCollector struct {
	store *projections.Store
	descs storeDescs
}

type storeDescs struct {
	cache, cacheLimit, hits, misses, mem, mems, disk, debt, readAmp, flushes, compactions *prometheus.Desc
}

func newStoreCollector(st *projections.Store) *storeCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("chronicle", "store", name), help, nil, nil)
	}
	return &storeCollector{store: st, descs: storeDescs{
		cache:       d("block_cache_bytes", "Bytes in the projections store's block cache (Pebble's; outside the Go heap in a cgo build): it fills as blocks are read, up to chronicle_store_block_cache_limit_bytes, and stays there."),
		cacheLimit:  d("block_cache_limit_bytes", "The block cache's size limit (projections.Options.CacheSize, 256 MiB by default)."),
		hits:        d("block_cache_hits_total", "Block reads of the projections store found in its block cache."),
		misses:      d("block_cache_misses_total", "Block reads of the projections store not found in its block cache (read from a file)."),
		mem:         d("memtable_bytes", "Bytes held by the projections store's memtables, the mutable one and those waiting for their flush (outside the Go heap in a cgo build)."),
		mems:        d("memtables", "Memtables of the projections store, the mutable one and those waiting for their flush."),
		disk:        d("disk_bytes", "Bytes the projections store's files take on disk: sstables, blob files, write-ahead logs and manifest."),
		debt:        d("compaction_debt_bytes", "Pebble's estimate of the bytes its compactions must still rewrite; it grows while writes outrun the compactions."),
		readAmp:     d("read_amplification", "Sublevels a point read of the projections store may visit (Pebble's read amplification)."),
		flushes:     d("flushes_total", "Memtable flushes of the projections store since it opened."),
		compactions: d("compactions_total", "Compactions of the projections store since it opened."),
	}}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	d := c.descs
	for _, x := range []*prometheus.Desc{d.cache, d.cacheLimit, d.hits, d.misses, d.mem, d.mems, d.disk, d.debt, d.readAmp, d.flushes, d.compactions} {
		ch <- x
	}
}

// Collect implements prometheus.Collector: nothing for a closed store.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	m, ok := c.store.Metrics()
	if !ok {
		return
	}
	d := c.descs
	g := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	n := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v)
	}
	g(d.cache, float64(m.BlockCacheBytes))
	g(d.cacheLimit, float64(m.BlockCacheLimitBytes))
	n(d.hits, float64(m.BlockCacheHits))
	n(d.misses, float64(m.BlockCacheMisses))
	g(d.mem, float64(m.MemTableBytes))
	g(d.mems, float64(m.MemTables))
	g(d.disk, float64(m.DiskBytes))
	g(d.debt, float64(m.CompactionDebtBytes))
	g(d.readAmp, float64(m.ReadAmplification))
	n(d.flushes, float64(m.Flushes))
	n(d.compactions, float64(m.Compactions))
}
