package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
)

func serveCmd() *cobra.Command {
	var c commonFlags
	var httpAddr string
	var tick time.Duration
	var tokens string
	var stallAfter time.Duration
	var advertise string
	var requestLog string
	var sessionTimeout time.Duration
	var standbys int
	var stateMaxMiB int
	var pprofAddr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service: embedded broker (or --brokers), processors, outbox relay and the HTTP API",
		Example: `  # on ./data: the embedded broker on 127.0.0.1:9092, the HTTP API on 127.0.0.1:8080
  chronicle serve

  # another directory and ports; with API tokens (chronicle token create) the API may listen beyond loopback
  chronicle serve --data /var/lib/chronicle --kafka-listen 127.0.0.1:9093 --http 0.0.0.0:8080 --tokens tokens.json

  # one instance of several on a Kafka cluster (see README "Running as a cluster")
  chronicle serve --data ./node1 --brokers kafka1:9092,kafka2:9092 --partitions 4 --http 10.0.0.5:8080 --tokens tokens.json`,
		RunE: func(cmd *cobra.Command, _ []string) (rerr error) {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			if err := checkAdvertise(advertise); err != nil {
				return err
			}
			if err := checkStandbys(standbys, c.brokerList()); err != nil {
				return err
			}
			stateMax, err := workflowStateMax(stateMaxMiB)
			if err != nil {
				return err
			}
			if len(c.brokerList()) == 0 {
				if err := broker.CheckEmbeddedSessionTimeout(sessionTimeout); err != nil {
					return usage(fmt.Errorf("--session-timeout: %w", err))
				}
			}
			if sessionTimeout > pipeline.MaxTransactionTimeout/2 {
				// the transactions' timeout is capped at Kafka's default
				// maximum, so it no longer outlives a pause twice as long
				// as the session timeout (a re-test, 2026-12-01)
				fmt.Fprintf(os.Stderr, "chronicle: warning: --session-timeout %v: the relay's and the workers' transactions time out after %v, less than the twice-the-session-timeout Chronicle otherwise gives them (capped at %v, Kafka's default transaction.max.timeout.ms), so an instance paused for longer than that keeps its partitions until the session times out while the broker aborts its open transaction; keep --session-timeout at most %v\n",
					sessionTimeout, min(2*sessionTimeout, pipeline.MaxTransactionTimeout), pipeline.MaxTransactionTimeout, pipeline.MaxTransactionTimeout/2)
			}
			rl, err := requestLogger(requestLog)
			if err != nil {
				return err
			}
			useLogFormat(rl)
			tf, err := loadTokens(tokens, httpAddr)
			if err != nil {
				return err
			}
			vs, err := c.vectorStore(ctx)
			if err != nil {
				return err
			}
			if pprofAddr != "" {
				// before the start, so a start that hangs can be looked into
				stop, err := startPprof(pprofAddr)
				if err != nil {
					return err
				}
				defer stop()
			}
			// listen first: the advertised URL (default: the listen
			// address) joins the group with the processors
			ln, err := net.Listen("tcp", httpAddr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", httpAddr, err)
			}
			defer ln.Close()
			if advertise == "" {
				advertise = "http://" + ln.Addr().String()
			}
			// answer at once, 503 until the pipeline is up: joining the
			// group can take a session timeout (a restart after kill -9
			// on a separate broker: 43 s), and a client held on an
			// accepted connection that never answers
			late := newStartingHandler(rl)
			srv, errc := startHTTP(ln, late)
			defer srv.Close() // a failed start: nothing is served
			// the group places each task where its state is (a restart
			// of every instance, a broker restart: no member owns anything)
			held := &processors.Holdings{}
			// a signal while the pipeline starts ends the process within
			// StopWait even when the start cannot notice it (Pebble's open
			// takes no context: on a full disk it spun without end, and
			// SIGTERM did nothing; an operator's walkthrough, 2026-11-30)
			started := make(chan struct{})
			stopWatch := context.AfterFunc(ctx, func() {
				select {
				case <-started:
				case <-time.After(StopWait):
					fmt.Fprintf(os.Stderr, "chronicle: still starting %s after the signal (opening the projections or joining the group did not end): exiting\n", StopWait)
					os.Exit(1)
				}
			})
			made := noteData(c.data) // removed when the start fails
			p, err := pipeline.Start(ctx, pipeline.Config{Logger: pipelineLogger(rl), VectorStore: vs, DataDir: c.data, Brokers: c.brokerList(), KafkaListen: c.kafkaListen, Partitions: c.partitions, ReplicationFactor: c.replication, MinInsyncReplicas: c.minInsync, LLM: c.llm(), OnRelayError: logRelayError, OnSearchError: logSearchError, OnTickError: logTickError, OnDeadLetter: logDeadLetterTo(rl), TickInterval: tick, PAIR: true, SessionTimeout: sessionTimeout,
				StandbyReplicas: standbys, Holdings: held, OnPartitionsDiffer: warnPartitionsDiffer(cmd, c.partitions), OnFiniteRetention: warnFiniteRetention, OnSmallMessageLimit: warnSmallMessageLimit, OnLogRepaired: warnLogRepaired,
				SubscriberOpts: httpapi.MemberOpts(advertise, held)})
			close(started)
			stopWatch()
			if errors.Is(err, kerr.InvalidSessionTimeout) {
				return made.failedStart(fmt.Errorf("--session-timeout: %w", err))
			}
			if err != nil {
				return made.failedStart(startInterrupted(ctx, err, "nothing was served"))
			}
			var stopAt atomic.Pointer[time.Time]
			context.AfterFunc(ctx, func() { now := time.Now(); stopAt.Store(&now) })
			defer func() {
				// what is left of StopWait once the HTTP API stopped
				wait := pipeline.DefaultCloseWait
				if at := stopAt.Load(); at != nil {
					wait = max(StopWait-time.Since(*at), MinCloseWait)
				}
				if err := p.CloseWithin(wait); err != nil {
					fmt.Fprintln(os.Stderr, "chronicle:", err)
					if rerr == nil {
						rerr = err
					}
				}
			}()
			describe(p)
			api := &httpapi.Server{P: p, Tokens: tf, StallAfter: stallAfter, Advertise: advertise, RequestLog: rl, Version: serverVersion(), WorkflowStateMax: stateMax}
			reloadTokensOnHUP(ctx, tokens, api)
			late.set(api.Handler())
			announce(ln) // when it answers: scripts and tests wait for this line
			srv.RegisterOnShutdown(api.StopStreams)
			return waitHTTP(ctx, srv, errc)
		},
	}
	c.register(cmd)
	c.registerKafkaListen(cmd)
	c.registerTopicReplicas(cmd)
	c.registerLLM(cmd)
	c.registerSearch(cmd)
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:8080", "HTTP API address")
	cmd.Flags().StringVar(&tokens, "tokens", "", "API token file (see chronicle token create), read at start and re-read on SIGHUP (a token created or removed since is then accepted or refused; a changed member_secret takes a restart); without it the API listens on loopback only")
	cmd.Flags().DurationVar(&stallAfter, "stall-after", processors.DefaultStallAfter, "/healthz says \"stalled\" (503) when a partition this instance owns is behind with no processor committing for this long (0: the default, 30s)")
	cmd.Flags().StringVar(&advertise, "advertise", "", "URL other instances and operators reach this instance's API at: published to the processors' group (reads are forwarded to it) and shown by GET /v1/cluster (default: http:// and the --http listen address)")
	registerRequestLog(cmd, &requestLog)
	cmd.Flags().DurationVar(&sessionTimeout, "session-timeout", 0, "consumer group session timeout: how long a killed or paused instance keeps its partitions (0: 45s); the embedded broker allows 6s to 5m, refused at once outside; with --brokers it must lie within the cluster's group.min/max.session.timeout.ms, else startup fails at the first join naming the flag")
	cmd.Flags().IntVar(&standbys, "standby-replicas", 0, "keep warm copies of the partitions of this many other instances (Kafka Streams' num.standby.replicas): each partition's standbys are the next N members after its owner in member-id order; a take-over then restores only what the standby had not applied (needs --brokers)")
	cmd.Flags().IntVar(&stateMaxMiB, "workflow-state-max-mib", workflows.DefaultMaxStateBytes>>20, "a workflow write route that would grow the workflow's state above this many MiB of JSON is a 413 naming the member (every event rewrites the state row; 0: no bound)")
	cmd.Flags().StringVar(&pprofAddr, pprofFlag, "", "serve Go's profiler (net/http/pprof: goroutine dumps, heap and CPU profiles at /debug/pprof/) on this loopback address, e.g. 127.0.0.1:6060; no authentication, so loopback only (off by default)")
	cmd.Flags().DurationVar(&tick, "decay-interval", 24*time.Hour, "interval of clock.tick.v1 events (memory decay); the first comes one interval after start; 0: no ticks, so no decay")
	return cmd
}

// workflowStateMax is serve --workflow-state-max-mib in bytes, as
// httpapi.Server.WorkflowStateMax takes it (0: no bound, -1 there).
func workflowStateMax(mib int) (int, error) {
	switch {
	case mib < 0:
		return 0, usage(fmt.Errorf("--workflow-state-max-mib %d: negative (0 for no bound)", mib))
	case mib == 0:
		return -1, nil
	case mib > 1<<20:
		return 0, usage(fmt.Errorf("--workflow-state-max-mib %d: above 1048576 MiB (1 TiB; 0 for no bound)", mib))
	}
	return mib << 20, nil
}

// warnPartitionsDiffer is the pipeline's OnPartitionsDiffer when
// --partitions was given: one warning on stderr naming every existing
// topic whose partition count is not the flag's, which it keeps (before,
// the flag was ignored silently; found by an operator's walkthrough).
// Without the flag an existing count is the expected one: nil.
func warnPartitionsDiffer(cmd *cobra.Command, partitions int32) func([]broker.TopicPartitions) {
	if f := cmd.Flags().Lookup("partitions"); f == nil || !f.Changed {
		return nil
	}
	return func(diff []broker.TopicPartitions) {
		var b strings.Builder
		for i, d := range diff {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s has %d", d.Topic, d.Have)
			if d.Want != partitions {
				fmt.Fprintf(&b, " (%d when Chronicle creates it)", d.Want)
			}
		}
		fmt.Fprintf(os.Stderr, "chronicle: warning: --partitions %d does not apply to topics that exist, which keep their partition count (Chronicle never adds or removes partitions; see README \"Adding and removing an instance\"): %s\n", partitions, b.String())
	}
}

// warnFiniteRetention is the pipeline's OnFiniteRetention: one warning on
// stderr naming every existing topic that removes records, and what that
// costs (broker.TopicConfigs: the topics Chronicle creates keep them), and
// one naming the topics whose configuration could not be read.
func warnFiniteRetention(rs []broker.TopicRetention) {
	var lossy, unread strings.Builder
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(&unread, "; %s: %v", r.Topic, r.Err)
			continue
		}
		if lossy.Len() > 0 {
			lossy.WriteString(", ")
		}
		fmt.Fprintf(&lossy, "%s (retention.ms %s, retention.bytes %s, cleanup.policy %s)", r.Topic, r.RetentionMs, r.RetentionBytes, r.CleanupPolicy)
	}
	if lossy.Len() > 0 {
		fmt.Fprintf(os.Stderr, "chronicle: warning: these topics remove records, and the log is Chronicle's source of truth: once their oldest records are gone (retention) or a key's older ones (compaction), replay and audit cannot rebuild the state and a partition's restore misses them; set retention.ms and retention.bytes to -1 and cleanup.policy to delete on them (kafka-configs --alter --add-config retention.ms=-1,retention.bytes=-1,cleanup.policy=delete), as Chronicle creates its topics: %s\n", lossy.String())
	}
	if unread.Len() > 0 {
		fmt.Fprintf(os.Stderr, "chronicle: warning: could not read the configuration of the topics, so whether they keep their records is not checked (the service account needs DescribeConfigs on chronicle.*)%s\n", unread.String())
	}
}

// warnSmallMessageLimit is the pipeline's OnSmallMessageLimit: one warning
// naming the topics whose max.message.bytes is below what Chronicle's
// producers send in one batch (broker.MinMaxMessageBytes). Before, such a
// topic showed only as 503s for the writes it refused (MESSAGE_TOO_LARGE).
func warnSmallMessageLimit(ls []broker.TopicMessageLimit) {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d)", l.Topic, l.MaxMessageBytes)
	}
	fmt.Fprintf(os.Stderr, "chronicle: warning: these topics' max.message.bytes is below %d bytes, the record batch Chronicle's producers send (an event may be up to %d bytes): the broker refuses a larger batch or event with MESSAGE_TOO_LARGE, and the write is answered 503; raise it (kafka-configs --alter --add-config max.message.bytes=1048588, Kafka's default): %s\n", broker.MinMaxMessageBytes, events.MaxEventBytes, b.String())
}

// warnLogRepaired is the pipeline's OnLogRepaired: one warning per repair
// the embedded broker made while loading a log a killed process left.
func warnLogRepaired(repairs []string) {
	for _, r := range repairs {
		fmt.Fprintf(os.Stderr, "chronicle: warning: the embedded broker repaired its log, which the last process did not stop cleanly: %s (the torn end of a write, cut off as Kafka's log recovery cuts it; records acknowledged before it are kept)\n", r)
	}
}

// registerRequestLog adds --request-log to a command serving the HTTP API.
func registerRequestLog(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "request-log", "text", "one line per HTTP request on stderr (method, path, status, bytes, duration_ms, token name, scope; never the token): text, json or off")
}

// useLogFormat makes rl (the --request-log logger) the process's default
// slog logger, so the service's own warnings (a metrics collector
// failing, the broker not acknowledging events) come out in the format
// asked for: they used Go's default format, also with --request-log json
// (an SRE's walkthrough, 2026-11-30). With the request log off, the
// default stays.
func useLogFormat(rl *slog.Logger) {
	if rl != nil {
		slog.SetDefault(rl)
	}
}

// logUTC makes serve's slog lines (the request log, the pipeline's,
// dead letters) give their time in UTC, as the API's times and the CLI's
// messages do: slog wrote the host's zone (under TZ=America/New_York,
// 15:00:06-05:00 beside a dead letter's 20:00:06Z; a time walkthrough,
// 2026-12-04).
var logUTC = &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
		a.Value = slog.TimeValue(a.Value.Time().UTC())
	}
	return a
}}

// requestLogger is the logger of --request-log: slog's text or JSON
// handler on stderr, nil for off.
func requestLogger(format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, logUTC)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, logUTC)), nil
	case "off":
		return nil, nil
	}
	return nil, usage(fmt.Errorf("--request-log: %q is not text, json or off", format))
}

// pipelineLogger is the logger of serve's pipeline (its workers, such as
// the search resume worker, and the processors' engine): the request
// log's slog logger on stderr (text or JSON as --request-log says; text
// when the request log is off). Before, serve set none and the pipeline
// logged nowhere (watermill.NopLogger), so the resume worker's lines
// README promised ("logs so") never appeared (found by an agent-runtime
// developer's walkthrough).
func pipelineLogger(rl *slog.Logger) watermill.LoggerAdapter {
	if rl == nil {
		rl = slog.New(slog.NewTextHandler(os.Stderr, logUTC))
	}
	return watermill.NewSlogLogger(rl)
}

func logRelayError(err error) { fmt.Fprintln(os.Stderr, "chronicle: outbox relay:", err) }

// logTickError prints the clock ticker's failures and the wall-clock steps
// it noticed (pipeline.Config.OnTickError) under their own label.
func logTickError(err error) { fmt.Fprintln(os.Stderr, "chronicle: clock ticker:", err) }

// logDeadLetter logs each dead letter once, when the live engine's
// dead-letter projection applies it: one slog line (text, to w) naming the
// handler that refused the event, the rejected record's
// topic:partition:offset, the event's id, type and scope, and the reason.
// Before, serve logged nothing of a refusal: an event accepted with 202
// and refused by a processor showed only in chronicle.deadletter.
func logDeadLetter(w io.Writer) func(processors.LetterData) {
	return logDeadLetterTo(slog.New(slog.NewTextHandler(w, logUTC)))
}

// logDeadLetterTo is logDeadLetter through l, the request log's logger
// (JSON with --request-log json), or text on stderr when l is nil.
func logDeadLetterTo(l *slog.Logger) func(processors.LetterData) {
	if l == nil {
		l = slog.New(slog.NewTextHandler(os.Stderr, logUTC))
	}
	return func(d processors.LetterData) {
		l.Warn("chronicle: dead letter", "handler", d.Handler, "at", fmt.Sprintf("%s:%d:%d", d.Topic, d.Partition, d.Offset),
			"event_id", d.EventID, "type", d.EventType, "scope", d.Scope, "reason", d.Reason)
	}
}

// logSearchError logs a failed background sync of the search index (the
// vector store not answering); the sync retries with backoff.
func logSearchError(err error) { fmt.Fprintln(os.Stderr, "chronicle: search index sync:", err) }

func describe(p *pipeline.Pipeline) {
	if p.Broker.Embedded() {
		fmt.Fprintf(os.Stderr, "chronicle: embedded Kafka broker on %v (log in %s)\n", p.Broker.Addrs(), pipeline.LogDir(p.Config.DataDir))
	} else {
		fmt.Fprintf(os.Stderr, "chronicle: Kafka cluster %v\n", p.Broker.Addrs())
	}
	fmt.Fprintf(os.Stderr, "chronicle: projections in %s\n", pipeline.ProjectionsDir(p.Config.DataDir))
	sayUpgraded(os.Stderr, p.Store, pipeline.ProjectionsDir(p.Config.DataDir))
}

// StopWait bounds serve's stop, from SIGTERM (or SIGINT) to its exit
// (25 s, below Kubernetes' 30 s termination grace period): the HTTP API's
// shutdown takes at most ShutdownWait, the pipeline's close what is left
// of StopWait, at least MinCloseWait (pipeline.Pipeline.CloseWithin). A
// pipeline part still running then is named on stderr and serve exits 1
// without closing the projection store under it, which is like a crash:
// the next start replays from the log what the store had not committed.
const StopWait = 25 * time.Second

// MinCloseWait is the least serve waits for its pipeline to close (15 s),
// however long the HTTP shutdown took.
const MinCloseWait = 15 * time.Second

// ShutdownWait is how long serve waits, once stopped, for HTTP requests
// in flight to finish (10 s); those still running are then cut and the
// process exits 0 all the same.
const ShutdownWait = 10 * time.Second

// serveHTTP serves the API until ctx ends, then shuts down gracefully.
func serveHTTP(ctx context.Context, s *httpapi.Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	return serveListener(ctx, s, ln)
}

// serveListener serves the API on ln until ctx ends, then shuts down gracefully.
func serveListener(ctx context.Context, s *httpapi.Server, ln net.Listener) error {
	if s.Advertise == "" {
		s.Advertise = "http://" + ln.Addr().String()
	}
	srv, errc := startHTTP(ln, s.Handler())
	announce(ln)
	// streams (GET /v1/learned/stream) end with a last event naming their
	// resume position as soon as the shutdown starts
	srv.RegisterOnShutdown(s.StopStreams)
	return waitHTTP(ctx, srv, errc)
}

// startingHandler answers with starting (answerStarting, through the
// request log) until set gives it the API's handler: serve listens before
// its pipeline starts (the advertised URL joins the group with it), and
// the start can take a group session timeout.
//
// A learned stream's request (GET /v1/learned/stream) is held instead, up
// to StreamStartWait, and then served by the API: a Server-Sent Events
// client treats any answer but a 200 as final and stops reconnecting (the
// WHATWG EventSource, and the npm eventsource client: a subscriber
// walkthrough's stream, cut by a restart, reconnected 2 s later into the
// 503 and never again, in 2 of 3 restarts). If the start takes longer, the
// answer is a 200 stream that ends at once with retry: 1000, which such a
// client follows by reconnecting a second later with its Last-Event-ID.
// A start that fails closes the held connection, which the client retries
// as a network error.
type startingHandler struct {
	h        atomic.Pointer[http.Handler]
	ready    chan struct{} // closed by set
	once     sync.Once
	starting http.Handler
	// fallback answers a stream request still held after wait (the 200
	// with retry: 1000), logged as starting's answers are (before, it
	// left no request-log line); a held request served by the API once
	// it is up is logged by the API.
	fallback http.Handler
	wait     time.Duration // a stream request's bound, StreamStartWait
}

// StreamStartWait bounds how long a learned stream's request waits for
// serve's start (see startingHandler).
const StreamStartWait = 30 * time.Second

// newStartingHandler answers 503 "starting" (answerStarting) until set is
// called, each answer logged to rl (the request log; nil logs nothing).
func newStartingHandler(rl *slog.Logger) *startingHandler {
	return &startingHandler{starting: httpapi.LogRequests(rl, http.HandlerFunc(answerStarting)),
		fallback: httpapi.LogRequests(rl, http.HandlerFunc(answerStreamStarting)), ready: make(chan struct{}), wait: StreamStartWait}
}

func (s *startingHandler) set(h http.Handler) {
	s.h.Store(&h)
	s.once.Do(func() { close(s.ready) })
}

func (s *startingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/v1/learned/stream" {
		t := time.NewTimer(s.wait)
		defer t.Stop()
		select {
		case <-s.ready:
			(*s.h.Load()).ServeHTTP(w, r)
		case <-t.C:
			s.fallback.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
		return
	}
	s.starting.ServeHTTP(w, r)
}

// answerStreamStarting answers a learned stream's request held through
// StreamStartWait: a 200 stream that ends at once, asking the client to
// reconnect a second later (retry: 1000).
func answerStreamStarting(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(": chronicle is starting; reconnect\nretry: 1000\n\n"))
}

// answerStarting answers 503 with Retry-After: 1 and {"status":
// "starting", "error": …}.
func answerStarting(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"status":"starting","error":"chronicle is starting: opening the projections and joining the processors' consumer group (after an instance was killed, joining waits for its group session to time out); retry"}` + "\n"))
}

// announce prints where the API answers.
func announce(ln net.Listener) {
	fmt.Fprintf(os.Stderr, "chronicle: HTTP API on http://%s (Ctrl-C to stop)\n", ln.Addr())
}

// startHTTP serves h on ln in the background; errc gets Serve's error.
func startHTTP(ln net.Listener, h http.Handler) (*http.Server, chan error) {
	srv := httpapi.NewHTTPServer(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	return srv, errc
}

// waitHTTP waits until ctx ends, then shuts srv down gracefully (at most
// ShutdownWait), or until srv fails.
func waitHTTP(ctx context.Context, srv *http.Server, errc chan error) error {
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownWait)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			// a request still running after ShutdownWait (an improve
			// waiting for its context) is cut: the stop was asked for,
			// so it is no failure of the process
			fmt.Fprintf(os.Stderr, "chronicle: requests still running after %s were cut at shutdown (%v)\n", ShutdownWait, err)
			_ = srv.Close()
		}
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		_ = srv.Close() // its open connections too, before the caller closes the pipeline
		return err
	}
}

// checkStandbys accepts --standby-replicas 0, or N > 0 with --brokers (a
// shared cluster: the embedded broker's one process has no other member to
// keep standbys of).
func checkStandbys(n int, brokers []string) error {
	switch {
	case n < 0:
		return usage(fmt.Errorf("--standby-replicas %d: must be ≥ 0", n))
	case n > 0 && len(brokers) == 0:
		return usage(fmt.Errorf("--standby-replicas %d: needs --brokers (standby replicas are copies of other instances' partitions on a shared Kafka cluster)", n))
	}
	return nil
}

// checkAdvertise accepts an empty --advertise (the listen address) or an
// absolute http(s) URL with a host.
func checkAdvertise(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return usage(fmt.Errorf("--advertise %q: %w", s, err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usage(fmt.Errorf("--advertise %q: must be an absolute http:// or https:// URL with a host, e.g. http://chronicle-1:8080", s))
	}
	// the members append a request's path and query to it: a path made
	// them ask for /chronicle/v1/sessions/…, and a query ended up in front
	// of the path (an SRE's walkthrough, 2026-11-30)
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return usage(fmt.Errorf("--advertise %q: scheme, host and port only (the other members add each request's path to it), e.g. http://chronicle-1:8080", s))
	}
	return nil
}
