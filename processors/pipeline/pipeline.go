// Package pipeline assembles a running Chronicle: the broker (embedded or
// external), the projection store, the producer, the processors on the
// Router, the outbox relay and the metrics. The CLI, the tests and the
// benchmarks start it the same way.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/clock"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/distiller"
	"github.com/chronicle-dev/chronicle/processors/judge"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/processors/sessionlog"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures Start. Zero fields take the documented defaults.
type Config struct {
	// DataDir holds the embedded broker's log (DataDir/log) and the
	// projections (DataDir/projections). Default ./data.
	DataDir string
	// Brokers of an external Kafka cluster; empty starts the embedded
	// broker.
	Brokers []string
	// Unfenced makes the outbox relay write without Kafka transactions and
	// without relayed frontiers, whoever joins (no Fence at all). Only for
	// an instance that is the only writer of its derived topics (`chronicle
	// bench`'s single-instance job, to measure what the fence costs);
	// default false: with Brokers the relay is fenced, on the embedded
	// broker it is deferred and armed when another instance joins
	// (processors.Fence.Deferred).
	Unfenced bool
	// KafkaListen is the embedded broker's address (default
	// 127.0.0.1:9092; port 0 picks a free one).
	KafkaListen string
	// Partitions of every topic created (default 1).
	Partitions int32
	// ReplicationFactor and MinInsyncReplicas are broker.Config's: of the
	// topics created on an external cluster (defaults: the cluster's).
	ReplicationFactor, MinInsyncReplicas int16
	// OnPartitionsDiffer is broker.Config.OnPartitionsDiffer: called with
	// the topics that existed with another partition count than
	// Partitions, which keep theirs (default none).
	OnPartitionsDiffer func([]broker.TopicPartitions)
	// OnFiniteRetention is broker.Config.OnFiniteRetention: called with
	// the existing topics that remove records (serve warns).
	OnFiniteRetention func([]broker.TopicRetention)
	// OnSmallMessageLimit is broker.Config.OnSmallMessageLimit: called with
	// the topics that existed with a max.message.bytes below
	// broker.MinMaxMessageBytes (serve warns).
	OnSmallMessageLimit func([]broker.TopicMessageLimit)
	// OnLogRepaired is broker.Config.OnLogRepaired: called with each
	// repair the embedded broker made while loading a log a killed
	// process left (a torn write cut off). serve warns with it.
	OnLogRepaired func([]string)
	// Processors to run (default DefaultProcessors()). Each needs a Name
	// of its own, free of '/': add a processor of one's own to
	// DefaultProcessors() under another name than theirs (Start refuses a
	// repeated name).
	Processors []processors.Processor
	// Logger (default watermill.NopLogger).
	Logger watermill.LoggerAdapter
	// OnRelayError is told about outbox relay failures (default: ignored;
	// the relay retries).
	OnRelayError func(error)
	// OnDeadLetter is told about each dead letter once, when the live
	// engine's dead-letter projection applies it
	// (processors.RunnerConfig.OnDeadLetter; default: ignored): only when
	// Processors hold deadletter.Processor, as DefaultProcessors() do.
	OnDeadLetter func(processors.LetterData)
	// OnSearchError is told about the search index's background sync
	// failures (a vector store that does not answer; default: ignored, the
	// sync retries with backoff). They went to OnRelayError, so serve
	// logged a Weaviate outage as an "outbox relay" failure.
	OnSearchError func(error)
	// OnTickError is told about the clock ticker's failures: a tick that
	// could not be written, and each step of the wall clock it noticed
	// (clock.Ticker.OnError). Default: OnRelayError, which they all went
	// to before, so serve labelled a clock step an "outbox relay" failure.
	OnTickError func(error)
	// LLM, when set, moves distillation to the LLM distiller worker (the
	// sessions processor stops running the deterministic extractor) and
	// scores judge criteria with the critic–judge worker. Default nil:
	// deterministic distillation, judge criteria unevaluated, no network.
	LLM *distill.LLMConfig
	// PAIR runs the pair worker: PAIR retrieval for sessions below
	// composite 95 (pair.context.retrieved.v1 on chronicle.learned) and
	// pair_improvement_completed memories. Its searches embed every memory
	// as it arrives. With LLM set too, the pair revision worker writes the
	// LLM informed revision of each context (pair.revision.written.v1).
	// Default false (serve turns it on).
	PAIR bool
	// Embedder for memory search (default: USE lite, offline).
	Embedder embedder.Embedder
	// VectorStore for memory search (default: the embedded MemStore).
	VectorStore search.VectorStore
	// TickInterval is the interval of clock.tick.v1 events, the time source
	// of decay (default 0: no ticks; serve sets 24 h). The first tick comes
	// one interval after start.
	TickInterval time.Duration
	// Group is the processors' consumer group (default
	// processors.ProcessorsGroup); see processors.RunnerConfig.Group.
	Group processors.Group
	// CommitHook, when set, is registered on the store before any processor
	// starts (projections.Store.OnCommit): benchmarks and tests time or
	// follow commits with it. Default none.
	CommitHook projections.CommitHook
	// SubscriberOpts are extra franz-go options for the processors' and
	// workers' consumers (processors.RunnerConfig.SubscriberOpts); serve
	// passes the balancer that publishes its --advertise URL to the group.
	SubscriberOpts []kgo.Opt
	// Holdings is processors.RunnerConfig.Holdings: the one a
	// processors.StateAwareBalancer in SubscriberOpts publishes (serve's
	// cluster balancer). Default none: the engine's own balancer publishes
	// its store's holdings unless SubscriberOpts replace it.
	Holdings *processors.Holdings
	// SessionTimeout is the consumer groups' session timeout: how long a
	// silent instance (killed, paused) keeps its partitions (default 0:
	// franz-go's 45 s). The heartbeat interval is a tenth of it, at most
	// franz-go's 3 s. The broker must allow it (group.min.session.timeout.ms;
	// `chronicle broker --group-min-session-timeout`): without Brokers,
	// Start refuses at once a value outside the embedded broker's bounds
	// (broker.CheckEmbeddedSessionTimeout, 6 s to 5 min); with Brokers, a
	// join the cluster refuses for it fails Start at the first refusal
	// with an error wrapping kerr.InvalidSessionTimeout.
	SessionTimeout time.Duration
	// StandbyReplicas is processors.RunnerConfig.StandbyReplicas (serve
	// --standby-replicas; default 0). It needs Brokers: only a shared
	// cluster's relay is fenced, and only a fenced relay leaves a standby
	// partition's outbox rows unsent.
	StandbyReplicas int
	// CloseWait bounds Close: how long it waits for the background parts
	// (the processors' engine, the workers' router, the global tables,
	// the outbox relay, the search index, the join watcher, the ticker)
	// to end once told to stop. Past it Close returns an error wrapping
	// ErrCloseTimeout that names those still running, and leaves the
	// producer, the broker and the projection store open under them: the
	// store is closed once they end, if the process lives that long;
	// exiting before is like a crash (the log replays what the store had
	// not committed). Default (0 or less) DefaultCloseWait: 20 s, below
	// Kubernetes' 30 s termination grace period.
	CloseWait time.Duration
}

// DefaultCloseWait is the default Config.CloseWait.
const DefaultCloseWait = 20 * time.Second

// ErrCloseTimeout is wrapped by Close's error when background parts of
// the pipeline were still running after Config.CloseWait (or CloseWithin's
// bound); the error names them.
var ErrCloseTimeout = errors.New("pipeline: close: parts still running past the bound")

// DefaultProcessors are the processors a Chronicle service runs. Those
// that are processors.GlobalTable (the tool graph, the coordination
// patterns, the session outcomes) run on every instance over every partition of their topics
// (Pipeline.Global); the others in the consumer group (Pipeline.Runner).
func DefaultProcessors() []processors.Processor {
	return []processors.Processor{
		sessions.Processor{},
		sessions.PatternsProcessor{},
		memories.Processor{},
		toolgraph.Transitions{}, // keyed: emits tool.transition.observed.v1 to chronicle.toolgraph
		toolgraph.Processor{},   // global table of chronicle.toolgraph
		workflows.Processor{},   // issue 14
		treesearch.Processor{},  // issue 12: the tree-search frontier projection (topic chronicle.searches)
		passes.Processor{},      // issue 13: the reasoning family (chronicle.reasoning)
		pair.Loop{},             // issue 13: the PAIR loop state and deterministic revision
		pair.Outcomes{},         // global table of chronicle.evaluations: the pair worker's reads of other sessions
		sessionlog.Processor{},  // issue 11: where each session's records sit in the log
		sessionlog.Memories{},   // global table: where each session's memory records sit
		deadletter.Processor{},  // the dead letters by the rejected event's scope (GET /v1/deadletters)
	}
}

// LogDir and ProjectionsDir are the sub-directories of a data directory.
func LogDir(data string) string         { return filepath.Join(data, "log") }
func ProjectionsDir(data string) string { return filepath.Join(data, "projections") }

// Pipeline is a running Chronicle.
type Pipeline struct {
	Config   Config
	Broker   *broker.Broker
	Store    *projections.Store
	Producer *events.Producer
	Runner   *processors.Runner
	// Global applies the global tables among Processors
	// (processors.GlobalTable) on every partition of their topics; nil when
	// there are none.
	Global     *processors.GlobalTableRunner
	Registry   *prometheus.Registry
	Metrics    *processors.Metrics
	Processors []processors.Processor
	Workers    []processors.Worker
	// Search serves memory search, record and feedback (the memory tools).
	Search  *memories.Service
	admin   *kadm.Client
	adminCl *kgo.Client
	// parts caches topics' partition counts (partitionCount)
	partsMu sync.Mutex
	parts   map[string]int
	// relayOwner is the fenced relay's ownership (nil: unfenced, every
	// outbox row is this instance's to relay)
	relayOwner processors.Ownerships
	fence      *processors.Fence // nil: unfenced (Config.Unfenced)

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// parts counts the background parts (goPart) still running by name
	partsOn   sync.Mutex
	partsLive map[string]int

	closeOnce sync.Once
	closeErr  error
	errMu     sync.Mutex
	// searchFail is the search index's last failed sync (SearchIndexFailure)
	searchMu   sync.Mutex
	searchFail SearchIndexFailure
	err        error
}

// Start starts every part and returns once the processors are subscribed.
// The store is opened first, so a second process on the same data
// directory fails before it touches the log.
func Start(ctx context.Context, cfg Config) (*Pipeline, error) {
	if len(cfg.Brokers) == 0 {
		if err := broker.CheckEmbeddedSessionTimeout(cfg.SessionTimeout); err != nil {
			return nil, fmt.Errorf("pipeline: Config.SessionTimeout: %w", err)
		}
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "./data"
	}
	if cfg.Processors == nil {
		cfg.Processors = DefaultProcessors()
		if cfg.LLM != nil {
			cfg.Processors[0] = sessions.Processor{LLMDistillation: true}
		}
	}
	// one name, one projection: the engine and the global tables check
	// their own sets, but a processor named as a built-in global table
	// (sessions.PatternsName) runs in the other set (a Go-package
	// walkthrough's processor named as a built-in was never applied)
	if err := processors.CheckNames("pipeline.Config.Processors", cfg.Processors); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = watermill.NopLogger{}
	}
	p := &Pipeline{Config: cfg, Processors: cfg.Processors, Registry: prometheus.NewRegistry()}
	var err error
	if p.Store, err = projections.Open(ProjectionsDir(cfg.DataDir), projections.Options{}); err != nil {
		return nil, err
	}
	// a store whose replay did not finish holds part of the log: digest,
	// audit and inspect refuse it, and so does a service (before, serve
	// took it and caught up from where the replay stopped, and the offline
	// tools then refused the directory for good: an operator's walkthrough)
	if err := p.Store.CheckComplete(); err != nil {
		p.Store.Close()
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if cfg.CommitHook != nil {
		p.Store.OnCommit(cfg.CommitHook)
	}
	fail := func(err error) (*Pipeline, error) {
		p.Close()
		return nil, err
	}
	if len(cfg.Brokers) == 0 {
		if err := CheckLogPresent(cfg.DataDir, p.Store); err != nil {
			return fail(err)
		}
	}
	if p.Broker, err = broker.Start(ctx, broker.Config{Brokers: cfg.Brokers, DataDir: LogDir(cfg.DataDir), Listen: cfg.KafkaListen, Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor, MinInsyncReplicas: cfg.MinInsyncReplicas, OnPartitionsDiffer: cfg.OnPartitionsDiffer, OnFiniteRetention: cfg.OnFiniteRetention, OnSmallMessageLimit: cfg.OnSmallMessageLimit, OnLogRepaired: cfg.OnLogRepaired}); err != nil {
		return fail(err)
	}
	if p.Producer, err = events.NewProducer(events.ProducerConfig{Brokers: p.Broker.Addrs(), StorageFailure: p.Broker.StorageFailure}); err != nil {
		return fail(err)
	}
	if p.adminCl, err = kafkaconn.NewClient(p.Broker.Addrs()); err != nil {
		return fail(err)
	}
	p.admin = kadm.NewClient(p.adminCl)
	if err := checkTotalOrder(ctx, p.admin, cfg.Processors); err != nil {
		return fail(err)
	}
	logDataDir := cfg.DataDir
	if len(cfg.Brokers) > 0 {
		logDataDir = ""
	}
	if err := checkLog(ctx, p.admin, p.Store, logDataDir); err != nil {
		return fail(err)
	}
	p.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p.Metrics = processors.NewMetrics(p.Registry)
	p.Registry.MustRegister(&lagCollector{p: p}, workerLagCollector{p})
	if cfg.LLM != nil {
		llm, err := distill.NewLLM(*cfg.LLM)
		if err != nil {
			return fail(err)
		}
		p.Workers = append(p.Workers, &distiller.Worker{Store: p.Store, LLM: llm, Producer: p.Producer}, &judge.Worker{Store: p.Store, LLM: llm, Producer: p.Producer})
	}
	emb := cfg.Embedder
	if emb == nil {
		u, err := embedder.NewUSELite()
		if err != nil {
			return fail(err)
		}
		u.Workers = 1 // the vector projection is background work: one core at most
		emb = u
	}
	p.Search = &memories.Service{Index: search.NewIndex(p.Store, emb, cfg.VectorStore, SearchSources()...), Store: p.Store, Producer: p.Producer}
	var pairWorker *pair.Worker
	if cfg.PAIR {
		if !slices.ContainsFunc(cfg.Processors, func(pr processors.Processor) bool { return pr.Name() == pair.OutcomesName }) {
			return fail(fmt.Errorf("pipeline: Config.PAIR: the pair worker reads the %s table: Config.Processors must include pair.Outcomes", pair.OutcomesName))
		}
		pairWorker = &pair.Worker{Store: p.Store, Index: p.Search.Index, Producer: p.Producer}
		p.Workers = append(p.Workers, pairWorker)
		if cfg.LLM != nil { // issue 13: the LLM informed revision (pair.revision.written.v1)
			llm, err := distill.NewLLM(*cfg.LLM)
			if err != nil {
				return fail(err)
			}
			p.Workers = append(p.Workers, &pair.RevisionWorker{Store: p.Store, LLM: llm, Producer: p.Producer})
		}
	}
	if slices.ContainsFunc(cfg.Processors, func(pr processors.Processor) bool { return pr.Name() == treesearch.Name }) { // issue 12: an approved resume continues a built-in search
		p.Workers = append(p.Workers, &treesearch.ResumeWorker{Store: p.Store, Producer: p.Producer, Components: game24.Builtin, Log: func(f string, a ...any) { cfg.Logger.Info(fmt.Sprintf(f, a...), nil) }})
	}
	// a global table runs outside the group only: in both it would apply
	// the partitions this instance owns twice
	group, global := processors.SplitGlobalTables(cfg.Processors)
	if cfg.StandbyReplicas > 0 && len(cfg.Brokers) == 0 {
		return fail(errors.New("pipeline: Config.StandbyReplicas: needs Brokers (standby replicas are kept for other instances of a shared cluster, whose outbox relay is fenced)"))
	}
	if len(group) == 0 {
		return fail(errors.New("pipeline: Config.Processors: at least one processor must run in the consumer group (all are global tables)"))
	}
	refused := make(joinRefusal, 1)
	if p.Runner, err = processors.NewRunner(processors.RunnerConfig{
		Brokers: p.Broker.Addrs(), Store: p.Store, Processors: group, Workers: p.Workers, Metrics: p.Metrics, Logger: cfg.Logger,
		OnDeadLetter: cfg.OnDeadLetter, Group: cfg.Group, SubscriberOpts: append(append(append([]kgo.Opt(nil), cfg.SubscriberOpts...), sessionOpts(cfg.SessionTimeout)...), kgo.WithHooks(refused)),
		StandbyReplicas: cfg.StandbyReplicas, Holdings: cfg.Holdings,
		// a worker's output transaction must outlive a pause shorter than
		// the session timeout, as the fenced relay's
		WorkerTransactionTimeout: transactionTimeout(cfg.SessionTimeout),
		// a worker's committed output is an acknowledged write: it ends a
		// write failure /healthz reports (events.Producer.WriteFailure)
		OnWorkerWrite: p.Producer.Acknowledged,
	}); err != nil {
		return fail(err)
	}
	if len(global) > 0 {
		if p.Global, err = processors.NewGlobalTableRunner(processors.GlobalTableConfig{
			Brokers: p.Broker.Addrs(), Store: p.Store, Processors: global, Metrics: p.Metrics, Logger: cfg.Logger,
			TaskTopics: p.Runner.Topics(),
		}); err != nil {
			return fail(err)
		}
	}
	if pairWorker != nil {
		pairWorker.Fresh = p.OutcomesFresh()
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.goPart(partProcessors, func() {
		if err := p.Runner.Run(runCtx); err != nil {
			p.setErr(fmt.Errorf("pipeline: router: %w", err))
		}
	})
	if p.Global != nil {
		p.goPart("global tables", func() {
			if err := p.Global.Run(runCtx); err != nil {
				p.setErr(fmt.Errorf("pipeline: global tables: %w", err))
			}
		})
	}
	relay := &processors.Relay{Store: p.Store, Producer: p.Producer, OnError: cfg.OnRelayError}
	if !cfg.Unfenced {
		// several instances may share the cluster: fence zombie writes
		// (issue 15 item 5). One process on its embedded broker has none
		// and writes without transactions (its log's offsets stay those
		// of a plain relay, which the demo's digest holds), until another
		// instance joins it: then the fence is armed (watchJoin)
		var owner processors.Ownerships = p.Runner
		if p.Global != nil {
			// the global tables' derived events: relayed by the owner of
			// their partition's task only, the others prune their copies
			owner = p.Global.WithTasks(p.Runner)
		}
		relay.Fence = &processors.Fence{Brokers: p.Broker.Addrs(), Owner: owner, TransactionTimeout: transactionTimeout(cfg.SessionTimeout),
			Deferred: len(cfg.Brokers) == 0}
		p.relayOwner, p.fence = owner, relay.Fence
		if cfg.Group != "" {
			relay.Fence.Group = string(cfg.Group) + ".relay"
		}
		if relay.Fence.Deferred {
			// a joiner is assigned a revoked partition only after the
			// revoke: the unfenced round in flight ends first, its rows
			// sent and their frontier committed (Fence.Revoked)
			fence, onErr := relay.Fence, cfg.OnRelayError
			p.Runner.OnRevoked(func(revoked map[string][]int32) {
				if !fence.Revoked(revoked) && onErr != nil {
					onErr(fmt.Errorf("pipeline: revoke of %v: the relay's round in flight did not end within %v; its rows of those partitions may be relayed twice", revoked, processors.RevokeWait))
				}
			})
		}
	}
	p.goPart("outbox relay", func() { _ = relay.Run(runCtx) })
	onSearchErr := func(err error) {
		p.noteSearchFailure(err)
		if cfg.OnSearchError != nil {
			cfg.OnSearchError(err)
		}
	}
	p.goPart("search index", func() { p.Search.Index.Run(runCtx, time.Second, onSearchErr) })
	for _, c := range search.Collections() {
		p.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "chronicle", Name: "vector_store_pending_documents", ConstLabels: prometheus.Labels{"collection": string(c)},
			Help: "Documents (memories, coordination patterns, tools) changed in their projection and not yet in the vector store: its lag, which grows while Weaviate is down.",
		}, func() float64 { return float64(p.Search.Index.PendingIn(c)) }))
	}
	p.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "chronicle", Name: "outbox_rows",
		Help: "Rows in the store's outbox: derived events and dead letters not yet relayed, and on a fenced cluster member its copies of global-table events waiting for their owner's relayed frontier (pruned every 5 s).",
	}, func() float64 { return float64(p.Store.OutboxLen()) }))
	p.Registry.MustRegister(newStoreCollector(p.Store))
	if p.fence != nil && !p.fence.Armed() {
		p.goPart("join watcher", func() { p.watchJoin(runCtx) })
	}
	if cfg.TickInterval > 0 {
		p.goPart("ticker", func() {
			(&clock.Ticker{Producer: p.Producer, Interval: cfg.TickInterval, OnError: cfg.tickErrorSink()}).Run(runCtx)
		})
	}
	deadline := time.After(60 * time.Second)
	select {
	case <-p.Runner.Running():
	case <-ctx.Done():
		return fail(ctx.Err())
	case err := <-refused:
		return fail(fmt.Errorf("pipeline: Config.SessionTimeout %v: the broker refused the processors' group join: %w", sessionTimeoutOrDefault(cfg.SessionTimeout), err))
	case <-deadline:
		return fail(errors.New("pipeline: processors did not subscribe within 60 s"))
	}
	if p.Global != nil {
		select {
		case <-p.Global.Running():
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-deadline:
			return fail(errors.New("pipeline: global tables were not assigned their partitions within 60 s"))
		}
	}
	return p, nil
}

// tickErrorSink is where the clock ticker's failures go: OnTickError,
// else OnRelayError (nil: ignored).
func (c Config) tickErrorSink() func(error) {
	if c.OnTickError != nil {
		return c.OnTickError
	}
	return c.OnRelayError
}

// ErrSharedUnfenced is GET /healthz's warning while SharedUnfenced is
// true.
var ErrSharedUnfenced = errors.New("another instance joined this instance's consumer group and owns partitions, but this instance's outbox relay is not fenced (Config.Unfenced): the global tables' derived events will be written twice and a paused instance is not fenced")

// SharedUnfenced reports whether this instance's outbox relay is not
// fenced while another member of its consumer group owns partitions of
// chronicle.sessions: only with Config.Unfenced (an instance on its
// embedded broker arms its fence when another joins, RelayFenced). False
// while the group rebalances.
func (p *Pipeline) SharedUnfenced() bool {
	return p.fence == nil && p.Runner != nil && p.joined()
}

// RelayFenced reports whether the outbox relay writes in Kafka
// transactions now: always with Brokers (unless Config.Unfenced); on the
// embedded broker once another instance joined this one's consumer group
// (and for the rest of the process's life).
func (p *Pipeline) RelayFenced() bool { return p.fence != nil && p.fence.Armed() }

// joined reports whether another member of the processors' group owns
// partitions: this instance was assigned partitions, the group is not
// rebalancing, and of a topic it consumes it owns fewer partitions than
// the topic has. (It used to count chronicle.sessions only, so a pipeline
// whose processors read other topics — chronicle import tot's — announced
// a join on its own.)
func (p *Pipeline) joined() bool {
	own := p.Runner.Ownership()
	if own.Rebalancing || len(own.Partitions) == 0 {
		return false
	}
	owned := map[string]int{}
	for _, op := range own.Partitions {
		owned[op.Topic]++
	}
	for topic, n := range owned {
		if n < p.partitionCount(topic) {
			return true
		}
	}
	return false
}

// partitionCount is topic's partition count from the broker's metadata,
// remembered once known; 0 while the broker does not answer (within 2 s).
func (p *Pipeline) partitionCount(topic string) int {
	p.partsMu.Lock()
	defer p.partsMu.Unlock()
	if n, ok := p.parts[topic]; ok {
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	td, err := p.admin.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		return 0
	}
	n := len(td[topic].Partitions)
	if p.parts == nil {
		p.parts = map[string]int{}
	}
	p.parts[topic] = n
	return n
}

// ErrFenceArmed is not a failure but a notice, given to
// Config.OnRelayError (serve prints it on stderr) when an instance on its
// embedded broker armed its fence because another instance joined it.
var ErrFenceArmed = errors.New("another instance joined this instance's consumer group: the outbox relay writes in Kafka transactions from now on (fenced, see README \"No zombie writes\")")

// JoinCheckInterval is how often an instance on its embedded broker looks
// whether another instance joined its group (its fence is armed within
// about that much of the join's rebalance).
const JoinCheckInterval = 250 * time.Millisecond

// watchJoin arms the deferred fence once another instance joined this
// one's consumer group (joined), and logs it, until ctx ends.
func (p *Pipeline) watchJoin(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(JoinCheckInterval):
		}
		if p.joined() && p.fence.Arm() {
			// once: to OnRelayError when there is one, else to the
			// logger (serve printed it twice, a log line and its own:
			// an operator's walkthrough, 2026-12-06)
			if p.Config.OnRelayError != nil {
				p.Config.OnRelayError(ErrFenceArmed)
			} else {
				p.Config.Logger.Info(ErrFenceArmed.Error(), nil)
			}
			return
		}
	}
}

func (p *Pipeline) setErr(err error) {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

// SearchIndexFailure is the search index's last failed sync to its vector
// store (Weaviate down or hung), as Pipeline.SearchIndexFailure reports it.
type SearchIndexFailure struct {
	// Err is the last sync's error; nil when none failed.
	Err error
	// Since is when the syncs started failing (the first failure after
	// the index had nothing pending), Last the last failure.
	Since, Last time.Time
	// Pending is the documents not yet in the vector store, every
	// collection's (chronicle_vector_store_pending_documents summed).
	Pending int
}

func (p *Pipeline) noteSearchFailure(err error) {
	p.searchMu.Lock()
	defer p.searchMu.Unlock()
	now := time.Now()
	if p.searchFail.Err == nil {
		p.searchFail.Since = now
	}
	p.searchFail.Err, p.searchFail.Last = err, now
}

// SearchIndexFailure reports the search index's last failed sync and the
// documents still pending; the zero value (Err nil) once nothing is
// pending, which a sync that reached the store leaves. /healthz lists it
// under warnings: memory search waits for the sync (search.SearchTimeout)
// and answers 503 while the store is away, though the instance is
// otherwise healthy.
func (p *Pipeline) SearchIndexFailure() SearchIndexFailure {
	pending := 0
	if p.Search != nil && p.Search.Index != nil {
		for _, c := range search.Collections() {
			pending += p.Search.Index.PendingIn(c)
		}
	}
	p.searchMu.Lock()
	defer p.searchMu.Unlock()
	if pending == 0 {
		p.searchFail = SearchIndexFailure{}
		return SearchIndexFailure{}
	}
	f := p.searchFail
	f.Pending = pending
	return f
}

// Err is the first background failure, if any.
func (p *Pipeline) Err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// OutcomesFresh is the pair worker's Worker.Fresh: a function that
// returns once the pair.Outcomes table holds every evaluation the log had
// committed when it was called (processors.GlobalTableRunner.CaughtUp),
// or ctx's error (ctx bounds the wait). Nil when the pipeline runs no
// such table.
func (p *Pipeline) OutcomesFresh() func(ctx context.Context) error {
	if p.Global == nil || !slices.ContainsFunc(p.Config.Processors, func(pr processors.Processor) bool { return pr.Name() == pair.OutcomesName }) {
		return nil
	}
	return func(ctx context.Context) error {
		return p.Global.CaughtUp(ctx, pair.OutcomesName, string(events.TopicEvaluations))
	}
}

// Admin is an admin client on the pipeline's brokers.
func (p *Pipeline) Admin() *kadm.Client { return p.admin }

// Lag is every processor's lag per partition.
func (p *Pipeline) Lag(ctx context.Context) ([]processors.PartitionLag, error) {
	g := p.Config.Group
	if g == "" {
		g = processors.ProcessorsGroup
	}
	at := time.Now()
	var standby func(string, int32) bool
	if p.Runner != nil {
		if sb := p.Runner.Standbys(); len(sb) > 0 {
			kept := map[string]map[int32]bool{}
			for _, s := range sb {
				if kept[s.Topic] == nil {
					kept[s.Topic] = map[int32]bool{}
				}
				kept[s.Topic][s.Partition] = true
			}
			standby = func(t string, part int32) bool { return kept[t][part] }
		}
	}
	l, err := processors.LagInGroupStandby(ctx, p.admin, p.Store, p.Processors, g, standby)
	if err == nil && p.Runner != nil {
		p.Runner.NoteLag(l, at) // the stall clock of /healthz (processors.Health)
	}
	return l, err
}

// CaughtUp reports whether every processor has consumed every partition to
// its end and the outbox holds nothing this instance has to relay
// (pendingHere).
func (p *Pipeline) CaughtUp(ctx context.Context) (bool, int64, error) {
	l, err := p.Lag(ctx)
	if err != nil {
		return false, 0, err
	}
	if !listsEveryTopic(l, p.Processors) {
		return false, processors.TotalLag(l), nil
	}
	wl, err := processors.WorkerLag(ctx, p.admin, p.Workers)
	if err != nil {
		return false, 0, err
	}
	total := processors.TotalLag(l) + wl
	if total > 0 {
		// not caught up whatever the outbox holds: pendingHere reads
		// every outbox row of a fenced relay, which a poll every 100 ms
		// did during a whole catch-up (1.8% of the bench's CPU)
		return false, total, nil
	}
	pending, err := p.pendingHere()
	if err != nil {
		return false, 0, err
	}
	return len(pending) == 0, total, nil
}

// listsEveryTopic reports whether l holds a partition of every topic of
// every processor: a topic whose end offsets were not listed (the broker's
// metadata did not name its partitions yet) says nothing of its lag, and
// must not count as caught up. A guard added after one CI run in which
// the bench's count job was reported caught up before it had applied a
// single batch (its cause not confirmed).
func listsEveryTopic(l []processors.PartitionLag, procs []processors.Processor) bool {
	listed := map[[2]string]bool{}
	for _, x := range l {
		listed[[2]string{x.Processor, x.Topic}] = true
	}
	for _, pr := range procs {
		for _, t := range pr.Topics() {
			if !listed[[2]string{pr.Name(), string(t)}] {
				return false
			}
		}
	}
	return true
}

// pendingHere is the outbox rows this instance has to relay: every row
// when its relay is unfenced; with the fenced relay, the rows without a
// source and those of the partitions it owns (GlobalTableRunner.WithTasks:
// the global tables' partitions of its tasks included). A row of a
// partition owned elsewhere (a standby's copy, a global table's copy) is
// its owner's to relay; it leaves this outbox once the owner's relayed
// frontier passes it, or is relayed here if the partition comes here.
func (p *Pipeline) pendingHere() ([]projections.OutboxEntry, error) {
	if p.relayOwner == nil {
		return p.Store.PendingOutbox(1)
	}
	all, err := p.Store.PendingOutbox(1 << 30)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	owned := map[string]map[int32]bool{}
	for _, op := range p.relayOwner.Ownership().Partitions {
		if owned[op.Topic] == nil {
			owned[op.Topic] = map[int32]bool{}
		}
		owned[op.Topic][op.Partition] = true
	}
	for _, e := range all {
		if e.Source == nil || owned[e.Source.Topic][e.Source.Partition] {
			return []projections.OutboxEntry{e}, nil
		}
	}
	return nil, nil
}

// WaitCaughtUp polls CaughtUp until it holds twice in a row (derived events
// relayed in between are consumed too), ctx ends, or a background part
// failed. progress, when set, receives the remaining lag.
func (p *Pipeline) WaitCaughtUp(ctx context.Context, progress func(lag int64)) error {
	streak := 0
	for {
		if err := p.Err(); err != nil {
			return err
		}
		ok, lag, err := p.CaughtUp(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if progress != nil {
			progress(lag)
		}
		if ok {
			streak++
			if streak >= 2 {
				return nil
			}
		} else {
			streak = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops the processors, the workers and the relay, then closes the
// producer, the broker and the store; it waits at most Config.CloseWait
// (default DefaultCloseWait, 20 s) for the background parts to end (see
// CloseWithin). A second call returns the first call's error and does
// nothing else.
func (p *Pipeline) Close() error {
	return p.CloseWithin(p.Config.CloseWait)
}

// CloseWithin is Close with wait in place of Config.CloseWait (≤ 0: the
// default, DefaultCloseWait): serve passes what is left of its stop's
// budget. When background parts are still running after wait, it returns
// an error wrapping ErrCloseTimeout that names them (e.g. "router/workers
// (pair, …)", "engine", "outbox relay", "search index", "ticker") and
// leaves the producer, the broker and the store open: they are closed in
// the background once those parts end. Only the first call of Close or
// CloseWithin closes; later calls return its error.
func (p *Pipeline) CloseWithin(wait time.Duration) error {
	p.closeOnce.Do(func() { p.closeErr = p.close(wait) })
	return p.closeErr
}

// partProcessors is the part that runs the Runner (engine and workers),
// named in detail by Runner.Unfinished.
const partProcessors = "processors"

// goPart runs fn as the background part name until it returns; Close
// waits for it and names it if it outlasts its bound.
func (p *Pipeline) goPart(name string, fn func()) {
	p.partsOn.Lock()
	if p.partsLive == nil {
		p.partsLive = map[string]int{}
	}
	p.partsLive[name]++
	p.partsOn.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() {
			p.partsOn.Lock()
			if p.partsLive[name]--; p.partsLive[name] == 0 {
				delete(p.partsLive, name)
			}
			p.partsOn.Unlock()
		}()
		fn()
	}()
}

// unfinished names the background parts still running, sorted; the
// processors' part by what of it still runs (Runner.Unfinished).
func (p *Pipeline) unfinished() []string {
	p.partsOn.Lock()
	defer p.partsOn.Unlock()
	var out []string
	for name := range p.partsLive {
		if name == partProcessors && p.Runner != nil {
			if parts := p.Runner.Unfinished(); len(parts) > 0 {
				out = append(out, parts...)
				continue
			}
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (p *Pipeline) close(wait time.Duration) error {
	if wait <= 0 {
		wait = DefaultCloseWait
	}
	if p.cancel != nil {
		p.cancel()
		done := make(chan struct{})
		go func() {
			p.wg.Wait()
			close(done)
		}()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			err := fmt.Errorf("%w (%s): %s; the projection store stays open under them (exiting now is like a crash: the log replays what the store had not committed)",
				ErrCloseTimeout, wait, strings.Join(p.unfinished(), ", "))
			p.Config.Logger.Error("pipeline: close", err, nil)
			go func() {
				<-done
				_ = p.closeClients()
			}()
			return err
		}
	}
	return p.closeClients()
}

// closeClients closes the admin client, the producer, the broker and the
// store, once nothing runs that uses them; its error joins the broker's
// failed final save (broker.Broker.CloseError) and the store's Close.
func (p *Pipeline) closeClients() error {
	if p.adminCl != nil {
		p.adminCl.Close()
	}
	if p.Producer != nil {
		p.Producer.Close()
	}
	var errs []error
	if p.Broker != nil {
		p.Broker.Close()
		errs = append(errs, p.Broker.CloseError())
	}
	if p.Store != nil {
		errs = append(errs, p.Store.Close())
	}
	return errors.Join(errs...)
}

// lagDesc is chronicle_processor_lag_records{processor,topic,partition}:
// records a processor has yet to consume, per topic partition (a gauge;
// Prometheus naming puts the unit, records, in the name, as
// chronicle_worker_lag_records does).
var lagDesc = prometheus.NewDesc("chronicle_processor_lag_records", "Records a processor has yet to consume, per topic partition.", []string{"processor", "topic", "partition"}, nil)

// legacyLagDesc is the same gauge under its first name, which lacked the
// unit. Deprecated: kept, with the same values, so dashboards and alerts
// written against it keep working; use chronicle_processor_lag_records.
var legacyLagDesc = prometheus.NewDesc("chronicle_processor_lag", "Deprecated: use chronicle_processor_lag_records (the same values). Records a processor has yet to consume, per topic partition.", []string{"processor", "topic", "partition"}, nil)

// lagUpDesc is chronicle_lag_collector_up{collector}: 1 when the
// collector of that lag (processor: chronicle_processor_lag_records,
// worker: chronicle_worker_lag_records) got it from the brokers on this
// scrape, 0 when not (the brokers down or not answering within 2 s; its
// lag series are then absent and the scrape's error names the cause), as
// an exporter's _up gauge says whether its backend answered. A const label
// per collector: a registry takes one Desc from one collector only.
func lagUpDesc(collector string) *prometheus.Desc {
	return prometheus.NewDesc("chronicle_lag_collector_up", "1 when the lag collector got the lag from the brokers on this scrape, 0 when it did not (its lag series are then absent).", nil, prometheus.Labels{"collector": collector})
}

var (
	processorLagUpDesc = lagUpDesc("processor")
	workerLagUpDesc    = lagUpDesc("worker")
)

// upGauge is the gauge of desc, 1 for ok, else 0.
func upGauge(desc *prometheus.Desc, ok bool) prometheus.Metric {
	v := 0.0
	if ok {
		v = 1
	}
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
}

// lagCollector computes the lag on each scrape, once for both names, and
// says whether it could (chronicle_lag_collector_up{collector="processor"}).
type lagCollector struct {
	p *Pipeline
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- legacyLagDesc
	ch <- processorLagUpDesc
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	// bounded by Within: franz-go holds a call to a hung broker past its
	// context (a scrape then took 10 s)
	l, err := processors.Within(context.Background(), 2*time.Second, "lag", c.p.Lag)
	ch <- upGauge(processorLagUpDesc, err == nil)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(lagDesc, err)
		ch <- prometheus.NewInvalidMetric(legacyLagDesc, err)
		return
	}
	for _, x := range l {
		part := strconv.Itoa(int(x.Partition))
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(x.Lag), x.Processor, x.Topic, part)
		ch <- prometheus.MustNewConstMetric(legacyLagDesc, prometheus.GaugeValue, float64(x.Lag), x.Processor, x.Topic, part)
	}
}

var workerLagDesc = prometheus.NewDesc("chronicle_worker_lag_records",
	"Records a worker's consumer group has yet to commit on its topic (the cluster's group: every member reports the same).", []string{"worker"}, nil)

// workerLagCollector computes the workers' lag on each scrape (bounded by
// 2 s, as the processors' lag) and says whether it could
// (chronicle_lag_collector_up{collector="worker"}): a worker stalled on a model that does not
// answer shows here, where /healthz and chronicle_processor_lag_records said
// nothing (found by a walkthrough with a hung model endpoint).
type workerLagCollector struct{ p *Pipeline }

func (c workerLagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- workerLagDesc
	ch <- workerLagUpDesc
}

func (c workerLagCollector) Collect(ch chan<- prometheus.Metric) {
	lags, err := processors.Within(context.Background(), 2*time.Second, "worker lag", func(ctx context.Context) (map[string]int64, error) {
		return processors.WorkerLags(ctx, c.p.admin, c.p.Workers)
	})
	ch <- upGauge(workerLagUpDesc, err == nil)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(workerLagDesc, err)
		return
	}
	for name, n := range lags {
		ch <- prometheus.MustNewConstMetric(workerLagDesc, prometheus.GaugeValue, float64(n), name)
	}
}

// checkTotalOrder fails when a processor that needs one total order reads a
// topic with more than one partition.
func checkTotalOrder(ctx context.Context, adm *kadm.Client, procs []processors.Processor) error {
	for _, p := range procs {
		to, ok := p.(processors.TotalOrder)
		if !ok || !to.NeedsTotalOrder() {
			continue
		}
		for _, t := range p.Topics() {
			td, err := adm.ListTopics(ctx, string(t))
			if err != nil {
				return fmt.Errorf("pipeline: describe %s: %w", t, err)
			}
			if n := len(td[string(t)].Partitions); n != 1 {
				return fmt.Errorf("pipeline: processor %s needs %s to have one partition (one total order keeps it deterministic), it has %d", p.Name(), t, n)
			}
		}
	}
	return nil
}

// SearchSources are the collections of the memory-search design and the
// processors whose projections fill them: memories, coordination patterns,
// tools.
func SearchSources() []search.Source {
	return []search.Source{memories.SearchSource(), sessions.PatternSource(), toolgraph.SearchSource()}
}

// joinRefusal is a kgo hook (kgo.HookGroupManageError) passing on a group
// join refused for its session timeout (kerr.InvalidSessionTimeout:
// outside the broker's group.min.session.timeout.ms and
// group.max.session.timeout.ms). franz-go retries such a join forever, so
// Start waited its whole 60 s and then named no cause; with it Start fails
// at the first refusal, naming it.
type joinRefusal chan error

func (j joinRefusal) OnGroupManageError(err error) {
	if errors.Is(err, kerr.InvalidSessionTimeout) {
		select {
		case j <- err:
		default:
		}
	}
}

// sessionTimeoutOrDefault is d, or franz-go's default (45 s) for 0.
func sessionTimeoutOrDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return 45 * time.Second
	}
	return d
}

// sessionOpts are the consumers' options for a session timeout d (none for
// 0: franz-go's defaults).
func sessionOpts(d time.Duration) []kgo.Opt {
	if d <= 0 {
		return nil
	}
	return []kgo.Opt{kgo.SessionTimeout(d), kgo.HeartbeatInterval(min(d/10, 3*time.Second))}
}

// MaxTransactionTimeout is the longest transaction timeout the relay and
// the workers ask for: Kafka's default transaction.max.timeout.ms, 15
// minutes, above which a broker refuses InitProducerID
// (INVALID_TRANSACTION_TIMEOUT).
const MaxTransactionTimeout = 15 * time.Minute

// transactionTimeout is the fenced relay's and the workers' transaction
// timeout for a group session timeout: twice it, so a transaction
// outlives a pause shorter than the session timeout, at least 60 s and
// at most MaxTransactionTimeout. Before, a --session-timeout above 7.5
// minutes (Kafka takes up to 30) asked a real broker for more than its
// maximum: serve started, and the relay and the workers then failed in
// the background (a Kafka platform review, 2026-12-01).
func transactionTimeout(session time.Duration) time.Duration {
	return min(max(60*time.Second, 2*session), MaxTransactionTimeout)
}
