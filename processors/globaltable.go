package processors

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
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
	seen := map[string]bool{}
	for i, p := range c.Processors {
		if seen[p.Name()] {
			return fmt.Errorf("processors: GlobalTableConfig.Processors[%d]: %s twice", i, p.Name())
		}
		seen[p.Name()] = true
	}
	return nil
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.cfg.Brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	topics := g.Topics()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("processors: global tables: list topics: %w", err)
	}
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
		}
	}
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
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
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
		items[i] = parseItem(r)
		// every instance writes the table's derived events alike: relayed
		// unfenced (no partition owner to fence them by), dropped by id
		items[i].Unsourced = true
	}
	_ = g.pool.each(g.byTopic[recs[0].Topic], func(_ int, p Processor) error {
		wait := g.cfg.RetryInterval
		for {
			outs, err := g.cfg.Store.ApplyBatch(p.Name(), items, p.Apply)
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
			m.observe(p.Name(), o.Result)
		}
	}
}
