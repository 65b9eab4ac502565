package processors

import (
	"encoding/binary"
	"slices"
	"sort"
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
// does once a member publishes holdings:
//
//   - Counts are balanced: tasks/len(members) each, one more for the first
//     tasks%len(members) members by tasks currently owned (most first),
//     then member id.
//   - Sticky: a member keeps the tasks it owns, up to its count; over it,
//     it gives up first the tasks another member holds most of.
//   - The other tasks go, greatest holding first, to a member with room
//     that holds some of them; the rest, in task order, to the member with
//     the most room left (then member id).
//
// The result is deterministic in its inputs; a task that moves from a
// current owner is withheld for a round by the cooperative adjustment,
// and placed again, by the same rules, once it is free.
func placeTasks(members []string, tasks int32, current map[int32]string, held map[string]map[int32]int64) map[int32]string {
	if len(members) == 0 || tasks <= 0 {
		return nil
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	isMember := map[string]bool{}
	for _, m := range ms {
		isMember[m] = true
	}
	score := func(m string, p int32) int64 {
		var s int64
		for q, v := range held[m] {
			if q%tasks == p {
				s += v
			}
		}
		return s
	}
	owned := map[string][]int32{}
	for p := int32(0); p < tasks; p++ {
		if m, ok := current[p]; ok && isMember[m] {
			owned[m] = append(owned[m], p)
		}
	}
	byOwned := slices.Clone(ms)
	sort.SliceStable(byOwned, func(i, j int) bool { return len(owned[byOwned[i]]) > len(owned[byOwned[j]]) })
	base, extra := int(tasks)/len(ms), int(tasks)%len(ms)
	room := map[string]int{}
	for i, m := range byOwned {
		room[m] = base
		if i < extra {
			room[m]++
		}
	}
	out := map[int32]string{}
	// keep: over its count, a member gives up first the tasks another
	// member holds most of
	for _, m := range ms {
		ps := slices.Clone(owned[m])
		other := map[int32]int64{}
		for _, p := range ps {
			for _, o := range ms {
				if o != m {
					other[p] = max(other[p], score(o, p))
				}
			}
		}
		sort.SliceStable(ps, func(i, j int) bool { return other[ps[i]] < other[ps[j]] })
		for _, p := range ps[:min(len(ps), room[m])] {
			out[p] = m
			room[m]--
		}
	}
	type pair struct {
		p int32
		m string
		s int64
	}
	var pairs []pair
	for p := int32(0); p < tasks; p++ {
		if _, ok := out[p]; ok {
			continue
		}
		for _, m := range ms {
			if s := score(m, p); s > 0 && room[m] > 0 {
				pairs = append(pairs, pair{p, m, s})
			}
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].s > pairs[j].s })
	for _, x := range pairs {
		if _, ok := out[x.p]; !ok && room[x.m] > 0 {
			out[x.p] = x.m
			room[x.m]--
		}
	}
	for p := int32(0); p < tasks; p++ {
		if _, ok := out[p]; ok {
			continue
		}
		best := ""
		for _, m := range ms {
			if room[m] > 0 && (best == "" || room[m] > room[best]) {
				best = m
			}
		}
		if best == "" {
			break // cannot happen: the counts add up to tasks
		}
		out[p] = best
		room[best]--
	}
	return out
}
