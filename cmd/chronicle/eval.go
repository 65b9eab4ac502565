package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/chronicle-dev/chronicle/events/reflexion"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/toolsearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/spf13/cobra"
)

// EvalReport is what `chronicle eval` prints.
type EvalReport struct {
	toolgraph.Report
	// NextToolDomains is next-tool prediction on a second domain, the
	// ReAct actions (Search, Lookup, Finish) of the two bundled Reflexion
	// HotPotQA runs, leave-one-question-out against the same baselines
	// (toolgraph.EvaluateReflexionActions).
	NextToolDomains []toolgraph.DomainReport `json:"next_tool_domains"`
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
	// DAG compares the DAG builder's dependencies (tool schemas, outputs
	// learned from replies) with the data flow observed in the sessions:
	// per-edge precision and recall on the report half (dag.Report).
	DAG dag.Report `json:"dag_dependencies"`
	// Suggestions measures POST /v1/workflows/suggest leave-one-task-out:
	// the hybrid with k 1 and 3, semantic-only and graph-only with k 3
	// (suggest.Report).
	Suggestions []suggest.Report `json:"suggestions"`
	// ToolSearch measures GET /v1/tools/search?context_tools=… (the
	// route's toolsearch.Search) leave-one-task-out: hit@1, hit@3 and MRR
	// of the next tool called for semantic only, graph only and the hybrid
	// (toolsearch.Report).
	ToolSearch toolsearch.Report `json:"tool_search"`
	// Consensus (issue 12): the panel reducers on GPT-4's 100 Game of 24
	// samples per puzzle of 901–1000 (naive_standard, naive_cot), written
	// as events through the treesearch processor.
	Consensus []game24.ConsensusResult `json:"consensus"`
	// Panels (issue 12): three agents (the first 3 samples) vote after the
	// DiffProcessor auto-corrected their schema-invalid answers.
	Panels []game24.PanelResult `json:"panels"`
	// PairRevision is the coverage of the deterministic PAIR revision:
	// the share of the required writes failed sessions missed that its
	// tool sequence names, against the task's most frequent sequence
	// (pair.RevisionCoverage).
	PairRevision pair.Coverage `json:"pair_revision"`
	// Reflexion measures the multi-pass reasoning projection on the two
	// bundled Reflexion HotPotQA runs (with reflections, then the
	// baseline without): passes.RunReport, keys documented in the README.
	Reflexion []passes.RunReport `json:"reflexion"`
	// PairRecall is the whole measurement: all cases, and the tuning and
	// report halves of the tasks (pair.RecallAt3), with BM25 queried by
	// the gap alone and by the goal-expanded query.
	PairRecall pair.Recall `json:"pair_recall"`
}

func evalCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "eval [--json]",
		Example: `  # the quality report on the bundled data
  chronicle eval

  # as one JSON object, e.g. the next-tool prediction's top-1 accuracy with jq
  chronicle eval --json | jq .next_tool_top1`,
		Short: "Quality on the bundled data: next-tool prediction (leave-one-task-out, against frequency and bigram baselines; also on the Reflexion HotPotQA actions), distillation, PAIR retrieval and revision, DAG dependencies vs observed data flow, workflow suggestions, hybrid tool search, Game of 24 consensus and panels, Reflexion reasoning passes",
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, err := taubench.SampleRecords()
			if err != nil {
				return err
			}
			rep, err := runEval(recs)
			if err != nil {
				return err
			}
			if rep.Consensus, rep.Panels, err = evalConsensus(); err != nil { // issue 12
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Printf("next-tool prediction, leave-one-task-out, %d predictions\n", rep.Predictions)
			fmt.Printf("  learned graph   top-1 %.3f  top-3 %.3f\n", rep.NextToolTop1, rep.NextToolTop3)
			fmt.Printf("  + user message  top-1 %.3f  top-3 %.3f   (the user's last message before the call, text=)\n", rep.MessageTop1, rep.MessageTop3)
			fmt.Printf("  bigram          top-1 %.3f  top-3 %.3f\n", rep.BaselineBigramTop1, rep.BaselineBigramTop3)
			fmt.Printf("  frequency       top-1 %.3f  top-3 %.3f\n", rep.BaselineFrequencyTop1, rep.BaselineFrequencyTop3)
			for _, h := range []struct {
				name string
				a    toolgraph.Accuracy
			}{{"tuning half (even task ids)", rep.Tuning}, {"report half (odd task ids)", rep.Held}, {"calls with a previous call", rep.WithContext}} {
				fmt.Printf("  %-28s %d predictions: model top-1 %.3f top-3 %.3f, with the message %.3f / %.3f, bigram %.3f / %.3f\n", h.name, h.a.Predictions,
					h.a.NextToolTop1, h.a.NextToolTop3, h.a.MessageTop1, h.a.MessageTop3, h.a.BaselineBigramTop1, h.a.BaselineBigramTop3)
			}
			for _, d := range rep.NextToolDomains {
				fmt.Printf("next-tool prediction, %s, leave-one-question-out, %d predictions\n", d.Domain, d.Predictions)
				fmt.Printf("  learned graph   top-1 %.3f  top-3 %.3f   (report half %.3f / %.3f)\n", d.NextToolTop1, d.NextToolTop3, d.Held.NextToolTop1, d.Held.NextToolTop3)
				fmt.Printf("  bigram          top-1 %.3f  top-3 %.3f   (report half %.3f / %.3f)\n", d.BaselineBigramTop1, d.BaselineBigramTop3, d.Held.BaselineBigramTop1, d.Held.BaselineBigramTop3)
				fmt.Printf("  frequency       top-1 %.3f  top-3 %.3f\n", d.BaselineFrequencyTop1, d.BaselineFrequencyTop3)
			}
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
			d := rep.DAG
			fmt.Printf("DAG builder dependencies vs observed data flow, rule %s chosen on %d sessions (even task ids), measured on %d (odd)\n", d.Rule, d.LearnSessions, d.ReportSessions)
			fmt.Printf("  per edge: precision %.3f [%.3f, %.3f]  recall %.3f [%.3f, %.3f] (95%% bootstrap)  %d predicted, %d observed, %d both\n",
				d.Precision, d.PrecisionCI95[0], d.PrecisionCI95[1], d.Recall, d.RecallCI95[0], d.RecallCI95[1], d.Predicted, d.Observed, d.Both)
			fmt.Printf("  flow instances covered by a predicted edge %.3f of %d\n", d.FlowRecall, d.Flows)
			fmt.Println("workflow suggestions, leave-one-task-out (intent = task, context = first call): recall / precision of the used tools")
			for _, sr := range rep.Suggestions {
				fmt.Printf("  %-13s k=%d  %d sessions  recall %.3f  precision %.3f  speculative on a write %d\n", sr.Variant, sr.K, sr.Sessions, sr.All.Recall, sr.All.Precision, sr.SpeculativeWrites)
				for _, m := range []string{suggest.ModeExplicitRequired, suggest.ModeSuggestion, suggest.ModeSpeculative} {
					if ms, ok := sr.ByMode[m]; ok {
						fmt.Printf("    %-22s %3d  recall %.3f  precision %.3f\n", m, ms.Suggestions, ms.Recall, ms.Precision)
					}
				}
			}
			ts := rep.ToolSearch
			fmt.Printf("hybrid tool search (GET /v1/tools/search with context_tools), %s: %d queries over %d tasks, top %d, mean alpha %.3f (%d cold-start), target among the candidates %.3f\n",
				ts.Split, ts.Queries, ts.Tasks, ts.Limit, ts.MeanAlpha, ts.ColdStart, ts.InCandidates)
			for _, v := range []struct {
				name string
				s    toolsearch.Scores
			}{{"semantic only", ts.Semantic}, {"graph only", ts.Graph}, {"hybrid", ts.Hybrid}} {
				fmt.Printf("  %-13s hit@1 %.3f  hit@3 %.3f  MRR %.3f\n", v.name, v.s.HitAt1, v.s.HitAt3, v.s.MRR)
			}
			for _, c := range rep.Consensus {
				fmt.Printf("consensus on Game of 24, %s, %d puzzles × %d GPT-4 samples (%.1f%% of samples correct, best of %d solves %d)\n",
					c.Dataset, c.Puzzles, c.Samples, 100*c.SampleAccuracy, c.Samples, c.BestOfN)
				fmt.Printf("  majority_vote %d   code_consensus %d   judge_selection %d\n", c.MajorityVote, c.CodeConsensus, c.JudgeSelection)
			}
			for _, c := range rep.Panels {
				fmt.Printf("panel of %d agents, %s, %d puzzles: %d schema-invalid answers, %d auto-corrected by a JSON Patch; majority vote solves %d without correction, %d with\n",
					c.Agents, c.Dataset, c.Puzzles, c.SchemaInvalid, c.Corrected, c.SolvedWithoutCorrection, c.SolvedWithCorrection)
			}
			fmt.Printf("PAIR deterministic revision, %d failed sessions whose task has a successful trial: %d missed required writes\n", rep.PairRevision.Sessions, rep.PairRevision.MissedWrites)
			fmt.Printf("  named by the revision's tool sequence %.3f   by the task's most frequent sequence %.3f\n", rep.PairRevision.Revision, rep.PairRevision.Baseline)
			for _, r := range rep.Reflexion {
				fmt.Printf("reasoning passes, Reflexion HotPotQA run %s: %d questions, %d passes\n", r.Run, r.Questions, r.Passes)
				fmt.Printf("  success curve (meets_criteria per pass) %v, log %v\n", r.SuccessCurve, r.LogCurve)
				fmt.Printf("  evaluator agreement %.3f (plain string equality %.3f)\n", r.Agreement, r.StringEqualityAgreement)
				fmt.Printf("  convergence → correct: precision %.3f recall %.3f   (called Finish: precision %.3f recall %.3f)\n",
					r.Convergence.Precision, r.Convergence.Recall, r.Finished.Precision, r.Finished.Recall)
				fmt.Printf("  converged and answer stable → correct: precision %.3f recall %.3f\n", r.ConvergedStable.Precision, r.ConvergedStable.Recall)
				if rr := r.Reflections; rr != nil {
					fmt.Printf("  reflection recall@3 on %d report questions: model %.3f, BM25 %.3f, alpha %.1f tuned on %d other questions %.3f\n",
						rr.ReportCases, rr.Model, rr.Lexical, rr.Alpha, rr.TuneCases, rr.Tuned)
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
	for _, name := range []string{reflexion.RunReflexion, reflexion.RunBase} {
		run, err := reflexion.Bundled(name)
		if err != nil {
			return rep, err
		}
		d, err := toolgraph.EvaluateReflexionActions(run, name)
		if err != nil {
			return rep, err
		}
		rep.NextToolDomains = append(rep.NextToolDomains, d)
	}
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
	if rep.DAG, err = dag.Evaluate(recs); err != nil {
		return rep, err
	}
	if rep.Suggestions, err = suggest.Evaluate(context.Background(), recs, emb); err != nil {
		return rep, err
	}
	if rep.ToolSearch, err = evalToolSearch(recs, emb); err != nil {
		return rep, err
	}
	if rep.PairRevision, err = pair.RevisionCoverage(recs, emb); err != nil {
		return rep, err
	}
	for _, name := range []string{reflexion.RunReflexion, reflexion.RunBase} {
		run, err := reflexion.Bundled(name)
		if err != nil {
			return rep, err
		}
		rr, err := passes.EvaluateReflexion(run, name, emb)
		if err != nil {
			return rep, err
		}
		rep.Reflexion = append(rep.Reflexion, rr)
	}
	rep.PairRecall = r
	return rep, nil
}

// evalToolSearch measures the hybrid tool search with a scratch store for
// the search index's vector cache.
func evalToolSearch(recs []taubench.Record, emb embedder.Embedder) (toolsearch.Report, error) {
	dir, err := os.MkdirTemp("", "chronicle-eval-toolsearch-")
	if err != nil {
		return toolsearch.Report{}, err
	}
	defer os.RemoveAll(dir)
	st, err := projections.Open(dir, projections.Options{})
	if err != nil {
		return toolsearch.Report{}, err
	}
	defer st.Close()
	return toolsearch.Evaluate(context.Background(), recs, emb, st)
}

// evalConsensus measures the consensus reducers and the three-agent
// panels in a temporary store.
func evalConsensus() ([]game24.ConsensusResult, []game24.PanelResult, error) {
	dir, err := os.MkdirTemp("", "chronicle-eval-consensus-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	st, err := projections.Open(dir, projections.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	var out []game24.ConsensusResult
	var panels []game24.PanelResult
	for _, d := range []struct{ file, name string }{{game24.NaiveStandard, "naive_standard"}, {game24.NaiveCoT, "naive_cot"}} {
		r, err := game24.MeasureConsensus(st, d.file, d.name, 0)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
		pr, err := game24.MeasurePanel(st, d.file, d.name, 3, 0)
		if err != nil {
			return nil, nil, err
		}
		panels = append(panels, pr)
	}
	return out, panels, nil
}
