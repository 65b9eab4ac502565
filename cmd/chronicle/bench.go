package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

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
		Long: `Produces --events tau-bench events into an embedded broker with --partitions partitions,
then consumes them with: a raw franz-go job counting events per session in Pebble (one batch per
fetch: the limit; it takes about a tenth of a second, so it runs five times after a discarded
warm-up run and the ratios use the median), Chronicle running a count processor, Chronicle running the default processors
on the single-instance path (outbox relay unfenced, as one process with its embedded broker runs
them; its own copy of the log) and on the cluster path (what serve --brokers runs: the relay
fenced with Kafka transactions), and Replay of the default processors; last, the
produce→projection latency of --probes single events. The single-instance and cluster paths run
--runs times each, alternating, each on a copy of the log of its own, and the replay --runs times;
their figures are the medians. Ratios are to the raw job of the same run;
cluster cost is 1 − cluster path / single-instance path.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var bar *progressbar.ProgressBar
			var stage string
			cfg.Progress = func(s string, done, total int64) {
				if s != stage || bar == nil {
					if bar != nil {
						_ = bar.Finish()
					}
					stage = s
					bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription(s),
						progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(os.Stderr) }))
				}
				if total > 0 {
					bar.ChangeMax64(total)
				}
				_ = bar.Set64(done)
			}
			if len(only) > 0 {
				cfg.Only = map[string]bool{}
				for _, j := range only {
					switch j {
					case "raw", "count", "single", "default", "replay":
						cfg.Only[j] = true
					default:
						return fmt.Errorf("--only: %q is not a job (raw, count, single, default, replay)", j)
					}
				}
			}
			// interrupted (Ctrl-C, SIGTERM), the bench stops and removes its
			// temporary directory (it was left behind, 2–5 GB: an operator's
			// walkthrough)
			ctx, stop := signalContext()
			defer stop()
			res, err := bench.Run(ctx, cfg)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Printf("%d tau-bench events, embedded broker, %d partitions\n", res.Events, res.Partitions)
			fmt.Printf("  raw franz-go count (one Pebble batch per fetch)  %9.0f events/s (median of %.0f; first poll %.0f ms)\n", res.RawEventsPerS, res.RawRuns, res.RawFirstPollMs)
			fmt.Printf("  chronicle, count processor                       %9.0f events/s  ×%.3f raw\n", res.CountEventsPerS, res.CountRatio)
			fmt.Printf("  chronicle, default processors, single instance   %9.0f events/s, CPU %.1f µs/event (medians of %.0f, %.1f)\n", res.SingleEventsPerS, res.SingleCPUMicrosPerEvent, res.SingleRuns, res.SingleCPURuns)
			fmt.Printf("  chronicle, default processors (cluster path)     %9.0f events/s  ×%.3f raw, cluster cost %.1f%% (CPU %+.1f%%), CPU %.1f µs/event (medians of %.0f, %.1f)\n", res.DefaultEventsPerS, res.DefaultRatio, 100*res.ClusterCost, 100*res.ClusterCPUCost, res.DefaultCPUMicrosPerEvent, res.DefaultRuns, res.DefaultCPURuns)
			fmt.Printf("  replay, default processors                       %9.0f records/s ×%.3f raw (%d records), CPU %.1f µs/record (medians of %.0f, %.1f)\n", res.ReplayEventsPerS, res.ReplayRatio, res.ReplayRecords, res.ReplayCPUMicrosPerRecord, res.ReplayRuns, res.ReplayCPURuns)
			fmt.Printf("  produce→projection latency, single events        p50 %.2f ms  p99 %.2f ms\n", res.LatencyP50Ms, res.LatencyP99Ms)
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
