package embedder

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Splitting one query's work across cores (issue 11, item 2). A query's
// embedding is bound by streaming USE lite's weights from memory on one
// core, and its int8 scan by streaming the codes; both divide into chunks
// (output columns of a matrix product, ranges of documents of a scan)
// whose values never depend on which goroutine computes them: no sum is
// ever split, so every value is bit-identical to the serial path's.
//
// split runs the chunks of one call on the calling goroutine and, when one
// is idle, on a small fixed set of helper goroutines: the caller publishes
// the call in a slot and starts claiming chunks itself at once; an idle
// helper joins and claims chunks from the same counter. A helper computes
// a chunk into a private buffer, which the caller copies into the output,
// so that the caller never depends on a helper to finish: when a helper
// has not finished its chunk within 1.5× the caller's own time per chunk
// (at least minPatience) after the caller ran out of chunks to claim (a
// helper descheduled by the OS on a loaded machine, or slow to wake), the
// caller takes the chunk over and computes it itself, and the helper's
// late result is dropped. Per call the caller thus waits at most about
// 1.5 chunk-times more than on the serial path (a chunk is ~6–36 µs of
// work in the embedding), whatever the helpers do.
//
// A helper that finishes a call spins for splitSpin, yielding its P on
// every round, before it parks: the matrix products of one query follow
// each other within microseconds, and waking a parked goroutine costs
// tens of microseconds, a large part of one product (~50–250 µs).

// splitSpin is how long an idle helper polls for the next call before it
// parks: longer than the gaps between one query's matrix products (a few
// µs of layer norm and attention), short enough that an idle process
// does not keep a core busy (chosen, not tuned: the machine was never
// idle enough to tune it).
const splitSpin = 100 * time.Microsecond

// maxHelpers caps the helper goroutines (GOMAXPROCS−1 up to this).
const maxHelpers = 3

// minPatience is the least time the caller waits for a helper's chunk
// before it takes the chunk over.
const minPatience = 20 * time.Microsecond

// Chunk states of a splitCall.
const (
	chunkFree   int32 = iota // not claimed
	chunkHelper              // a helper is computing it
	chunkReady               // the helper's result is in bufs
	chunkCaller              // the caller computed or committed it
)

// splitWork is one call's work: chunks that direct computes into the
// output (on the caller), or that private computes into a buffer of its
// own (on a helper; it may grow buf and returns it) and commit copies
// into the output (on the caller).
type splitWork struct {
	chunks  int
	direct  func(c int)
	private func(c int, buf []float32) []float32
	commit  func(c int, buf []float32)
}

// splitCall is one call of split in flight.
type splitCall struct {
	w     *splitWork
	next  atomic.Int32   // next chunk to claim
	state []atomic.Int32 // per chunk
	bufs  [][]float32    // per chunk, written by a helper before chunkReady
}

// splitStats counts, for tests and diagnostics, the chunks helpers
// committed and the chunks the caller took over from a late helper.
var splitStats struct{ helped, takenOver, waitedNs atomic.Int64 }

// testHelperDelay (ns), set by tests only, delays every chunk a helper
// claims, to make helpers late.
var testHelperDelay atomic.Int64

// bufPool recycles the helpers' private chunk buffers (*[]float32).
var bufPool sync.Pool

// helpOut claims and computes chunks privately until none is left.
func (c *splitCall) helpOut() {
	n := int32(c.w.chunks)
	for {
		i := c.next.Add(1) - 1
		if i >= n {
			return
		}
		if !c.state[i].CompareAndSwap(chunkFree, chunkHelper) {
			continue
		}
		if d := testHelperDelay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		var buf []float32
		if b, ok := bufPool.Get().(*[]float32); ok {
			buf = *b
		}
		buf = c.w.private(int(i), buf)
		c.bufs[i] = buf
		if !c.state[i].CompareAndSwap(chunkHelper, chunkReady) {
			bufPool.Put(&buf) // taken over by the caller: dropped
		}
	}
}

// open reports whether chunks are left to claim.
func (c *splitCall) open() bool { return c.next.Load() < int32(c.w.chunks) }

// splitPool is the set of helpers shared by every split of the process.
type splitPool struct {
	slot    atomic.Pointer[splitCall]
	parked  atomic.Int32
	wake    chan struct{}
	helpers int
}

// splitHelpers starts the helpers on first use: GOMAXPROCS−1 of them (at
// most maxHelpers) as GOMAXPROCS is then.
var splitHelpers = sync.OnceValue(func() *splitPool {
	p := &splitPool{helpers: min(maxHelpers, runtime.GOMAXPROCS(0)-1)}
	p.wake = make(chan struct{}, max(p.helpers, 1))
	for range p.helpers {
		go p.helper()
	}
	return p
})

// helper joins published calls, spinning splitSpin after each before it
// parks.
func (p *splitPool) helper() {
	for {
		deadline := time.Now().Add(splitSpin)
		for spins := 0; ; spins++ {
			if c := p.slot.Load(); c != nil && c.open() {
				c.helpOut()
				deadline = time.Now().Add(splitSpin)
				continue
			}
			if spins%16 == 15 && time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
		// Park. The caller stores the slot before it reads parked, and
		// the helper counts itself parked before it reads the slot again,
		// so a call published meanwhile is seen by one or the other.
		p.parked.Add(1)
		if c := p.slot.Load(); c != nil && c.open() {
			p.parked.Add(-1)
			continue
		}
		<-p.wake
		p.parked.Add(-1)
	}
}

// split computes every chunk of w exactly once and returns when all are
// in the output. Chunks run on the calling goroutine (direct) and on idle
// helpers (private, then commit on the caller), in any order, so each
// chunk must write its own part of the output. With fewer than two
// chunks, with GOMAXPROCS 1 (at the first split of the process) or when
// no helper is idle, every chunk runs on the caller, in order.
//
// late reports that a helper may still be computing a chunk the caller
// took over, and so still reading the call's inputs: the caller must not
// write them again (it should move to fresh buffers).
func split(w *splitWork) (late bool) {
	p := splitHelpers()
	if w.chunks < 2 || p.helpers == 0 {
		for c := 0; c < w.chunks; c++ {
			w.direct(c)
		}
		return false
	}
	c := &splitCall{w: w, state: make([]atomic.Int32, w.chunks), bufs: make([][]float32, w.chunks)}
	p.slot.Store(c)
	if p.parked.Load() > 0 {
		select {
		case p.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	t0 := time.Now()
	own := 0
	n := int32(w.chunks)
	for {
		i := c.next.Add(1) - 1
		if i >= n {
			break
		}
		if c.state[i].CompareAndSwap(chunkFree, chunkCaller) {
			w.direct(int(i))
			own++
		}
	}
	p.slot.CompareAndSwap(c, nil)
	// Wait for the helpers' chunks, taking over any not done within
	// about one chunk's time (as the caller measured its own).
	waited := time.Now()
	patience := minPatience
	if own > 0 {
		patience = max(patience, waited.Sub(t0)*3/(2*time.Duration(own)))
	}
	for i := range c.state {
		st := &c.state[i]
		for spins := 0; ; spins++ {
			s := st.Load()
			if s == chunkCaller {
				break
			}
			if s == chunkFree && st.CompareAndSwap(chunkFree, chunkCaller) {
				w.direct(i) // claimed by a helper that stopped before marking it
				break
			}
			if s == chunkReady {
				w.commit(i, c.bufs[i])
				splitStats.helped.Add(1)
				buf := c.bufs[i]
				bufPool.Put(&buf)
				st.Store(chunkCaller)
				break
			}
			if s == chunkHelper && spins%16 == 15 && time.Since(waited) > patience &&
				st.CompareAndSwap(chunkHelper, chunkCaller) {
				w.direct(i)
				splitStats.takenOver.Add(1)
				late = true
				break
			}
			if spins > 64 {
				runtime.Gosched()
			}
		}
	}
	splitStats.waitedNs.Add(int64(time.Since(waited)))
	return late
}

// splitPolicy decides, call by call, whether a query's forward pass is
// split: splitting pays only when another core is really free. On the
// shared 2-core machine, split queries took p50 ×0.65 of the serial
// path's time while it was idle but ×1.4 while it was loaded (load
// average 3–6: the process's share of the CPU does not grow with its
// threads, and the helper's work takes from the caller's share). So the
// policy keeps a moving average of the duration of each kind of call and
// takes the faster one, trying the other on every exploreEvery-th call
// (every exploreRarely-th while it is more than 25% slower, so that the
// tries cost the tail little) so that it follows the load. The choice
// changes speed only: the vectors are bit-identical either way.
type splitPolicy struct {
	mu    sync.Mutex
	cost  [2]float64 // moving average of a call's ns: [serial, split]; 0 = not measured
	calls uint64
}

// exploreEvery and exploreRarely are how often the policy tries the kind
// of call it currently takes to be slower: up to 25% slower, and more.
const (
	exploreEvery  = 8
	exploreRarely = 32
)

// choose reports whether the next call should split.
func (p *splitPolicy) choose() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	switch {
	case p.cost[1] == 0:
		return true
	case p.cost[0] == 0:
		return false
	}
	best := p.cost[1] <= p.cost[0]
	every := uint64(exploreEvery)
	if max(p.cost[0], p.cost[1]) > 1.25*min(p.cost[0], p.cost[1]) {
		every = exploreRarely
	}
	if p.calls%every == 0 {
		return !best
	}
	return best
}

// record adds a call's duration to its kind's moving average (weight
// 1/4, a sample counted at most 3× the average, so that one call
// descheduled by the OS does not decide the next hundred).
func (p *splitPolicy) record(split bool, d time.Duration) {
	i := 0
	if split {
		i = 1
	}
	x := float64(d)
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.cost[i]; c == 0 {
		p.cost[i] = x
	} else {
		p.cost[i] = c + (min(x, 3*c)-c)/4
	}
}
