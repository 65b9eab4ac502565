package processors

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chronicle-dev/chronicle/projections"
)

// Holdings is what a member's store holds of each task, published in its
// join metadata so that the group's leader gives a task to the member
// that has applied most of it, as Kafka Streams' assignor reads each
// instance's task offset sums from its subscription: after a restart of
// the whole cluster (every member rejoins with a new member id and owns
// nothing), after a broker restart (the embedded broker forgets the
// members' ownership), and when a member rejoins and tasks move back to
// it, each task goes where its state is rather than wherever the sticky
// balancer puts an unowned partition, so the new owner restores from its
// stored offsets instead of from offset 0.
//
// A member's holding of partition number q is the sum, over the engine's
// processors and the topics they read, of the next offsets stored for
// partition q (projections.Store.NextOffset); task p's is the sum over
// the partition numbers q with q mod the task count = p (every topic but
// a single-partition one has the task count's partitions). The figure only
// ranks members for one task; it is an estimate of applied records, not a
// promise.
//
// The zero Holdings publishes nothing; a Runner binds the one in
// RunnerConfig.Holdings (or its own) to its store and processors before
// it joins the group. Safe for concurrent use.
type Holdings struct {
	mu    sync.Mutex
	store *projections.Store
	names map[string]bool
}

// use binds h to store and the processors named.
func (h *Holdings) use(store *projections.Store, procs []Processor) {
	names := map[string]bool{}
	for _, p := range procs {
		names[p.Name()] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store, h.names = store, names
}

// offsets is the holding of each partition number (nil when unbound or
// empty).
func (h *Holdings) offsets() map[int32]int64 {
	h.mu.Lock()
	store, names := h.store, h.names
	h.mu.Unlock()
	if store == nil {
		return nil
	}
	var out map[int32]int64
	for k, next := range store.Offsets() { // processor/topic/partition
		i := strings.LastIndexByte(k, '/')
		j := strings.IndexByte(k, '/')
		if i <= 0 || j <= 0 || j == i || !names[k[:j]] || next <= 0 {
			continue
		}
		q, err := strconv.ParseInt(k[i+1:], 10, 32)
		if err != nil || q < 0 {
			continue
		}
		if out == nil {
			out = map[int32]int64{}
		}
		out[int32(q)] += next
	}
	return out
}

// holdingsMagic tags a member's holdings in CoPartitionedProtocol's member
// metadata (TagJoinMetadata).
var holdingsMagic = []byte("chrh")

// encodeHoldings is uvarint pairs (partition number, holding) in
// partition order.
func encodeHoldings(h map[int32]int64) string {
	qs := make([]int32, 0, len(h))
	for q := range h {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	var b []byte
	for _, q := range qs {
		b = binary.AppendUvarint(b, uint64(q))
		b = binary.AppendUvarint(b, uint64(h[q]))
	}
	return string(b)
}

// decodeHoldings reads encodeHoldings; what does not decode is dropped.
func decodeHoldings(s string) map[int32]int64 {
	b := []byte(s)
	out := map[int32]int64{}
	for len(b) > 0 {
		q, n := binary.Uvarint(b)
		if n <= 0 || q > 1<<31-1 {
			return out
		}
		b = b[n:]
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<63-1 {
			return out
		}
		b = b[n:]
		out[int32(q)] = int64(v)
	}
	return out
}

// placeTasks assigns tasks 0..tasks-1 to members (the members reading the
// anchor topic), given each task's current owner (absent: none) and each
// member's holdings by partition number, the way CoPartitionedBalancer
// does once a member publishes holdings. It is the assignment that, with
// balanced counts (tasks/len(members) each, one more for tasks mod
// len(members) of them), maximises the records the new owners already
// hold, so it minimises what they restore; among those, it moves the fewest
// tasks away from their current owners; ties are broken by a fixed hash of
// (member id, task), so both rounds of a cooperative rebalance (a moved
// task is withheld in the first and placed again in the second) choose
// the same owners.
//
// It is solved as a min-cost flow (source → task → member → sink, as
// Kafka Streams' rack-aware assignor, KIP-925, solves its placement) by
// successive shortest paths, with integer costs: −(holding × 2¹² + 2¹¹
// for the current owner + the tie-break below 2¹¹), holdings capped at
// 2³⁶ records; a member's first tasks/len(members) tasks cost nothing to
// reach the sink and one more costs 2⁵⁶, so exactly tasks mod len(members)
// members take one more. (gonum's simplex on the same program took 1.2 s
// for 64 tasks and 8 members, 17 s for 128 and 16: too slow for a group
// leader; this takes milliseconds.)
func placeTasks(members []string, tasks int32, current map[int32]string, held map[string]map[int32]int64) map[int32]string {
	if len(members) == 0 || tasks <= 0 {
		return nil
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	k, n := len(ms), int(tasks)
	base, extra := n/k, n%k
	f := newFlow(n + k + 2)
	src, sink := 0, n+k+1
	for p := 0; p < n; p++ {
		f.add(src, 1+p, 1, 0)
	}
	for i, m := range ms {
		byTask := make([]int64, n)
		for q, v := range held[m] {
			if q >= 0 && v > 0 {
				byTask[int(q)%n] += v
			}
		}
		for p := 0; p < n; p++ {
			hash := fnv.New32a()
			hash.Write([]byte(m))
			hash.Write([]byte{byte(p >> 24), byte(p >> 16), byte(p >> 8), byte(p)})
			w := min(byTask[p], holdingCap)<<12 + int64(hash.Sum32()%(1<<11))
			if current[int32(p)] == m {
				w += 1 << 11
			}
			f.add(1+p, 1+n+i, 1, -w)
		}
		if base > 0 {
			f.add(1+n+i, sink, base, 0)
		}
		if extra > 0 {
			f.add(1+n+i, sink, 1, extraSlotCost)
		}
	}
	if f.run(src, sink, n) != n {
		return nil // cannot happen: every task reaches every member
	}
	out := map[int32]string{}
	for p := 0; p < n; p++ {
		for _, e := range f.g[1+p] {
			if e.to > n && e.to <= n+k && e.cap == 0 {
				out[int32(p)] = ms[e.to-1-n]
			}
		}
	}
	return out
}

const (
	// holdingCap bounds a holding in placeTasks' costs (2³⁶ records).
	holdingCap = 1 << 36
	// extraSlotCost is the cost of a member's task beyond the base count:
	// more than any sum of the other costs, so the flow fills every base
	// slot first.
	extraSlotCost = 1 << 56
)

// flow is a small min-cost flow network (adjacency lists of residual
// edges).
type flow struct{ g [][]flowEdge }

type flowEdge struct {
	to, rev, cap int
	cost         int64
}

func newFlow(nodes int) *flow { return &flow{g: make([][]flowEdge, nodes)} }

func (f *flow) add(u, v, capacity int, cost int64) {
	f.g[u] = append(f.g[u], flowEdge{to: v, rev: len(f.g[v]), cap: capacity, cost: cost})
	f.g[v] = append(f.g[v], flowEdge{to: u, rev: len(f.g[u]) - 1, cap: 0, cost: -cost})
}

// run sends up to want units from s to t along successive cheapest paths
// (Bellman-Ford, which the negative costs need; the residual network keeps
// no negative cycle) and returns the units sent.
func (f *flow) run(s, t, want int) int {
	const inf = math.MaxInt64
	n := len(f.g)
	sent := 0
	dist := make([]int64, n)
	prevNode, prevEdge := make([]int, n), make([]int, n)
	for sent < want {
		for i := range dist {
			dist[i] = inf
		}
		dist[s] = 0
		for changed, round := true, 0; changed && round < n; round++ {
			changed = false
			for u := 0; u < n; u++ {
				if dist[u] == inf {
					continue
				}
				for j, e := range f.g[u] {
					if e.cap > 0 && dist[u]+e.cost < dist[e.to] {
						dist[e.to], prevNode[e.to], prevEdge[e.to] = dist[u]+e.cost, u, j
						changed = true
					}
				}
			}
		}
		if dist[t] == inf {
			return sent
		}
		push := want - sent
		for v := t; v != s; v = prevNode[v] {
			push = min(push, f.g[prevNode[v]][prevEdge[v]].cap)
		}
		for v := t; v != s; v = prevNode[v] {
			e := &f.g[prevNode[v]][prevEdge[v]]
			e.cap -= push
			f.g[v][e.rev].cap += push
		}
		sent += push
	}
	return sent
}
