package processors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultStandbyRefresh is how often a Runner with standby replicas
// describes the processors' group to recompute its standby partitions (it
// also does at once after each assignment, revoke or loss of its own).
const DefaultStandbyRefresh = time.Second

// StandbyMembers are the members that keep standby replicas of a partition
// owned by owner: the n members that follow owner in members sorted by
// member id, wrapping around, never owner itself (all the others when the
// group has n or fewer other members; none when n ≤ 0 or owner is not a
// member). Every instance computes it from the same described group, so
// they agree without exchanging anything. It is the placement of Kafka
// Streams' num.standby.replicas (one standby per other member, never on
// the active task's member) without its rack awareness.
func StandbyMembers(members []string, owner string, n int) []string {
	sorted := append([]string(nil), members...)
	sort.Strings(sorted)
	at := sort.SearchStrings(sorted, owner)
	if n <= 0 || at == len(sorted) || sorted[at] != owner {
		return nil
	}
	var out []string
	for i := 1; i < len(sorted) && len(out) < n; i++ {
		out = append(out, sorted[(at+i)%len(sorted)])
	}
	return out
}

// StandbyAssignment is, from a group's assignment (member id → topic →
// partitions; members with no partitions listed with an empty map), the
// partitions self keeps standby replicas of (StandbyMembers with n), by
// topic and partition, each with its owner's member id.
func StandbyAssignment(assigned map[string]map[string][]int32, self string, n int) map[string]map[int32]string {
	members := make([]string, 0, len(assigned))
	for m := range assigned {
		members = append(members, m)
	}
	out := map[string]map[int32]string{}
	for owner, topics := range assigned {
		if owner == self {
			continue
		}
		for _, m := range StandbyMembers(members, owner, n) {
			if m != self {
				continue
			}
			for t, ps := range topics {
				for _, p := range ps {
					if out[t] == nil {
						out[t] = map[int32]string{}
					}
					out[t][p] = owner
				}
			}
		}
	}
	return out
}

// StandbyPartition is a partition another member owns and this instance
// keeps a standby replica of (Runner.Standbys).
type StandbyPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Owner is the owner's member id in the described group.
	Owner string `json:"owner"`
	// Next is the lowest next offset the topic's processors stored here:
	// every record before it is applied in this instance's store.
	Next int64 `json:"next"`
	// End is the partition's last stable offset as the standby consumer
	// last fetched it (-1 before its first fetch answer).
	End int64 `json:"end"`
	// Lag is End − Next (0 when End is unknown): the records a take-over
	// of the partition would restore now.
	Lag int64 `json:"lag"`
}

// standby keeps standby replicas (RunnerConfig.StandbyReplicas): a direct
// franz-go consumer outside the group, read_committed, assigned the
// partitions this instance is a standby of (StandbyAssignment on the
// described group), applying the group's processors to them into the same
// store through the same ApplyBatch path as the engine: rows, outbox rows
// (with their source position, so the fenced relay relays them only if the
// partition becomes this instance's, and drops those below its frontier)
// and offsets in one batch per processor and partition.
//
// Hand-over: the engine's OnPartitionsAssigned calls assigned first, which
// stops consuming the partitions and waits for their in-flight batches, so
// the engine's stored-offset lookup (which runs after it) starts where the
// standby stopped. A partition revoked from the engine is picked up again
// at the next refresh if this instance is its standby.
type standby struct {
	e       *engine
	n       int
	refresh time.Duration
	cl      *kgo.Client
	poke    chan struct{}

	gate   sync.RWMutex // held shared by a batch being applied, exclusively by a hand-over
	mu     sync.Mutex
	owned  map[tp]bool // partitions the engine owns (its callbacks)
	active map[tp]*standbyState
}

type standbyState struct {
	owner string
	end   int64
}

func newStandby(e *engine) (*standby, error) {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(e.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(e.cfg.FetchMaxWait),
		kgo.DisableFetchSessions(), // as the engine: avoids a data race inside franz-go's Close
	}, e.cfg.StandbyOpts...)
	cl, err := kgo.NewClient(kafkaconn.With(opts...)...)
	if err != nil {
		return nil, err
	}
	refresh := e.cfg.StandbyRefresh
	if refresh <= 0 {
		refresh = DefaultStandbyRefresh
	}
	return &standby{e: e, n: e.cfg.StandbyReplicas, refresh: refresh, cl: cl, poke: make(chan struct{}, 1),
		owned: map[tp]bool{}, active: map[tp]*standbyState{}}, nil
}

func (s *standby) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// assigned hands partitions the group just assigned to the engine over:
// it stops consuming them and returns once no batch of theirs is being
// applied.
func (s *standby) assigned(added map[string][]int32) {
	s.mu.Lock()
	stop := map[string][]int32{}
	for t, ps := range added {
		for _, p := range ps {
			k := tp{t, p}
			s.owned[k] = true
			if s.active[k] != nil {
				delete(s.active, k)
				stop[t] = append(stop[t], p)
			}
		}
	}
	if len(stop) > 0 {
		s.cl.RemoveConsumePartitions(stop)
	}
	s.mu.Unlock()
	s.gate.Lock() // waits for the in-flight batches; later ones see the partition inactive
	s.gate.Unlock()
	s.wake()
}

// revoked records partitions the engine no longer owns; the next refresh
// keeps those this instance is a standby of.
func (s *standby) revoked(gone map[string][]int32) {
	s.mu.Lock()
	for t, ps := range gone {
		for _, p := range ps {
			delete(s.owned, tp{t, p})
		}
	}
	s.mu.Unlock()
	s.wake()
}

// storedNext is the lowest next offset the topic's processors stored for
// the partition (0 when never applied here).
func (s *standby) storedNext(topic string, partition int32) int64 {
	from := int64(-1)
	for _, p := range s.e.byTopic[topic] {
		next, _ := s.e.cfg.Store.NextOffset(p.Name(), topic, partition)
		if from < 0 || next < from {
			from = next
		}
	}
	return max(from, 0)
}

// sync describes the group and consumes exactly the partitions this
// instance is a standby of and does not own. A group that is not Stable
// (mid-rebalance) leaves the standby partitions as they are.
func (s *standby) sync(ctx context.Context, adm *kadm.Client) error {
	self, _ := s.e.client.GroupMetadata()
	if self == "" {
		return nil
	}
	group := string(s.e.cfg.Group)
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	dg, err := adm.DescribeGroups(dctx, group)
	cancel()
	if err == nil {
		err = dg.Error()
	}
	if err != nil {
		return fmt.Errorf("describe group %s: %w", group, err)
	}
	if dg[group].State != "Stable" {
		return nil
	}
	assigned := map[string]map[string][]int32{}
	for _, m := range dg[group].Members {
		assigned[m.MemberID] = map[string][]int32{}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				if len(s.e.byTopic[t.Topic]) > 0 {
					assigned[m.MemberID][t.Topic] = t.Partitions
				}
			}
		}
	}
	want := StandbyAssignment(assigned, self, s.n)
	s.mu.Lock()
	defer s.mu.Unlock()
	add := map[string]map[int32]kgo.Offset{}
	stop := map[string][]int32{}
	for t, ps := range want {
		for p, owner := range ps {
			k := tp{t, p}
			if s.owned[k] {
				continue
			}
			if st := s.active[k]; st != nil {
				st.owner = owner
				continue
			}
			s.active[k] = &standbyState{owner: owner, end: -1}
			if add[t] == nil {
				add[t] = map[int32]kgo.Offset{}
			}
			add[t][p] = kgo.NewOffset().At(s.storedNext(t, p))
		}
	}
	for k := range s.active {
		if _, ok := want[k.topic][k.partition]; !ok || s.owned[k] {
			delete(s.active, k)
			stop[k.topic] = append(stop[k.topic], k.partition)
		}
	}
	if len(stop) > 0 {
		s.cl.RemoveConsumePartitions(stop)
	}
	if len(add) > 0 {
		s.cl.AddConsumePartitions(add)
	}
	return nil
}

// learnEnds lists the last stable offset of the standby partitions whose
// end is still unknown. A fetch tells the end only when it brings records
// (franz-go delivers no empty fetch), so a standby that starts caught up —
// a partition this instance just lost, or an empty one — would report an
// unknown end until the partition's next record. A fetch that brings
// records meanwhile keeps its own, later, end.
func (s *standby) learnEnds(ctx context.Context, adm *kadm.Client) error {
	s.mu.Lock()
	var topics []string
	for k, st := range s.active {
		if st.end < 0 && !slices.Contains(topics, k.topic) {
			topics = append(topics, k.topic)
		}
	}
	s.mu.Unlock()
	if len(topics) == 0 {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// ListCommittedOffsets: read_committed, the last stable offset, as
	// the standby consumer's fetches report it
	l, err := adm.ListCommittedOffsets(lctx, topics...)
	if err == nil {
		err = l.Error()
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l.Each(func(o kadm.ListedOffset) {
		if st := s.active[tp{o.Topic, o.Partition}]; st != nil && st.end < 0 && o.Offset >= 0 {
			st.end = o.Offset
		}
	})
	return nil
}

// run refreshes the standby partitions and applies their records until
// ctx ends.
func (s *standby) run(ctx context.Context) {
	defer s.cl.Close()
	adm := kadm.NewClient(s.e.client)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.refresh)
		defer t.Stop()
		// each failure is logged once per outage, and its end once: the
		// refresh runs every second, and a broker outage logged one error
		// a second per instance (an SRE's walkthrough, 2026-11-30)
		var refreshing, ending outage
		for {
			err := s.sync(ctx, adm)
			if ctx.Err() == nil {
				refreshing.note(s.e.cfg.Logger, "standby replicas: refresh", err)
			}
			err = s.learnEnds(ctx, adm)
			if ctx.Err() == nil {
				ending.note(s.e.cfg.Logger, "standby replicas: list end offsets", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.poke:
			}
		}
	}()
	defer wg.Wait()
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := s.cl.PollRecords(pctx, s.e.cfg.MaxBatch)
		cancel()
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				s.e.cfg.Logger.Error("standby replicas: fetch failed", err, map[string]any{"topic": t, "partition": p})
			}
		})
		var pw sync.WaitGroup
		fs.EachPartition(func(part kgo.FetchTopicPartition) {
			end := part.LastStableOffset
			if end < 0 {
				end = part.HighWatermark
			}
			s.mu.Lock()
			if st := s.active[tp{part.Topic, part.Partition}]; st != nil && end >= 0 {
				st.end = end
			}
			s.mu.Unlock()
			if len(part.Records) == 0 {
				return
			}
			pw.Add(1)
			go func() {
				defer pw.Done()
				s.partition(part.Topic, part.Partition, part.Records)
			}()
		})
		pw.Wait()
	}
}

// partition applies one poll's records of a standby partition for every
// processor of its topic, as the engine applies an owned one (the same
// items, dead letters in the outbox with their source; transaction markers
// move the stored offset), unless the
// partition was handed over meanwhile. A store failure drops the partition
// from the consumer; the next refresh adds it again at its stored offset.
func (s *standby) partition(topic string, partition int32, recs []*kgo.Record) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	k := tp{topic, partition}
	s.mu.Lock()
	live := s.active[k] != nil
	s.mu.Unlock()
	if !live {
		return
	}
	procs := s.e.byTopic[topic]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	n, err := s.e.counts.of(ctx, topic)
	cancel()
	if err != nil {
		s.drop(k, err)
		return
	}
	for len(recs) > 0 {
		batch := recs[:min(len(recs), s.e.cfg.MaxBatch)]
		recs = recs[len(batch):]
		base := make([]projections.Item, len(batch))
		for i, r := range batch {
			if r.Attrs.IsControl() {
				// a transaction marker: the stored offset moves past it (as
				// the global tables do), so a caught-up standby has lag 0
				base[i] = projections.Item{Pos: projections.Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, Control: true}
				continue
			}
			base[i] = parseItem(r, n)
		}
		err := s.e.pool.each(procs, func(i int, p Processor) error {
			items := make([]projections.Item, len(base))
			for j, it := range base {
				rec := batch[j]
				if !it.Control && (it.Err == nil || i == 0) && deadLetters(rec.Topic) {
					it.DeadLetter = func(reason error) projections.OutboxRecord { return deadLetterRecord(p, rec, reason) }
				}
				items[j] = it
			}
			// not counted in the processors' metrics: the owner counts
			// (and dead-letters) these events
			_, err := applyBatch(s.e.cfg.Store, p, items)
			return err
		})
		if err != nil {
			s.drop(k, err)
			return
		}
	}
}

// drop removes standby partition k from the consumer after a failure; the
// next refresh adds it again at its stored offset.
func (s *standby) drop(k tp, err error) {
	s.e.cfg.Logger.Error("standby replicas: store failed; the partition restarts from its stored offset", err, map[string]any{"topic": k.topic, "partition": k.partition})
	s.mu.Lock()
	if s.active[k] != nil {
		delete(s.active, k)
		s.cl.RemoveConsumePartitions(map[string][]int32{k.topic: {k.partition}})
	}
	s.mu.Unlock()
	s.wake()
}

// snapshot lists the standby partitions with their lag.
func (s *standby) snapshot() []StandbyPartition {
	s.mu.Lock()
	out := make([]StandbyPartition, 0, len(s.active))
	for k, st := range s.active {
		out = append(out, StandbyPartition{Topic: k.topic, Partition: k.partition, Owner: st.owner, End: st.end})
	}
	s.mu.Unlock()
	for i := range out {
		out[i].Next = s.storedNext(out[i].Topic, out[i].Partition)
		if out[i].End >= 0 {
			out[i].Lag = max(out[i].End-out[i].Next, 0)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// Standbys are the partitions this Runner keeps standby replicas of
// (RunnerConfig.StandbyReplicas; empty without), with their owner and
// lag, by topic and partition.
func (r *Runner) Standbys() []StandbyPartition {
	if r.engine.sb == nil {
		return []StandbyPartition{}
	}
	return r.engine.sb.snapshot()
}

// standbyCollector is chronicle_standby_lag_records{topic,partition}: per
// standby partition, the records of the partition not applied here yet
// (StandbyPartition.Lag).
type standbyCollector struct {
	sb   *standby
	desc *prometheus.Desc
}

var standbyDesc = prometheus.NewDesc("chronicle_standby_lag_records",
	"Records of a partition another instance owns, which this instance keeps a standby replica of (serve --standby-replicas), not applied here yet: what a take-over would restore now.",
	[]string{"topic", "partition"}, nil)

func (c standbyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c standbyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.sb.snapshot() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(p.Lag), p.Topic, fmt.Sprint(p.Partition))
	}
}

// closeClients closes the engine's group client and the standby consumer
// (NewRunner's failure paths, before Run).
func (e *engine) closeClients() {
	e.client.Close()
	e.cancelClient()
	if e.sb != nil {
		e.sb.cl.Close()
	}
}

// outage logs a repeated call's failures once per outage: the first error,
// then nothing until a call succeeds, which is logged with how many calls
// failed in between.
type outage struct {
	failed int
}

// note records one call's outcome under msg.
func (o *outage) note(l watermill.LoggerAdapter, msg string, err error) {
	switch {
	case err != nil && o.failed == 0:
		l.Error(msg+" (logged once until it works again)", err, nil)
		o.failed++
	case err != nil:
		o.failed++
	case o.failed > 0:
		l.Info(msg+": works again", watermill.LogFields{"failed_calls": o.failed})
		o.failed = 0
	}
}
