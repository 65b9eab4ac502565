package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/spf13/cobra"
)

// totFlags are the flags of `chronicle import tot`.
type totFlags struct {
	data, kafkaListen, scope, brokers string
	asJSON                            bool
}

func (f *totFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.data, "data", "./data", "data directory of the embedded broker and the projections (the search runner reads the frontier back from them)")
	cmd.Flags().StringVar(&f.kafkaListen, "kafka-listen", "127.0.0.1:0", "address of the embedded broker")
	cmd.Flags().StringVar(&f.scope, "scope", events.DefaultScope, "scope of the searches")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object")
}

// ToTImport is the summary of `chronicle import tot`.
type ToTImport struct {
	Puzzles int `json:"puzzles"`
	// Solved: searches whose head of the open set after ToT's steps is a
	// correct answer; ToTFirst: ToT's first output correct, as logged.
	Solved   int `json:"solved"`
	ToTFirst int `json:"tot_solved_first_output"`
	// Levels whose expanded nodes are exactly the ys ToT expanded there,
	// of all levels.
	LevelsMatching int `json:"levels_matching_tot"`
	Levels         int `json:"levels"`
	Nodes          int `json:"nodes"`
	EvaluatorCalls int `json:"evaluator_calls"`
}

// importToT writes a Tree of Thoughts log ("bundled": the GPT-4 run on
// puzzles 901–1000) as one search per puzzle: the runner replays ToT's
// proposals and values (game24.ToTLog) through the broker and the frontier
// projection, so the search can be replayed and audited like any other.
func importToT(ctx context.Context, file string, f totFlags) error {
	var runs []game24.ToTRun
	var err error
	if file == "bundled" {
		runs, err = game24.BundledToT()
	} else {
		var fh *os.File
		if fh, err = os.Open(file); err == nil {
			runs, err = game24.LoadToT(fh)
			fh.Close()
			if err != nil {
				// the file and the shape, not a Go type alone (a walkthrough)
				err = fmt.Errorf("%s: %w (expected ToT's JSON log: an array of runs, each with idx and steps)", file, err)
			}
		} else if os.IsNotExist(err) {
			err = fmt.Errorf("%s: no such file, and not the bundled log's name (bundled)", file)
		}
	}
	if err != nil {
		return err
	}
	if !events.ValidScope(f.scope) {
		return usage(fmt.Errorf("--scope: %s", events.ScopeReason(f.scope)))
	}
	var brokers []string
	if f.brokers != "" {
		brokers = splitBrokers(f.brokers)
	}
	// a running serve holds the processors' group, so this command would
	// never see its own steps: refused at once, as search game24 does
	// (it waited 33 s and blamed dead letters; found by a new user's
	// walkthrough)
	if err := groupIsFree(ctx, brokers); err != nil {
		return err
	}
	// every run is read before anything is opened: a log without steps
	// (ToT's naive samples) left an empty 71 MB data directory behind,
	// which digest and inspect take for a real, empty state (a new user's
	// walkthrough, 2026-11-30)
	logs := make([]*game24.ToTLog, len(runs))
	for i, run := range runs {
		if logs[i], err = game24.NewToTLog(run); err != nil {
			return fmt.Errorf("%s: search tot-%d: %w (a Tree of Thoughts BFS log, as ToT's propose/value runs write it, is expected)", file, run.Idx+1, err)
		}
	}
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: f.data, Brokers: brokers, KafkaListen: f.kafkaListen,
		Processors: []processors.Processor{treesearch.Processor{}}, Embedder: noEmbedder{}, OnRelayError: logRelayError})
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		return err
	}
	r, err := treesearch.NewRunner(p.Store, p.Producer, nil, nil)
	if err != nil {
		return err
	}
	var sum ToTImport
	bar := newBar(len(runs), "import tot", "runs")
	for i, run := range runs {
		l := logs[i]
		r.Proposer, r.Evaluator = l, l
		key, err := r.Start(ctx, treesearch.StartRequest{Scope: f.scope, SearchID: fmt.Sprintf("tot-%d", run.Idx+1), Goal: game24.Goal(l.Puzzle), RootState: "", Config: game24.ToTConfig(run), Model: "gpt-4 (recorded, temperature 0.7)"})
		if errors.Is(err, treesearch.ErrSetupDiffers) {
			return fmt.Errorf("%w; import it with another %s", err, otherSearchFlags(brokers))
		}
		if err != nil {
			return searchInterrupted(ctx, err)
		}
		s, err := r.Run(ctx, key)
		if err != nil {
			return searchInterrupted(ctx, err)
		}
		sum.Puzzles++
		if s.Outcome == events.SearchSolved {
			sum.Solved++
		}
		if len(run.Infos) > 0 && run.Infos[0].R == 1 {
			sum.ToTFirst++
		}
		sum.EvaluatorCalls += s.Counts.EvaluatorCalls
		nodes, _, err := treesearch.Nodes(p.Store, key, 0, "")
		if err != nil {
			return err
		}
		sum.Nodes += len(nodes)
		expanded := map[int]map[string]bool{}
		for _, n := range nodes {
			if n.Status == treesearch.NodeExpanded {
				if expanded[n.Depth] == nil {
					expanded[n.Depth] = map[string]bool{}
				}
				expanded[n.Depth][n.State] = true
			}
		}
		for _, st := range run.Steps {
			sum.Levels++
			want := map[string]bool{}
			for _, y := range st.Ys {
				want[y] = true
			}
			if sameSet(want, expanded[st.Step]) {
				sum.LevelsMatching++
			}
		}
		_ = bar.Add(1)
	}
	if f.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	fmt.Printf("imported %d Tree of Thoughts searches (%d nodes): %d solved (ToT's first output: %d); %d of %d levels expanded exactly ToT's nodes\n",
		sum.Puzzles, sum.Nodes, sum.Solved, sum.ToTFirst, sum.LevelsMatching, sum.Levels)
	return nil
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
