package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/spf13/cobra"
)

// EvalReport is what `chronicle eval` prints.
type EvalReport struct {
	toolgraph.Report
	// Memories is the number of distinct memories the deterministic
	// extractor distils from the bundled sessions (after merging).
	Memories int `json:"memories"`
	// Extracted is the number of memories before merging duplicates.
	Extracted int `json:"memories_extracted"`
	// DuplicatesMerged = Extracted − Memories.
	DuplicatesMerged int `json:"duplicates_merged"`
	// MemoriesPerSession is Extracted / sessions.
	MemoriesPerSession float64 `json:"memories_per_session"`
	// SessionsWithMemory is the share of sessions with at least one memory.
	SessionsWithMemory float64 `json:"sessions_with_memory"`
	// PairRecallAt3 is, over failed sessions whose task has a successful
	// trial, the share where PAIR retrieval (offline USE lite model) puts a
	// memory distilled from a successful trial of the same task in its top
	// 3; PairRecallAt3Lexical the same with BM25 ranking only.
	PairRecallAt3        float64 `json:"pair_recall_at_3"`
	PairRecallAt3Lexical float64 `json:"pair_recall_at_3_lexical"`
	// PairRecallAt3Patterns ranks memories and coordination patterns
	// together, as the pair worker does (pair.Recall.WithPatterns).
	PairRecallAt3Patterns float64 `json:"pair_recall_at_3_with_patterns"`
	PairRecallSessions    int     `json:"pair_recall_sessions"`
	// PairRecall is the whole measurement: all cases, and the tuning and
	// report halves of the tasks (pair.RecallAt3), with BM25 queried by
	// the gap alone and by the goal-expanded query.
	PairRecall pair.Recall `json:"pair_recall"`
}

func evalCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "eval [--json]",
		Short: "Quality on the bundled tau-bench sessions: next-tool prediction (leave-one-task-out, against frequency and bigram baselines) and distillation",
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, err := taubench.SampleRecords()
			if err != nil {
				return err
			}
			rep, err := runEval(recs)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Printf("next-tool prediction, leave-one-task-out, %d predictions\n", rep.Predictions)
			fmt.Printf("  learned graph   top-1 %.3f  top-3 %.3f\n", rep.NextToolTop1, rep.NextToolTop3)
			fmt.Printf("  bigram          top-1 %.3f  top-3 %.3f\n", rep.BaselineBigramTop1, rep.BaselineBigramTop3)
			fmt.Printf("  frequency       top-1 %.3f  top-3 %.3f\n", rep.BaselineFrequencyTop1, rep.BaselineFrequencyTop3)
			fmt.Printf("distillation (deterministic), %d sessions\n", rep.Sessions)
			fmt.Printf("  memories %d distinct of %d extracted (%d duplicates merged), %.2f per session, %.1f%% of sessions with one\n",
				rep.Memories, rep.Extracted, rep.DuplicatesMerged, rep.MemoriesPerSession, 100*rep.SessionsWithMemory)
			fmt.Printf("PAIR retrieval recall@3, %d failed sessions whose task has a successful trial\n", rep.PairRecallSessions)
			fmt.Printf("  offline model (USE lite) %.3f   lexical baseline (BM25) %.3f   memories + coordination patterns %.3f\n",
				rep.PairRecallAt3, rep.PairRecallAt3Lexical, rep.PairRecallAt3Patterns)
			for _, h := range []struct {
				name string
				r    *pair.Recall
			}{{"tuning half", rep.PairRecall.Tuning}, {"report half", rep.PairRecall.Report}} {
				if h.r != nil {
					fmt.Printf("  %s (%d sessions): model %.3f   BM25 gap only %.3f   BM25 with goal %.3f   with patterns %.3f\n",
						h.name, h.r.Sessions, h.r.Model, h.r.Lexical, h.r.LexicalWithGoal, h.r.WithPatterns)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// runEval computes the report in process: the same learning, evaluation
// and extraction code the processors run, without Kafka.
func runEval(recs []taubench.Record) (EvalReport, error) {
	gr, err := toolgraph.EvaluateNextTool(recs)
	if err != nil {
		return EvalReport{}, err
	}
	rep := EvalReport{Report: gr}
	distinct := map[string]bool{}
	with := 0
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			return rep, err
		}
		in, err := flux.InputFromEvents(envs)
		if err != nil {
			return rep, err
		}
		mems, err := distill.Deterministic{}.Extract(context.Background(), distill.NewSession(in, flux.Evaluate(in)))
		if err != nil {
			return rep, err
		}
		if len(mems) > 0 {
			with++
		}
		for _, m := range mems {
			rep.Extracted++
			distinct[distill.MemoryID(envs[0].EffectiveScope(), m.Title, m.Content)] = true
		}
	}
	rep.Memories = len(distinct)
	rep.DuplicatesMerged = rep.Extracted - rep.Memories
	rep.MemoriesPerSession = float64(rep.Extracted) / float64(len(recs))
	rep.SessionsWithMemory = float64(with) / float64(len(recs))
	emb, err := embedder.NewUSELite()
	if err != nil {
		return rep, err
	}
	r, err := pair.RecallAt3(recs, emb)
	if err != nil {
		return rep, err
	}
	rep.PairRecallAt3, rep.PairRecallAt3Lexical, rep.PairRecallAt3Patterns, rep.PairRecallSessions = r.Model, r.Lexical, r.WithPatterns, r.Sessions
	rep.PairRecall = r
	return rep, nil
}
