package processors

import (
	"sort"
	"time"
)

// Health states, from the most to the least severe. An instance's status
// is the most severe of its own and its partitions'.
const (
	// HealthStalled: a partition this instance owns is behind (lag > 0 or
	// a restore not finished) and no processor of it committed a batch for
	// the stall time. /healthz answers 503.
	HealthStalled = "stalled"
	// HealthRebalancing: between a revoke (or loss) of partitions and the
	// next assignment.
	HealthRebalancing = "rebalancing"
	// HealthRestoring: a partition assigned to this instance whose stored
	// position was behind the partition's end at assignment is being
	// caught up from the log.
	HealthRestoring = "restoring"
	// HealthOK: none of the above.
	HealthOK = "ok"
)

// PartitionHealth is the health of one partition this instance owns.
type PartitionHealth struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Status    string `json:"status"` // ok, restoring or stalled
	// Lag is the largest of the topic's processors' lags on the partition
	// (PartitionLag.Lag).
	Lag  int64 `json:"lag"`
	Next int64 `json:"next"` // every processor has applied the records before it
	// RestoreEnd is the end offset at assignment (-1 unknown) and
	// RestoreRemaining the records before it not applied yet.
	RestoreEnd       int64 `json:"restore_end"`
	RestoreRemaining int64 `json:"restore_remaining"`
	// SinceProgressMS is the time since a processor last committed a batch
	// of the partition (or since its assignment), in milliseconds.
	SinceProgressMS int64 `json:"since_progress_ms"`
}

// HealthReport is an instance's health (what /healthz shows).
type HealthReport struct {
	Status      string            `json:"status"`
	Rebalancing bool              `json:"rebalancing"`
	StallAfter  string            `json:"stall_after"`
	Partitions  []PartitionHealth `json:"partitions"`
}

// Health judges own (Runner.Ownership) against the lag (Lag) at now: a
// partition is stalled when it is behind — its lag > 0, or its restore
// has records remaining — and for stallAfter (≤ 0: DefaultStallAfter) no
// processor of it committed a batch nor was it seen caught up
// (OwnedPartition.CaughtUpAt); restoring when its restore has
// records remaining; ok otherwise. Partitions other instances own are not
// judged here (their owner's health says).
func Health(own Ownership, lag []PartitionLag, stallAfter time.Duration, now time.Time) HealthReport {
	if stallAfter <= 0 {
		stallAfter = DefaultStallAfter
	}
	worst := map[tp]int64{}
	for _, l := range lag {
		k := tp{l.Topic, l.Partition}
		worst[k] = max(worst[k], l.Lag)
	}
	r := HealthReport{Status: HealthOK, Rebalancing: own.Rebalancing, StallAfter: stallAfter.String(), Partitions: []PartitionHealth{}}
	rank := map[string]int{HealthOK: 0, HealthRestoring: 1, HealthRebalancing: 2, HealthStalled: 3}
	raise := func(s string) {
		if rank[s] > rank[r.Status] {
			r.Status = s
		}
	}
	if own.Rebalancing {
		raise(HealthRebalancing)
	}
	for _, p := range own.Partitions {
		ph := PartitionHealth{Topic: p.Topic, Partition: p.Partition, Status: HealthOK, Lag: worst[tp{p.Topic, p.Partition}], Next: p.Next,
			RestoreEnd: p.RestoreEnd, RestoreRemaining: p.RestoreRemaining(), SinceProgressMS: now.Sub(p.LastProgress).Milliseconds()}
		behind := ph.Lag > 0 || ph.RestoreRemaining > 0
		// the stall clock runs from the later of the last committed batch
		// and the last time the partition was seen caught up: a record
		// arriving on a partition idle for longer than stallAfter is new
		// work, not a stall (before, /healthz answered 503 "stalled" for
		// the few milliseconds until its batch was committed)
		since := p.LastProgress
		if p.CaughtUpAt.After(since) {
			since = p.CaughtUpAt
		}
		switch {
		case behind && now.Sub(since) >= stallAfter:
			ph.Status = HealthStalled
		case ph.RestoreRemaining > 0:
			ph.Status = HealthRestoring
		}
		raise(ph.Status)
		r.Partitions = append(r.Partitions, ph)
	}
	sort.SliceStable(r.Partitions, func(i, j int) bool {
		a, b := r.Partitions[i], r.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return r
}
