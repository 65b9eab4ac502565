package processors

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultStallAfter is how long a partition this instance owns may be
// behind (lag > 0, or a restore not finished) without any processor of it
// committing a batch before Health calls it stalled (issue 15, item 6).
// 30 s is the issue's bound for "a lag with no progress under a live
// member"; it is well above the engine's longest healthy gap (a store
// failure's backoff starts at 100 ms, a poll waits at most FetchMaxWait).
const DefaultStallAfter = 30 * time.Second

// ownership is the engine's record of group membership as this instance
// sees it: which partitions it owns, whether a rebalance is under way
// (between a revoke and the next assignment), each owned partition's
// restore (the stored position at assignment against the end of the
// partition then) and when a processor last committed a batch of it.
// The engine updates it from kgo's OnPartitionsAssigned/Revoked/Lost and
// after each applied batch.
type ownership struct {
	mu          sync.Mutex
	rebalancing bool
	changed     time.Time // when rebalancing last changed
	parts       map[tp]*ownedPartition
	epochs      uint64 // assignments recorded so far: the last one's Assignment
	// onRevoke are called at every revoke, after the partitions left parts
	// (Runner.OnRevoked)
	onRevoke []func(revoked map[string][]int32)
	// onChange are called after every assignment and every revoke that
	// took partitions away (the workers' groups follow: followGate)
	onChange []func()
}

type ownedPartition struct {
	assignment uint64 // this instance's count of assignments when it was assigned
	assignedAt time.Time
	from       int64 // lowest stored next offset of the topic's processors at assignment
	end        int64 // the partition's end offset at assignment (-1: unknown)
	next       int64 // every processor has applied the records before it
	progressAt time.Time
	caughtUpAt time.Time // when a lag query last found next at the partition's end
}

func newOwnership() *ownership {
	return &ownership{rebalancing: true, changed: time.Now(), parts: map[tp]*ownedPartition{}}
}

// assigned records newly assigned partitions, each starting at from (its
// stored position) with end (-1 unknown), and ends the rebalance.
func (o *ownership) assigned(added map[string]map[int32][2]int64) {
	o.mu.Lock()
	now := time.Now()
	o.epochs++
	for topic, parts := range added {
		for p, fe := range parts {
			o.parts[tp{topic, p}] = &ownedPartition{assignment: o.epochs, assignedAt: now, from: fe[0], end: fe[1], next: fe[0], progressAt: now}
		}
	}
	o.rebalancing = false
	o.changed = now
	changed := o.onChange
	o.mu.Unlock()
	for _, fn := range changed { // outside the lock, as revoked's hooks
		fn()
	}
}

// revoked forgets revoked (or lost) partitions and starts a rebalance.
func (o *ownership) revoked(gone map[string][]int32) {
	o.mu.Lock()
	n := 0
	for topic, parts := range gone {
		for _, p := range parts {
			delete(o.parts, tp{topic, p})
			n++
		}
	}
	o.rebalancing = true
	o.changed = time.Now()
	hooks, changed := o.onRevoke, o.onChange
	o.mu.Unlock()
	if n == 0 {
		return // a cooperative rebalance that moves nothing away from here
	}
	for _, fn := range hooks {
		fn(gone)
	}
	for _, fn := range changed {
		fn()
	}
}

// committed records that a processor committed a batch of the partition.
func (o *ownership) committed(topic string, partition int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if op := o.parts[tp{topic, partition}]; op != nil {
		op.progressAt = time.Now()
	}
}

// caughtUp records that at `at` (taken before the query that read ends)
// every owned partition whose applied position had reached its end offset
// in ends was caught up: records on it after that arrived later, so Health
// starts its stall clock no earlier than at.
func (o *ownership) caughtUp(ends map[tp]int64, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, end := range ends {
		if op := o.parts[k]; op != nil && op.next >= end && at.After(op.caughtUpAt) {
			op.caughtUpAt = at
		}
	}
}

// NoteLag tells the engine what a lag query (Lag, LagInGroup) started at
// `at` found: each owned partition this instance had applied to its end
// offset then was caught up at `at` (OwnedPartition.CaughtUpAt), so a
// record arriving on a partition that has been idle for longer than the
// stall bound is not judged stalled the moment it arrives.
// pipeline.Pipeline.Lag calls it after every query (/healthz, /metrics).
func (r *Runner) NoteLag(lag []PartitionLag, at time.Time) {
	ends := map[tp]int64{}
	for _, l := range lag {
		k := tp{l.Topic, l.Partition}
		ends[k] = max(ends[k], l.End)
	}
	r.engine.own.caughtUp(ends, at)
}

// advanced records that every processor of the partition applied the
// records before next.
func (o *ownership) advanced(topic string, partition int32, next int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if op := o.parts[tp{topic, partition}]; op != nil && next > op.next {
		op.next = next
	}
}

// OwnedPartition is one partition assigned to this instance by the
// processors' consumer group, as Runner.Ownership reports it.
type OwnedPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Assignment numbers this instance's assignments (1, 2, …): a
	// partition lost and assigned again gets a new number, so the fenced
	// relay (Fence) knows to take the partition's transactional id over
	// again, and only then.
	Assignment uint64    `json:"assignment"`
	AssignedAt time.Time `json:"assigned_at"`
	// RestoreFrom is the lowest next offset the topic's processors had
	// stored when the partition was assigned (0: never processed here).
	RestoreFrom int64 `json:"restore_from"`
	// RestoreEnd is the partition's end offset at assignment (-1: the
	// broker did not answer): the records before it are the restore.
	RestoreEnd int64 `json:"restore_end"`
	// Next is the offset every processor of the topic has applied up to.
	Next int64 `json:"next"`
	// LastProgress is when a processor last committed a batch of the
	// partition (the assignment time before the first).
	LastProgress time.Time `json:"last_progress"`
	// CaughtUpAt is when a lag query last found every record of the
	// partition applied here (Runner.NoteLag; zero: never): a lag seen
	// later came from records that arrived after it.
	CaughtUpAt time.Time `json:"caught_up_at"`
}

// RestoreRemaining is the records of the restore not applied yet:
// RestoreEnd − Next, ≥ 0 (0 when RestoreEnd is unknown).
func (p OwnedPartition) RestoreRemaining() int64 {
	if p.RestoreEnd < 0 || p.Next >= p.RestoreEnd {
		return 0
	}
	return p.RestoreEnd - p.Next
}

// Ownership is this instance's view of the processors' consumer group.
type Ownership struct {
	// Rebalancing is true between a revoke (or loss) of partitions and the
	// next assignment, and before the first assignment.
	Rebalancing bool `json:"rebalancing"`
	// Since is when Rebalancing last changed.
	Since time.Time `json:"since"`
	// Partitions are the partitions assigned to this instance, by topic
	// and partition.
	Partitions []OwnedPartition `json:"partitions"`
}

func (o *ownership) snapshot() Ownership {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := Ownership{Rebalancing: o.rebalancing, Since: o.changed, Partitions: make([]OwnedPartition, 0, len(o.parts))}
	for k, p := range o.parts {
		out.Partitions = append(out.Partitions, OwnedPartition{Topic: k.topic, Partition: k.partition, Assignment: p.assignment, AssignedAt: p.assignedAt,
			RestoreFrom: p.from, RestoreEnd: p.end, Next: p.next, LastProgress: p.progressAt, CaughtUpAt: p.caughtUpAt})
	}
	sort.Slice(out.Partitions, func(i, j int) bool {
		a, b := out.Partitions[i], out.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// Ownership is which partitions this Runner's engine owns, their restore
// and progress, and whether a rebalance is under way.
func (r *Runner) Ownership() Ownership { return r.engine.own.snapshot() }

// Topics are the topics the engine's consumer group reads, sorted
// (GlobalTableConfig.TaskTopics: their largest partition count is the
// group's number of tasks).
func (r *Runner) Topics() []string { return append([]string(nil), r.engine.topics...) }

// MemberID is this Runner's member id in ProcessorsGroup ("" before it
// joined).
func (r *Runner) MemberID() string {
	id, _ := r.engine.client.GroupMetadata()
	return id
}

// onAssigned records the partitions the group just gave this instance:
// each one's stored position (the lowest of the topic's processors, 0 when
// never processed here) and the partition's end offset now, from which
// the restore is measured.
func (e *engine) onAssigned(ctx context.Context, cl *kgo.Client, added map[string][]int32) {
	ends := map[string]map[int32]int64{}
	if len(added) > 0 {
		topics := make([]string, 0, len(added))
		for t := range added {
			topics = append(topics, t)
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := kadm.NewClient(cl).ListEndOffsets(lctx, topics...)
		cancel()
		if err != nil {
			e.cfg.Logger.Error("end offsets at assignment", err, nil)
		}
		l.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				if ends[o.Topic] == nil {
					ends[o.Topic] = map[int32]int64{}
				}
				ends[o.Topic][o.Partition] = o.Offset
			}
		})
	}
	rec := map[string]map[int32][2]int64{}
	for topic, parts := range added {
		rec[topic] = map[int32][2]int64{}
		for _, p := range parts {
			from := int64(-1)
			for _, proc := range e.byTopic[topic] {
				next, _ := e.cfg.Store.NextOffset(proc.Name(), topic, p)
				if from < 0 || next < from {
					from = next
				}
			}
			end, ok := ends[topic][p]
			if !ok {
				end = -1
			}
			rec[topic][p] = [2]int64{max(from, 0), end}
		}
	}
	e.own.assigned(rec)
}

// onRevoked commits the marked offsets (what franz-go's default revoke
// does, which a callback replaces) and records the revoke.
func (e *engine) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		e.cfg.Logger.Error("commit on revoke", err, nil)
	}
	e.own.revoked(revoked)
	if e.sb != nil {
		e.sb.revoked(revoked)
	}
}

// restoreCollector is chronicle_restore_remaining_records{topic,partition}:
// per owned partition, the records of its restore not applied yet
// (OwnedPartition.RestoreRemaining).
type restoreCollector struct {
	own  *ownership
	desc *prometheus.Desc
}

var restoreDesc = prometheus.NewDesc("chronicle_restore_remaining_records",
	"Records of a partition assigned to this instance that are still to be applied to reach the partition's end offset at assignment (restore progress; 0 once restored).",
	[]string{"topic", "partition"}, nil)

func (c restoreCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c restoreCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.own.snapshot().Partitions {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(p.RestoreRemaining()), p.Topic, fmt.Sprint(p.Partition))
	}
}

// groupAssignment is what the group's current generation assigns member,
// by topic, from one DescribeGroups call; stable is false (and the map
// nil) while the group rebalances or when member is not in it.
func groupAssignment(ctx context.Context, cl *kgo.Client, group, member string) (map[string][]int32, bool, error) {
	if member == "" {
		return nil, false, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	dg, err := kadm.NewClient(cl).DescribeGroups(dctx, group)
	if err == nil {
		err = dg.Error()
	}
	if err != nil {
		return nil, false, fmt.Errorf("describe group %s: %w", group, err)
	}
	if dg[group].State != "Stable" {
		return nil, false, nil
	}
	for _, m := range dg[group].Members {
		if m.MemberID != member {
			continue
		}
		out := map[string][]int32{}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				out[t.Topic] = t.Partitions
			}
		}
		return out, true, nil
	}
	return nil, false, nil
}

// ConfirmedPartitions are the partitions the processors' group assigns
// this member in its current generation (DescribeGroups), when the group
// is Stable and this member in it (ok false otherwise). A fenced relay
// uses it to tell a partition it lost from one it was fenced on and then
// kept: franz-go reports no new assignment for a partition a cooperative
// rebalance leaves with its member, so an instance paused past the
// session timeout whose partitions came back to it after it resumed sees
// the same assignment it was fenced under.
func (r *Runner) ConfirmedPartitions(ctx context.Context) (map[string][]int32, bool, error) {
	return groupAssignment(ctx, r.engine.client, string(r.cfg.Group), r.MemberID())
}
