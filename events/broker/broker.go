// Package broker starts Chronicle's embedded Kafka-protocol broker
// (franz-go's kfake with on-disk persistence) or connects to an external
// Kafka cluster, and creates Chronicle's topics.
package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures Start. Zero fields take the documented defaults.
type Config struct {
	// Brokers, when set, are the seed brokers (host:port) of an external
	// Kafka cluster: no embedded broker is started. Default: none.
	Brokers []string
	// DataDir is where the embedded broker persists its log. Required
	// without Brokers.
	DataDir string
	// Listen is the embedded broker's loopback address (default
	// 127.0.0.1:9092; port 0 picks a free port).
	Listen string
	// Partitions is the partition count of every topic created (default 1).
	Partitions int32
	// ReplicationFactor of created topics on an external cluster
	// (default -1: the cluster's default.replication.factor). Topics that
	// exist keep theirs. More than the cluster's brokers is an error
	// naming it (INVALID_REPLICATION_FACTOR).
	ReplicationFactor int16
	// MinInsyncReplicas is the min.insync.replicas of created topics on
	// an external cluster: with acks=all (every Chronicle producer), a
	// write is acknowledged once this many replicas have it, and refused
	// (NOT_ENOUGH_REPLICAS) while fewer are in sync. Default 0: not set,
	// the cluster's (Kafka's stock 1, with which acks=all is one copy).
	// Topics that exist keep theirs.
	MinInsyncReplicas int16
	// SyncWrites fsyncs every produced batch of the embedded broker
	// (default false: like Kafka's default flush policy, acknowledged
	// batches are in the OS page cache and survive a killed process).
	SyncWrites bool
	// GroupMinSessionTimeout is the embedded broker's
	// group.min.session.timeout.ms: the shortest session timeout a group
	// member may ask for (kgo.SessionTimeout). Default 0: Kafka's 6 s.
	// Multi-instance tests lower it to fail a stopped instance over
	// within seconds.
	GroupMinSessionTimeout time.Duration
	// OnPartitionsDiffer, when set, is called once by Start with every
	// topic of events.AllTopics that existed already with another
	// partition count than Start would have created it with (Partitions;
	// 1 for events.SinglePartition), if any. Such a topic keeps its count:
	// Chronicle never adds partitions (that would move keys) and cannot
	// remove any. serve warns with it when --partitions was given.
	OnPartitionsDiffer func([]TopicPartitions)
	// OnFiniteRetention, when set, is called once by Start with every
	// topic of events.AllTopics that existed already and removes records
	// (retention.ms or retention.bytes other than -1, or a cleanup.policy
	// with compact, which keeps one record per key; TopicConfigs), or
	// whose configuration could not be read (TopicRetention.Err), if any:
	// the log is Chronicle's source of truth, so once such a topic removed
	// records, replay, audit and a partition's restore cannot rebuild the
	// state. serve warns with it. Such a topic keeps its configuration: it
	// is the operator's.
	OnFiniteRetention func([]TopicRetention)
	// OnSmallMessageLimit, when set, is called once by Start with every
	// topic that existed with a max.message.bytes below MinMaxMessageBytes
	// (on the embedded broker, only a topic's own setting counts), sorted
	// by topic; not called when there is none. serve and broker warn with
	// it: such a topic refuses the producer's larger batches and events with
	// MESSAGE_TOO_LARGE, which showed only as 503s.
	OnSmallMessageLimit func([]TopicMessageLimit)
	// OnLogRepaired, when set, is called once by Start of the embedded
	// broker with each repair kfake made while loading a log that was
	// not stopped cleanly (a killed process, a power cut), e.g.
	// "partition chronicle.sessions-0 segment 0: truncating 4096 corrupt
	// bytes": the torn end of a write cut off, as Kafka's log recovery
	// cuts it, which it logs as a warning too; not called when there is
	// none. A log stopped cleanly is checked instead and refused when
	// damaged (ErrLogDamaged). serve and broker warn with it: before, the
	// cut was silent. Default nil: not told.
	OnLogRepaired func([]string)
}

// TopicConfigs are the configurations Chronicle creates its topics with:
// records are never removed (retention.ms and retention.bytes -1). A
// cluster's default, Kafka's log.retention.hours of 168, removed a log's
// records after 7 days, after which a replay rebuilt a state without them
// and said nothing (found by a review of the Kafka settings, 2026-12-01);
// the embedded broker removes none either way. cleanup.policy is delete
// (which, with no retention, removes nothing), not a cluster's default
// compact, which keeps one record per key: a session's or workflow's
// history. Dead letters are kept as long, since the dead-letter
// projection is rebuilt from them.
var TopicConfigs = map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"}

// TopicRetention is what an existing topic keeps: the values of
// retention.ms and retention.bytes ("-1" for no limit) and cleanup.policy;
// or Err, when its configuration could not be read.
type TopicRetention struct {
	Topic                                      string
	RetentionMs, RetentionBytes, CleanupPolicy string
	Err                                        error
}

// TopicMessageLimit is an existing topic whose max.message.bytes
// (MaxMessageBytes, bytes) is below MinMaxMessageBytes.
type TopicMessageLimit struct {
	Topic           string
	MaxMessageBytes int64
}

// MinMaxMessageBytes is the smallest max.message.bytes a topic of
// Chronicle's should have, in bytes: the largest record batch its
// producers send (franz-go's ProducerBatchMaxBytes default, 1,000,012,
// which is Kafka's own default batch limit less its log overhead), which
// holds an event of events.MaxEventBytes with its key and headers. Below
// it, the broker refuses a batch or an event the producer took as within
// the limit (MESSAGE_TOO_LARGE). Kafka's default max.message.bytes is
// 1,048,588.
const MinMaxMessageBytes = 1_000_012

// TopicPartitions is an existing topic's partition count (Have) and the
// count Start would have created it with (Want).
type TopicPartitions struct {
	Topic      string
	Have, Want int32
}

// EmbeddedMinSessionTimeout and EmbeddedMaxSessionTimeout bound the
// session timeout a consumer group member may ask the embedded broker for
// (kgo.SessionTimeout; serve --session-timeout): kfake's defaults of
// group.min.session.timeout.ms (Kafka's too) and
// group.max.session.timeout.ms (Kafka's is 30 min). Outside them every
// JoinGroup is refused with kerr.InvalidSessionTimeout.
// Config.GroupMinSessionTimeout lowers the minimum.
const (
	EmbeddedMinSessionTimeout = 6 * time.Second
	EmbeddedMaxSessionTimeout = 5 * time.Minute
)

// CheckEmbeddedSessionTimeout reports why an embedded broker started
// without Config.GroupMinSessionTimeout refuses a group member asking for
// session timeout d, or nil when it does not (0: the client's default,
// 45 s, which it allows).
func CheckEmbeddedSessionTimeout(d time.Duration) error {
	switch {
	case d == 0:
		return nil
	case d < EmbeddedMinSessionTimeout:
		return fmt.Errorf("%v is below the embedded broker's minimum session timeout, %v (its group.min.session.timeout.ms): the processors could never join their group", d, EmbeddedMinSessionTimeout)
	case d > EmbeddedMaxSessionTimeout:
		return fmt.Errorf("%v is above the embedded broker's maximum session timeout, %v (its group.max.session.timeout.ms): the processors could never join their group", d, EmbeddedMaxSessionTimeout)
	}
	return nil
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if len(c.Brokers) == 0 && c.DataDir == "" {
		return errors.New("broker: Config.DataDir: required for the embedded broker")
	}
	if c.Partitions < 0 {
		return errors.New("broker: Config.Partitions: must be ≥ 1")
	}
	if c.ReplicationFactor < -1 {
		return fmt.Errorf("broker: Config.ReplicationFactor: must be -1 (the cluster's default) or ≥ 1, got %d", c.ReplicationFactor)
	}
	if c.MinInsyncReplicas < 0 {
		return fmt.Errorf("broker: Config.MinInsyncReplicas: must be 0 (the cluster's) or ≥ 1, got %d", c.MinInsyncReplicas)
	}
	if c.ReplicationFactor > 0 && c.MinInsyncReplicas > c.ReplicationFactor {
		return fmt.Errorf("broker: Config.MinInsyncReplicas: %d is above the replication factor %d: every acks=all write would be refused (NOT_ENOUGH_REPLICAS)", c.MinInsyncReplicas, c.ReplicationFactor)
	}
	if len(c.Brokers) == 0 && (c.ReplicationFactor > 1 || c.MinInsyncReplicas > 1) {
		return errors.New("broker: Config.ReplicationFactor, Config.MinInsyncReplicas: for an external cluster (Config.Brokers): the embedded broker is one broker")
	}
	if c.GroupMinSessionTimeout < 0 || c.GroupMinSessionTimeout > 0 && c.GroupMinSessionTimeout < time.Millisecond {
		return fmt.Errorf("broker: Config.GroupMinSessionTimeout: must be 0 (6 s) or ≥ 1ms, got %s", c.GroupMinSessionTimeout)
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("broker: Config.Listen: %w", err)
		}
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:9092"
	}
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
}

// Broker is a running embedded broker or a handle on an external cluster.
type Broker struct {
	cfg      Config
	cluster  *kfake.Cluster
	lock     io.Closer // the log directory's lock (LockFile), held while cluster runs
	addrs    []string
	storage  *storageLog // the embedded broker's log write failures (StorageFailure)
	closeErr error       // the last Close's failed save (CloseError)
}

// LockFile is the file in the embedded broker's DataDir that the running
// broker holds an exclusive lock on (an fcntl lock, pebble's
// vfs.Default.Lock: released by the OS when the process ends, even killed).
// A second embedded broker on the same log — another serve, or a CLI
// command given --data of a running service — would rewrite the log's
// metadata files under the first and lose acknowledged records, so Start
// refuses it with ErrLogInUse.
const LockFile = "LOCK"

// ErrLogInUse is the error of Start when another process (or another
// Broker of this process) runs an embedded broker on the same DataDir.
var ErrLogInUse = errors.New("the log is in use by another chronicle process (serve, broker, demo, ...): stop it first, or reach its broker with --brokers")

// lockFS takes the log's lock (vfs.Default; a test injects a read-only
// filesystem).
var lockFS vfs.FS = vfs.Default

// lockLog takes dir's LockFile, creating dir when it does not exist.
func lockLog(dir string) (io.Closer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("broker: Config.DataDir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("broker: Config.DataDir %s: %w", dir, err)
	}
	l, err := lockFS.Lock(filepath.Join(abs, LockFile))
	if errors.Is(err, syscall.EROFS) {
		// no other process: the broker cannot write here at all (before,
		// this said the log was in use by another chronicle process)
		return nil, fmt.Errorf("broker: log %s is on a read-only filesystem and the embedded broker writes its log: copy the data directory somewhere writable, or reach a running broker with --brokers: %w", abs, err)
	}
	if errors.Is(err, fs.ErrPermission) {
		// no other process either: this user may not write the log
		// (before, this said the log was in use: an SRE's walkthrough)
		return nil, fmt.Errorf("broker: log %s: this user may not write it (its owner or mode: ls -ld %s): %w", abs, abs, err)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: log %s: %w (%v)", abs, ErrLogInUse, err)
	}
	return l, nil
}

// Start starts the embedded broker (or checks the external cluster) and
// creates every topic of events.AllTopics that does not exist yet. The
// embedded broker holds DataDir's LockFile until Close: Start refuses a
// DataDir another embedded broker runs on with an error that wraps
// ErrLogInUse and names the directory. External brokers that refuse the
// connection fail Start at once; ones that take it and do not answer (a
// hung broker) fail it with an i/o timeout after about 20 s (measured by a
// Go-package walkthrough: the admin client's request timeouts and
// retries), or when ctx ends first.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{cfg: cfg, addrs: cfg.Brokers}
	if len(cfg.Brokers) == 0 {
		host, portS, _ := net.SplitHostPort(cfg.Listen)
		if host != "127.0.0.1" && host != "localhost" {
			return nil, fmt.Errorf("broker: Config.Listen: the embedded broker listens on loopback only, got %q", host)
		}
		port, err := strconv.Atoi(portS)
		if err != nil {
			return nil, fmt.Errorf("broker: Config.Listen: port %q: %w", portS, err)
		}
		lock, err := lockLog(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, StoppedFile)); err == nil {
			// checked before stoppedCleanly removes the mark, so a
			// second start refuses too
			if err := checkSegments(cfg.DataDir); err != nil {
				lock.Close()
				return nil, err
			}
		}
		clean, err := stoppedCleanly(cfg.DataDir)
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("broker: log %s: %s: %w", cfg.DataDir, StoppedFile, err)
		}
		b.storage = &storageLog{loading: true}
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(cfg.DataDir), kfake.ClusterID("chronicle"), kfake.WithLogger(b.storage)}
		var gate *connGate
		listen := net.Listen
		if !clean {
			// no client but the recovery's is served until it is done
			gate = newConnGate()
			listen = gate.listen
		}
		// requests larger than MaxRequestBytes refused, idle connections
		// closed after IdleTimeout (guard.go)
		opts = append(opts, kfake.ListenFn(guarded(listen)))
		if cfg.SyncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
		if cfg.GroupMinSessionTimeout > 0 {
			opts = append(opts, kfake.GroupMinSessionTimeout(cfg.GroupMinSessionTimeout))
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("broker: start embedded broker on %s: %w", cfg.Listen, err)
		}
		b.cluster, b.lock = c, lock
		b.addrs = c.ListenAddrs()
		if repairs := b.storage.loaded(); len(repairs) > 0 && cfg.OnLogRepaired != nil {
			cfg.OnLogRepaired(repairs)
		}
		if !clean {
			// before anything else writes (see abortDangling)
			err := abortDangling(ctx, b.addrs, gate.dial)
			gate.open()
			if err != nil {
				b.close(false) // still to be done by the next Start
				return nil, fmt.Errorf("broker: log %s: closing the transactions a killed process left open: %w", cfg.DataDir, err)
			}
		}
	}
	if err := ensureTopics(ctx, b.addrs, topicSpec{cfg.Partitions, cfg.ReplicationFactor, cfg.MinInsyncReplicas}, cfg.OnPartitionsDiffer, cfg.OnFiniteRetention, cfg.OnSmallMessageLimit, len(cfg.Brokers) == 0); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Addrs are the seed broker addresses.
func (b *Broker) Addrs() []string { return b.addrs }

// Embedded reports whether this process runs the broker.
func (b *Broker) Embedded() bool { return b.cluster != nil }

// Close stops the embedded broker, persisting its state, then writes
// StoppedFile, unless that save failed (StorageFailure then returns its
// error): the next Start treats such a log as one a killed process left;
// it does nothing for an external cluster.
func (b *Broker) Close() { b.close(true) }

// CloseError is the failure of the last Close's save of the embedded
// broker's state (e.g. "broker: the final save of DATA/log failed, so the
// next start takes the log as a killed process's: embedded broker: persist
// to disk: …: no space left on device"), or nil when it succeeded, Close
// was not called or the broker is an external cluster. Records
// acknowledged before Close are in their segments either way.
func (b *Broker) CloseError() error { return b.closeErr }

// close is Close; stopped false leaves StoppedFile unwritten.
func (b *Broker) close(stopped bool) {
	if b.cluster != nil {
		closing := time.Now()
		b.cluster.Close()
		b.cluster = nil
		if at, err := b.StorageFailure(); err != nil && !at.Before(closing) {
			// the state files of this stop are not all written: a
			// StoppedFile would vouch for them (checkSegments would
			// compare the segments with a stale snapshot, abortDangling
			// would be skipped)
			stopped = false
			b.closeErr = fmt.Errorf("broker: the final save of %s failed, so the next start takes the log as a killed process's: %w", b.cfg.DataDir, err)
		}
		if stopped {
			// the next Start need not close what a killed process left
			// open (abortDangling); a failure to say so only costs it
			// that work
			_ = markStopped(b.cfg.DataDir)
		}
		b.lock.Close() // after Close has persisted the log
		b.lock = nil
	}
}

// EnsureTopics creates every topic of events.AllTopics that is missing,
// with partitions partitions (one for events.SinglePartition topics).
// Existing topics are left as they are.
func EnsureTopics(ctx context.Context, addrs []string, partitions int32, replication int16) error {
	return ensureTopics(ctx, addrs, topicSpec{partitions, replication, 0}, nil, nil, nil, false)
}

// topicSpec is how ensureTopics creates a missing topic: its partitions
// (one for events.SinglePartition topics), replication factor (-1: the
// cluster's) and min.insync.replicas (0: the cluster's).
type topicSpec struct {
	partitions             int32
	replication, minInsync int16
}

// ensureTopics is EnsureTopics; differ, when set, gets the topics that
// existed with another partition count (Config.OnPartitionsDiffer), and
// finite those that existed removing records (Config.OnFiniteRetention),
// small those that existed with a max.message.bytes below
// MinMaxMessageBytes (Config.OnSmallMessageLimit). On the embedded broker
// (embedded) only a topic's own settings act (kfake applies no default
// retention), so only those are reported.
func ensureTopics(ctx context.Context, addrs []string, spec topicSpec, differ func([]TopicPartitions), finite func([]TopicRetention), small func([]TopicMessageLimit), embedded bool) error {
	partitions, replication := spec.partitions, spec.replication
	cl, err := kafkaconn.NewClient(addrs, kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		return fmt.Errorf("broker: admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	names := make([]string, len(events.AllTopics))
	want := map[string]int32{}
	for i, t := range events.AllTopics {
		names[i], want[string(t)] = string(t), partitions
		if events.SinglePartition[t] {
			want[string(t)] = 1
		}
	}
	// the topics that exist are not asked for: a service account without
	// Create on them (topics provisioned by a platform team) was refused
	// TOPIC_AUTHORIZATION_FAILED for topics that were there, and Chronicle
	// did not start (a Kafka platform review, 2026-12-01)
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("broker: describe topics on %v: %w", addrs, err)
	}
	configs := map[string]*string{}
	for k, v := range TopicConfigs {
		configs[k] = kadm.StringPtr(v)
	}
	if spec.minInsync > 0 {
		configs["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(int(spec.minInsync)))
	}
	var existed []string
	for _, name := range names {
		d, ok := td[name]
		switch {
		case ok && d.Err == nil:
			existed = append(existed, name)
			continue
		case ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("broker: describe topic %s on %v: %w (the service account needs Describe, Read and Write on the topics chronicle.*: README \"Running against a real Kafka cluster\")", name, addrs, d.Err)
		}
		resp, err := adm.CreateTopics(ctx, want[name], replication, configs, name)
		if err != nil {
			return fmt.Errorf("broker: create topics on %v: %w", addrs, err)
		}
		for _, r := range resp.Sorted() {
			switch {
			case errors.Is(r.Err, kerr.TopicAlreadyExists): // created meanwhile
				existed = append(existed, r.Topic)
			case errors.Is(r.Err, kerr.InvalidReplicationFactor):
				return fmt.Errorf("broker: create topic %s with replication factor %d: %w (--replication-factor: at most the cluster's broker count)", r.Topic, replication, r.Err)
			case errors.Is(r.Err, kerr.InvalidConfig) && spec.minInsync > 0:
				return fmt.Errorf("broker: create topic %s with min.insync.replicas %d: %w (--min-insync-replicas)", r.Topic, spec.minInsync, r.Err)
			case r.Err != nil:
				return fmt.Errorf("broker: create topic %s: %w (the service account needs Create on the topics chronicle.*, or create them with the partitions and configurations of README \"Running against a real Kafka cluster\")", r.Topic, r.Err)
			}
		}
	}
	if (finite != nil || small != nil) && len(existed) > 0 {
		lossy, limits := topicConfigs(ctx, adm, existed, embedded)
		if finite != nil && len(lossy) > 0 {
			finite(lossy)
		}
		if small != nil && len(limits) > 0 {
			small(limits)
		}
	}
	if differ == nil || len(existed) == 0 {
		return nil
	}
	var diff []TopicPartitions
	for _, t := range existed {
		if d, ok := td[t]; ok && d.Err == nil && int32(len(d.Partitions)) != want[t] {
			diff = append(diff, TopicPartitions{Topic: t, Have: int32(len(d.Partitions)), Want: want[t]})
		}
	}
	if len(diff) > 0 {
		differ(diff)
	}
	return nil
}

// topicConfigs reads the configurations of the topics of existed: lossy
// are those that remove records (retention.ms or retention.bytes other
// than -1, a cleanup.policy with compact), or whose configuration could
// not be read (TopicRetention.Err: a service account without
// DescribeConfigs; not fatal), small those whose max.message.bytes is
// below MinMaxMessageBytes. On the embedded broker (embedded) only a
// topic's own settings are read (kfake applies no default retention).
func topicConfigs(ctx context.Context, adm *kadm.Client, existed []string, embedded bool) (lossy []TopicRetention, small []TopicMessageLimit) {
	rcs, err := adm.DescribeTopicConfigs(ctx, existed...)
	if err != nil {
		return []TopicRetention{{Topic: strings.Join(existed, ", "), Err: err}}, nil
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			lossy = append(lossy, TopicRetention{Topic: rc.Name, Err: rc.Err})
			continue
		}
		tr := TopicRetention{Topic: rc.Name, RetentionMs: "-1", RetentionBytes: "-1", CleanupPolicy: "delete"}
		for _, c := range rc.Configs {
			if embedded && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				continue
			}
			switch c.Key {
			case "retention.ms":
				tr.RetentionMs = c.MaybeValue()
			case "retention.bytes":
				tr.RetentionBytes = c.MaybeValue()
			case "cleanup.policy":
				tr.CleanupPolicy = c.MaybeValue()
			case "max.message.bytes":
				if n, err := strconv.ParseInt(c.MaybeValue(), 10, 64); err == nil && n < MinMaxMessageBytes {
					small = append(small, TopicMessageLimit{Topic: rc.Name, MaxMessageBytes: n})
				}
			}
		}
		if tr.RetentionMs != "-1" || tr.RetentionBytes != "-1" || strings.Contains(tr.CleanupPolicy, "compact") {
			lossy = append(lossy, tr)
		}
	}
	sort.Slice(lossy, func(i, j int) bool { return lossy[i].Topic < lossy[j].Topic })
	sort.Slice(small, func(i, j int) bool { return small[i].Topic < small[j].Topic })
	return lossy, small
}
