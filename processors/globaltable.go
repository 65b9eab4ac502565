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
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// GlobalTable is implemented by processors whose projection every instance
// needs whole: read-mostly aggregates such as the tool graph (next-tool
// for any scope) and the coordination patterns. Such a processor reads a
// topic keyed by its aggregate (a repartition topic, so its state per key
// is a function of one ordered partition) and is replicated, Kafka
// Streams' GlobalKTable: every instance applies every partition of its
// topics (GlobalTableRunner), outside the consumer group. It must not also
// run in the group's engine, which would apply the partitions this
// instance owns a second time under the same projection;
// SplitGlobalTables separates the two lists.
type GlobalTable interface {
	GlobalTable() bool
}

// IsGlobalTable reports whether p implements GlobalTable and returns true.
func IsGlobalTable(p Processor) bool {
	g, ok := p.(GlobalTable)
	return ok && g.GlobalTable()
}

// SplitGlobalTables splits procs, keeping their order, into the processors
// that run in the consumer group (Runner) and the global tables
// (GlobalTableRunner).
func SplitGlobalTables(procs []Processor) (group, global []Processor) {
	for _, p := range procs {
		if IsGlobalTable(p) {
			global = append(global, p)
		} else {
			group = append(group, p)
		}
	}
	return group, global
}

// GlobalTableConfig configures a GlobalTableRunner. Zero fields take the
// documented defaults; Validate reports the first bad field.
type GlobalTableConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// Store is the projection store: the tables' rows and their offsets.
	// Required.
	Store *projections.Store
	// Processors are the global tables. At least one.
	Processors []Processor
	// MaxBatch is the most records one poll returns, and so the most a
	// processor applies in one Pebble batch per partition (default 1000).
	MaxBatch int
	// FetchMaxWait is how long the broker holds a fetch that finds no new
	// record (default 200 ms).
	FetchMaxWait time.Duration
	// RetryInterval is the first delay after a store failure, doubled per
	// failure up to 30 s (default 100 ms); the partition's batch is
	// retried until it commits or ctx ends.
	RetryInterval time.Duration
	// Metrics, when set, counts applied events per processor and result
	// (chronicle_processor_events_total) and batch sizes.
	Metrics *Metrics
	// Logger (default watermill.NopLogger).
	Logger watermill.LoggerAdapter
	// ClientOpts are extra franz-go options for the consumer.
	ClientOpts []kgo.Opt
	// TaskTopics are the topics the processors' consumer group reads
	// (Runner.Topics). Their largest partition count is the group's
	// number of tasks T (CoPartitionedBalancer's anchor topic), and
	// partition n of a table's topic belongs to task n mod T: the member
	// that owns the task relays the derived events the table writes for
	// that partition (WithTasks). Default none: partition n belongs to
	// task n, which is right whenever every topic has the same partition
	// count (`--partitions` creates them so).
	TaskTopics []string
}

// Validate reports the first invalid field.
func (c GlobalTableConfig) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return errors.New("processors: GlobalTableConfig.Brokers: required")
	case c.Store == nil:
		return errors.New("processors: GlobalTableConfig.Store: required")
	case len(c.Processors) == 0:
		return errors.New("processors: GlobalTableConfig.Processors: at least one")
	case c.MaxBatch < 0:
		return errors.New("processors: GlobalTableConfig.MaxBatch: must be ≥ 0")
	case c.FetchMaxWait < 0:
		return errors.New("processors: GlobalTableConfig.FetchMaxWait: must be ≥ 0")
	case c.RetryInterval < 0:
		return errors.New("processors: GlobalTableConfig.RetryInterval: must be ≥ 0")
	}
	return CheckNames("GlobalTableConfig.Processors", c.Processors)
}

// GlobalTableRunner applies global tables (see GlobalTable) on this
// instance: one franz-go consumer outside any consumer group, assigned
// every partition of the tables' topics (kgo.ConsumePartitions), each
// starting at the lowest next offset its processors stored in the Pebble
// store (0 for a partition never applied). Each poll is split by
// partition; each processor applies a partition's records as one batch
// with projections.Store.ApplyBatch, so the rows, the derived events and
// the offset after the batch commit together (exactly-once, as in the
// group's engine), partitions concurrently for processors with
// KeyedState. A replay (Replay) applies the same records with the same
// Apply, so a global table's rows equal a replay's on every instance.
// Every instance writes the same derived events into its outbox, each row
// with its source position; a fenced relay whose Owner is WithTasks
// relays them on the one member that owns the partition's task, and the
// others prune their copies, so each is in the log once.
//
// Differences from the group's engine: a processor's rejection is counted
// and logged but not dead-lettered (every instance would write the same
// dead letter; the group's engine, or replay, reports the cause upstream),
// and a store failure retries the partition's batch with backoff until it
// commits instead of pausing it. Partitions are listed when Run starts:
// partitions added to a topic later are read after a restart.
type GlobalTableRunner struct {
	cfg     GlobalTableConfig
	byTopic map[string][]Processor
	pool    *pool
	running chan struct{}

	mu    sync.Mutex
	parts []tp         // every partition of the tables' topics, once Run listed them
	tasks int32        // the group's task count T (0: unknown, partition n is task n)
	adm   *kadm.Client // the consumer's client, for CaughtUp; set before running closes
}

// partitionsOf is topic's partition count, from the partitions Run
// listed.
func (g *GlobalTableRunner) partitionsOf(topic string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, p := range g.parts {
		if p.topic == topic {
			n++
		}
	}
	return n
}

// NewGlobalTableRunner checks cfg; Run starts consuming.
func NewGlobalTableRunner(cfg GlobalTableConfig) (*GlobalTableRunner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 1000
	}
	if cfg.FetchMaxWait == 0 {
		cfg.FetchMaxWait = 200 * time.Millisecond
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = watermill.NopLogger{}
	}
	if cfg.Metrics != nil {
		// the global tables' series exist at 0 from the start, as the
		// group's processors' do (Runner): before, outcomes, patterns,
		// sessionlog.memories and toolgraph had none until their first
		// event, and never a dead_lettered one, so an alert on their dead
		// letters could not fire (a walkthrough's finding)
		names := make([]string, 0, len(cfg.Processors))
		for _, p := range cfg.Processors {
			names = append(names, p.Name())
		}
		cfg.Metrics.Zero(names, nil)
	}
	return &GlobalTableRunner{cfg: cfg, byTopic: byTopic(cfg.Processors), pool: newPool(cfg.Processors), running: make(chan struct{})}, nil
}

// Running is closed once every partition of the tables' topics is
// assigned to the consumer.
func (g *GlobalTableRunner) Running() <-chan struct{} { return g.running }

// Topics are the topics the global tables read, sorted.
func (g *GlobalTableRunner) Topics() []string {
	out := make([]string, 0, len(g.byTopic))
	for t := range g.byTopic {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// startOffsets lists every partition of the topics and the offset to start
// it at: the lowest next offset any processor of the topic stored.
func (g *GlobalTableRunner) startOffsets(ctx context.Context) (map[string]map[int32]kgo.Offset, error) {
	cl, err := kafkaconn.NewClient(g.cfg.Brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	topics := g.Topics()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("processors: global tables: list topics: %w", err)
	}
	var tasks int32
	if len(g.cfg.TaskTopics) > 0 {
		gd, err := adm.ListTopics(ctx, g.cfg.TaskTopics...)
		if err != nil {
			return nil, fmt.Errorf("processors: global tables: list the group's topics: %w", err)
		}
		for _, d := range gd {
			if d.Err == nil {
				tasks = max(tasks, int32(len(d.Partitions)))
			}
		}
	}
	var parts []tp
	out := map[string]map[int32]kgo.Offset{}
	for _, t := range topics {
		d, ok := td[t]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("processors: global tables: topic %s: %v", t, d.Err)
		}
		out[t] = map[int32]kgo.Offset{}
		for p := range d.Partitions {
			from := int64(-1)
			for _, pr := range g.byTopic[t] {
				next, _ := g.cfg.Store.NextOffset(pr.Name(), t, p)
				if from < 0 || next < from {
					from = next
				}
			}
			out[t][p] = kgo.NewOffset().At(from)
			parts = append(parts, tp{t, p})
		}
		if tasks > 0 && int32(len(d.Partitions)) != tasks {
			// Debug: expected on every start of the default processors
			// (chronicle.memories has one partition), and an operator read
			// it as a misconfiguration (a walkthrough, 2026-12-06)
			g.cfg.Logger.Debug("global tables: a table's topic and the group's topics have different partition counts: partition n of the table follows task n mod the group's count",
				map[string]any{"topic": t, "partitions": len(d.Partitions), "tasks": tasks})
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		return parts[i].topic < parts[j].topic || parts[i].topic == parts[j].topic && parts[i].partition < parts[j].partition
	})
	g.mu.Lock()
	g.parts, g.tasks = parts, tasks
	g.mu.Unlock()
	return out, nil
}

// Run consumes and applies until ctx ends. Its error is a failure to list
// the topics or to create the consumer; a store failure is retried.
func (g *GlobalTableRunner) Run(ctx context.Context) error {
	var start map[string]map[int32]kgo.Offset
	for {
		var err error
		if start, err = g.startOffsets(ctx); err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		g.cfg.Logger.Error("global tables: listing partitions; retrying", err, nil)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(g.cfg.Brokers...),
		kgo.ConsumePartitions(start),
		// the fenced relay writes in transactions; its markers are kept so
		// that the stored offsets move past them (no lag of 1 after a
		// partition's last transaction)
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(g.cfg.FetchMaxWait),
		kgo.DisableFetchSessions(), // as the engine: avoids a data race inside franz-go's Close
	}, g.cfg.ClientOpts...)
	cl, err := kgo.NewClient(kafkaconn.With(opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	g.mu.Lock()
	g.adm = kadm.NewClient(cl)
	g.mu.Unlock()
	close(g.running)
	for {
		fs := cl.PollRecords(ctx, g.cfg.MaxBatch)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				g.cfg.Logger.Error("global tables: fetch failed", err, map[string]any{"topic": t, "partition": p})
			}
		})
		var wg sync.WaitGroup
		fs.EachPartition(func(part kgo.FetchTopicPartition) {
			if len(part.Records) == 0 {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.partition(ctx, part.Records)
			}()
		})
		wg.Wait()
	}
}

// caughtUpPoll is how often CaughtUp reads the store's offsets.
const caughtUpPoll = 10 * time.Millisecond

// CaughtUp returns nil once processor, one of the tables, has applied every
// partition of topic up to the offsets the log had committed when it was
// called (the last stable offsets, kadm ListCommittedOffsets): every
// record written before the call is in the table. It reads the store's
// offsets every 10 ms and waits as long as ctx allows: the caller bounds
// it. Errors: processor does not read topic here, ctx's error, a failure
// to list the offsets (the broker down, Run ended).
func (g *GlobalTableRunner) CaughtUp(ctx context.Context, processor, topic string) error {
	if !slices.ContainsFunc(g.byTopic[topic], func(p Processor) bool { return p.Name() == processor }) {
		return fmt.Errorf("processors: global tables: %s is not a table of %s", processor, topic)
	}
	select {
	case <-g.running:
	case <-ctx.Done():
		return fmt.Errorf("processors: global tables not running yet: %w", ctx.Err())
	}
	g.mu.Lock()
	adm := g.adm
	g.mu.Unlock()
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("processors: global tables: end offsets of %s: %w", topic, err)
	}
	for {
		behind := ""
		ends.Each(func(o kadm.ListedOffset) {
			if next, _ := g.cfg.Store.NextOffset(processor, o.Topic, o.Partition); next < o.Offset && behind == "" {
				behind = fmt.Sprintf("%s/%d at %d of %d", o.Topic, o.Partition, next, o.Offset)
			}
		})
		if behind == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("processors: global table %s behind (%s): %w", processor, behind, ctx.Err())
		case <-time.After(caughtUpPoll):
		}
	}
}

// partition applies one poll's records of one partition for every
// processor of the topic, retrying store failures until they commit or
// ctx ends.
func (g *GlobalTableRunner) partition(ctx context.Context, recs []*kgo.Record) {
	items := make([]projections.Item, len(recs))
	for i, r := range recs {
		if r.Attrs.IsControl() { // a transaction marker: the offset moves past it
			items[i] = projections.Item{Pos: projections.Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, Control: true}
			continue
		}
		// every instance writes the table's derived events alike; each
		// row keeps its source position, and only the owner of the
		// partition's task relays it (WithTasks, Fence)
		items[i] = parseItem(r, g.partitionsOf(r.Topic))
	}
	_ = g.pool.each(g.byTopic[recs[0].Topic], func(_ int, p Processor) error {
		wait := g.cfg.RetryInterval
		for {
			outs, err := applyBatch(g.cfg.Store, p, items)
			if err == nil {
				g.observe(p, items, outs)
				return nil
			}
			g.cfg.Logger.Error("global tables: store failed; retrying the batch", err, map[string]any{"processor": p.Name(), "at": items[0].Pos.String(), "retry_in": wait.String()})
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
		}
	})
}

func (g *GlobalTableRunner) observe(p Processor, items []projections.Item, outs []projections.Outcome) {
	m := g.cfg.Metrics
	if m != nil {
		m.BatchEvents.WithLabelValues(p.Name()).Observe(float64(len(items)))
	}
	for i, o := range outs {
		if o.Result == projections.DeadLettered {
			g.cfg.Logger.Info("global table rejected an event (not dead-lettered: its cause is reported upstream)", map[string]any{"processor": p.Name(), "at": items[i].Pos.String(), "reason": o.Err.Error()})
		}
		if m != nil {
			m.observeItem(p.Name(), projections.Item{}, o) // a rejection here is lettered by no one: rejected
		}
	}
}

// next is the offset every processor of topic has applied partition p up
// to on this instance (0 before the first record).
func (g *GlobalTableRunner) next(topic string, p int32) int64 {
	from := int64(-1)
	for _, pr := range g.byTopic[topic] {
		n, _ := g.cfg.Store.NextOffset(pr.Name(), topic, p)
		if from < 0 || n < from {
			from = n
		}
	}
	return max(from, 0)
}

// WithTasks is the ownership a fenced relay (Fence.Owner) reads on an
// instance that runs global tables next to the group's engine: the
// engine's partitions, plus partition n of every table's topic when the
// engine owns task n mod T (T: GlobalTableConfig.TaskTopics; the engine
// owns task t when it owns partition t of any topic the group reads, as
// CoPartitionedBalancer assigns them). Every instance applies every
// partition of a table and writes the same derived events (same ids,
// same bytes: Apply is a function of the log); with WithTasks exactly one
// member relays them, through the partition's transactional id and
// relayed frontier like the engine's own rows, and the others drop their
// copies once that frontier passes them (Fence.PruneEvery). A table's
// partition is reported with the assignment of its task (the highest
// Assignment among the engine's partitions of the task: a task assigned
// again takes the id over again) and Next = what every processor of its
// topic applied on this instance.
//
// Before Run listed the tables' partitions none are reported (their rows
// wait in the outbox). One process with its embedded broker relays
// unfenced and needs none of this: it writes every row once.
func (g *GlobalTableRunner) WithTasks(engine Ownerships) Ownerships {
	return tableTasks{engine: engine, g: g}
}

type tableTasks struct {
	engine Ownerships
	g      *GlobalTableRunner
}

// Ownership implements Ownerships.
func (t tableTasks) Ownership() Ownership {
	own := t.engine.Ownership()
	tasks := map[int32]uint64{}
	engineHas := map[tp]int{} // index in own.Partitions
	for i, p := range own.Partitions {
		tasks[p.Partition] = max(tasks[p.Partition], p.Assignment)
		engineHas[tp{p.Topic, p.Partition}] = i
	}
	t.g.mu.Lock()
	parts, n := t.g.parts, t.g.tasks
	t.g.mu.Unlock()
	added := false
	for _, k := range parts {
		task := k.partition
		if n > 0 {
			task %= n
		}
		a, ok := tasks[task]
		if !ok {
			continue
		}
		next := t.g.next(k.topic, k.partition)
		if i, ok := engineHas[k]; ok {
			// a topic both a table and the group's processors read
			// (chronicle.memories: the memory bank and the session
			// index's table): one entry, whose Next is the lower of the
			// two, since Next is what every processor of the topic has
			// applied: the fence commits it as the relayed frontier, and
			// a frontier past the slower side's rows would drop them
			own.Partitions[i].Next = min(own.Partitions[i].Next, next)
			continue
		}
		own.Partitions = append(own.Partitions, OwnedPartition{Topic: k.topic, Partition: k.partition, Assignment: a, Next: next, RestoreEnd: -1})
		added = true
	}
	if added {
		sort.Slice(own.Partitions, func(i, j int) bool {
			a, b := own.Partitions[i], own.Partitions[j]
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		})
	}
	return own
}

// ConfirmedPartitions implements the fenced relay's check of a fenced
// partition (Runner.ConfirmedPartitions): the engine's confirmed
// partitions plus the tables' partitions of the tasks among them.
func (t tableTasks) ConfirmedPartitions(ctx context.Context) (map[string][]int32, bool, error) {
	c, ok := t.engine.(confirmer)
	if !ok {
		return nil, false, nil
	}
	parts, stable, err := c.ConfirmedPartitions(ctx)
	if err != nil || !stable {
		return nil, false, err
	}
	tasks := map[int32]bool{}
	for _, ps := range parts {
		for _, p := range ps {
			tasks[p] = true
		}
	}
	t.g.mu.Lock()
	gparts, n := t.g.parts, t.g.tasks
	t.g.mu.Unlock()
	out := map[string][]int32{}
	for topic, ps := range parts {
		out[topic] = append([]int32(nil), ps...)
	}
	for _, k := range gparts {
		task := k.partition
		if n > 0 {
			task %= n
		}
		if tasks[task] {
			out[k.topic] = append(out[k.topic], k.partition)
		}
	}
	return out, true, nil
}
