package processors

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionLag is how far one processor is behind on one partition.
type PartitionLag struct {
	Processor string `json:"processor"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Next      int64  `json:"next"` // next offset the processor will consume in this store
	// Committed is the offset last committed to the processor's consumer
	// group for the partition, by whichever instance owns it (-1: none).
	Committed int64 `json:"committed"`
	End       int64 `json:"end"` // high watermark of the partition
	// Lag is Stable − max(Next, Committed), ≥ 0, where Stable is the
	// partition's last stable offset (End − Pending); a standby replica's
	// Next does not count (LagInGroupStandby). As Kafka's consumer
	// measures a read_committed consumer's lag, records of an open
	// transaction are not lag: the engine cannot read them yet.
	Lag int64 `json:"lag"`
	// Pending is the records of open transactions at the end of the
	// partition, End − the last stable offset (kadm ListCommittedOffsets):
	// another producer's transaction not committed or aborted yet. They
	// count as lag once it commits; the broker aborts a transaction left
	// open for its producer's transaction timeout (kafkajs' default 60 s).
	// Before 2026-12-04 they were lag, so an open transaction made
	// /healthz answer 503 "stalled" after --stall-after.
	Pending int64 `json:"pending"`
}

// Lag computes every processor's lag per partition from the stored offsets,
// the consumer groups' committed offsets and the partitions' end offsets,
// sorted by processor, topic, partition.
//
// A partition counts as processed up to the further of this store's
// position and the group's committed offset. With several instances in a
// group, a partition another instance owns is never consumed here, so its
// stored position stays where it was: counted alone it would show as lag
// that never moves, on every instance, while the group is caught up (issue
// 15's "stall"). The owner commits its progress (the engine marks a partition's
// records once every processor applied them and commits every second), so the committed offset carries it. An instance alone in
// its groups commits only what it applied, so for it Lag is End − Next as
// before. An instance restoring a partition from the start of the log
// shows the previous owner's commit until it commits its own first
// progress (within the commit interval).
func Lag(ctx context.Context, adm *kadm.Client, store *projections.Store, procs []Processor) ([]PartitionLag, error) {
	return LagInGroup(ctx, adm, store, procs, ProcessorsGroup)
}

// LagInGroup is Lag for processors that run in consumer group g
// (RunnerConfig.Group).
func LagInGroup(ctx context.Context, adm *kadm.Client, store *projections.Store, procs []Processor, g Group) ([]PartitionLag, error) {
	return LagInGroupStandby(ctx, adm, store, procs, g, nil)
}

// LagInGroupStandby is LagInGroup for an instance that keeps standby
// replicas: a partition standby reports true for is processed up to the
// group's committed offset only. Its store's position is the standby's,
// which follows the log whether or not the owner processes it: counted,
// it hid the lag of a killed owner's partitions on the member that held
// their standbys until the session timeout handed them over, while the
// other members showed it (an operator's walkthrough, 2026-11-30).
func LagInGroupStandby(ctx context.Context, adm *kadm.Client, store *projections.Store, procs []Processor, g Group, standby func(topic string, partition int32) bool) ([]PartitionLag, error) {
	topicSet := map[string]bool{}
	for _, p := range procs {
		for _, t := range p.Topics() {
			topicSet[string(t)] = true
		}
	}
	topics := make([]string, 0, len(topicSet))
	for t := range topicSet {
		topics = append(topics, t)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("processors: end offsets: %w", err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("processors: last stable offsets: %w", err)
	}
	committed := adm.FetchManyOffsets(ctx, string(g))
	var out []PartitionLag
	for _, p := range procs {
		for _, t := range p.Topics() {
			group := committed[string(g)]
			if group.Err != nil && !errors.Is(group.Err, kerr.GroupIDNotFound) {
				return nil, fmt.Errorf("processors: committed offsets of %s: %w", g, group.Err)
			}
			ends.Each(func(o kadm.ListedOffset) {
				if o.Topic != string(t) || o.Err != nil {
					return
				}
				next, _ := store.NextOffset(p.Name(), o.Topic, o.Partition)
				counted := next
				if standby != nil && standby(o.Topic, o.Partition) {
					counted = 0 // the standby's position: no processing of the partition's
				}
				c := int64(-1)
				if r, ok := group.Fetched.Lookup(o.Topic, o.Partition); ok && r.Err == nil {
					c = r.At
				}
				lso := o.Offset
				if s, ok := stable.Lookup(o.Topic, o.Partition); ok && s.Err == nil && s.Offset <= o.Offset {
					lso = s.Offset // listed after the end offset: a later one is a newer commit, left to the next call
				}
				lag := lso - max(counted, c)
				if lag < 0 {
					lag = 0
				}
				out = append(out, PartitionLag{Processor: p.Name(), Topic: o.Topic, Partition: o.Partition, Next: next, Committed: c, End: o.Offset, Lag: lag, Pending: o.Offset - lso})
			})
			if err := ends.Error(); err != nil {
				return nil, fmt.Errorf("processors: end offsets: %w", err)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Processor != b.Processor {
			return a.Processor < b.Processor
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out, nil
}

// TotalLag sums the lag of every partition.
func TotalLag(l []PartitionLag) int64 {
	var n int64
	for _, x := range l {
		n += x.Lag
	}
	return n
}

// WorkerLag is the records worker groups have yet to commit, summed.
func WorkerLag(ctx context.Context, adm *kadm.Client, workers []Worker) (int64, error) {
	lags, err := WorkerLags(ctx, adm, workers)
	var total int64
	for _, l := range lags {
		total += l
	}
	return total, err
}

// WorkerLags is the records each worker's group (WorkerGroupID) has yet to
// commit on its topic, by worker name; a group that has committed nothing
// yet has the whole topic pending. The groups are the cluster's, so every
// member reports the same figures. Errors name the worker.
func WorkerLags(ctx context.Context, adm *kadm.Client, workers []Worker) (map[string]int64, error) {
	out := make(map[string]int64, len(workers))
	if len(workers) == 0 {
		return out, nil
	}
	groups := make([]string, len(workers))
	for i, w := range workers {
		groups[i] = WorkerGroupID(w)
	}
	lags, err := adm.Lag(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("processors: worker lag: %w", err)
	}
	for _, w := range workers {
		l, ok := lags[WorkerGroupID(w)]
		if !ok {
			continue
		}
		notYet := errors.Is(l.Error(), kerr.GroupIDNotFound)
		if l.Error() != nil && !notYet {
			return nil, fmt.Errorf("processors: worker %s lag: %w", w.Name(), l.Error())
		}
		if notYet || l.Lag.IsEmpty() {
			// nothing committed yet: everything on the topic is pending
			ends, err := adm.ListEndOffsets(ctx, string(w.Topic()))
			if err != nil {
				return nil, err
			}
			var n int64
			ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
			out[w.Name()] += n
			continue
		}
		out[w.Name()] += l.Lag.Total()
	}
	return out, nil
}
