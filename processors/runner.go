package processors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmmetrics "github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Dead-letter headers added to every record of the dead-letter topic, next
// to Watermill's reason_poisoned, topic_poisoned and handler_poisoned.
const (
	HeaderOriginalTopic     = kafkapubsub.TopicMetadataKey
	HeaderOriginalPartition = kafkapubsub.PartitionMetadataKey
	HeaderOriginalOffset    = kafkapubsub.OffsetMetadataKey
	HeaderError             = middleware.ReasonForPoisonedKey
)

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
	// SubscriberOpts are extra franz-go options for every consumer.
	SubscriberOpts []kgo.Opt
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
	}
	return nil
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
}

// Runner runs processors live: one consumer group per processor and topic
// on Watermill's Router, with middleware (outermost first) dead-letter
// bookkeeping, PoisonQueue into events.TopicDeadLetter, Retry with
// exponential backoff and Recoverer. A consumer starts each partition at
// the offset stored in Pebble, not at the group's committed offset.
type Runner struct {
	cfg    RunnerConfig
	router *message.Router
	pub    *kafkapubsub.Publisher
}

// NewRunner builds the router; Run starts it.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, cfg.Logger)
	if err != nil {
		return nil, err
	}
	pub, err := kafkapubsub.NewPublisher(kafkapubsub.PublisherConfig{Brokers: cfg.Brokers}, cfg.Logger)
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, router: router, pub: pub}
	poison, err := middleware.PoisonQueue(pub, string(events.TopicDeadLetter))
	if err != nil {
		pub.Close()
		return nil, err
	}
	if cfg.Metrics != nil {
		wmmetrics.NewPrometheusMetricsBuilder(cfg.Metrics.Registry, "chronicle", "router").AddPrometheusRouterMetrics(router)
	}
	for _, p := range cfg.Processors {
		for _, t := range p.Topics() {
			p, t := p, t
			sub, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{
				Brokers:       cfg.Brokers,
				ConsumerGroup: GroupID(p, t),
				Unmarshaler:   recordUnmarshaler{},
				ExtraOpts:     cfg.SubscriberOpts,
				// positions live in Pebble; the group offset is for lag
				// dashboards only, so no commit round trip per event
				CommitInterval: time.Second,
				InitialOffsets: func(topic string, partition int32) (int64, bool) {
					return cfg.Store.NextOffset(p.Name(), topic, partition)
				},
			}, cfg.Logger)
			if err != nil {
				pub.Close()
				return nil, err
			}
			h := router.AddConsumerHandler(p.Name()+"@"+string(t), string(t), sub, func(msg *message.Message) error {
				return r.handle(p, msg)
			})
			h.AddMiddleware(
				r.markDeadLettered(p),
				poison,
				middleware.Retry{MaxRetries: cfg.MaxRetries, InitialInterval: cfg.RetryInterval, Multiplier: 2, Logger: cfg.Logger,
					// a processor's rejection is a deterministic function of
					// the log: retrying only stalls the partition
					ShouldRetry: func(p middleware.RetryParams) bool { return !projections.Deterministic(p.Err) }}.Middleware,
				middleware.Recoverer,
			)
		}
	}
	for _, w := range cfg.Workers {
		w := w
		sub, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{
			Brokers: cfg.Brokers, ConsumerGroup: WorkerGroupID(w), Unmarshaler: recordUnmarshaler{}, ExtraOpts: cfg.SubscriberOpts,
		}, cfg.Logger)
		if err != nil {
			pub.Close()
			return nil, err
		}
		h := router.AddConsumerHandler(w.Name()+"@"+string(w.Topic()), string(w.Topic()), sub, func(msg *message.Message) error {
			env, err := events.ParseEvent(msg.Payload)
			if err != nil {
				return err
			}
			return w.Handle(msg.Context(), &env)
		})
		// no Retry: a worker retries its own calls (the LLM client: 3
		// attempts with backoff) and a failure after that is final.
		h.AddMiddleware(poison, middleware.Recoverer)
	}
	return r, nil
}

// Run runs the router until ctx ends or Close is called.
func (r *Runner) Run(ctx context.Context) error {
	defer r.pub.Close()
	return r.router.Run(ctx)
}

// Running is closed once every handler is subscribed.
func (r *Runner) Running() chan struct{} { return r.router.Running() }

// Close stops the router, waiting for in-flight events.
func (r *Runner) Close() error { return r.router.Close() }

func positionOfMessage(msg *message.Message) (projections.Position, error) {
	p, err1 := strconv.ParseInt(msg.Metadata.Get(kafkapubsub.PartitionMetadataKey), 10, 32)
	o, err2 := strconv.ParseInt(msg.Metadata.Get(kafkapubsub.OffsetMetadataKey), 10, 64)
	if err1 != nil || err2 != nil {
		return projections.Position{}, fmt.Errorf("processors: message %s has no kafka position metadata", msg.UUID)
	}
	return projections.Position{Topic: msg.Metadata.Get(kafkapubsub.TopicMetadataKey), Partition: int32(p), Offset: o}, nil
}

func (r *Runner) handle(p Processor, msg *message.Message) error {
	pos, err := positionOfMessage(msg)
	if err != nil {
		return err
	}
	env, err := events.ParseEvent(msg.Payload)
	if err == nil {
		err = events.CheckTopic(&env, events.Topic(pos.Topic))
	}
	if err != nil {
		return fmt.Errorf("%s at %s: %w", p.Name(), pos, err)
	}
	res, err := r.cfg.Store.Apply(p.Name(), pos, &env, p.Apply)
	if errors.Is(err, projections.ErrConflictingDuplicate) && msg.Metadata.Get(metaConflictCounted) == "" {
		msg.Metadata.Set(metaConflictCounted, "1") // Retry hands the same message again
		if m := r.cfg.Metrics; m != nil {
			m.ConflictingDuplicates.WithLabelValues(p.Name()).Inc()
		}
	}
	if err != nil {
		return fmt.Errorf("%s at %s, event %s: %w", p.Name(), pos, env.ID, err)
	}
	if m := r.cfg.Metrics; m != nil {
		m.observe(p.Name(), res)
	}
	return nil
}

// metaConflictCounted marks a message whose conflicting duplicate was
// counted, so retries do not count it again.
const metaConflictCounted = "chronicle_conflict_counted"

// markDeadLettered advances the stored offset past an event the poison
// queue has published to the dead-letter topic, so a restart does not
// dead-letter it again.
func (r *Runner) markDeadLettered(p Processor) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil || msg.Metadata.Get(middleware.ReasonForPoisonedKey) == "" {
				return out, err
			}
			pos, perr := positionOfMessage(msg)
			if perr != nil {
				return out, perr
			}
			if m := r.cfg.Metrics; m != nil {
				m.DeadLettered.WithLabelValues(p.Name()).Inc()
			}
			return out, r.cfg.Store.Skip(p.Name(), pos)
		}
	}
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

// Metrics are the runner's Prometheus metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// Events counts applied events by processor and result
	// (applied, already_applied, duplicate).
	Events *prometheus.CounterVec
	// DeadLettered counts events sent to the dead-letter topic by processor.
	DeadLettered *prometheus.CounterVec
	// ConflictingDuplicates counts events whose idempotency key (source,
	// id) had been applied with other content, by processor; each is also
	// dead-lettered (projections.ErrConflictingDuplicate).
	ConflictingDuplicates *prometheus.CounterVec
}

// NewMetrics registers the runner's metrics on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		Registry: reg,
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "chronicle", Name: "processor_events_total",
			Help: "Events handled by a processor, by result (applied, already_applied, duplicate).",
		}, []string{"processor", "result"}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "chronicle", Name: "dead_letter_events_total",
			Help: "Events a processor sent to the dead-letter topic.",
		}, []string{"processor"}),
	}
	m.ConflictingDuplicates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "chronicle", Name: "conflicting_duplicates_total",
		Help: "Events whose idempotency key (source, id) was applied before with other content; never applied, dead-lettered.",
	}, []string{"processor"})
	reg.MustRegister(m.Events, m.DeadLettered, m.ConflictingDuplicates)
	return m
}

var resultLabel = map[projections.Result]string{
	projections.Applied: "applied", projections.AlreadyApplied: "already_applied", projections.Duplicate: "duplicate",
}

func (m *Metrics) observe(proc string, res projections.Result) {
	m.Events.WithLabelValues(proc, resultLabel[res]).Inc()
}
