package processors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/cenkalti/backoff/v4"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group is a Kafka consumer group id.
type Group string

// ProcessorsGroup is the consumer group of the processing engine: one group
// for every topic any processor reads, so a partition has one owner and
// its records are fetched, parsed and validated once for all the
// processors that read it. The group's committed offsets are for lag
// dashboards only; a processor's position is the offset stored in Pebble
// with its projection.
const ProcessorsGroup Group = "chronicle.processors"

// KeyedState is implemented by processors whose Apply reads and writes
// only rows of the entity its event's record key names (events.Key), so
// the partitions of a topic can be applied concurrently. A processor that
// does not implement it (or returns false) has rows that span keys (the
// tool graph's counts): its partitions are applied one batch at a time.
// So is a processor that reads several topics: one key's events arrive on
// a partition of each.
type KeyedState interface {
	StatePerKey() bool
}

// engine is the hot path of the Runner: one franz-go group consumer for
// every topic the processors read; each poll is split by partition, every
// record is parsed and validated once, and each processor applies a
// partition's records as one Pebble batch (projections.Store.ApplyBatch).
// Partitions, and the processors of one partition, are applied
// concurrently (at most GOMAXPROCS at once); a processor without
// KeyedState holds a lock across its partitions.
type engine struct {
	// fetches logs a failing poll (a broker outage) once, and once when
	// polls work again, not once per poll (19 lines in 75 s of an outage:
	// an SRE's walkthrough, 2026-11-30). Only the poll loop touches it.
	fetches outage
	cfg     RunnerConfig
	byTopic map[string][]Processor
	pool    *pool
	topics  []string
	client  *kgo.Client
	// cancelClient cancels client's context (kgo.WithContext): it cuts a
	// leave that waits too long (run)
	cancelClient context.CancelFunc
	// clientSet is closed once client (and counts) are set: the group
	// client joins as soon as it is made, so its callbacks can run before
	// newEngine has stored it (a goroutine of storedOffsets read client
	// while newEngine wrote it: a data race in CI)
	clientSet chan struct{}
	running   chan struct{}
	once      sync.Once

	mu     sync.Mutex
	paused map[tp]*pausedPartition // partitions backing off after a store failure

	// floor is, per partition this instance restores from below the
	// group's committed offset, that offset (guarded by mu): progress is
	// not marked for commit until it passes it, so the group's committed
	// offset never goes back (storedOffsets)
	floor map[tp]int64

	own *ownership // assignment, restore and progress per partition (ownership.go)
	// counts: the partition count of each topic, for checkPartition
	counts *partitionCounts
	sb     *standby // standby replicas (standby.go); nil without RunnerConfig.StandbyReplicas
}

type tp struct {
	topic     string
	partition int32
}

type pausedPartition struct {
	until time.Time
	bo    backoff.BackOff
}

func newEngine(cfg RunnerConfig) (*engine, error) {
	e := &engine{cfg: cfg, byTopic: byTopic(cfg.Processors), pool: newPool(cfg.Processors), running: make(chan struct{}), clientSet: make(chan struct{}), paused: map[tp]*pausedPartition{}, floor: map[tp]int64{}, own: newOwnership()}
	for t := range e.byTopic {
		e.topics = append(e.topics, t)
	}
	sort.Strings(e.topics)
	if cfg.StandbyReplicas > 0 {
		// before the group client: its callbacks hand partitions over
		var err error
		if e.sb, err = newStandby(e); err != nil {
			return nil, err
		}
	}
	held := cfg.Holdings
	if held == nil {
		held = &Holdings{}
	}
	held.use(cfg.Store, cfg.Processors) // before the group client joins
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(string(cfg.Group)),
		kgo.ConsumeTopics(e.topics...),
		kgo.Balancers(StateAwareBalancer(held), kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(cfg.FetchMaxWait),
		kgo.BlockRebalanceOnPoll(),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
		kgo.DisableFetchSessions(), // avoids a data race inside franz-go's Client.Close
		kgo.AdjustFetchOffsetsFn(e.storedOffsets),
		// a fenced relay's aborted transactions (a zombie's writes, see
		// Fence) are never applied; the transactions' markers are kept so
		// that the offset moves past them (dataRecords)
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.OnPartitionsAssigned(func(ctx context.Context, cl *kgo.Client, added map[string][]int32) {
			if e.sb != nil {
				e.sb.assigned(added) // the standby stops them first; the stored offsets are read after this
			}
			logOwnership(e.cfg.Logger, "engine: partitions assigned to this instance", added)
			e.onAssigned(ctx, cl, added)
			e.once.Do(func() { close(e.running) })
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
			logOwnership(e.cfg.Logger, "engine: partitions revoked from this instance (the group moves them to another member)", revoked)
			e.onRevoked(ctx, cl, revoked)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			logOwnership(e.cfg.Logger, "engine: partitions lost by this instance (its group session ended)", lost)
			e.own.revoked(lost)
			if e.sb != nil {
				e.sb.revoked(lost)
			}
		}),
	}
	opts = append(opts, cfg.SubscriberOpts...)
	cctx, cancel := context.WithCancel(context.Background())
	cl, err := kgo.NewClient(kafkaconn.With(append(opts, kgo.WithContext(cctx))...)...) // last: SubscriberOpts do not replace it
	if err != nil {
		cancel()
		if e.sb != nil {
			e.sb.cl.Close()
		}
		return nil, err
	}
	e.client, e.cancelClient = cl, cancel
	e.counts = newPartitionCounts(cl)
	close(e.clientSet)
	if cfg.Metrics != nil && cfg.Metrics.Registry != nil {
		// a second Runner on the same registry keeps the first's gauge
		_ = cfg.Metrics.Registry.Register(restoreCollector{own: e.own, desc: restoreDesc})
		if e.sb != nil {
			_ = cfg.Metrics.Registry.Register(standbyCollector{sb: e.sb, desc: standbyDesc})
		}
	}
	return e, nil
}

// storedOffsets starts each assigned partition at the lowest next offset
// any processor of its topic has stored (those further on skip what they
// applied: projections.AlreadyApplied), or at the start of the log.
//
// The group's committed offsets (what franz-go fetched: offsets) are kept
// in step with the stores, though franz-go takes the offsets returned here
// as committed: a store behind the group's offset (an instance restoring a
// task another member processed) marks nothing for commit until it passes
// it (floor), and a store ahead of it (an instance given back the task its
// store holds, after another member restored part of it and committed
// that) commits its stored offset at once. Before, the first case moved
// the group's offset back and the second left it there, so after a
// cluster restart the group's lag (processors.Lag, /healthz, the lag
// gauge) stayed above zero until new records came (an operator's
// walkthrough: 61,743–86,799 records on every instance while every owner
// was caught up).
func (e *engine) storedOffsets(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	ahead := map[string]map[int32]kgo.EpochOffset{}
	e.mu.Lock()
	for topic, parts := range offsets {
		for partition, committed := range parts {
			from := e.storedFrom(topic, partition)
			if from < 0 {
				continue
			}
			parts[partition] = kgo.NewOffset().At(from).WithEpoch(-1)
			c := committed.EpochOffset().Offset // < 0: none committed
			k := tp{topic, partition}
			delete(e.floor, k)
			switch {
			case c >= 0 && from < c:
				e.floor[k] = c
			case from > max(c, 0):
				if ahead[topic] == nil {
					ahead[topic] = map[int32]kgo.EpochOffset{}
				}
				ahead[topic][partition] = kgo.EpochOffset{Epoch: -1, Offset: from}
			}
		}
	}
	e.mu.Unlock()
	if len(ahead) > 0 {
		// after the assignment completes: franz-go assigns right after
		// this returns
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			select {
			case <-e.clientSet:
			case <-ctx.Done():
				return
			}
			e.client.CommitOffsetsSync(ctx, ahead, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
				if err != nil && ctx.Err() == nil {
					e.cfg.Logger.Info("engine: committing a store's offsets ahead of the group's", map[string]any{"err": err.Error()})
				}
			})
		}()
	}
	return offsets, nil
}

// storedFrom is the offset a partition resumes from: the lowest next
// offset its topic's processors have stored (0 for one that has none); -1
// for a topic no processor reads.
func (e *engine) storedFrom(topic string, partition int32) int64 {
	from := int64(-1)
	for _, p := range e.byTopic[topic] {
		next, ok := e.cfg.Store.NextOffset(p.Name(), topic, partition)
		if !ok {
			next = 0
		}
		if from < 0 || next < from {
			from = next
		}
	}
	return from
}

// mark marks last (the last record applied of a partition) for commit,
// unless the partition's store is still below the group's committed
// offset (floor).
func (e *engine) mark(topic string, partition int32, last *kgo.Record) {
	k := tp{topic, partition}
	e.mu.Lock()
	f, ok := e.floor[k]
	if ok && last.Offset+1 >= f {
		delete(e.floor, k)
	}
	e.mu.Unlock()
	if ok && last.Offset+1 < f {
		return
	}
	e.client.MarkCommitRecords(last)
}

// run polls and applies until ctx ends.
func (e *engine) run(ctx context.Context) error {
	defer func() {
		e.client.AllowRebalance() // a poll holds rebalances, and so leaving the group, until this
		// the leave waits for a rebalance in flight: at most
		// LeaveTimeout, then it is cut (the group's committed offsets
		// may then lag the store's, which the next owner's assignment
		// repairs: storedOffsets)
		closed, err := kafkapubsub.CloseMember(e.client, e.cancelClient, string(e.cfg.Group), e.cfg.LeaveTimeout, e.cfg.Brokers, e.cfg.SubscriberOpts...)
		if err != nil {
			e.cfg.Logger.Error("engine: leaving the processors' group", err, nil)
		}
		<-closed // a revoke callback still running uses the store (Pipeline.Close bounds this wait)
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if e.resumeDue() {
			// some partitions are paused: wake up to resume them
			pollCtx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		}
		fs := e.client.PollFetches(pollCtx)
		cancel()
		if fs.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				if t != "" { // else the group's (joining, dialling), not a partition's
					err = fmt.Errorf("%s/%d: %w", t, p, err)
				}
				ferr = err
			}
		})
		if ferr != nil || len(fs.Errors()) == 0 { // a poll cut by its 100 ms wait tells nothing
			e.fetches.note(e.cfg.Logger, "fetch failed", ferr)
		}
		var wg sync.WaitGroup
		fs.EachPartition(func(part kgo.FetchTopicPartition) {
			if len(part.Records) == 0 {
				return
			}
			wg.Add(1)
			go func(topic string, partition int32, recs []*kgo.Record) {
				defer wg.Done()
				for len(recs) > 0 {
					n := min(len(recs), e.cfg.MaxBatch)
					if !e.partition(ctx, topic, partition, recs[:n]) {
						return // backed off: the partition was rewound to its stored offset
					}
					recs = recs[n:]
				}
			}(part.Topic, part.Partition, part.Records)
		})
		wg.Wait()
		e.client.AllowRebalance()
	}
}

// partition applies a batch of one partition's records for every
// processor of the topic; false when it failed and the partition backed
// off (paused and rewound).
func (e *engine) partition(ctx context.Context, topic string, partition int32, recs []*kgo.Record) bool {
	last := recs[len(recs)-1]
	if recs = dataRecords(recs); len(recs) == 0 {
		// transaction markers only: nothing to apply, the offset moves on
		e.own.advanced(topic, partition, last.Offset+1)
		e.mark(topic, partition, last)
		return true
	}
	procs := e.byTopic[topic]
	n, err := e.counts.of(ctx, topic)
	if err != nil {
		e.backOff(topic, partition, err)
		return false
	}
	itemsOf := pollItems(procs, recs, n)
	err = e.pool.each(procs, func(i int, p Processor) error {
		return e.apply(p, itemsOf(i, p))
	})
	if err != nil {
		e.backOff(topic, partition, err)
		return false
	}
	e.clearBackOff(topic, partition)
	e.own.advanced(topic, partition, last.Offset+1)
	e.mark(topic, partition, last)
	return true
}

// pollItems parses and validates recs (data records of one topic
// partition, in offset order; partitions: the topic's partition count)
// once, and gives procs[i] (the topic's processors, in byTopic's order)
// its items of them: a record that is no event of the topic is
// dead-lettered once, by the topic's first processor; a conflicting
// duplicate once too, by the first that acts on its type
// (conflictLetterers).
func pollItems(procs []Processor, recs []*kgo.Record, partitions int) func(i int, p Processor) []projections.Item {
	base := make([]projections.Item, len(recs))
	for i, r := range recs {
		base[i] = parseItem(r, partitions)
	}
	dl := len(recs) > 0 && deadLetters(recs[0].Topic)
	var owners []int
	if dl {
		owners = conflictLetterers(procs, base)
	}
	return func(i int, p Processor) []projections.Item {
		items := make([]projections.Item, len(base))
		for j, it := range base {
			rec := recs[j]
			if dl && (it.Err == nil || i == 0) {
				it.DeadLetter = func(reason error) projections.OutboxRecord { return deadLetterRecord(p, rec, reason) }
				it.QuietConflict = owners[j] != i
			}
			items[j] = it
		}
		return items
	}
}

// ApplyPoll applies recs — records of one topic partition in offset order,
// as one poll brings them, without transaction markers — to every
// processor of procs that reads their topic, as the live engine applies a
// poll, without a broker: each record parsed and validated once, the
// processors in name order, each in one ApplyBatch of the store (a
// TypedProcessor given only its types), a rejection dead-lettered into the
// store's outbox (a record that is no event of the topic once, by the
// topic's first processor). partitions is the topic's partition count (a
// record on another partition than its key's is no event of the topic);
// 0 or 1 checks nothing. It returns each processor's outcomes by Name, in
// recs' order; a processor that does not read the topic has none. A store
// failure is returned as it is (the engine retries the poll). Package
// processors/processortest drives it; a test of one's own processor can
// too.
func ApplyPoll(store *projections.Store, procs []Processor, partitions int, recs []*kgo.Record) (map[string][]projections.Outcome, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	topic := recs[0].Topic
	for i, r := range recs {
		switch {
		case r.Topic != topic || r.Partition != recs[0].Partition:
			return nil, fmt.Errorf("processors: ApplyPoll: recs[%d] is on %s/%d, recs[0] on %s/%d: one topic partition per call", i, r.Topic, r.Partition, topic, recs[0].Partition)
		case r.Attrs.IsControl():
			return nil, fmt.Errorf("processors: ApplyPoll: recs[%d] is a transaction marker: data records only", i)
		case i > 0 && r.Offset <= recs[i-1].Offset:
			return nil, fmt.Errorf("processors: ApplyPoll: recs[%d] at offset %d follows offset %d: offset order", i, r.Offset, recs[i-1].Offset)
		}
	}
	mine := byTopic(procs)[topic]
	itemsOf := pollItems(mine, recs, partitions)
	out := make(map[string][]projections.Outcome, len(mine))
	for i, p := range mine {
		outs, err := applyBatch(store, p, itemsOf(i, p))
		if err != nil {
			return out, err
		}
		out[p.Name()] = outs
	}
	return out, nil
}

// conflictLetterers gives, for each item of base, the index in procs (a
// topic's processors, in byTopic's order) of the processor that
// dead-letters it if it is a conflicting duplicate: the first that acts on
// its type. Every processor that had applied the event the id first named
// refuses the conflicting one; before, each of them dead-lettered it (a
// session event twice, by sessionlog and sessions, a task completion three
// times). The first of the topic's processors that acts on the type is
// one of them whenever it indexes every event of the topic (sessionlog,
// first by name, on chronicle.sessions, chronicle.evaluations and
// chronicle.learned); where it had not applied the first event (it had
// refused it, so that event has its own letter), a processor that had
// refuses the new one without a letter, counted in
// chronicle_conflicting_duplicates_total.
func conflictLetterers(procs []Processor, base []projections.Item) []int {
	out := make([]int, len(base))
	for j, it := range base {
		out[j] = -1
		for i, p := range procs {
			if actsOn(p, it.Env) {
				out[j] = i
				break
			}
		}
	}
	return out
}

// dataRecords drops the control records (transaction markers) of a poll's
// records of one partition; recs itself when there are none. The engine
// marks the last record, marker or not, so a partition whose last record
// is a marker commits (and shows in Lag as) its end.
func dataRecords(recs []*kgo.Record) []*kgo.Record {
	for i, r := range recs {
		if !r.Attrs.IsControl() {
			continue
		}
		out := append([]*kgo.Record(nil), recs[:i]...)
		for _, r := range recs[i+1:] {
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		}
		return out
	}
	return recs
}

// apply runs ApplyBatch for p, retrying store failures cfg.MaxRetries times
// with exponential backoff from cfg.RetryInterval.
// engineApplyBatch is applyBatch for the live engine; a test replaces it
// to inject store failures into one partition (a failing Pebble is hard to
// aim at one partition), the path of backOff and its rewind.
var engineApplyBatch = applyBatch

func (e *engine) apply(p Processor, items []projections.Item) error {
	bo := backoff.WithMaxRetries(&backoff.ExponentialBackOff{
		InitialInterval: e.cfg.RetryInterval, RandomizationFactor: 0, Multiplier: 2,
		MaxInterval: time.Minute, MaxElapsedTime: 0, Stop: backoff.Stop, Clock: backoff.SystemClock,
	}, uint64(e.cfg.MaxRetries))
	return backoff.Retry(func() error {
		outs, err := engineApplyBatch(e.cfg.Store, p, items)
		if err != nil {
			e.cfg.Logger.Error("store failed; retrying the batch", err, map[string]any{"processor": p.Name(), "at": items[0].Pos.String()})
			return err
		}
		e.observe(p, items, outs)
		e.own.committed(items[0].Pos.Topic, items[0].Pos.Partition)
		return nil
	}, bo)
}

func (e *engine) observe(p Processor, items []projections.Item, outs []projections.Outcome) {
	m := e.cfg.Metrics
	if m != nil {
		m.BatchEvents.WithLabelValues(p.Name()).Observe(float64(len(items)))
	}
	for i, o := range outs {
		if o.Result == projections.DeadLettered {
			// Debug: serve logs each letter once, at Warn, when the
			// deadletters projection applies it (OnDeadLetter), workers'
			// letters too; at Info this line said it a second time
			e.cfg.Logger.Debug("dead-lettered", map[string]any{"processor": p.Name(), "at": items[i].Pos.String(), "reason": o.Err.Error()})
		}
		// a letter the projection refused is told too: one of a record
		// that was no JSON names no scope, so it has no row (nor a place
		// in GET /v1/deadletters), and before, it was the one letter serve
		// never logged (a new user's walkthrough, 2026-12-03)
		if (o.Result == projections.Applied || o.Result == projections.DeadLettered) && e.cfg.OnDeadLetter != nil && items[i].Env != nil && items[i].Env.Type == LetterType {
			var d LetterData
			if json.Unmarshal(items[i].Env.Data, &d) == nil {
				e.cfg.OnDeadLetter(d)
			}
		}
		if m == nil {
			continue
		}
		m.observeItem(p.Name(), items[i], o)
		if o.Result == projections.DeadLettered {
			if items[i].Lettered(o) {
				m.DeadLettered.WithLabelValues(p.Name()).Inc()
			}
			if errors.Is(o.Err, projections.ErrConflictingDuplicate) {
				m.ConflictingDuplicates.WithLabelValues(p.Name()).Inc()
			}
		}
	}
}

// backOff pauses a partition whose batch failed after its retries, rewinds
// it to the first record a processor still needs, and resumes it after an
// exponential backoff (100 ms doubling to 30 s), so one failing partition
// never holds the others.
func (e *engine) backOff(topic string, partition int32, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := tp{topic, partition}
	pp := e.paused[k]
	if pp == nil {
		pp = &pausedPartition{bo: &backoff.ExponentialBackOff{InitialInterval: 100 * time.Millisecond, RandomizationFactor: 0.2,
			Multiplier: 2, MaxInterval: 30 * time.Second, Stop: backoff.Stop, Clock: backoff.SystemClock}}
		pp.bo.Reset()
		e.paused[k] = pp
	}
	wait := pp.bo.NextBackOff()
	pp.until = time.Now().Add(wait)
	e.cfg.Logger.Error("partition paused after a store failure", err, map[string]any{"topic": topic, "partition": partition, "retry_in": wait.String()})
	e.client.PauseFetchPartitions(map[string][]int32{topic: {partition}})
	e.client.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: max(e.storedFrom(topic, partition), 0)}}})
}

func (e *engine) clearBackOff(topic string, partition int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.paused, tp{topic, partition})
}

// resumeDue resumes paused partitions whose backoff ran out and reports
// whether any partition is still paused.
func (e *engine) resumeDue() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for k, pp := range e.paused {
		if !pp.until.IsZero() && now.After(pp.until) {
			e.client.ResumeFetchPartitions(map[string][]int32{k.topic: {k.partition}})
			pp.until = time.Time{} // stays known until a batch succeeds, so the backoff grows
		}
	}
	for _, pp := range e.paused {
		if !pp.until.IsZero() {
			return true
		}
	}
	return false
}

// byTopic lists the processors of each topic, by name.
func byTopic(procs []Processor) map[string][]Processor {
	m := map[string][]Processor{}
	for _, p := range procs {
		for _, t := range p.Topics() {
			m[string(t)] = append(m[string(t)], p)
		}
	}
	for _, ps := range m {
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].Name() < ps[j].Name() })
	}
	return m
}

// pool runs processors' batches concurrently, at most GOMAXPROCS at once,
// holding a lock per processor whose rows span keys (no KeyedState), so
// its partitions are applied one batch at a time. A batch takes its
// processor's lock before one of the GOMAXPROCS slots: one waiting for the
// lock holds no slot, so the other processors' batches use the cores
// meanwhile (TestPoolWaitingForASerialLockHoldsNoSlot). The live engine
// and Replay share it.
type pool struct {
	sem    chan struct{}
	serial map[string]*sync.Mutex
}

func newPool(procs []Processor) *pool {
	pl := &pool{sem: make(chan struct{}, runtime.GOMAXPROCS(0)), serial: map[string]*sync.Mutex{}}
	for _, p := range procs {
		// per-key state on two topics still shares rows between their
		// partitions (the same key on each), so such a processor is serial
		if k, ok := p.(KeyedState); !ok || !k.StatePerKey() || len(p.Topics()) > 1 {
			pl.serial[p.Name()] = &sync.Mutex{}
		}
	}
	return pl
}

// each runs fn for every processor of procs concurrently and joins their
// errors.
func (pl *pool) each(procs []Processor, fn func(i int, p Processor) error) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if mu := pl.serial[p.Name()]; mu != nil {
				mu.Lock()
				defer mu.Unlock()
			}
			pl.sem <- struct{}{}
			defer func() { <-pl.sem }()
			errs[i] = fn(i, p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parseItem parses and validates r once, for every processor of its topic
// (partitions: the topic's partition count, for checkPartition).
func parseItem(r *kgo.Record, partitions int) projections.Item {
	if r.Topic == string(events.TopicDeadLetter) {
		return letterItem(r) // no event: a letter of another topic's record
	}
	it := projections.Item{Pos: projections.Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}}
	env, key, err := events.FromRecordKey(r)
	if err == nil {
		err = events.CheckTopic(&env, events.Topic(r.Topic))
	}
	if err == nil {
		err = checkPartition(r.Topic, r.Partition, partitions, key, string(r.Key))
	}
	if err != nil {
		it.Err = fmt.Errorf("at %s: %w", it.Pos, err)
		return it
	}
	it.Env = &env
	it.Sum, it.IDSum = projections.ContentHash(&env), projections.IDHashKeyed(&env, key)
	return it
}

// PointerError is a processor's rejection that names a member of the
// event by its JSON pointer (e.g. /data/processed_commands) other than an
// *events.ValidationError: its dead letter keeps the pointer in
// HeaderPointer, which GET /v1/deadletters answers as pointer.
type PointerError interface {
	error
	MemberPointer() string
}

// deadLetterRecord is the record events.TopicDeadLetter receives for rec,
// rejected by p: the original key, value and headers, plus the reason and
// where it came from (the header names Watermill's poison queue uses), and
// HeaderPointer when the reason is a schema or processor error naming a
// member of the event (events.ValidationError: /data/tokens; a
// PointerError).
func deadLetterRecord(p Processor, rec *kgo.Record, reason error) projections.OutboxRecord {
	hs := make([]projections.Header, 0, len(rec.Headers)+6)
	for _, h := range rec.Headers {
		hs = append(hs, projections.Header{Key: h.Key, Value: h.Value})
	}
	hs = append(hs,
		projections.Header{Key: HeaderError, Value: []byte(reason.Error())},
		projections.Header{Key: HeaderPoisonedTopic, Value: []byte(rec.Topic)},
		projections.Header{Key: HeaderHandler, Value: []byte(p.Name() + "@" + rec.Topic)},
		projections.Header{Key: HeaderOriginalTopic, Value: []byte(rec.Topic)},
		projections.Header{Key: HeaderOriginalPartition, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		projections.Header{Key: HeaderOriginalOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
	)
	var ve *events.ValidationError
	var pe PointerError
	switch {
	case errors.As(reason, &ve) && ve.Pointer != "":
		hs = append(hs, projections.Header{Key: HeaderPointer, Value: []byte(ve.Pointer)})
	case errors.As(reason, &pe) && pe.MemberPointer() != "":
		hs = append(hs, projections.Header{Key: HeaderPointer, Value: []byte(pe.MemberPointer())})
	}
	letter := projections.OutboxRecord{Topic: string(events.TopicDeadLetter), Key: string(rec.Key), Value: rec.Value, Headers: hs}
	if letterSize(letter) > MaxLetterBytes {
		boundLetter(&letter, rec)
	}
	return letter
}

// letterFieldMax is the most of a dead letter's key, of each header's
// name and value, and of each attribute of its stub value, a letter above
// MaxLetterBytes keeps (4 KiB).
const letterFieldMax = 4 << 10

func letterSize(l projections.OutboxRecord) int {
	n := len(l.Key) + len(l.Value)
	for _, h := range l.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// boundLetter brings l, rec's letter, within MaxLetterBytes: its value
// becomes the event's attributes without data (letterStub) and
// HeaderValueOmitted says the value's size; the key and each header's
// name and value are cut to letterFieldMax (a 1 MB key, header, attribute
// or member name, which a schema error's reason and pointer repeat, made a
// letter of a small record about 1 MB, as large as one whose value was:
// a re-test, 2026-12-01); and should the headers still be too many, the
// record's own are dropped, HeaderHeadersOmitted counting them. A redrive
// of such a letter reads the record from its position.
func boundLetter(l *projections.OutboxRecord, rec *kgo.Record) {
	l.Value = letterStub(rec)
	l.Headers = append(l.Headers, projections.Header{Key: HeaderValueOmitted, Value: []byte(strconv.Itoa(len(rec.Value)))})
	l.Key = string(cutBytes([]byte(l.Key)))
	for i := range l.Headers {
		l.Headers[i].Key = string(cutBytes([]byte(l.Headers[i].Key)))
		l.Headers[i].Value = cutBytes(l.Headers[i].Value)
	}
	if letterSize(*l) > MaxLetterBytes {
		own := l.Headers[len(rec.Headers):]
		l.Headers = append(append([]projections.Header(nil), own...), projections.Header{Key: HeaderHeadersOmitted, Value: []byte(strconv.Itoa(len(rec.Headers)))})
	}
}

// cutBytes is b when it holds at most letterFieldMax bytes, else its
// start up to a UTF-8 character's end, then "…(N bytes)".
func cutBytes(b []byte) []byte {
	if len(b) <= letterFieldMax {
		return b
	}
	n := letterFieldMax - 32
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return append(append([]byte(nil), b[:n]...), fmt.Sprintf("…(%d bytes)", len(b))...)
}

// letterStub is the value of a letter too large to hold its record's
// (MaxLetterBytes): the record's event without data and data_base64, and
// without an attribute above letterFieldMax, as structured JSON, so the
// letter still names the event's id, type, source and scope; nil when the
// record is no JSON event (such a letter names no scope, as a letter of a
// non-JSON record never did). A binary-mode record's letter keeps its ce_
// headers, which name the same.
func letterStub(rec *kgo.Record) []byte {
	raw, err := events.StructuredJSON(rec)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	delete(m, "data")
	delete(m, "data_base64")
	for k, v := range m {
		if len(k)+len(v) > letterFieldMax {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// logOwnership logs a change of the partitions this instance owns, as
// "chronicle.memories:0 chronicle.sessions:0,2" (sorted) under "partitions"; nothing
// for none. Before, nothing was logged when a member died, partitions
// moved or a takeover ended: only GET /v1/cluster showed it (an
// operator's walkthrough, 2026-12-06).
func logOwnership(l watermill.LoggerAdapter, msg string, parts map[string][]int32) {
	if l == nil || len(parts) == 0 {
		return
	}
	topics := make([]string, 0, len(parts))
	for t, ps := range parts {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return
	}
	sort.Strings(topics)
	var b strings.Builder
	for i, t := range topics {
		if i > 0 {
			b.WriteByte(' ')
		}
		ps := slices.Clone(parts[t])
		slices.Sort(ps)
		b.WriteString(t)
		for j, p := range ps {
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(p)))
		}
	}
	l.Info(msg, watermill.LogFields{"partitions": b.String()})
}
