// Package bench measures the processing engine side by side in one run on
// the embedded broker, the way Kafka's perf-test tools do: the same events,
// already in the log, consumed by
//
//   - the raw job: a plain franz-go consumer that counts events per session
//     in Pebble, one batch per fetch with the offsets (the limit);
//   - Chronicle running a processor doing the same counting;
//   - Chronicle running the default processors (what serve runs);
//   - Replay of the default processors;
//
// and the produce→projection latency of single events on a running
// pipeline. `chronicle bench` and `make bench` run it.
package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures Run. Zero fields take the documented defaults.
type Config struct {
	// Events is how many tau-bench events are consumed (default 20,000):
	// the bundled 200 sessions, copied under new ids, whole sessions.
	Events int
	// Partitions of every topic (default 4).
	Partitions int32
	// Probes is how many single events measure the latency (default 500).
	Probes int
	// Dir holds the broker's log and the stores (default a temporary
	// directory, removed afterwards).
	Dir string
	// Progress, when set, is told what runs and how far it got.
	Progress func(stage string, done, total int64)
	// Runs is how many times the single-instance path, the cluster path
	// and the replay run (default 5): their rates are the medians, so one
	// run perturbed by the scheduler does not make the figure. Single runs
	// of one path spread ±15% on the shared machine; with 3 runs the
	// cluster cost moved between −18% and +13% from one bench to the next,
	// with 5 between +1.5% and +3.8% (six benches each, load about 1).
	Runs int
	// Only, when set, runs just these jobs of "raw", "count", "single",
	// "default", "replay" (replay needs default: it reads what default
	// wrote), for profiling one of them. Default: all.
	Only map[string]bool
}

// Result is one run's measurements. Rates are events (records) per second
// of wall time from the start of consumption until the last one is applied,
// each the median of the job's runs in this run (Config.Runs, RawRuns);
// ratios are to the raw job of the same run.
type Result struct {
	Events     int   `json:"events"`
	Partitions int32 `json:"partitions"`
	// RawEventsPerS is the median of the raw job's RawRuns runs (after
	// one discarded warm-up run), each timed from the client's start (it
	// consumes the 20,000 events in a few fetches) to its last commit.
	RawEventsPerS float64 `json:"raw_events_per_s"`
	// RawRuns are the raw job's runs, events/s, in the order run.
	RawRuns []float64 `json:"raw_runs_events_per_s"`
	// RawFirstPollMs is, for each of RawRuns, how long the raw job
	// waited for its first fetch (ms), which brings nearly the whole log:
	// 17–45 ms of a 42–69 ms run on the 2-core machine, the part of the
	// raw rate that moves most from run to run, and so of every ratio.
	RawFirstPollMs  []float64 `json:"raw_runs_first_poll_ms"`
	CountEventsPerS float64   `json:"count_events_per_s"`
	// DefaultEventsPerS is the default processors as `serve --brokers`
	// runs them: one member of the group, the outbox relay fenced with
	// Kafka transactions (the cluster code path).
	DefaultEventsPerS float64 `json:"default_events_per_s"`
	// SingleEventsPerS is the same processors on the single-instance
	// path: the relay without a fence (pipeline.Config.Unfenced: no
	// transactions, no relayed frontiers), what the fence is measured
	// against.
	SingleEventsPerS float64 `json:"single_events_per_s"`
	// ClusterCost is 1 − DefaultEventsPerS/SingleEventsPerS: the share of
	// throughput the cluster code path costs one instance (issue 15's
	// target: ≤ 0.10).
	ClusterCost float64 `json:"cluster_cost"`
	// ClusterCPUCost is DefaultCPUMicrosPerEvent/SingleCPUMicrosPerEvent
	// − 1: the same cost in CPU per event, which a shared machine's load
	// moves less than a rate.
	ClusterCPUCost   float64 `json:"cluster_cpu_cost"`
	ReplayEventsPerS float64 `json:"replay_events_per_s"`
	CountRatio       float64 `json:"count_ratio"`
	DefaultRatio     float64 `json:"default_ratio"`
	ReplayRatio      float64 `json:"replay_ratio"`
	LatencyP50Ms     float64 `json:"latency_p50_ms"`
	LatencyP99Ms     float64 `json:"latency_p99_ms"`
	// SingleRuns, DefaultRuns and ReplayRuns are the runs behind the
	// medians above (events or records/s, in the order run), and
	// DefaultCPURuns and ReplayCPURuns those behind the CPU figures below.
	SingleRuns     []float64 `json:"single_runs_events_per_s"`
	DefaultRuns    []float64 `json:"default_runs_events_per_s"`
	ReplayRuns     []float64 `json:"replay_runs_records_per_s"`
	DefaultCPURuns []float64 `json:"default_runs_cpu_us_per_event"`
	SingleCPURuns  []float64 `json:"single_runs_cpu_us_per_event"`
	ReplayCPURuns  []float64 `json:"replay_runs_cpu_us_per_record"`
	// ReplayRecords is what the replay read: the events and every derived
	// event the default processors wrote.
	ReplayRecords int64 `json:"replay_records"`
	// DefaultCPUMicrosPerEvent and ReplayCPUMicrosPerRecord are the
	// process's CPU time (user + system, every goroutine: Pebble's
	// flushes and compactions, the GC, the search index's embedding)
	// over the default job's measured window (first commit to the last)
	// and over the replay, per event or record, in µs: on a shared machine
	// they move less than the rates (0 where getrusage does not exist).
	DefaultCPUMicrosPerEvent float64 `json:"default_cpu_us_per_event"`
	SingleCPUMicrosPerEvent  float64 `json:"single_cpu_us_per_event"`
	ReplayCPUMicrosPerRecord float64 `json:"replay_cpu_us_per_record"`
}

func (c *Config) setDefaults() {
	if c.Events == 0 {
		c.Events = 20000
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.Probes == 0 {
		c.Probes = 500
	}
	if c.Runs == 0 {
		c.Runs = 5
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Events < 0:
		return errors.New("bench: Config.Events: must be ≥ 0")
	case c.Partitions < 0:
		return errors.New("bench: Config.Partitions: must be ≥ 0")
	case c.Probes < 0:
		return errors.New("bench: Config.Probes: must be ≥ 0")
	case c.Runs < 0:
		return errors.New("bench: Config.Runs: must be ≥ 0")
	}
	return nil
}

// RawRuns is how many measured times Run runs the raw job (each on its
// own consumer and store, after one discarded warm-up run); its rate is
// their median.
const RawRuns = 5

// CheckDir refuses dir as Config.Dir unless it is an empty directory or
// does not exist: a second run into one directory appended its events to
// the log there and failed a second later with the engine's internals (an
// operator's walkthrough), and a file there failed as "broker:
// Config.DataDir …/log: … not a directory" (a CLI walkthrough,
// 2026-12-05). The error names dir and why, for its caller to prefix
// with the field or flag.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory: the bench writes a new log and new stores in an empty or new directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty (%s, …): the bench writes a new log and new stores there; give an empty or new directory", dir, ents[0].Name())
	}
	return nil
}

// Run runs every job in one process, against one embedded broker: the
// raw job RawRuns times after a warm-up run, the count processor once, the
// single-instance path, the cluster path and the replay Config.Runs times.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Events: cfg.Events, Partitions: cfg.Partitions}
	if cfg.Dir != "" {
		if err := CheckDir(cfg.Dir); err != nil {
			return res, fmt.Errorf("bench: Config.Dir: %w", err)
		}
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "chronicle-bench-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	progress := func(stage string, done, total int64) {
		if cfg.Progress != nil {
			cfg.Progress(stage, done, total)
		}
	}
	envs, err := Events(cfg.Events)
	if err != nil {
		return res, err
	}
	brk, err := startWith(ctx, filepath.Join(cfg.Dir, "log"), cfg.Partitions, envs, progress)
	if err != nil {
		return res, err
	}
	defer brk.Close()

	// each job runs under the pprof label job=<name> (inherited by the
	// goroutines it starts): a CPU profile of a run splits by job with
	// `go tool pprof -tagfocus job=replay`
	run := func(job string) bool {
		if cfg.Only == nil || cfg.Only[job] || job == "default" && cfg.Only["replay"] {
			pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("job", job)))
			return true
		}
		return false
	}
	if run("raw") {
		// the raw job takes a tenth of a second: one run is at the mercy
		// of the scheduler, so it runs RawRuns times and the ratios take
		// the median; a first, discarded run warms what every later job
		// finds warm (the log's files in the page cache, the process's
		// heap), which made the first of five runs the slowest in most
		// runs of the bench
		for i := -1; i < RawRuns; i++ {
			collect()
			r, wait, err := rawCount(ctx, brk.Addrs(), filepath.Join(cfg.Dir, "raw"+strconv.Itoa(i+1)), len(envs), progress)
			if err != nil {
				return res, fmt.Errorf("bench: raw job: %w", err)
			}
			if i >= 0 {
				res.RawRuns = append(res.RawRuns, r)
				res.RawFirstPollMs = append(res.RawFirstPollMs, ms(wait))
			}
		}
		res.RawEventsPerS = median(res.RawRuns)
	}
	if run("count") {
		if res.CountEventsPerS, _, _, err = chronicle(ctx, brk.Addrs(), filepath.Join(cfg.Dir, "count"), cfg, []processors.Processor{Count{}}, "count", len(envs), 0, progress); err != nil {
			return res, fmt.Errorf("bench: count processor: %w", err)
		}
	}
	// The single-instance and cluster paths run Runs times each,
	// alternately, and the replay Runs times; rates and CPU figures are the
	// medians (the runs are in the *Runs fields). Every run but the last
	// cluster-path one consumes a copy of the log of its own: the derived
	// events a run writes would be read again (and dropped as duplicates)
	// by the next. The last cluster-path run measures the latency and
	// leaves the log the replays read.
	var lat []time.Duration
	for i := 0; i < cfg.Runs; i++ {
		if run("single") {
			single, err := startWith(ctx, filepath.Join(cfg.Dir, "single-log"+strconv.Itoa(i)), cfg.Partitions, envs, progress)
			if err != nil {
				return res, err
			}
			rate, _, cpu, err := chronicle(ctx, single.Addrs(), filepath.Join(cfg.Dir, "single"+strconv.Itoa(i)), cfg, pipeline.DefaultProcessors(), "single", len(envs), 0, progress)
			single.Close()
			if err != nil {
				return res, fmt.Errorf("bench: default processors, single-instance path: %w", err)
			}
			res.SingleRuns = append(res.SingleRuns, rate)
			res.SingleCPURuns = append(res.SingleCPURuns, cpu)
		}
		if run("default") {
			log, probes := brk, cfg.Probes
			if i < cfg.Runs-1 {
				if log, err = startWith(ctx, filepath.Join(cfg.Dir, "default-log"+strconv.Itoa(i)), cfg.Partitions, envs, progress); err != nil {
					return res, err
				}
				probes = 0
			}
			rate, l, cpu, err := chronicle(ctx, log.Addrs(), filepath.Join(cfg.Dir, "default"+strconv.Itoa(i)), cfg, pipeline.DefaultProcessors(), "default", len(envs), probes, progress)
			if log != brk {
				log.Close()
			}
			if err != nil {
				return res, fmt.Errorf("bench: default processors: %w", err)
			}
			res.DefaultRuns = append(res.DefaultRuns, rate)
			res.DefaultCPURuns = append(res.DefaultCPURuns, cpu)
			if probes > 0 {
				lat = l
			}
		}
	}
	if run("replay") {
		for i := 0; i < cfg.Runs; i++ {
			c0 := CPUTime()
			rate, records, err := replay(ctx, brk.Addrs(), filepath.Join(cfg.Dir, "replay"+strconv.Itoa(i)), progress)
			if err != nil {
				return res, fmt.Errorf("bench: replay: %w", err)
			}
			res.ReplayRecords = records
			res.ReplayRuns = append(res.ReplayRuns, rate)
			if records > 0 {
				res.ReplayCPURuns = append(res.ReplayCPURuns, float64((CPUTime()-c0).Microseconds())/float64(records))
			}
		}
	}
	res.SingleEventsPerS = median(res.SingleRuns)
	res.DefaultEventsPerS = median(res.DefaultRuns)
	res.DefaultCPUMicrosPerEvent = median(res.DefaultCPURuns)
	res.SingleCPUMicrosPerEvent = median(res.SingleCPURuns)
	res.ReplayEventsPerS = median(res.ReplayRuns)
	res.ReplayCPUMicrosPerRecord = median(res.ReplayCPURuns)
	pprof.SetGoroutineLabels(ctx)
	if res.RawEventsPerS > 0 { // not without the raw job (--only)
		res.CountRatio = res.CountEventsPerS / res.RawEventsPerS
		res.DefaultRatio = res.DefaultEventsPerS / res.RawEventsPerS
		res.ReplayRatio = res.ReplayEventsPerS / res.RawEventsPerS
	}
	if res.SingleEventsPerS > 0 && res.DefaultEventsPerS > 0 {
		res.ClusterCost = 1 - res.DefaultEventsPerS/res.SingleEventsPerS
	}
	if res.SingleCPUMicrosPerEvent > 0 && res.DefaultCPUMicrosPerEvent > 0 {
		res.ClusterCPUCost = res.DefaultCPUMicrosPerEvent/res.SingleCPUMicrosPerEvent - 1
	}
	if len(lat) > 0 {
		res.LatencyP50Ms = ms(quantile(lat, 0.50))
		res.LatencyP99Ms = ms(quantile(lat, 0.99))
	}
	return res, nil
}

// median returns the median of xs (the upper one of an even count), 0
// for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// startWith starts an embedded broker logging in dir and produces envs
// into it.
func startWith(ctx context.Context, dir string, partitions int32, envs []events.Envelope, progress func(string, int64, int64)) (*broker.Broker, error) {
	brk, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0", Partitions: partitions})
	if err != nil {
		return nil, err
	}
	prod, err := events.NewProducer(events.ProducerConfig{Brokers: brk.Addrs()})
	if err != nil {
		brk.Close()
		return nil, err
	}
	defer prod.Close()
	for i := 0; i < len(envs); i += 500 {
		if err := prod.Publish(ctx, envs[i:min(i+500, len(envs))]...); err != nil {
			brk.Close()
			return nil, err
		}
		progress("produce", int64(min(i+500, len(envs))), int64(len(envs)))
	}
	return brk, nil
}

// Events returns n tau-bench events: the bundled sample's sessions, copied
// under new session and event ids until n are reached (whole sessions, so
// every copy is evaluated on completion; the last copy may be cut). It is
// EventSource.Batch(0, n).
func Events(n int) ([]events.Envelope, error) {
	src, err := NewEventSource()
	if err != nil {
		return nil, err
	}
	return src.Batch(0, n), nil
}

// EventSource makes the events of Events a range at a time, holding only
// the bundled sample's own events (one copy, 6,872): a benchmark of
// 200,000 events that held them all kept about 220 MB of envelopes live,
// and each of its garbage collections, one every 600 ms or so, marked
// them (about 50 ms of CPU, 2.5 µs per event of a 20,000-event window
// that one fell in, none in a window it missed: BenchmarkPerEventCost's
// windows measured GC or no GC more than the processor).
type EventSource struct {
	sample []events.Envelope
}

// NewEventSource reads the bundled sample; errors are the importer's.
func NewEventSource() (*EventSource, error) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		return nil, err
	}
	src := &EventSource{}
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			return nil, err
		}
		src.sample = append(src.sample, envs...)
	}
	if len(src.sample) == 0 {
		return nil, fmt.Errorf("bench: the bundled tau-bench sample has no events")
	}
	return src, nil
}

// Batch returns events start to end-1 of Events(end), each its own copy
// (data, extensions): copy c of the sample's event e has session id and
// correlation id e.SessionID@c and id e.ID@c.
func (s *EventSource) Batch(start, end int) []events.Envelope {
	out := make([]events.Envelope, 0, max(end-start, 0))
	for i := start; i < end; i++ {
		c, e := i/len(s.sample), s.sample[i%len(s.sample)]
		e.SessionID = fmt.Sprintf("%s@%d", e.SessionID, c)
		e.CorrelationID = e.SessionID
		e.ID = fmt.Sprintf("%s@%d", e.ID, c)
		e.Data = bytes.Clone(e.Data)
		e.Extensions = maps.Clone(e.Extensions)
		out = append(out, e)
	}
	return out
}

// Count is the count processor: per record key (session), how many of its
// events were applied, one row per session. Its state is per key.
type Count struct{}

// Name implements processors.Processor.
func (Count) Name() string { return "count" }

// Topics implements processors.Processor.
func (Count) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }

// StatePerKey implements processors.KeyedState.
func (Count) StatePerKey() bool { return true }

// Apply implements processors.Processor.
func (Count) Apply(tx *projections.Tx, env *events.Envelope) error {
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	v, _, err := tx.Get("c/" + key)
	if err != nil {
		return err
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	return tx.Set("c/"+key, binary.BigEndian.AppendUint64(nil, n+1))
}

// rawCount is the limit: franz-go consuming every partition of the
// sessions topic, one indexed Pebble batch per fetch holding the
// per-session counts (read-modify-write) and the partitions' next offsets.
// It returns the rate (events/s, from the client's start to the last
// commit) and how long its first poll took.
func rawCount(ctx context.Context, brokers []string, dir string, n int, progress func(string, int64, int64)) (float64, time.Duration, error) {
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumeTopics(string(events.TopicSessions)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableFetchSessions())
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	start := time.Now()
	var firstPoll time.Duration
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if firstPoll == 0 {
			firstPoll = time.Since(start)
		}
		b := db.NewIndexedBatch()
		var ferr error
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				k := append([]byte("c/"), r.Key...)
				var c uint64
				if v, closer, err := b.Get(k); err == nil {
					c = binary.BigEndian.Uint64(v)
					closer.Close()
				} else if !errors.Is(err, pebble.ErrNotFound) {
					ferr = err
					return
				}
				if err := b.Set(k, binary.BigEndian.AppendUint64(nil, c+1), nil); err != nil {
					ferr = err
					return
				}
				got++
			}
			if len(p.Records) > 0 {
				last := p.Records[len(p.Records)-1]
				if err := b.Set([]byte("o/"+p.Topic+"/"+strconv.Itoa(int(p.Partition))), binary.BigEndian.AppendUint64(nil, uint64(last.Offset+1)), nil); err != nil {
					ferr = err
				}
			}
		})
		if ferr == nil {
			ferr = b.Commit(pebble.NoSync)
		}
		b.Close()
		if ferr != nil {
			return 0, 0, ferr
		}
		progress("raw franz-go count", int64(got), int64(n))
	}
	return float64(n) / time.Since(start).Seconds(), firstPoll, nil
}

// chronicle starts a pipeline with procs on the log and waits until it has
// caught up (derived events relayed and consumed too); rate is the n
// events over that time. With probes > 0 it then measures the latency of
// single events, each published alone and waited for until the sessions
// projection committed it.
//
// It returns the rate (events/s, first commit to the last one), the
// probes' latencies and the process's CPU time per event (µs) from the
// first commit to the last.
func chronicle(ctx context.Context, brokers []string, dir string, cfg Config, procs []processors.Processor, stage string, n, probes int, progress func(string, int64, int64)) (float64, []time.Duration, float64, error) {
	collect()
	// the rate and the CPU figure run from the first commit to the last
	// one: the pipeline's start (loading the embedding model, joining the
	// group) is not the engine's work, and the caught-up check polls. The
	// CPU figure used to run on to the moment WaitCaughtUp noticed: the
	// cluster path noticed 250–470 ms after its last commit (the single-
	// instance path 120–200 ms) and was charged 165–250 ms more CPU of
	// that tail, about 10 µs per event of a 20,000-event run.
	var tmu sync.Mutex
	var first, last time.Time
	var cpu0, cpuLast time.Duration
	var mu sync.Mutex
	waiting := map[string]chan struct{}{}
	hook := func(projection string, keys []string) {
		now, cpuNow := time.Now(), CPUTime()
		tmu.Lock()
		if first.IsZero() {
			first, cpu0 = now, cpuNow
		}
		last, cpuLast = now, cpuNow
		tmu.Unlock()
		if projection != "sessions" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if ch, ok := waiting[k]; ok {
				close(ch)
				delete(waiting, k)
			}
		}
	}
	// each job is its own application (group): a group's committed offsets
	// count as processed (processors.Lag), so a shared group would make the
	// second job look caught up before it started
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, Brokers: brokers, Partitions: cfg.Partitions, Processors: procs, CommitHook: hook,
		Group: processors.Group("chronicle.bench." + stage), Unfenced: stage == "single"})
	if err != nil {
		return 0, nil, 0, err
	}
	defer p.Close()
	var total int64 = -1
	if err := p.WaitCaughtUp(ctx, func(lag int64) {
		if total < 0 || lag > total {
			total = lag
		}
		progress("chronicle "+stage, total-lag, total)
	}); err != nil {
		return 0, nil, 0, err
	}
	tmu.Lock()
	took := last.Sub(first)
	cpu := float64((cpuLast - cpu0).Microseconds()) / float64(n)
	tmu.Unlock()
	if took <= 0 && !first.IsZero() {
		// one commit held every record (a few events of one session): the
		// job is timed from its first commit, so there is nothing to time
		return 0, nil, 0, fmt.Errorf("%s: all %d events were applied in one commit, which leaves no window to time (jobs are timed from their first commit): run with more events (--events; a few thousand at least)", stage, n)
	}
	if took <= 0 {
		// name what the caught-up check saw, to tell a listing that missed
		// partitions from one commit holding every record
		l, lerr := p.Lag(ctx)
		return 0, nil, 0, fmt.Errorf("%s: caught up without applying a batch (first commit %v, last %v; lag listing %+v, %v)", stage, first, last, l, lerr)
	}
	rate := float64(n) / took.Seconds()
	if probes == 0 {
		return rate, nil, cpu, nil
	}
	lat := make([]time.Duration, 0, probes)
	for i := 0; i < probes; i++ {
		env, err := events.New(events.MinuteRecorded, "bench/latency", fmt.Sprintf("probe-%d", i), time.Unix(1700000000, 0),
			events.MinuteData{EventType: "message", Actor: "assistant", Data: []byte(`{"content":"probe"}`)})
		if err != nil {
			return 0, nil, 0, err
		}
		env.SessionID = fmt.Sprintf("latency-%d", i)
		done := make(chan struct{})
		mu.Lock()
		waiting["s/"+events.EntityKey(env.EffectiveScope(), env.SessionID)] = done
		mu.Unlock()
		t0 := time.Now()
		if err := p.Producer.Publish(ctx, env); err != nil {
			return 0, nil, 0, err
		}
		select {
		case <-done:
			lat = append(lat, time.Since(t0))
		case <-time.After(10 * time.Second):
			return 0, nil, 0, fmt.Errorf("probe %d not projected within 10 s", i)
		}
		progress("latency probes", int64(i+1), int64(probes))
	}
	return rate, lat, cpu, nil
}

// replay rebuilds the default processors' projections from the log into a
// new store: records read per second.
func replay(ctx context.Context, brokers []string, dir string, progress func(string, int64, int64)) (float64, int64, error) {
	collect()
	store, err := projections.Open(dir, projections.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer store.Close()
	start := time.Now()
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: pipeline.DefaultProcessors(),
		Progress: func(done, total int64) { progress("replay", done, total) }})
	if err != nil {
		return 0, 0, err
	}
	// the replay ends when its store is closed, as for chronicle replay
	if err := store.Close(); err != nil {
		return 0, 0, err
	}
	return float64(st.Records) / time.Since(start).Seconds(), st.Records, nil
}

// collect runs a garbage collection before a job starts, as the testing
// package does before each benchmark, so that a job does not pay for the
// garbage of the one before it. Without it, the raw job (a tenth of a
// second, in the process that had just produced the log or run the jobs
// before) paid for the collection of their garbage in some runs and not
// in others: its five runs ranged over ×3.8 (88k–336k events/s, first
// poll 31–188 ms, three `chronicle bench --only raw` runs) against ×1.9
// with a collection before each run (204k–388k, first poll 23–58 ms,
// three runs alternating with them, 2026-12-05): the raw rate, which
// every ratio divides by, followed the collector.
func collect() { runtime.GC() }

func quantile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
