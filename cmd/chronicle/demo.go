package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// Summary is what the demo prints (as text, or with --json as one object).
type Summary struct {
	Sessions            int               `json:"sessions"`
	Events              int               `json:"events"`
	Successes           int               `json:"successes"`
	Failures            int               `json:"failures"`
	Evaluations         int               `json:"evaluations"`
	ByRecommendation    map[string]int    `json:"evaluations_by_recommendation"`
	EvaluationAgreement float64           `json:"evaluation_agreement"`
	AgreementSessions   int               `json:"agreement_sessions"`
	Memories            memories.Stats    `json:"memories"`
	Patterns            PatternStats      `json:"coordination_patterns"`
	Digest              string            `json:"digest"`
	Projections         map[string]string `json:"projection_digests"`
	Seconds             float64           `json:"seconds"`
	DataDir             string            `json:"data_dir"`
}

// lettersHint is what a demo that did not catch up adds to its error: how
// many records the processors dead-lettered so far and the last one's
// reason (its scope's newest), which is usually why (a model endpoint answering 500 to every
// distillation dead-lettered each session, and the demo said only
// "context deadline exceeded": an LLM-endpoint walkthrough); "" when none.
func lettersHint(p *pipeline.Pipeline, data string) string {
	list, _, err := deadletter.ListScoped(p.Store, nil, nil, 1000, "", "")
	if err != nil || len(list) == 0 {
		return ""
	}
	n := fmt.Sprint(len(list))
	if len(list) == 1000 {
		n = "1000 or more"
	}
	newest := list[0] // a scope's newest first
	return fmt.Sprintf("; %s records were dead-lettered so far (the newest by %s: %s); chronicle deadletter list --data %s lists them", n, newest.Handler, newest.Reason, data)
}

func demoCmd() *cobra.Command {
	var c commonFlags
	var asJSON, serve bool
	var httpAddr, requestLog string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the pipeline on the bundled 200 tau-bench airline sessions and print a summary",
		Example: `  # the bundled sessions into a new directory, then the summary (digest, evaluations, memories)
  chronicle demo --data ./demo

  # the summary as one JSON object, then keep serving the HTTP API on the result
  chronicle demo --data ./demo2 --json --serve --http 127.0.0.1:8080

  # beside a running chronicle serve, which holds 127.0.0.1:9092: the demo's broker on a free port
  chronicle demo --data ./demo3 --kafka-listen 127.0.0.1:0`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			start := time.Now()
			vs, err := c.vectorStore(ctx)
			if err != nil {
				return err
			}
			config := func(pair bool) pipeline.Config {
				return pipeline.Config{VectorStore: vs, DataDir: c.data, Brokers: c.brokerList(), KafkaListen: c.kafkaListen, Partitions: c.partitions, ReplicationFactor: c.replication, MinInsyncReplicas: c.minInsync, LLM: c.llm(), OnRelayError: logRelayError, OnSearchError: logSearchError, PAIR: pair}
			}
			var p *pipeline.Pipeline // the one running when the command returns
			defer func() {
				if p != nil {
					p.Close()
				}
			}()
			// the pair worker (PAIR retrieval, issue 13) runs under --serve
			// only after the summary: its retrievals read the memory bank
			// while the processors are still filling it, so with it running
			// the digest printed moved from run to run
			made := noteData(c.data) // removed when the start fails
			if p, err = pipeline.Start(ctx, config(false)); err != nil {
				return made.failedStart(startInterrupted(ctx, err, "no event was imported"))
			}
			if !asJSON {
				describe(p)
			}
			recs, err := loadTaubench("sample")
			if err != nil {
				return err
			}
			if _, err := importTaubench(ctx, p.Producer, recs, newBar(len(recs), "importing sessions", "sessions")); err != nil {
				return interrupted(ctx, err)
			}
			wctx, wcancel := context.WithTimeout(ctx, timeout)
			defer wcancel()
			if err := p.WaitCaughtUp(wctx, lagBar()); err != nil {
				if ctx.Err() != nil {
					// "waiting for the processors to catch up (--timeout
					// 5m0s): context canceled" read as the wait running out
					return interrupted(ctx, fmt.Errorf("waiting for the processors to catch up: %w", err))
				}
				return fmt.Errorf("waiting for the processors to catch up (--timeout %v): %w%s", timeout, err, lettersHint(p, c.data))
			}
			sum, err := summarise(p.Store, c.data, time.Since(start))
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(sum); err != nil {
					return err
				}
			} else {
				printSummary(sum)
			}
			if serve {
				// the same directory again, now with the pair worker, which
				// retrieves for the sessions evaluated below 95 from the whole
				// bank (as serve does)
				err := p.Close()
				if p = nil; err != nil {
					return err
				}
				cfg := config(true)
				if _, port, err := net.SplitHostPort(httpAddr); err == nil && port != "0" {
					// the member's URL in the group, as serve advertises it
					// (GET /v1/cluster showed an empty url, and a cluster
					// joined with --brokers could not forward to it: a
					// README-claims walkthrough, 2026-11-30)
					held := &processors.Holdings{}
					cfg.Holdings, cfg.SubscriberOpts = held, httpapi.MemberOpts("http://"+httpAddr, held)
				}
				if p, err = pipeline.Start(ctx, cfg); err != nil {
					return startInterrupted(ctx, err, "the demo's events are in the log and its summary was printed, but nothing was served")
				}
				tf, err := loadTokens("", httpAddr)
				if err != nil {
					return err
				}
				rl, err := requestLogger(requestLog)
				if err != nil {
					return err
				}
				useLogFormat(rl)
				return serveHTTP(ctx, &httpapi.Server{P: p, Tokens: tf, RequestLog: rl, Version: serverVersion()}, httpAddr)
			}
			return nil
		},
	}
	c.register(cmd)
	c.registerKafkaListen(cmd)
	c.registerTopicReplicas(cmd)
	c.registerLLM(cmd)
	c.registerSearch(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	cmd.Flags().BoolVar(&serve, "serve", false, "keep serving the HTTP API afterwards")
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:8080", "HTTP API address with --serve")
	registerRequestLog(cmd, &requestLog)
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the processors to catch up")
	return cmd
}

// lagBar shows the remaining lag while the processors catch up.
func lagBar() func(int64) {
	var bar *progressbar.ProgressBar
	var max int64
	return func(lag int64) {
		if bar == nil {
			max = lag
			bar = progressBar(max, "processors catching up", "records")
		}
		if lag > max {
			max = lag
			bar.ChangeMax64(max)
		}
		_ = bar.Set64(max - lag)
		if lag == 0 {
			_ = bar.Finish()
		}
	}
}

func summarise(store *projections.Store, data string, took time.Duration) (Summary, error) {
	st, err := sessions.ComputeStats(store)
	if err != nil {
		return Summary{}, err
	}
	d, err := store.Digest()
	if err != nil {
		return Summary{}, err
	}
	ms, err := memories.ComputeStats(store)
	if err != nil {
		return Summary{}, err
	}
	var ps PatternStats
	if err := sessions.EachPattern(store, func(p sessions.Pattern) bool {
		ps.Patterns++
		if p.SucceededCount > 0 {
			ps.Succeeded++
		}
		if p.SessionCount > 1 {
			ps.Shared++
		}
		return true
	}); err != nil {
		return Summary{}, err
	}
	return Summary{
		Memories: ms, Patterns: ps,
		Sessions: st.Sessions, Events: st.Events, Successes: st.Successes, Failures: st.Failures,
		Evaluations: st.Evaluations, ByRecommendation: st.ByRecommendation,
		EvaluationAgreement: st.Agreement, AgreementSessions: st.Compared,
		Digest: d.All, Projections: d.Projections, Seconds: took.Seconds(), DataDir: data,
	}, nil
}

// PatternStats counts the coordination patterns of the sessions
// projection: all, those with a session that met its criteria, those
// followed by more than one session.
type PatternStats struct {
	Patterns  int `json:"patterns"`
	Succeeded int `json:"with_success"`
	Shared    int `json:"shared"`
}

func printSummary(s Summary) {
	fmt.Printf("Chronicle demo — tau-bench airline (GPT-4o), data in %s\n", s.DataDir)
	fmt.Printf("  sessions            %d (%d successes, %d failures by tau-bench reward)\n", s.Sessions, s.Successes, s.Failures)
	fmt.Printf("  events              %d\n", s.Events)
	fmt.Printf("  evaluations         %d\n", s.Evaluations)
	recs := make([]string, 0, len(s.ByRecommendation))
	for r := range s.ByRecommendation {
		recs = append(recs, r)
	}
	sort.Strings(recs)
	for _, r := range recs {
		fmt.Printf("    %-18s %d\n", r, s.ByRecommendation[r])
	}
	fmt.Printf("  agreement           %.1f%% of %d sessions: evaluator meets_criteria ⇔ tau-bench reward 1\n", 100*s.EvaluationAgreement, s.AgreementSessions)
	fmt.Printf("  memories            %d distilled from %d sessions (%d duplicates merged)\n", s.Memories.Distilled, s.Memories.SessionsWithMemory, s.Memories.DuplicatesMerged)
	fmt.Printf("  coordination        %d tool-sequence patterns (%d with a success, %d followed by several sessions)\n", s.Patterns.Patterns, s.Patterns.Succeeded, s.Patterns.Shared)
	fmt.Printf("  projection digest   %s\n", s.Digest)
	fmt.Printf("  seconds             %.2f\n", s.Seconds)
}
