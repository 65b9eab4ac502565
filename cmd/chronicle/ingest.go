package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

func ingestCmd() *cobra.Command {
	var brokers string
	cmd := &cobra.Command{
		Use: "ingest FILE.jsonl|-",
		Example: `  # CloudEvents, one per line, into a running chronicle serve (its embedded broker, 127.0.0.1:9092)
  chronicle ingest events.jsonl

  # from stdin, into a Kafka cluster
  cat events.jsonl | chronicle ingest - --brokers kafka1:9092,kafka2:9092`,
		Short: "Validate and produce CloudEvents, one JSON object per line; FILE '-' reads stdin (all lines are checked as the producer would, size and repeated ids too, before any is produced)",
		Args: func(_ *cobra.Command, args []string) error {
			// cobra's "accepts 1 arg(s), received 0" named no argument (a
			// walkthrough's finding)
			if len(args) != 1 {
				return fmt.Errorf("ingest takes one FILE: the JSON Lines file of events to ingest, or - for stdin (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			in, name, err := openInput(args[0])
			if err != nil {
				return err
			}
			recs, err := readJSONL(in, name)
			in.Close()
			if err != nil {
				return err
			}
			p, err := cliProducer(ctx, splitBrokers(brokers))
			if err != nil {
				return interrupted(ctx, err)
			}
			defer p.Close()
			if err := publishBatches(ctx, p, recs, 500, newBar(len(recs), "ingest", "events")); err != nil {
				return interrupted(ctx, err)
			}
			fmt.Printf("ingested %d events (produced and acknowledged; an event the log holds already is a duplicate, which the processors drop)\n", len(recs))
			return nil
		},
	}
	cmd.Flags().StringVar(&brokers, "brokers", "127.0.0.1:9092", "comma-separated Kafka brokers (a running chronicle serve's embedded broker by default)")
	return cmd
}

// cliProducer is the producer of ingest and import: before anything is
// sent it asks the brokers for their API versions (kgo.Client.Ping), so a
// refused connection or an unknown host fails at once naming the brokers
// and the error (the first Publish used to wait its whole 15 s timeout
// for them); a broker that accepts and never answers still fails after
// ProducerConfig.PublishTimeout (15 s). A ctx ended (a signal) while it
// waits is not said as the brokers' silence: its callers say interrupted.
func cliProducer(ctx context.Context, brokers []string) (*events.Producer, error) {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: brokers, PublishTimeout: publishTimeout})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	pinged := make(chan error, 1)
	go func() { pinged <- p.Client().Ping(pctx) }() // a connection's handshake outlasts pctx (20 s on a silent port)
	select {
	case err = <-pinged:
	case <-pctx.Done():
		err = fmt.Errorf("within %v: %w", publishTimeout, pctx.Err())
	}
	if err != nil {
		p.Close()
		if ctx.Err() != nil {
			// stopped by a signal while it waited, not the brokers' silence:
			// Ctrl-C 0.3 s in said "no broker answered: within 15s: context
			// canceled" of a broker that was up (a CLI walkthrough, 2026-12-05)
			return nil, fmt.Errorf("asking --brokers %s for their API versions: %w", strings.Join(brokers, ","), ctx.Err())
		}
		return nil, fmt.Errorf("--brokers %s: no broker answered: %w", strings.Join(brokers, ","), err)
	}
	return p, nil
}

// publishTimeout bounds the CLI producer's first ping and each of its
// publishes (ProducerConfig.PublishTimeout, whose default it is too).
const publishTimeout = 15 * time.Second

func splitBrokers(s string) []string {
	c := commonFlags{brokers: s}
	return c.brokerList()
}

// readJSONL validates every line of r (named name in errors) as
// Producer.Publish would, with one events.Checker over all of them: the
// schema, the size limit, a derived type and an earlier line's scope,
// source and id with other content (the same event again is a plain
// duplicate, produced and dropped by the processors). The first bad line
// is reported with its line number, JSON pointer and reason, and nothing
// is returned; else the records, ready for ProduceRecords.
func readJSONL(r io.Reader, name string) ([]*kgo.Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var out []*kgo.Record
	var lines []int // the line of each record
	c := events.Checker{Name: func(i int) string { return fmt.Sprintf("the event of line %d", lines[i]) }}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			// a byte order mark, which some editors on Windows write at
			// the start of a UTF-8 file: not part of the first event (it
			// was refused as "not valid JSON": a walkthrough's finding)
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if len(trimSpace(b)) == 0 {
			continue
		}
		env, err := events.ParseProducerEvent(b)
		var rec *kgo.Record
		if err == nil {
			lines = append(lines, line)
			rec, err = c.Check(&env)
		}
		if err != nil {
			var ve *events.ValidationError
			if errors.As(err, &ve) {
				return nil, fmt.Errorf("%s:%d: %s: %s (nothing was ingested)", name, line, ve.Pointer, ve.Reason)
			}
			return nil, fmt.Errorf("%s:%d: %w (nothing was ingested)", name, line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w (nothing was ingested)", name, line+1, err)
	}
	return out, nil
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// openInput opens the FILE argument of ingest and import taubench: "-"
// is stdin (named "stdin" in errors), else a path.
func openInput(path string) (r io.ReadCloser, name string, err error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), "stdin", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, err
	}
	return f, path, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// publishBatches produces recs, checked already (readJSONL), size at a
// time, each batch acknowledged before the next. A batch that fails ends
// it with an error saying which events (0-based, in file order), that
// those before them were acknowledged, whether the failed ones were
// refused (events.ErrRefused: not written) or may still be written, and
// that running the command again is safe. Before, it said only "events
// 500-999: …", and an operator could not tell whether to run it again.
func publishBatches(ctx context.Context, p *events.Producer, recs []*kgo.Record, size int, bar *progressbar.ProgressBar) error {
	for i := 0; i < len(recs); i += size {
		j := min(i+size, len(recs))
		if err := p.ProduceRecords(ctx, recs[i:j]); err != nil {
			outcome := "they may still be written"
			if errors.Is(err, events.ErrRefused) {
				outcome = "the broker refused them, so they were not written"
			}
			return fmt.Errorf("events %d-%d of %d (0-based, in file order): %w; %s; the %d before them were acknowledged; running the command again is safe once the cause is fixed (an event the log holds already is a duplicate, which the processors drop)", i, j-1, len(recs), err, outcome, i)
		}
		_ = bar.Add(j - i)
	}
	_ = bar.Finish()
	return nil
}

// importCmd groups the importers of the bundled data's formats, each with
// its own help and flags (they shared one help text and tot's flags
// showed under taubench's).
func importCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import a recorded run as events: tau-bench sessions, a Tree of Thoughts log, a Reflexion run"}
	cmd.AddCommand(importTaubenchCmd(), importToTCmd(), importReflexionCmd())
	return cmd
}

func importTaubenchCmd() *cobra.Command {
	var brokers string
	cmd := &cobra.Command{
		Use:   "taubench FILE",
		Short: "Import tau-bench sessions (the format of gpt-4o-airline.json) as session events; FILE '-' reads stdin, 'sample' the bundled copy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			recs, err := loadTaubench(args[0])
			if err != nil {
				return err
			}
			p, err := cliProducer(ctx, splitBrokers(brokers))
			if err != nil {
				return interrupted(ctx, err)
			}
			defer p.Close()
			n, err := importTaubench(ctx, p, recs, newBar(len(recs), "import", "sessions"))
			if err != nil {
				return interrupted(ctx, err)
			}
			fmt.Printf("imported %d sessions, %d events (produced and acknowledged; an event the log holds already, from an earlier import, is a duplicate, which the processors drop)\n", len(recs), n)
			return nil
		},
	}
	cmd.Flags().StringVar(&brokers, "brokers", "127.0.0.1:9092", "comma-separated Kafka brokers (a running chronicle serve's embedded broker by default)")
	return cmd
}

func importToTCmd() *cobra.Command {
	var tot totFlags
	cmd := &cobra.Command{
		Use:   "tot FILE|bundled",
		Short: "Import a Tree of Thoughts Game of 24 log as searches replayed through the pipeline ('bundled': the GPT-4 run on puzzles 901-1000)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return importToT(ctx, args[0], tot)
		},
	}
	tot.register(cmd)
	cmd.Flags().StringVar(&tot.brokers, "brokers", "", "comma-separated Kafka brokers; empty: an embedded broker on --data")
	return cmd
}

func importReflexionCmd() *cobra.Command {
	var brokers string
	cmd := &cobra.Command{
		Use:   "reflexion FILE",
		Short: "Import a Reflexion HotPotQA run log as reasoning passes, sessions, tool events and reflection memories (FILE a path, .gz too, or a bundled run: " + reflexion.RunReflexion + ", " + reflexion.RunBase + ")",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return interrupted(ctx, importReflexion(ctx, args[0], splitBrokers(brokers)))
		},
	}
	cmd.Flags().StringVar(&brokers, "brokers", "127.0.0.1:9092", "comma-separated Kafka brokers (a running chronicle serve's embedded broker by default)")
	return cmd
}

func loadTaubench(path string) ([]taubench.Record, error) {
	var r io.ReadCloser
	var err error
	if path == "sample" {
		r, err = taubench.Sample()
	} else {
		r, _, err = openInput(path)
		if os.IsNotExist(err) {
			// the accepted names, not a bare "no such file" (a walkthrough)
			return nil, fmt.Errorf("%s: no such file, and not the bundled copy's name (sample)", path)
		}
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return taubench.ReadRecords(r)
}

// importReflexion maps a Reflexion HotPotQA run log to events
// (reflexion.Events: one reasoning task per question, one pass per trial)
// and produces them, one acknowledged batch per pass.
func importReflexion(ctx context.Context, file string, brokers []string) error {
	run, name, err := reflexion.Open(file)
	if os.IsNotExist(err) {
		return fmt.Errorf("%s: no such file, and not a bundled run's name (%s, %s)", file, reflexion.RunReflexion, reflexion.RunBase)
	}
	if err != nil {
		return err
	}
	envs, err := reflexion.Events(run, name)
	if err != nil {
		return err
	}
	p, err := cliProducer(ctx, brokers)
	if err != nil {
		return err
	}
	defer p.Close()
	// a pass ends with its reasoning.pass.completed.v1: publish up to it
	bar := newBar(len(envs), "import", "events")
	passes, from := 0, 0
	for i := range envs {
		if envs[i].Type != events.ReasoningPassCompleted {
			continue
		}
		if err := p.Publish(ctx, envs[from:i+1]...); err != nil {
			return fmt.Errorf("%s: %w", envs[i].ID, err)
		}
		_ = bar.Add(i + 1 - from)
		from = i + 1
		passes++
	}
	_ = bar.Finish()
	fmt.Printf("imported run %s: %d questions, %d passes, %d events (scope %s; produced and acknowledged; an event the log holds already, from an earlier import, is a duplicate, which the processors drop)\n", name, len(reflexion.Questions(run, name)), passes, len(envs), reflexion.Scope)
	return nil
}

// importTaubench produces every record's events, one acknowledged batch per
// session, and returns the number of events.
func importTaubench(ctx context.Context, p *events.Producer, recs []taubench.Record, bar *progressbar.ProgressBar) (int, error) {
	n := 0
	for i, rec := range recs {
		envs, err := taubench.Events(rec)
		if err != nil {
			return n, fmt.Errorf("record %d: %w", i, err)
		}
		if err := p.Publish(ctx, envs...); err != nil {
			return n, fmt.Errorf("record %d (%s): %w", i, taubench.SessionID(rec.TaskID, rec.Trial), err)
		}
		n += len(envs)
		_ = bar.Add(1)
	}
	_ = bar.Finish()
	return n, nil
}

// newBar is progressBar for n steps of what, counted in unit.
func newBar(n int, what, unit string) *progressbar.ProgressBar {
	return progressBar(int64(n), what, unit)
}
