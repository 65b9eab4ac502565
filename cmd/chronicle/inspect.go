package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
)

func inspectCmd() *cobra.Command {
	var data, httpAddr, tokens, requestLog, brokers string
	cmd := &cobra.Command{
		Use:   "inspect --data DIR [--http 127.0.0.1:8080] [--brokers h:p,...]",
		Short: "Serve the read API (every GET route) over a stopped or replayed data directory, read-only: no broker, no processors, no relay, no workers; writes answer 405",
		Example: `  # the read API over the state as of a moment, beside a running chronicle serve on 8080
  chronicle replay --data ./data --into ./asof --until 2026-12-05T12:00:00Z
  chronicle inspect --data ./asof --http 127.0.0.1:8081

  # a stopped service's directory, with its tokens
  chronicle inspect --data ./data --tokens tokens.json

  # a session's events too (GET /v1/sessions/{id}/events, up to the state's positions):
  # the log the state was built from, served by chronicle broker
  chronicle broker --data ./data --kafka-listen 127.0.0.1:9093 &
  chronicle inspect --data ./asof --http 127.0.0.1:8081 --brokers 127.0.0.1:9093`,
		Long: `inspect opens DIR's projections read-only (Pebble's read-only mode: nothing in DIR
is written) and serves the GET routes of the HTTP API over them: sessions, memories
and memory search, reasoning tasks, tree searches, workflows (their state, checkpoint
history and state as of a checkpoint id), the tool graph, the digest. It is how an
analyst reads an as-of state built by "chronicle replay --until ... --into DIR" (e.g.
--until a workflow's checkpoint id), or a stopped service's directory.

No broker is started, nothing is produced or relayed, and no processor or worker runs.
Write routes (POST, and the MCP endpoint) answer 405 naming read-only mode; /v1/cluster
answers 503. A session's events (GET /v1/sessions/{id}/events, a refused one marked
dead_lettered by the letters the state holds) and the learned stream (GET
/v1/learned/stream, which ends at the state's positions) are read from the log
given with --brokers (a chronicle broker on the log the projections were built from, or
the Kafka cluster serving it), checked at start to be that log (within 15s), and list
only the records at or before the positions the projections hold, later ones left out;
without --brokers those routes answer 503 saying how to serve the log. inspect does not
open DIR/log itself, even when no process holds it: the embedded broker writes in its log
directory when it starts (its LOCK file, the stopped mark, topics) and when it stops. A workflow read answers 503 too when DIR holds
checkpoints applied by a Chronicle older than the recorded checkpoint ids (cpid/ rows):
only the log names those; replay --into rebuilds DIR with them. Memory searches write
no usage events. inspect names, when it starts and in GET /healthz ("as_of"), the last
record of each partition of the log the projections hold.
The memory, pattern and tool vectors are embedded once at start with the embedded
model (vectors the live service cached in DIR are reused).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			rl, err := requestLogger(requestLog)
			if err != nil {
				return err
			}
			useLogFormat(rl)
			tf, err := loadTokens(tokens, httpAddr)
			if err != nil {
				return err
			}
			s, closeStore, err := openInspect(data)
			if err != nil {
				return err
			}
			defer closeStore()
			if err := inspectLog(ctx, s, data, splitBrokers(brokers)); err != nil {
				return err
			}
			// the address is taken before the index is built (seconds), so
			// a busy port fails at once (an analyst's walkthrough)
			ln, err := net.Listen("tcp", httpAddr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", httpAddr, err)
			}
			start := time.Now()
			if err := s.P.Search.Index.Sync(ctx); err != nil {
				ln.Close()
				if ctx.Err() != nil {
					// it said "inspect: index the memory bank: …: context
					// canceled", one line per collection (a CLI walkthrough,
					// 2026-12-05): the signal's cause is all there is to say
					return fmt.Errorf("interrupted by a signal while building the search index, before serving: nothing in %s was written (inspect opens it read-only); run inspect again (%w)", data, context.Cause(ctx))
				}
				return fmt.Errorf("inspect: index the memory bank: %w", err)
			}
			fmt.Fprintf(os.Stderr, "chronicle: read-only projections in %s (search index built in %.1fs), %s\n", pipeline.ProjectionsDir(data), time.Since(start).Seconds(), httpapi.AsOfLine(s.P.Store))
			s.Tokens, s.RequestLog = tf, rl
			reloadTokensOnHUP(ctx, tokens, s)
			return serveListener(ctx, s, ln)
		},
	}
	cmd.Flags().StringVar(&data, "data", "./data", "data directory to read (its projections: DATA/projections), e.g. the --into of chronicle replay")
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:8080", "HTTP API address")
	cmd.Flags().StringVar(&tokens, "tokens", "", "API token file (see chronicle token create), read at start and re-read on SIGHUP (a token created or removed since is then accepted or refused; a changed member_secret takes a restart); without it the API listens on loopback only")
	cmd.Flags().StringVar(&brokers, "brokers", "", "Kafka brokers (host:port,...) serving the log the projections were built from — a chronicle broker --data on it, or the cluster — from which GET /v1/sessions/{id}/events reads a session's records, up to the positions the projections hold; without it that route answers 503 (inspect does not open DIR/log: its broker would write there)")
	registerRequestLog(cmd, &requestLog)
	return cmd
}

// InspectLogCheckWait bounds inspect's check, at start, that its --brokers
// serve the log its projections were built from (15 s): a broker that does
// not answer fails inspect then, naming --brokers, rather than every
// GET /v1/sessions/{id}/events later.
const InspectLogCheckWait = 15 * time.Second

// inspectLog sets up s (openInspect's server over data) to read the log
// GET /v1/sessions/{id}/events answers from: with brokers, after checking
// within InspectLogCheckWait that they serve the log data's projections
// were built from (pipeline.CheckLog, which writes nothing: no stored
// position past a partition's end, the topic ids the store recorded);
// without, the 503 of that route says how to serve data's log
// (httpapi.NoLogHint).
func inspectLog(ctx context.Context, s *httpapi.Server, data string, brokers []string) error {
	if len(brokers) == 0 {
		_, err := os.Stat(pipeline.LogDir(data))
		s.NoLogHint = httpapi.NoLogHint(data, err == nil)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, InspectLogCheckWait)
	defer cancel()
	if err := pipeline.CheckLog(cctx, brokers, s.P.Store); err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("--brokers %s: no answer within %s checking that they serve the log %s was built from: %w", strings.Join(brokers, ","), InspectLogCheckWait, data, err)
		}
		if errors.Is(err, pipeline.ErrForeignLog) {
			return fmt.Errorf("--brokers %s: not the log %s was built from (give a broker on that log: chronicle broker --data ORIGINAL): %w", strings.Join(brokers, ","), data, err)
		}
		return fmt.Errorf("--brokers %s: cannot read the log there (is a chronicle broker running on it?): %w", strings.Join(brokers, ","), err)
	}
	s.LogBrokers = brokers
	return nil
}

// openInspect opens data's projections read-only and returns the
// read-only API server over them (httpapi.Server.ReadOnly) and the store's
// close. It fails for a directory without projections and for one a replay
// did not finish building.
func openInspect(data string) (*httpapi.Server, func(), error) {
	store, err := projections.Open(pipeline.ProjectionsDir(data), projections.Options{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("--data %s: %w", data, err)
	}
	sayUpgraded(os.Stderr, store, pipeline.ProjectionsDir(data))
	if err := store.CheckComplete(); err != nil {
		store.Close()
		return nil, nil, err
	}
	emb, err := embedder.NewUSELite()
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p := &pipeline.Pipeline{
		Config:   pipeline.Config{DataDir: data},
		Store:    store,
		Registry: reg,
		// no Producer: searches write no usage events, Record and
		// Feedback fail with memories.ErrReadOnly
		Search: &memories.Service{Index: search.NewIndex(store, emb, nil, pipeline.SearchSources()...), Store: store},
	}
	return &httpapi.Server{P: p, ReadOnly: true, Version: serverVersion()}, func() { store.Close() }, nil
}
