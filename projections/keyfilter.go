package projections

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
)

// keyFilter answers "certainly not stored" for idempotency keys, so that
// applying a new event does not search the memtables and levels for a key
// that is almost never there. On the engine's hot path that Get was the
// largest single cost of an apply (issue 10: about a fifth of a replay's
// CPU, most of it the memtable skiplist search for a random SHA-256 key);
// Pebble's own bloom filters cover the sstables only.
//
// It is a scalable Bloom filter (Almeida et al., "Scalable Bloom
// Filters", 2007) of cache-line-blocked stages (Putze, Sanders, Singler,
// "Cache-, Hash- and Space-Efficient Bloom Filters", 2007): each stage
// i holds keyFilterFirstStage << 2i keys at keyFilterBitsPerKey + 2i bits
// per key, keyFilterProbes bits in one 512-bit block; a full stage is kept
// and the next, four times its size with a lower false-positive rate, is
// added, so the rate of the whole stays near the first stage's (measured:
// TestKeyFilterNeverMissesAndRarelyLies). A key is added before the batch that
// writes it commits, so the filter never misses a stored key; a false
// positive (about 1% per stage) only costs the Get it would have cost
// anyway. It lives in memory only: Open marks it ready at once for a
// store without idempotency keys and otherwise fills it from a scan of
// them in the background — until the scan ends every check answers
// "maybe". Safe for concurrent use.
type keyFilter struct {
	seed   maphash.Seed
	ready  atomic.Bool
	grow   sync.Mutex
	stages atomic.Pointer[[]*filterStage]
}

const (
	keyFilterFirstStage = 1 << 16
	keyFilterBitsPerKey = 12
	keyFilterProbes     = 8
)

type filterStage struct {
	blocks []filterBlock
	cap    int64
	bits   int64 // per key
	n      atomic.Int64
}

// filterBlock is one 64-byte cache line of bits.
type filterBlock [8]atomic.Uint64

func newKeyFilter() *keyFilter {
	f := &keyFilter{seed: maphash.MakeSeed()}
	st := []*filterStage{newFilterStage(keyFilterFirstStage, keyFilterBitsPerKey)}
	f.stages.Store(&st)
	return f
}

func newFilterStage(capacity, bitsPerKey int64) *filterStage {
	nb := max(1, capacity*bitsPerKey/512)
	return &filterStage{blocks: make([]filterBlock, nb), cap: capacity, bits: bitsPerKey}
}

// probe is where key's bits are in a stage of nb blocks: the block and a
// mask per word.
func (st *filterStage) probe(h uint64) (*filterBlock, [8]uint64) {
	hi, _ := bits.Mul64(h, uint64(len(st.blocks)))
	b := &st.blocks[hi]
	var m [8]uint64
	g := bits.RotateLeft64(h, 29) * 0x9e3779b97f4a7c15
	for i := 0; i < keyFilterProbes; i++ {
		if i == 7 { // 63 bits used: mix again
			g = bits.RotateLeft64(h, 17) * 0xbf58476d1ce4e5b9
		}
		pos := g & 511
		m[pos>>6] |= 1 << (pos & 63)
		g >>= 9
	}
	return b, m
}

func (st *filterStage) has(h uint64) bool {
	b, m := st.probe(h)
	for i := range m {
		if m[i] != 0 && b[i].Load()&m[i] != m[i] {
			return false
		}
	}
	return true
}

func (st *filterStage) add(h uint64) {
	b, m := st.probe(h)
	for i := range m {
		if m[i] != 0 {
			b[i].Or(m[i])
		}
	}
}

// add records key (before the batch writing it commits).
func (f *keyFilter) add(key []byte) {
	if f == nil {
		return
	}
	h := maphash.Bytes(f.seed, key)
	for {
		st := *f.stages.Load()
		last := st[len(st)-1]
		// a slot first: a stage never holds more than its capacity, even
		// while the goroutine that filled it has not added the next one yet
		// (adding to a full stage raised the false positives: 3.6% instead
		// of 0.8% in a test run under load)
		n := last.n.Add(1)
		if n > last.cap { // full: make sure the next stage exists, then try it
			f.growFrom(last)
			continue
		}
		last.add(h)
		if n == last.cap {
			f.growFrom(last)
		}
		return
	}
}

// growFrom adds the next stage when full is still the last one.
func (f *keyFilter) growFrom(full *filterStage) {
	f.grow.Lock()
	defer f.grow.Unlock()
	cur := *f.stages.Load()
	if top := cur[len(cur)-1]; top == full {
		next := append(append([]*filterStage(nil), cur...), newFilterStage(4*top.cap, top.bits+2))
		f.stages.Store(&next)
	}
}

// absent reports whether key is certainly not stored: false when the
// filter is not ready or any stage may hold the key.
func (f *keyFilter) absent(key []byte) bool {
	if f == nil || !f.ready.Load() {
		return false
	}
	h := maphash.Bytes(f.seed, key)
	for _, st := range *f.stages.Load() {
		if st.has(h) {
			return false
		}
	}
	return true
}

// size is the filter's memory in bytes.
func (f *keyFilter) size() int {
	n := 0
	for _, st := range *f.stages.Load() {
		n += 64 * len(st.blocks)
	}
	return n
}
