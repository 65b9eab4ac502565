package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/chronicle-dev/chronicle/processors/bench"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// benchCmd is `chronicle bench`: the engine's throughput and latency side by
// side with the raw franz-go job, in one run on the embedded broker.
func benchCmd() *cobra.Command {
	var cfg bench.Config
	var asJSON bool
	var only []string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Throughput and latency of the processing engine next to a raw franz-go job, in one run on the embedded broker",
		Example: `  # every job, 5 runs each, in a temporary directory removed afterwards
  chronicle bench

  # a quick look at the engine's default path only, as JSON
  chronicle bench --only default --events 5000 --runs 1 --json`,
		Long: `Produces --events tau-bench events into an embedded broker with --partitions partitions,
then consumes them with: a raw franz-go job counting events per session in Pebble (one batch per
fetch: the limit; it takes about a tenth of a second, so it runs five times after a discarded
warm-up run and the ratios use the median), Chronicle running a count processor, Chronicle running the default processors
on the single-instance path (outbox relay unfenced, as one process with its embedded broker runs
them; its own copy of the log) and on the cluster path (what serve --brokers runs: the relay
fenced with Kafka transactions), and Replay of the default processors; last, the
produce→projection latency of --probes single events. The single-instance and cluster paths run
--runs times each, alternating, each on a copy of the log of its own, and the replay --runs times;
their figures are the medians. Every job starts after a garbage collection, as a Go
benchmark does, so none pays for the garbage of the one before. Ratios are to the raw job of
the same run; cluster cost is 1 − cluster path / single-instance path.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var bar *progressbar.ProgressBar
			var stage string
			cfg.Progress = func(s string, done, total int64) {
				if s != stage || bar == nil {
					if bar != nil {
						_ = bar.Finish()
					}
					stage = s
					bar = progressBar(total, s, benchUnit(s))
				}
				if total > 0 {
					bar.ChangeMax64(total)
				}
				_ = bar.Set64(done)
			}
			if cmd.Flags().Changed("only") && len(only) == 0 {
				// a script's empty variable ran every job, the whole bench
				// (a CLI walkthrough, 2026-12-05)
				return usage(fmt.Errorf("--only: empty: name one or more jobs (raw, count, single, default, replay), or leave --only out to run them all"))
			}
			if len(only) > 0 {
				cfg.Only = map[string]bool{}
				for _, j := range only {
					switch j {
					case "raw", "count", "single", "default", "replay":
						cfg.Only[j] = true
					default:
						return usage(fmt.Errorf("--only: %q is not a job (raw, count, single, default, replay)", j))
					}
				}
			}
			if cfg.Dir != "" {
				if err := bench.CheckDir(cfg.Dir); err != nil {
					return fmt.Errorf("--dir: %w", err)
				}
			}
			// interrupted (Ctrl-C, SIGTERM), the bench stops and removes its
			// temporary directory (it was left behind, 2–5 GB: an operator's
			// walkthrough)
			ctx, stop := signalContext(cmd)
			defer stop()
			res, err := bench.Run(ctx, cfg)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			ran := func(job string) bool {
				return cfg.Only == nil || cfg.Only[job] || job == "default" && cfg.Only["replay"]
			}
			ratio := func(r float64) string {
				if !ran("raw") {
					return "" // no raw job to compare with
				}
				return fmt.Sprintf("  ×%.3f raw", r)
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(measuredOnly(res, ran))
			}
			fmt.Printf("%d tau-bench events, embedded broker, %d partitions\n", res.Events, res.Partitions)
			if ran("raw") {
				fmt.Printf("  raw franz-go count (one Pebble batch per fetch)  %9.0f events/s (median of %.0f; first poll %.0f ms)\n", res.RawEventsPerS, res.RawRuns, res.RawFirstPollMs)
			}
			if ran("count") {
				fmt.Printf("  chronicle, count processor                       %9.0f events/s%s\n", res.CountEventsPerS, ratio(res.CountRatio))
			}
			if ran("single") {
				fmt.Printf("  chronicle, default processors, single instance   %9.0f events/s, CPU %.1f µs/event (medians of %.0f, %.1f)\n", res.SingleEventsPerS, res.SingleCPUMicrosPerEvent, res.SingleRuns, res.SingleCPURuns)
			}
			if ran("default") {
				cost := "" // the single-instance path is its baseline
				if ran("single") {
					cost = fmt.Sprintf(", cluster cost %.1f%% (CPU %+.1f%%)", 100*res.ClusterCost, 100*res.ClusterCPUCost)
				}
				fmt.Printf("  chronicle, default processors (cluster path)     %9.0f events/s%s%s, CPU %.1f µs/event (medians of %.0f, %.1f)\n", res.DefaultEventsPerS, ratio(res.DefaultRatio), cost, res.DefaultCPUMicrosPerEvent, res.DefaultRuns, res.DefaultCPURuns)
			}
			if ran("replay") {
				fmt.Printf("  replay, default processors                       %9.0f records/s%s (%d records), CPU %.1f µs/record (medians of %.0f, %.1f)\n", res.ReplayEventsPerS, ratio(res.ReplayRatio), res.ReplayRecords, res.ReplayCPUMicrosPerRecord, res.ReplayRuns, res.ReplayCPURuns)
			}
			if ran("default") && cfg.Probes > 0 {
				fmt.Printf("  produce→projection latency, single events        p50 %.2f ms  p99 %.2f ms\n", res.LatencyP50Ms, res.LatencyP99Ms)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&cfg.Events, "events", 20000, "tau-bench events to consume")
	cmd.Flags().Int32Var(&cfg.Partitions, "partitions", 4, "partitions of every topic")
	cmd.Flags().IntVar(&cfg.Probes, "probes", 500, "single events for the latency")
	cmd.Flags().IntVar(&cfg.Runs, "runs", 5, "runs of the single-instance path, the cluster path and the replay, alternating; their rates are the medians")
	cmd.Flags().StringVar(&cfg.Dir, "dir", "", "directory for the log and the stores, empty or new (default a temporary one, removed afterwards, also when interrupted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only these jobs (raw, count, single, default, replay; replay runs default first), e.g. to profile one")
	return cmd
}

// measuredOnly is res as --json prints it: without the figures of the
// jobs --only left out (and the ratios without the raw job, the cluster
// cost without both paths, the latency without the default job or
// probes), which were 0 and read as measured zeros (an operator's
// walkthrough, 2026-11-30).
func measuredOnly(res bench.Result, ran func(job string) bool) map[string]any {
	b, _ := json.Marshal(res)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	drop := func(keys ...string) {
		for _, k := range keys {
			delete(m, k)
		}
	}
	if !ran("raw") {
		drop("raw_events_per_s", "raw_runs_events_per_s", "raw_runs_first_poll_ms", "count_ratio", "default_ratio", "replay_ratio")
	}
	if !ran("count") {
		drop("count_events_per_s", "count_ratio")
	}
	if !ran("single") {
		drop("single_events_per_s", "single_runs_events_per_s", "single_runs_cpu_us_per_event", "single_cpu_us_per_event", "cluster_cost", "cluster_cpu_cost")
	}
	if !ran("default") {
		drop("default_events_per_s", "default_runs_events_per_s", "default_runs_cpu_us_per_event", "default_cpu_us_per_event", "default_ratio", "cluster_cost", "cluster_cpu_cost", "latency_p50_ms", "latency_p99_ms")
	}
	if len(res.DefaultRuns) > 0 && res.LatencyP99Ms == 0 && res.LatencyP50Ms == 0 {
		drop("latency_p50_ms", "latency_p99_ms") // --probes 0
	}
	if !ran("replay") {
		drop("replay_events_per_s", "replay_runs_records_per_s", "replay_runs_cpu_us_per_record", "replay_cpu_us_per_record", "replay_records", "replay_ratio")
	}
	return m
}

// benchUnit is what a bench stage's progress counts (bench.Config's
// Progress): the produce stage events, the latency probes probes, every
// other stage records of the log.
func benchUnit(stage string) string {
	switch stage {
	case "produce":
		return "events"
	case "latency probes":
		return "probes"
	}
	return "records"
}
