package processors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmmetrics "github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Headers of every record of the dead-letter topic, next to the original
// record's own: where it came from, why, and which handler (processor@topic
// or worker@topic) refused it. The names are those of Watermill's poison
// queue, which dead-letters the workers' failures.
const (
	HeaderOriginalTopic     = kafkapubsub.TopicMetadataKey
	HeaderOriginalPartition = kafkapubsub.PartitionMetadataKey
	HeaderOriginalOffset    = kafkapubsub.OffsetMetadataKey
	HeaderError             = middleware.ReasonForPoisonedKey
	HeaderPoisonedTopic     = middleware.PoisonedTopicKey
	HeaderHandler           = middleware.PoisonedHandlerKey
	// HeaderPointer is the JSON pointer of the member a processor's
	// rejection names (events.ValidationError), when it names one.
	HeaderPointer = "pointer_poisoned"
	// HeaderValueOmitted, on a letter whose copy of the record would pass
	// MaxLetterBytes, is the size in bytes of the record's value, which the
	// letter leaves out (see deadLetterRecord); a redrive reads the record
	// from its original position instead.
	HeaderValueOmitted = "value_omitted_poisoned"
	// HeaderHeadersOmitted, on a letter whose record's headers would
	// still pass MaxLetterBytes once cut, counts the record's headers the
	// letter leaves out.
	HeaderHeadersOmitted = "headers_omitted_poisoned"
)

// MaxLetterBytes bounds a dead letter the engine writes: the rejected
// record's key, value and headers plus the letter's own headers, in bytes
// (events.MaxEventBytes, 960 KiB). A letter above it holds, for the
// value, the event's attributes without its data (HeaderValueOmitted says
// so), and its key and headers cut to 4 KiB each (see boundLetter). Kafka takes records up to its
// max.message.bytes (1,048,588 by default) from any client, while the
// relay's producer takes at most 1,000,012 bytes a batch (franz-go's
// default): a rejected record near the broker's limit, its letter a few
// hundred bytes larger, could never be relayed, and it held the relay for
// good (a Node.js integrator's walkthrough, 2026-12-01).
const MaxLetterBytes = events.MaxEventBytes

// RunnerConfig configures a Runner. Zero fields take the documented
// defaults; Validate reports the first bad field.
type RunnerConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// Store is the projection store. Required.
	Store *projections.Store
	// Processors to run. At least one.
	Processors []Processor
	// Workers to run next to the processors (default none).
	Workers []Worker
	// Holdings, when set, is bound to Store and Processors before the
	// engine joins its group: the one a StateAwareBalancer in
	// SubscriberOpts publishes (serve's cluster balancer). Without it the
	// engine's default balancer publishes holdings of its own; a balancer
	// in SubscriberOpts then publishes none unless it was given this.
	Holdings *Holdings
	// MaxRetries is how often an event that failed for a transient reason
	// (the store, the broker) is retried before it goes to the dead-letter
	// topic (default 3). A deterministic rejection (projections.Deterministic:
	// the processor refused it, it does not validate, it conflicts with an
	// applied duplicate) is dead-lettered at once.
	MaxRetries int
	// RetryInterval is the first retry's delay, doubled per retry (default
	// 100 ms).
	RetryInterval time.Duration
	// Metrics receives the runner's and the router's metrics (default: none).
	Metrics *Metrics
	// Logger (default: watermill.NopLogger).
	Logger watermill.LoggerAdapter
	// OnDeadLetter, when set, is told about each record of the dead-letter
	// topic (a processor's or a worker's refusal) that a processor of that
	// topic applied or refused (a letter naming no scope: its record was
	// no JSON) in the live engine: once per letter, when its batch
	// committed (a replay, a standby replica and a re-delivered record
	// that was applied already do not call it). serve logs it. It is
	// called only when Processors hold one of events.TopicDeadLetter
	// (deadletter.Processor, one of pipeline.DefaultProcessors) and a
	// Relay writes the store's outbox to the log: a Runner of one's own
	// processors alone never calls it (a Go-package walkthrough,
	// 2026-12-06).
	OnDeadLetter func(LetterData)
	// SubscriberOpts are extra franz-go options for every consumer.
	SubscriberOpts []kgo.Opt
	// MaxBatch is the most records a processor applies in one Pebble batch
	// of a partition (default 1000). A poll takes every record the client
	// has fetched (at most one fetch per broker: FetchMaxBytes), every
	// partition of it on its own goroutine, each in batches of at most
	// MaxBatch; it never waits for more records once one is there, so
	// batching adds no latency under a light load. (A poll capped at
	// MaxBatch records took them partition by partition, so one poll
	// rarely held two partitions and the 2 cores worked one at a time.)
	MaxBatch int
	// Group is the engine's consumer group (default ProcessorsGroup). Only
	// separate applications on one cluster (a benchmark's jobs) need
	// another: instances of one application share it.
	Group Group
	// FetchMaxWait is how long the broker holds a fetch that finds no new
	// record (default 200 ms); it bounds how long a poll waits.
	FetchMaxWait time.Duration
	// StandbyReplicas is how many other members keep a warm copy of each
	// partition this group's members own (serve --standby-replicas; Kafka
	// Streams' num.standby.replicas): this instance applies the group's
	// processors to the partitions it is a standby of (StandbyMembers), so
	// a take-over restores only what it had not applied yet. Default 0:
	// none, and the engine runs as without the option.
	StandbyReplicas int
	// StandbyRefresh is how often the standby partitions are recomputed
	// from the described group (default DefaultStandbyRefresh); also after
	// each assignment, revoke or loss.
	StandbyRefresh time.Duration
	// StandbyOpts are extra franz-go options for the standby consumer (a
	// direct consumer: no group options).
	StandbyOpts []kgo.Opt
	// WorkerTransactionTimeout is the broker's bound on a worker's open
	// output transaction (default 60 s; see WorkerTransactionalID). A
	// transaction lasts from the end of Handle to its commit, not the
	// model call; its timeout must exceed the groups' session timeout
	// (serve passes max(60 s, 2 × --session-timeout)), as the fenced
	// relay's.
	WorkerTransactionTimeout time.Duration
	// WorkerProducerOpts are extra franz-go options for the workers'
	// transactional producers (tests: a dialer). A kgo.WithLogger here is
	// replaced by the Runner's own, which catches a transaction franz-go
	// aborts although asked to commit (see silentAbortLog).
	WorkerProducerOpts []kgo.Opt
	// OnWorkerWrite, when set, is called after a worker's output
	// transaction committed (the broker acknowledged a write: pipeline
	// passes events.Producer.Acknowledged, which /healthz reads).
	OnWorkerWrite func()
	// WorkerFollowWait is how long a worker hands back an event of a
	// partition whose task this instance's engine does not own, or still
	// restores, before it handles it anyway (default
	// DefaultWorkerFollowWait; see followEngineBalancer). Only for workers
	// on a topic the engine reads.
	WorkerFollowWait time.Duration
	// WorkersAtLeastOnce produces the workers' outputs as they come and
	// commits the consumed offset after, without transactions (the
	// behaviour before WorkerTransactionalID): a worker killed in between
	// writes its outputs again. Only to measure what the transactions
	// cost and to show that the exactly-once test can fail; default
	// false.
	WorkersAtLeastOnce bool
	// LeaveTimeout bounds how long the engine and each worker's
	// subscription wait, when they stop, for franz-go's graceful leave of
	// their consumer group, which waits for a rebalance in flight (up to
	// the group's rebalance timeout, 60 s, behind members stopping at the
	// same time); past it they cut it and leave with a LeaveGroup of
	// their own (kafkapubsub.CloseMember). Default
	// kafkapubsub.DefaultLeaveTimeout (5 s); must be ≥ 0.
	LeaveTimeout time.Duration
}

// Validate reports the first invalid field.
func (c RunnerConfig) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return errors.New("processors: RunnerConfig.Brokers: required")
	case c.Store == nil:
		return errors.New("processors: RunnerConfig.Store: required")
	case len(c.Processors) == 0:
		return errors.New("processors: RunnerConfig.Processors: at least one")
	case c.MaxRetries < 0:
		return errors.New("processors: RunnerConfig.MaxRetries: must be ≥ 0")
	case c.MaxBatch < 0:
		return errors.New("processors: RunnerConfig.MaxBatch: must be ≥ 0")
	case c.FetchMaxWait < 0:
		return errors.New("processors: RunnerConfig.FetchMaxWait: must be ≥ 0")
	case c.StandbyReplicas < 0:
		return errors.New("processors: RunnerConfig.StandbyReplicas: must be ≥ 0")
	case c.StandbyRefresh < 0:
		return errors.New("processors: RunnerConfig.StandbyRefresh: must be ≥ 0")
	case c.WorkerTransactionTimeout < 0:
		return errors.New("processors: RunnerConfig.WorkerTransactionTimeout: must be ≥ 0")
	case c.WorkerFollowWait < 0:
		return errors.New("processors: RunnerConfig.WorkerFollowWait: must be ≥ 0")
	case c.LeaveTimeout < 0:
		return errors.New("processors: RunnerConfig.LeaveTimeout: must be ≥ 0")
	}
	return CheckNames("RunnerConfig.Processors", c.Processors)
}

func (c *RunnerConfig) setDefaults() {
	if c.MaxRetries == 0 {
		c.MaxRetries = 3
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 1000
	}
	if c.Group == "" {
		c.Group = ProcessorsGroup
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = 200 * time.Millisecond
	}
	if c.WorkerTransactionTimeout == 0 {
		c.WorkerTransactionTimeout = 60 * time.Second
	}
	if c.WorkerFollowWait == 0 {
		c.WorkerFollowWait = DefaultWorkerFollowWait
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = kafkapubsub.DefaultLeaveTimeout
	}
}

// Runner runs processors and workers live.
//
// Processors run on the engine: one consumer group (ProcessorsGroup) for
// every topic they read, each record parsed and validated once, each
// partition's records of one poll applied per processor as one Pebble
// batch, partitions concurrently (see KeyedState). A rejected event is
// dead-lettered at once through the outbox, in the batch that moves the
// offset past it; only store failures are retried (MaxRetries times from
// RetryInterval, doubling; then the partition pauses and retries with
// backoff while the others go on).
//
// A Runner writes dead letters and derived events to its store's outbox
// only: a Relay (Relay{Store, Producer}.Run, next to Runner.Run) writes
// them to the log. Without one they stay in the outbox, and the events
// they carry reach no topic (pipeline.Start runs both).
//
// Workers (effects outside the store: calling a model) run on Watermill's
// Router, one handler per worker, with its poison queue into
// events.TopicDeadLetter and Recoverer, one message at a time, which is
// what a model call needs; their outputs are written once, in one Kafka
// transaction with the consumed offset (WorkerTransactionalID), a
// StreamingWorker's one transaction per step under the same fenced id. A
// worker on a topic the engine reads handles partition p on the instance
// whose engine owns it (followEngineBalancer, and a gate that hands an
// event back for at most WorkerFollowWait while it does not), so the rows
// its event is about are in this instance's store.
type Runner struct {
	cfg     RunnerConfig
	engine  *engine
	router  *message.Router // nil without workers
	once    []*workerOnce
	pub     *kafkapubsub.Publisher
	running chan struct{}
	done    chan struct{}
	// cancelMu guards cancel: Close may be called while Run starts
	cancelMu sync.Mutex
	cancel   context.CancelFunc
	// engineOn, routerOn, standbyOn: Run's parts still running (Unfinished)
	engineOn, routerOn, standbyOn atomic.Bool
	// handling counts the workers' messages being handled (track): the
	// router's Close gives up on them after its CloseTimeout, and Run
	// waits for them after that, so the store and the producer are never
	// closed under a handler still running (Pipeline.Close's bound names
	// them instead)
	handling atomic.Int64
}

// track is the outermost middleware of every worker's handler: it counts
// the message in Runner.handling while it is handled, its dead-letter
// middleware included.
func (r *Runner) track(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		r.handling.Add(1)
		defer r.handling.Add(-1)
		return h(msg)
	}
}

// OnRevoked registers fn, called every time the processors' group revokes
// partitions from this instance, or this instance loses them (not for a
// rebalance that takes none away): after they left Ownership and before
// the revoke completes. The group's cooperative protocol assigns a revoked
// partition to another member only in the rebalance after the revoke
// completed, so whatever fn waits for happens before the new owner starts.
// fn runs in the group's management goroutine and the rebalance waits for
// it, so it must return within a bounded time (Fence.Revoked waits at most
// RevokeWait). Safe to call at any time; fn sees the revokes after it was
// registered.
func (r *Runner) OnRevoked(fn func(revoked map[string][]int32)) {
	o := r.engine.own
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onRevoke = append(o.onRevoke, fn)
}

// NewRunner builds the engine and the workers' router; Run starts them.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	eng, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, engine: eng, running: make(chan struct{}), done: make(chan struct{})}
	if len(cfg.Workers) == 0 {
		return r, nil
	}
	// an event handed back while a worker's group follows the engine
	// (errFollowing) is logged at debug level
	if r.router, err = message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, quietFollowing{cfg.Logger}); err != nil {
		eng.closeClients()
		return nil, err
	}
	if r.pub, err = kafkapubsub.NewPublisher(kafkapubsub.PublisherConfig{Brokers: cfg.Brokers}, cfg.Logger); err != nil {
		eng.closeClients()
		return nil, err
	}
	// a worker's output transaction that failed, or found the partition
	// lost, is handed again, not dead-lettered
	poison, err := middleware.PoisonQueueWithFilter(r.pub, string(events.TopicDeadLetter), poisonous)
	if err != nil {
		r.pub.Close()
		eng.closeClients()
		return nil, err
	}
	if cfg.Metrics != nil {
		mb := wmmetrics.NewPrometheusMetricsBuilder(cfg.Metrics.Registry, "chronicle", "router")
		mb.HandlerBuckets = workerHandlerBuckets
		mb.AddPrometheusRouterMetrics(r.router)
		var procs, workers []string
		for _, p := range cfg.Processors {
			procs = append(procs, p.Name())
		}
		for _, w := range cfg.Workers {
			workers = append(workers, w.Name())
		}
		cfg.Metrics.Zero(procs, workers)
	}
	for _, w := range cfg.Workers {
		w := w
		types := workerTypes(w)
		var commitEvery time.Duration
		extra := []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()}
		if types != nil {
			// TypedWorker: most records are skipped, so they are fetched
			// and committed in bulk
			commitEvery = TypedWorkerFetchWait
			extra = append(extra, kgo.FetchMinBytes(typedFetchMinBytes), kgo.FetchMaxWait(TypedWorkerFetchWait))
		}
		handle := func(msg *message.Message, env *events.Envelope) error { return w.Handle(msg.Context(), env) }
		var once *workerOnce
		if !cfg.WorkersAtLeastOnce {
			once = &workerOnce{w: w, brokers: cfg.Brokers, timeout: cfg.WorkerTransactionTimeout, opts: cfg.WorkerProducerOpts, logger: cfg.Logger, parts: map[int32]*onceProducer{}, written: cfg.OnWorkerWrite}
			if m := cfg.Metrics; m != nil {
				name := w.Name()
				once.poisoned = func() { m.DeadLettered.WithLabelValues(name).Inc() }
			}
			r.once = append(r.once, once)
			handle = once.handle
		}
		opts := append(extra, cfg.SubscriberOpts...)
		engineReads := slices.Contains(eng.topics, string(w.Topic()))
		var gate *followGate
		if engineReads {
			// after SubscriberOpts: a cluster member's balancers are the
			// processors' group's
			gate = &followGate{e: eng, topic: string(w.Topic()), wait: cfg.WorkerFollowWait, logger: cfg.Logger, since: map[int32]time.Time{}}
			opts = append(opts, kgo.Balancers(followEngineBalancer(r.MemberID, describeOwners(kadm.NewClient(eng.client), string(cfg.Group))), kgo.CooperativeStickyBalancer()))
		}
		if once != nil {
			// after SubscriberOpts: its partition callbacks take the
			// transactional ids over at assignment
			opts = append(opts, once.clientOpts()...)
		}
		sub, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{
			Brokers: cfg.Brokers, ConsumerGroup: WorkerGroupID(w), Unmarshaler: recordUnmarshaler{}, CommitInterval: commitEvery, Skip: types.skip(), LeaveTimeout: cfg.LeaveTimeout,
			// no worker acts on a fenced zombie's aborted writes (Fence)
			// read_committed (the fenced relay writes in transactions), and
			// the markers kept so that the workers' groups commit past them
			ExtraOpts: opts,
		}, cfg.Logger)
		if err != nil {
			r.pub.Close()
			eng.closeClients()
			return nil, err
		}
		if gate != nil {
			gate.rejoin = sub.ForceRebalance
			eng.own.mu.Lock()
			eng.own.onChange = append(eng.own.onChange, func() { go sub.ForceRebalance() })
			eng.own.mu.Unlock()
		}
		h := r.router.AddConsumerHandler(w.Name()+"@"+string(w.Topic()), string(w.Topic()), sub, func(msg *message.Message) error {
			env, err := events.ParseEvent(msg.Payload)
			if err == nil { // a record on another partition than its event's is no event here either (parseItem)
				if perr := checkWorkerPartition(msg.Context(), eng, &env, msg.Metadata); perr != nil {
					var pe *events.PartitionError
					if !errors.As(perr, &pe) {
						return perr // the partition count unknown for now: retried
					}
					err = perr
				}
			}
			if err != nil {
				if engineReads {
					// the engine reads the topic too and dead-letters the
					// record once for all (issue 11 item 8: once per
					// record, not once per reader)
					return nil
				}
				if once != nil {
					return once.deadLetter(msg, err)
				}
				return err // the poison queue's (WorkersAtLeastOnce)
			}
			pos, perr := messagePosition(msg, string(w.Topic())) // read once, for the gate and for Handle
			if gate != nil {
				if perr != nil {
					return fmt.Errorf("processors: worker %s: the message's partition: %w", w.Name(), perr)
				}
				if err := gate.admit(pos.Partition); err != nil {
					return err
				}
			}
			if perr == nil {
				msg.SetContext(WithRecordPosition(msg.Context(), pos)) // RecordPosition, for Handle
			}
			return handle(msg, &env)
		})
		// no Retry: a worker retries its own calls (the LLM client: 3
		// attempts with backoff) and a failure after that is final.
		h.AddMiddleware(r.track, poison, countPoisoned(cfg.Metrics, w.Name()), middleware.Recoverer) // issue 11 item 8: workers' dead letters counted
	}
	return r, nil
}

// Run runs the engine and the workers until ctx ends or Close is called.
// Its error is the router's; the engine only stops with ctx. Like a Kafka
// Streams application it waits for its brokers rather than failing: with
// every broker unreachable Run keeps retrying, and with the default
// Logger (NopLogger) says nothing of it (a Go-package walkthrough). To
// learn that it started, wait on Running with a bound of your own
// (pipeline.Start waits 60 s for it); a Logger shows each failed
// connection.
func (r *Runner) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	r.cancelMu.Lock()
	r.cancel = cancel
	r.cancelMu.Unlock()
	defer close(r.done)
	defer cancel()
	var routerErr error
	var wg sync.WaitGroup
	if r.router != nil {
		defer r.pub.Close()
		defer func() {
			for _, o := range r.once {
				o.close()
			}
		}()
		wg.Add(1)
		r.routerOn.Store(true)
		go func() {
			defer wg.Done()
			defer r.routerOn.Store(false)
			routerErr = r.router.Run(ctx)
			cancel()
			// the router's Close stops waiting for handlers after its
			// CloseTimeout (10 s): wait for the rest here, so Run does
			// not return (and the store is not closed) under them
			for r.handling.Load() > 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	go func() {
		select {
		case <-r.engine.running:
		case <-ctx.Done():
			return
		}
		if r.router != nil {
			select {
			case <-r.router.Running():
			case <-ctx.Done():
				return
			}
		}
		close(r.running)
	}()
	if sb := r.engine.sb; sb != nil {
		wg.Add(1)
		r.standbyOn.Store(true)
		go func() {
			defer wg.Done()
			defer r.standbyOn.Store(false)
			sb.run(ctx)
		}()
	}
	r.engineOn.Store(true)
	err := r.engine.run(ctx)
	r.engineOn.Store(false)
	cancel()
	wg.Wait()
	return errors.Join(err, routerErr)
}

// Unfinished names the parts of Run still running: "engine" (the
// processors' consumer group), "router/workers (…)" (Watermill's router
// and the workers' subscriptions, named; also while a worker's handler
// still runs after the router's close gave up on it), "standby". Empty before Run and
// once Run returned. Pipeline.Close names them when they outlast its
// bound.
func (r *Runner) Unfinished() []string {
	var out []string
	if r.engineOn.Load() {
		out = append(out, "engine")
	}
	if r.routerOn.Load() {
		names := make([]string, len(r.cfg.Workers))
		for i, w := range r.cfg.Workers {
			names[i] = w.Name()
		}
		out = append(out, "router/workers ("+strings.Join(names, ", ")+")")
	}
	if r.standbyOn.Load() {
		out = append(out, "standby")
	}
	return out
}

// Running is closed once the engine has its first partitions and every
// worker is subscribed.
func (r *Runner) Running() chan struct{} { return r.running }

// Close stops the engine and the workers, waiting for in-flight batches.
func (r *Runner) Close() error {
	r.cancelMu.Lock()
	cancel := r.cancel
	r.cancelMu.Unlock()
	if cancel != nil {
		cancel()
		<-r.done
	}
	return nil
}

// checkWorkerPartition is checkPartition for a worker's message: the
// record's topic, partition and key from its metadata.
func checkWorkerPartition(ctx context.Context, e *engine, env *events.Envelope, md message.Metadata) error {
	topic := md.Get(kafkapubsub.TopicMetadataKey)
	p, err := strconv.ParseInt(md.Get(kafkapubsub.PartitionMetadataKey), 10, 32)
	if err != nil {
		return fmt.Errorf("processors: the message's partition: %w", err)
	}
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := e.counts.of(ctx, topic)
	if err != nil {
		return err
	}
	return checkPartition(topic, int32(p), n, key, md.Get(kafkapubsub.RecordKeyMetadataKey))
}

// recordUnmarshaler turns a consumed record into a message whose payload is
// the event in CloudEvents JSON (binary-mode records are converted), keeping
// the Kafka position and key as metadata. A record that cannot be converted
// keeps its raw value, fails in the handler and is dead-lettered.
type recordUnmarshaler struct{}

func (recordUnmarshaler) Unmarshal(rec *kgo.Record) (*message.Message, error) {
	payload, err := events.StructuredJSON(rec)
	if err != nil {
		payload = rec.Value
	}
	msg := message.NewMessage(fmt.Sprintf("%s-%d-%d", rec.Topic, rec.Partition, rec.Offset), payload)
	for _, h := range rec.Headers {
		msg.Metadata.Set(h.Key, string(h.Value))
	}
	msg.Metadata.Set(kafkapubsub.TopicMetadataKey, rec.Topic)
	msg.Metadata.Set(kafkapubsub.PartitionMetadataKey, strconv.Itoa(int(rec.Partition)))
	msg.Metadata.Set(kafkapubsub.OffsetMetadataKey, strconv.FormatInt(rec.Offset, 10))
	msg.Metadata.Set(kafkapubsub.RecordKeyMetadataKey, string(rec.Key))
	msg.Metadata.Set(kafkapubsub.TimestampMetadataKey, rec.Timestamp.UTC().Format(time.RFC3339Nano))
	msg.Metadata.Set(kafkapubsub.MetadataKey, string(rec.Key))
	return msg, nil
}

// ensure the unmarshaler fits the subscriber.
var _ kafkapubsub.Unmarshaler = recordUnmarshaler{}

// workerHandlerBuckets are the buckets, in seconds, of
// chronicle_router_handler_execution_time_seconds, the time a worker's
// handler took on one message: Watermill's defaults (0.5 ms to 1 s) and
// on to two minutes. A worker's handler calls a model (the distiller, the
// judge: seconds to tens of seconds, at --llm-rate) or drives a tree
// search step by step (treesearch-resume), so with Watermill's buckets
// alone every such call fell in +Inf and histogram_quantile could say no
// more than "above 1 s" (an observability walkthrough, 2026-12-06).
var workerHandlerBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Metrics are the runner's Prometheus metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// Events counts applied events by processor and result
	// (applied, already_applied, duplicate).
	Events *prometheus.CounterVec
	// DeadLettered counts events sent to the dead-letter topic by processor
	// or worker (countPoisoned).
	DeadLettered *prometheus.CounterVec
	// ConflictingDuplicates counts events whose idempotency key (source,
	// id) had been applied with other content, by processor; none is
	// applied, and each record is dead-lettered once, by the first of its
	// topic's processors that acts on its type (the others count it here,
	// not in DeadLettered; projections.ErrConflictingDuplicate,
	// projections.Item.QuietConflict).
	ConflictingDuplicates *prometheus.CounterVec
	// BatchEvents is the number of records a processor applied per Pebble
	// batch (one partition's share of one poll), by processor.
	BatchEvents *prometheus.HistogramVec
}

// NewMetrics registers the runner's metrics on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		Registry: reg,
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "chronicle", Name: "processor_events_total",
			Help: "Events handled by a processor, by result (applied, already_applied, duplicate, dead_lettered: refused and sent to the dead-letter topic by this processor, rejected: refused and dead-lettered once by another processor of the topic (a record that does not parse, a conflicting duplicate), marker: a transaction marker, ignored: a type the processor does not handle).",
		}, []string{"processor", "result"}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "chronicle", Name: "dead_letter_events_total",
			Help: "Events a processor or a worker sent to the dead-letter topic.",
		}, []string{"processor"}),
	}
	m.ConflictingDuplicates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "chronicle", Name: "conflicting_duplicates_total",
		Help: "Events whose idempotency key (source, id) was applied before with other content, by processor; never applied, and dead-lettered once per record (by the first processor of its topic that acts on its type).",
	}, []string{"processor"})
	m.BatchEvents = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "chronicle", Name: "engine_batch_events",
		Help:    "Records a processor applied in one Pebble batch (one partition's share of one poll).",
		Buckets: prometheus.ExponentialBuckets(1, 4, 7),
	}, []string{"processor"})
	reg.MustRegister(m.Events, m.DeadLettered, m.ConflictingDuplicates, m.BatchEvents)
	return m
}

var resultLabel = map[projections.Result]string{
	projections.Applied: "applied", projections.AlreadyApplied: "already_applied", projections.Duplicate: "duplicate",
	projections.DeadLettered: "dead_lettered", projections.Marker: "marker", projections.Ignored: "ignored",
}

// resultRejected is the result of a DeadLettered item that another
// processor of the topic dead-letters (projections.Item.Lettered false):
// summed over processors, dead_lettered then counts each letter once.
// Before, every processor that refused a conflicting duplicate counted
// it dead_lettered (a subscriber walkthrough summed 2 for one letter).
const resultRejected = "rejected"

func (m *Metrics) observe(proc string, res projections.Result) {
	m.Events.WithLabelValues(proc, resultLabel[res]).Inc()
}

// observeItem counts item's outcome o for proc: as observe, with
// resultRejected for a refusal another processor letters.
func (m *Metrics) observeItem(proc string, item projections.Item, o projections.Outcome) {
	if o.Result == projections.DeadLettered && !item.Lettered(o) {
		m.Events.WithLabelValues(proc, resultRejected).Inc()
		return
	}
	m.observe(proc, o.Result)
}

// Zero makes the series of processors and workers exist at 0 before
// their first event (chronicle_engine_batch_events' included): a counter that appears only at its first increment
// has no earlier sample, so increase() and rate() miss that increment (a
// subscriber walkthrough's first dead letter did not show in increase()).
func (m *Metrics) Zero(processors, workers []string) {
	for _, p := range processors {
		for _, r := range resultLabel {
			m.Events.WithLabelValues(p, r)
		}
		m.Events.WithLabelValues(p, resultRejected)
		m.DeadLettered.WithLabelValues(p)
		m.ConflictingDuplicates.WithLabelValues(p)
		// the batch histogram too: it was absent, family and all, until a
		// processor's first batch (an observability walkthrough)
		m.BatchEvents.WithLabelValues(p)
	}
	for _, w := range workers {
		m.DeadLettered.WithLabelValues(w)
	}
}

// TypedWorkerFetchWait is how long the broker holds a TypedWorker's fetch
// to gather records (up to typedFetchMinBytes): the worker wakes once per
// batch, at most this long after an event was written, instead of once
// per event of its topic. Its consumer commits its marks at the same
// interval, so its group's lag (WorkerLag, which CaughtUp counts) is gone
// at most two intervals after its last record.
const TypedWorkerFetchWait = 100 * time.Millisecond

const typedFetchMinBytes = 1 << 20

// typeSet is the event types a TypedWorker handles.
type typeSet map[events.Type]bool

// workerTypes is w's TypedWorker.Types as a set; nil when w handles every
// event.
func workerTypes(w Worker) typeSet {
	tw, ok := w.(TypedWorker)
	if !ok || len(tw.Types()) == 0 {
		return nil
	}
	set := typeSet{}
	for _, t := range tw.Types() {
		set[t] = true
	}
	return set
}

// skip is the subscription's Skip for a TypedWorker: records of other
// types are never delivered; a record whose type cannot be read is, so
// that parsing it dead-letters it as for any worker. nil for a worker that
// handles every event.
func (ts typeSet) skip() func(*kgo.Record) bool {
	if ts == nil {
		return nil
	}
	return func(r *kgo.Record) bool {
		t, ok := events.RecordType(r)
		return ok && !ts[t]
	}
}
