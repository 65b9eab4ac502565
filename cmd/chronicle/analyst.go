package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logBrokers returns the brokers holding the log of data: --brokers, or an
// embedded broker started on DATA/log on a free loopback port.
func logBrokers(ctx context.Context, cmd *cobra.Command, c *commonFlags) ([]string, func(), error) {
	if b := c.brokerList(); len(b) > 0 {
		return b, func() {}, nil
	}
	if _, err := os.Stat(pipeline.LogDir(c.data)); err != nil {
		if projections.HoldsStore(pipeline.ProjectionsDir(c.data)) == nil {
			// projections without a log: a replay --into directory, which
			// an analyst audited as it says to audit a directory, and was
			// told only that it holds no log (an analyst walkthrough,
			// 2026-12-07)
			return nil, nil, fmt.Errorf("--data %s: no log at %s: it holds projections only, as replay --into writes them; %s (%w)", c.data, pipeline.LogDir(c.data), logElsewhere(cmd.Name(), c.data), err)
		}
		return nil, nil, fmt.Errorf("--data %s: no log at %s: %w", c.data, pipeline.LogDir(c.data), err)
	}
	// --partitions does not change a log's topics: said, as serve says it
	// (it was ignored silently: an operator's walkthrough)
	b, err := broker.Start(ctx, broker.Config{DataDir: pipeline.LogDir(c.data), Listen: "127.0.0.1:0", Partitions: c.partitions, OnPartitionsDiffer: warnPartitionsDiffer(cmd, c.partitions)})
	if err != nil {
		return nil, nil, err
	}
	return b.Addrs(), b.Close, nil
}

// logElsewhere says where command (audit, replay, deadletter's list or
// redrive) finds the log of data, a directory that holds projections and
// no log: the log they were built from, which chronicle broker serves for
// an audit of data's projections.
func logElsewhere(command, data string) string {
	if command == "audit" {
		return fmt.Sprintf("to audit them against the log they were built from (a replay --until as far as it read): chronicle broker --data ORIGINAL --kafka-listen 127.0.0.1:9093 (ORIGINAL: the --data the replay read), then chronicle audit --data %s --brokers 127.0.0.1:9093", data)
	}
	return "the log they were built from is in the --data the replay read: give that directory (or --brokers of a chronicle serving it)"
}

// namedBrokers is err of a command given --brokers, naming the flag and
// its value when err is the network's (a timeout, a refused connection):
// replay against a port that never answered said only "replay: end
// offsets: read tcp …: i/o timeout" after its 40 s, where ingest names
// --brokers (a new user's walkthrough, 2026-11-30).
func namedBrokers(cmd *cobra.Command, err error) error {
	f := cmd.Flags().Lookup("brokers")
	var ne net.Error
	if err == nil || f == nil || !f.Changed || !errors.As(err, &ne) {
		return err
	}
	return fmt.Errorf("--brokers %s: %w", f.Value.String(), err)
}

func replayCmd() *cobra.Command {
	var c commonFlags
	var into, until string
	cmd := &cobra.Command{
		Use:   "replay --data DIR --into NEWDIR [--until RFC3339|topic:partition:offset]",
		Short: "Rebuild every projection from offset 0 into NEWDIR with the same processor code",
		Example: `  # every projection of a stopped service rebuilt from its log, into ./rebuilt
  chronicle replay --data ./data --into ./rebuilt

  # the state as of a moment (each record's Kafka timestamp), or as of a record of the log
  chronicle replay --data ./data --into ./asof-noon --until 2026-12-05T12:00:00Z
  chronicle replay --data ./data --into ./asof-100 --until chronicle.sessions:0:100

  # then read it: chronicle inspect --data ./asof-noon, or chronicle digest --data ./rebuilt`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			if into == "" {
				return usage(fmt.Errorf("--into: required"))
			}
			if len(c.brokerList()) > 0 && cmd.Flags().Changed("data") {
				// it was ignored silently: the replay read the cluster's
				// log, and an analyst took it for DATA's (a walkthrough)
				return usage(fmt.Errorf("--data: not read with --brokers (the replay reads the cluster's log and writes --into); leave --data out, or --brokers to replay DATA/log"))
			}
			if cmd.Flags().Changed("until") && strings.TrimSpace(until) == "" {
				// a script's empty variable replayed the whole log, and
				// labelled today's state an as-of one (an analyst's walkthrough)
				return usage(fmt.Errorf("--until: empty: give an RFC 3339 time or topic:partition:offset, or leave --until out to replay the whole log"))
			}
			u, err := processors.ParseUntil(until)
			if err != nil {
				// the flag's own check, before anything starts: a usage
				// error, as the empty --until is (it exited 1, as a broker
				// outage does: a walkthrough, 2026-12-06)
				return usage(err)
			}
			if projections.HoldsStore(pipeline.ProjectionsDir(into)) == nil {
				// an unfinished replay's store (the replay was killed) is
				// said so, with what to do: it said only "already holds
				// projections", while digest and serve named it (an SRE's
				// walkthrough)
				if st, err := projections.Open(pipeline.ProjectionsDir(into), projections.Options{ReadOnly: true}); err == nil {
					sayUpgraded(os.Stderr, st, pipeline.ProjectionsDir(into))
					incomplete := errors.Is(st.CheckComplete(), projections.ErrReplayIncomplete)
					st.Close()
					if incomplete {
						return fmt.Errorf("--into %s: holds the projections of a replay that did not finish (%s): remove that directory and run the replay again, or give another --into", into, pipeline.ProjectionsDir(into))
					}
				}
				return fmt.Errorf("--into %s: already holds projections (%s); replay writes new ones there: give a directory without them", into, pipeline.ProjectionsDir(into))
			}
			brokers, stop, err := logBrokers(ctx, cmd, &c)
			if err != nil {
				return err
			}
			defer stop()
			dir := pipeline.ProjectionsDir(into)
			// an empty projections directory is as good as none: a refused
			// replay leaves it empty again (it left a half-built store
			// there, which refused the corrected command: an analyst's
			// walkthrough)
			entries, statErr := os.ReadDir(dir)
			created := os.IsNotExist(statErr)
			_, intoErr := os.Stat(into)
			madeInto := os.IsNotExist(intoErr) // removed too after a refusal
			emptyBefore := created || statErr == nil && len(entries) == 0
			store, err := projections.Open(dir, projections.Options{})
			if err != nil {
				return err
			}
			defer store.Close()
			// marked before anything can fail, so that digest, audit and
			// inspect refuse the directory of a replay that did not finish
			if err := store.MarkReplayStarted(); err != nil {
				return err
			}
			began := time.Now()
			st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: store, Processors: pipeline.DefaultProcessors(), Until: u, Progress: replayBar()})
			if err != nil {
				// stopped by a signal, the store is a part of one that
				// cannot be resumed: it was left behind (432 MB after a
				// second of the demo's log), said only "context canceled",
				// and refused the same command run again (a CLI
				// walkthrough, 2026-12-05)
				stopped := ctx.Err() != nil
				if (st.Records == 0 || stopped) && emptyBefore {
					// refused before reading a record (a bad --until): leave
					// no store behind, so the corrected command can run
					store.Close()
					if rerr := removeStore(dir, created); rerr != nil {
						return fmt.Errorf("%w (and removing the store in %s: %v)", err, dir, rerr)
					}
					if madeInto {
						// the directory it made, empty now (it was left
						// behind, empty: the last closing note's gap)
						_ = os.Remove(into)
					}
					if stopped {
						return fmt.Errorf("interrupted by a signal after %d records: the unfinished projections in %s were removed; run the replay again (%w)", st.Records, dir, err)
					}
				}
				return namedBrokers(cmd, err)
			}
			if err := store.MarkReplayFinished(); err != nil { // Replay leaves an empty log unmarked
				return err
			}
			if !u.Time.IsZero() && st.Records == 0 {
				// an as-of time before the log: say why the state is empty
				// and when the log starts: the analyst guessed times until
				// one held records (an analyst walkthrough, 2026-12-07)
				starts := ""
				if pos, ts, ok := firstRecord(ctx, brokers); ok {
					starts = fmt.Sprintf(" The log starts at %s, stamped %s: an --until at or after that time holds records.", pos, ts.UTC().Format(time.RFC3339Nano))
				}
				fmt.Fprintf(os.Stderr, "chronicle: warning: no record of the log is stamped at or before --until %s, so the state is empty.%s --until compares each record's Kafka timestamp (the producer's clock when it sent it: an import's records carry the time of the import), not the events' own time attribute; a position (--until topic:partition:offset) avoids the question\n", u.Time.UTC().Format(time.RFC3339Nano), starts)
			}
			if !u.Time.IsZero() && u.Time.After(began) {
				fmt.Fprintf(os.Stderr, "chronicle: warning: --until %s is after the replay started (%s): the state is the log's as it was then, not a future one\n", u.Time.UTC().Format(time.RFC3339Nano), began.UTC().Format(time.RFC3339))
			}
			d, err := store.Digest()
			if err != nil {
				return err
			}
			out, _ := json.Marshal(st)
			// the positions the as-of state holds: the summary said how
			// many records, not which (an analyst walkthrough, 2026-12-07)
			fmt.Printf("replayed into %s: %s\n%s\n%s", into, out, httpapi.AsOfLine(store), d)
			return nil
		},
	}
	c.register(cmd)
	logReaderBrokers(cmd)
	cmd.Flags().StringVar(&into, "into", "", "directory to rebuild the projections in (must not hold any)")
	cmd.Flags().StringVar(&until, "until", "", "state as of an RFC 3339 time (each record's Kafka timestamp: on each partition, the records before the first stamped later) or a topic:partition:offset (that record and all before it on its partition; other partitions up to its timestamp)")
	return cmd
}

// firstRecord is, among the first records of the log's partitions, the
// one stamped earliest: its position and its Kafka timestamp, the earliest
// --until time whose state holds a record (each partition's state is the
// prefix before its first record stamped later). ok is false when the log
// holds no record or none was read within 10 s (it only adds to a
// warning).
func firstRecord(ctx context.Context, brokers []string) (pos string, ts time.Time, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return "", time.Time{}, false
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return "", time.Time{}, false
	}
	ends, err := adm.ListEndOffsets(ctx, topics.Names()...)
	if err != nil {
		return "", time.Time{}, false
	}
	start := map[string]map[int32]kgo.Offset{}
	want := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset <= 0 || strings.HasPrefix(o.Topic, "__") {
			return
		}
		if start[o.Topic] == nil {
			start[o.Topic] = map[int32]kgo.Offset{}
		}
		start[o.Topic][o.Partition] = kgo.NewOffset().At(0)
		want++
	})
	if want == 0 {
		return "", time.Time{}, false
	}
	cons, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(start), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.FetchMaxPartitionBytes(64<<10))
	if err != nil {
		return "", time.Time{}, false
	}
	defer cons.Close()
	seen := map[string]bool{}
	for len(seen) < want && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			k := r.Topic + ":" + strconv.Itoa(int(r.Partition))
			if seen[k] {
				return
			}
			seen[k] = true
			if !ok || r.Timestamp.Before(ts) {
				pos, ts, ok = fmt.Sprintf("%s:%d", k, r.Offset), r.Timestamp, true
			}
		})
	}
	return pos, ts, ok && len(seen) == want
}

// removeStore removes the store a refused replay opened in dir: dir
// itself if the replay created it, else what it holds.
func removeStore(dir string, created bool) error {
	if created {
		return os.RemoveAll(dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func replayBar() func(done, total int64) {
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
		if bar == nil {
			// the line ends when the bar completes: a warning printed after
			// it started on the bar's line (an operator's walkthrough)
			bar = progressBar(total, "replaying the log", "records")
		}
		_ = bar.Set64(done)
	}
}

func digestCmd() *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "digest --data DIR",
		Example: `  # what a stopped service's projections know
  chronicle digest --data ./data

  # a replay's, as JSON, to compare with a running service's GET /v1/digest
  chronicle digest --data ./rebuilt --json`,
		Short: "Print a SHA-256 over each projection's rows (keys and values, in key order) and one over all: what the store knows",
		Long: `digest prints a SHA-256 over each projection's rows (its keys and values, in key
order), with the number of rows, and one over every projection ("all"). Offsets,
idempotency keys and the outbox are left out: they say how far the store got, not what it
knows, so a replay of the same log into a fresh directory prints the same digests, bit for
bit. The directory must be a stopped service's (a running one answers GET /v1/digest) and
complete (not an interrupted replay).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := projections.Open(pipeline.ProjectionsDir(data), projections.Options{ReadOnly: true})
			if ue := (*projections.UnreadableError)(nil); errors.As(err, &ue) {
				return err // damaged, not in use: its own advice (an SRE's walkthrough)
			}
			if errors.Is(err, projections.ErrNoStore) {
				return err // nothing there to be held (it said a running serve might hold it: an operator's walkthrough, 2026-12-06)
			}
			if err != nil {
				// an inspect holds the store too (Pebble locks a store for
				// one process, read-only opens included): say it answers
				// the digest as serve does (a walkthrough read "a running
				// service" as serve only, 2026-12-06)
				return fmt.Errorf("%w (a chronicle serve or inspect running on it holds it, even read-only, and answers GET /v1/digest)", err)
			}
			defer store.Close()
			sayUpgraded(os.Stderr, store, pipeline.ProjectionsDir(data))
			if err := store.CheckComplete(); err != nil {
				return err
			}
			d, err := store.Digest()
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(d)
			}
			fmt.Print(d)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "./data", "data directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// auditInterrupted is err of an audit of data whose signal context ctx
// ended, said as what it is: the audit was stopped before it compared
// anything, it changed nothing, and it can be run again. Before, it read
// "context canceled", or "replay: end offsets: unable to dial: … operation
// was canceled" (a CLI walkthrough, 2026-12-05). An audit's own verdict
// (exit 2, a difference found before the signal) and any error without a
// signal are returned as they are.
func auditInterrupted(ctx context.Context, data string, err error) error {
	var ec exitCoder
	if err == nil || ctx.Err() == nil || errors.As(err, &ec) {
		return err
	}
	return fmt.Errorf("interrupted by a signal: the audit stopped before it finished, so nothing was compared; the live projections in %s were only read, and no temporary replay is left behind; run the audit again (%w)", pipeline.ProjectionsDir(data), err)
}

// auditFailure is audit's message for diff, the first difference between
// the live projections of data and a replay. When the rows differ only in
// how a time is written (projections.Difference.TimesOnly), it says why
// and how to rebuild: a store written by a Chronicle before 2026-12-06
// kept an event's time as it was sent and today's keeps it in UTC, so an
// upgraded cluster's audit failed at its first such row with nothing
// pointing at the cause (an upgrade walkthrough, 2026-12-07).
func auditFailure(diff *projections.Difference, data string) string {
	msg := "audit failed: live projections differ from replay\n" + diff.String()
	if diff.TimesOnly() {
		msg += fmt.Sprintf("\nThe two rows differ only in how a time is written (the same instant, with an offset on one side and in UTC on the other): a Chronicle before 2026-12-06 kept an event's time as it was sent, and this one keeps it in UTC, so this store was most likely written by an older Chronicle. With the service stopped, rebuild the projections from the log (chronicle replay --data %s --into NEW, then NEW/projections in place of %s; with --brokers on a cluster, for every instance) and audit again; README, \"Rolling upgrades\".", data, pipeline.ProjectionsDir(data))
	}
	return msg
}

func auditCmd() *cobra.Command {
	var c commonFlags
	cmd := &cobra.Command{
		Use:   "audit --data DIR",
		Short: "Replay the log into a temporary directory, as far as the live projections got, and compare; exit 2 naming the first differing key",
		Example: `  # a stopped service's projections against a replay of its log
  chronicle audit --data ./data

  # with its log on a Kafka cluster
  chronicle audit --data ./node1 --brokers kafka1:9092`,
		RunE: func(cmd *cobra.Command, _ []string) (rerr error) {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			// runs after the deferred closes below: the temporary replay
			// is removed by then
			defer func() { rerr = auditInterrupted(ctx, c.data, rerr) }()
			// a directory without projections is refused before anything is
			// opened: opening the store read-write (for its lock) created
			// an empty one, which digest and inspect then took for a real,
			// empty state (found by a new user's walkthrough)
			if err := projections.HoldsStore(pipeline.ProjectionsDir(c.data)); err != nil {
				return fmt.Errorf("--data %s: no projections to audit (%v)", c.data, err)
			}
			live, err := projections.Open(pipeline.ProjectionsDir(c.data), projections.Options{})
			if errors.Is(err, syscall.EROFS) {
				return fmt.Errorf("%w (the data directory is on a read-only filesystem: audit replays the log with the embedded broker, which writes it; copy the directory somewhere writable; digest and inspect read it in place)", err)
			}
			if ue := (*projections.UnreadableError)(nil); errors.As(err, &ue) {
				return err // damaged, not in use: its own advice (an SRE's walkthrough)
			}
			if err != nil {
				return fmt.Errorf("%w (stop the service first: audit reads the live projections)", err)
			}
			defer live.Close()
			sayUpgraded(os.Stderr, live, pipeline.ProjectionsDir(c.data))
			if err := live.CheckComplete(); err != nil {
				return err
			}
			brokers, stop, err := logBrokers(ctx, cmd, &c)
			if err != nil {
				return err
			}
			defer stop()
			// the store must follow this log, as serve requires: a store
			// audited against another log reported only a key difference,
			// or passed (an analyst's walkthrough)
			if err := pipeline.CheckLog(ctx, brokers, live); err != nil {
				return err
			}
			tmp, err := os.MkdirTemp("", "chronicle-audit-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			rep, err := projections.Open(tmp, projections.Options{})
			if err != nil {
				return err
			}
			defer rep.Close()
			st, err := processors.Replay(ctx, processors.ReplayConfig{
				Brokers: brokers, Store: rep, Processors: pipeline.DefaultProcessors(),
				StopAt: func(proc, topic string, part int32) int64 {
					n, _ := live.NextOffset(proc, topic, part)
					return n
				},
			})
			if err != nil {
				return namedBrokers(cmd, err)
			}
			diff, err := projections.Diff(live, rep)
			if err != nil {
				return err
			}
			if diff != nil {
				return fail(2, "%s", auditFailure(diff, c.data))
			}
			d, err := live.Digest()
			if err != nil {
				return err
			}
			fmt.Printf("audit ok: live projections equal a replay of %d records", st.Records-st.PastStopAt)
			if st.PastStopAt > 0 {
				fmt.Printf(" (%d more in the log past the live store's positions, read but not applied)", st.PastStopAt)
			}
			fmt.Printf("\n%s", d)
			return nil
		},
	}
	c.register(cmd)
	logReaderBrokers(cmd)
	return cmd
}
