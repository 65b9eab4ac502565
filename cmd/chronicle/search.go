package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func searchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "search", Short: "Durable tree searches (quota-aware Beam-A*) whose every step is an event"}
	cmd.AddCommand(searchGame24Cmd())
	return cmd
}

// Game24Summary is the result of `chronicle search game24 --json`.
type Game24Summary struct {
	Proposer string `json:"proposer"`
	Beam     int    `json:"beam"`
	Puzzles  int    `json:"puzzles"`
	Solved   int    `json:"solved"`
	// Outcomes counts the searches by how they ended (search.completed.v1's
	// outcome: solved, exhausted, quota_exhausted, …): a run whose quota
	// stopped every search said only "solved 0" before (a walkthrough,
	// 2026-11-30).
	Outcomes       map[string]int `json:"outcomes"`
	NodesExpanded  int            `json:"nodes_expanded"`
	NodesGenerated int            `json:"nodes_generated"`
	EvaluatorCalls int            `json:"evaluator_calls"`
	DedupHits      int            `json:"dedup_hits"`
	HardFailed     int            `json:"hard_failed"`
	Prefiltered    int            `json:"prefiltered"`
	Unexpandable   int            `json:"unexpandable"`
	TokensReserved int64          `json:"tokens_reserved"`
	TokensUsed     int64          `json:"tokens_used"`
	TokensRefunded int64          `json:"tokens_refunded"`
	// QuotaRefused is the largest reservation (tokens) a search's quota
	// refused, among the searches that ended quota_exhausted (0: none):
	// what --quota must at least allow for one more expansion. Before, a
	// --quota below one expansion's estimate ended every search without a
	// hint of the size (a walkthrough).
	QuotaRefused int64   `json:"quota_refused,omitempty"`
	Seconds      float64 `json:"seconds"`
	// Fingerprint is a SHA-256 over every search's Fingerprint (frontier,
	// closed set, nodes, result; no wall-clock times), in rank order.
	Fingerprint string `json:"fingerprint"`
	// Baseline: plain breadth-first search on the same proposer and checks
	// (no evaluator, no beam), in memory.
	BFS *BFSSummary `json:"breadth_first,omitempty"`
	// Reference: the Tree of Thoughts run these proposals come from (its
	// own breadth-first search, b = 5), as logged, on the ToTLogged
	// puzzles of the range its log covers (ranks 901–1000): outside them
	// its 0s mean "not run", not "failed" (the text says so; before, a
	// range of other ranks read "solved 0": a walkthrough's finding).
	ToTLogged int `json:"tot_puzzles_logged"`
	ToTAnyOf5 int `json:"tot_solved_any_of_5"`
	ToTFirst  int `json:"tot_solved_first_output"`
}

// BFSSummary is the breadth-first baseline.
type BFSSummary struct {
	Solved        int `json:"solved"`
	NodesExpanded int `json:"nodes_expanded"`
	Unexpandable  int `json:"unexpandable"`
	// On the puzzles both searches solve: nodes each expanded.
	BothSolved          int `json:"both_solved"`
	BeamAStarOnBoth     int `json:"beam_a_star_nodes_expanded_on_both"`
	BreadthFirstOnBoth  int `json:"breadth_first_nodes_expanded_on_both"`
	BeamAStarOnlySolved int `json:"beam_a_star_only_solved"`
	BFSOnlySolved       int `json:"breadth_first_only_solved"`
}

func searchGame24Cmd() *cobra.Command {
	var c commonFlags
	var proposer, scope, lockFile string
	var beam, from, to int
	var quota int64
	var asJSON, baseline bool
	cmd := &cobra.Command{
		Use:   "game24",
		Short: "Beam-A* on Game of 24 puzzles (ranks 901–1000 of 24.csv) through the pipeline: every expansion an event, the frontier a projection",
		Long: `Runs one search per puzzle through the embedded broker and the treesearch projection.
--proposer arithmetic: the exhaustive arithmetic proposer and the objective evaluator (24 reachable).
--proposer recorded:   GPT-4's proposals and values from the Tree of Thoughts run (propose1_value3_greedy5),
                       with the objective pre-filter; a node outside the recorded tree cannot be expanded.
--proposer llm:        a chat model over --llm-url (any OpenAI-compatible endpoint) with Tree of Thoughts'
                       Game of 24 prompts, goal-pinned, temperature 0: proposals and 3 value samples per
                       candidate; every answer is in the log (search.node.expanded.v1), so a replay never
                       calls the model. No breadth-first baseline (it would call the model for every node).
Searches already in --data are not run again: an interrupted run resumes where its projection stands.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if beam < 1 {
				return usage(fmt.Errorf("--beam: %d, must be ≥ 1", beam))
			}
			// checked before anything starts, naming the flag (a negative
			// quota failed after the broker started, as the event's
			// /data/config/quota_tokens; --from -5 ran ranks 1–2 and said
			// "ranks -5–2": found by a new user's walkthrough)
			if quota < 0 {
				return usage(fmt.Errorf("--quota: %d, must be ≥ 0 (0: none)", quota))
			}
			if from < 1 || to < from {
				return usage(fmt.Errorf("--from %d --to %d: ranks start at 1 and --to may not be below --from", from, to))
			}
			if !events.ValidScope(scope) {
				return usage(fmt.Errorf("--scope: %s", events.ScopeReason(scope)))
			}
			var prop treesearch.Proposer
			var eval treesearch.Evaluator
			var model string // the chat model, recorded in search.started.v1
			switch proposer {
			case "arithmetic":
				prop, eval = game24.Arithmetic{}, game24.Arithmetic{}
			case "recorded":
				r := &game24.Recorded{}
				prop, eval = r, r
			case "llm":
				lc := c.llm()
				if lc == nil {
					return usage(fmt.Errorf("--proposer llm: give the model's endpoint with --llm-url and --llm-model"))
				}
				lc.OnRetry = func(err error, wait time.Duration) {
					// one line per failed attempt: a hung endpoint kept the
					// command silent for three timeouts (a walkthrough)
					fmt.Fprintf(os.Stderr, "search: model %s: %v; trying again in %v\n", lc.Model, err, wait.Round(time.Millisecond))
				}
				client, err := distill.NewLLM(*lc)
				if err != nil {
					return usage(fmt.Errorf("--proposer llm: %w", llmFlagError(err)))
				}
				l := &game24.LLM{Client: client}
				prop, eval, model = l, l, lc.Model
				if cmd.Flags().Changed("baseline") && baseline {
					return usage(fmt.Errorf("--baseline: the breadth-first baseline would call the model for every node it generates; not with --proposer llm"))
				}
				baseline = false
			default:
				return usage(fmt.Errorf("--proposer: %q, want arithmetic, recorded or llm", proposer))
			}
			if proposer != "llm" {
				for _, f := range []string{"llm-url", "llm-model", "llm-rate", "llm-key-env"} {
					if cmd.Flags().Changed(f) {
						// --llm-rate and --llm-key-env were taken silently (a re-test, 2026-11-30)
						return usage(fmt.Errorf("--%s: only --proposer llm calls a model (--proposer %s does not)", f, proposer))
					}
				}
			}
			if lockFile != "" { // refuse before starting anything
				frozen, err := readLock(lockFile)
				if err != nil {
					return err
				}
				cfg := game24.Config(beam)
				cfg.QuotaTokens = quota
				if err := treesearch.VerifyLock(frozen, treesearch.SolverLock(frozen.SearchID, cfg, model, prop, eval)); err != nil {
					return err
				}
			}
			puzzles, err := game24.Puzzles(from, to)
			if err != nil {
				return err
			}
			if len(puzzles) == 0 {
				return usage(fmt.Errorf("--from %d --to %d: no puzzle of 24.csv in that rank range", from, to))
			}
			if last := puzzles[len(puzzles)-1].Rank; last < to {
				// said, not silently cut (a walkthrough)
				fmt.Fprintf(os.Stderr, "chronicle: warning: --to %d: 24.csv ends at rank %d; searching %d–%d\n", to, last, puzzles[0].Rank, last)
			}
			if proposer == "recorded" && (from < 901 || to > 1000) {
				// the recording holds ToT's puzzles only: others came out
				// as 0 solved, every one "unexpandable" (a walkthrough)
				return usage(fmt.Errorf("--proposer recorded: --from %d --to %d: the recorded Tree of Thoughts log covers puzzles 901–1000 only (game24.ToTFile); use --proposer arithmetic for others", from, to))
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			if err := groupIsFree(ctx, c.brokerList()); err != nil {
				return err
			}
			start := time.Now()
			p, err := pipeline.Start(ctx, pipeline.Config{DataDir: c.data, Brokers: c.brokerList(), KafkaListen: c.kafkaListen, Partitions: c.partitions,
				Processors: []processors.Processor{treesearch.Processor{}}, Embedder: noEmbedder{}, OnRelayError: logRelayError})
			if err != nil {
				return err
			}
			defer p.Close()
			// resume: the projection catches up with the log before the runner reads it
			fmt.Fprintln(os.Stderr, "catching up")
			if err := p.WaitCaughtUp(ctx, nil); err != nil {
				return err
			}
			r, err := treesearch.NewRunner(p.Store, p.Producer, prop, eval)
			if err != nil {
				return err
			}
			cfg := game24.Config(beam)
			cfg.QuotaTokens = quota
			sum := Game24Summary{Proposer: proposer, Beam: beam, Puzzles: len(puzzles)}
			bar := newBar(len(puzzles), "searching", "puzzles")
			keys := make([]string, len(puzzles))
			for i, pz := range puzzles {
				id := fmt.Sprintf("game24-%s-w%d-%d", proposer, beam, pz.Rank)
				key, err := r.Start(ctx, treesearch.StartRequest{Scope: scope, SearchID: id, Goal: game24.Goal(pz.Numbers), RootState: pz.Numbers, Config: cfg, Model: model})
				if errors.Is(err, treesearch.ErrSetupDiffers) {
					// the command names its searches itself: say which of
					// its flags picks another (a walkthrough read "another
					// search id", which no flag sets)
					return fmt.Errorf("%w; with search game24, run it with another %s", err, otherSearchFlags(c.brokerList()))
				}
				if err != nil {
					return searchInterrupted(ctx, err)
				}
				if s, _, err := treesearch.Get(p.Store, key); err == nil && s.Current != nil {
					fmt.Fprintf(os.Stderr, "\nresuming search %s: expansion %d of node %s was in flight\n", key, s.Current.N, s.Current.NodeID)
				}
				if _, err := r.Run(ctx, key); err != nil && !errors.Is(err, treesearch.ErrPaused) {
					return searchInterrupted(ctx, err)
				}
				keys[i] = key
				_ = bar.Add(1)
			}
			solved := make([]bool, len(puzzles))
			expanded := make([]int, len(puzzles))
			fp := sha256.New()
			for i, key := range keys {
				s, _, err := treesearch.Get(p.Store, key)
				if err != nil {
					return err
				}
				if expr, ok := game24.ParseAnswer(s.Answer); s.Outcome == events.SearchSolved && ok && game24.CheckAnswer(puzzles[i].Numbers, expr) == "" {
					solved[i] = true
					sum.Solved++
				}
				if sum.Outcomes == nil {
					sum.Outcomes = map[string]int{}
				}
				sum.Outcomes[cmp.Or(string(s.Outcome), s.Status)]++
				expanded[i] = s.Expansions
				sum.NodesExpanded += s.Expansions
				sum.NodesGenerated += s.Counts.Nodes
				sum.EvaluatorCalls += s.Counts.EvaluatorCalls
				sum.DedupHits += s.Counts.Duplicates
				sum.HardFailed += s.Counts.HardFailed
				sum.Prefiltered += s.Counts.Prefiltered
				sum.Unexpandable += s.Counts.Unexpandable
				sum.TokensReserved += s.Quota.Reserved
				sum.TokensUsed += s.Quota.Used
				sum.TokensRefunded += s.Quota.Refunded
				sum.QuotaRefused = max(sum.QuotaRefused, s.Quota.Refused)
				f, err := treesearch.Fingerprint(p.Store, key)
				if err != nil {
					return err
				}
				fp.Write([]byte(f))
			}
			sum.Fingerprint = hex.EncodeToString(fp.Sum(nil))
			if baseline {
				b := &BFSSummary{}
				for i, pz := range puzzles {
					res, err := treesearch.BreadthFirst(ctx, game24.Goal(pz.Numbers), pz.Numbers, cfg.MaxDepth, cfg.K, prop, eval,
						func(c treesearch.Candidate) bool { return strings.HasPrefix(c.State, "answer:") })
					if err != nil {
						return err
					}
					b.NodesExpanded += res.Expansions
					b.Unexpandable += res.Unexpandable
					switch {
					case res.Solved && solved[i]:
						b.Solved++
						b.BothSolved++
						b.BeamAStarOnBoth += expanded[i]
						b.BreadthFirstOnBoth += res.Expansions
					case res.Solved:
						b.Solved++
						b.BFSOnlySolved++
					case solved[i]:
						b.BeamAStarOnlySolved++
					}
				}
				sum.BFS = b
			}
			if runs, err := game24.BundledToT(); err == nil {
				for _, run := range runs {
					if rank := run.Idx + 1; rank < from || rank > to {
						continue
					}
					sum.ToTLogged++
					for j, inf := range run.Infos {
						if inf.R == 1 {
							sum.ToTAnyOf5++
							if j == 0 {
								sum.ToTFirst++
							}
							break
						}
					}
				}
			}
			sum.Seconds = time.Since(start).Seconds()
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			// the ranks searched (a --to past 24.csv's end is cut, and said)
			fmt.Printf("Beam-A* on Game of 24, ranks %d–%d, proposer %s, beam %d\n", puzzles[0].Rank, puzzles[len(puzzles)-1].Rank, proposer, beam)
			fmt.Printf("  solved            %d of %d\n", sum.Solved, sum.Puzzles)
			outcomes := slices.Sorted(maps.Keys(sum.Outcomes))
			for i, o := range outcomes {
				outcomes[i] = fmt.Sprintf("%s %d", o, sum.Outcomes[o])
			}
			fmt.Printf("  outcomes          %s\n", strings.Join(outcomes, ", "))
			fmt.Printf("  nodes expanded    %d (generated %d; %d duplicates, %d hard-check and %d pre-filter failures, %d unexpandable)\n", sum.NodesExpanded, sum.NodesGenerated, sum.DedupHits, sum.HardFailed, sum.Prefiltered, sum.Unexpandable)
			fmt.Printf("  evaluator calls   %d\n", sum.EvaluatorCalls)
			fmt.Printf("  tokens            reserved %d, used %d, refunded %d\n", sum.TokensReserved, sum.TokensUsed, sum.TokensRefunded)
			if sum.QuotaRefused > 0 {
				fmt.Printf("  quota             --quota %d refused a next expansion's reservation of up to %d tokens (its prompt + k × (candidate + prompt + evaluator answer), cl100k_base)\n", quota, sum.QuotaRefused)
			}
			if b := sum.BFS; b != nil {
				fmt.Printf("  breadth-first     solved %d, nodes expanded %d (%d unexpandable); on the %d both solve: Beam-A* %d vs breadth-first %d expansions\n", b.Solved, b.NodesExpanded, b.Unexpandable, b.BothSolved, b.BeamAStarOnBoth, b.BreadthFirstOnBoth)
			}
			if sum.ToTLogged == 0 {
				fmt.Printf("  Tree of Thoughts  not logged for these ranks (its bundled run covers ranks 901–1000)\n")
			} else {
				fmt.Printf("  Tree of Thoughts  solved %d (any of 5 outputs), %d (first output) of the %d puzzles its run logged, as logged\n", sum.ToTAnyOf5, sum.ToTFirst, sum.ToTLogged)
			}
			fmt.Printf("  seconds           %.2f\n", sum.Seconds)
			return nil
		},
	}
	c.register(cmd)
	c.registerKafkaListen(cmd)
	c.registerLLM(cmd)
	cmd.Flags().StringVar(&proposer, "proposer", "arithmetic", "arithmetic | recorded (GPT-4's Tree of Thoughts proposals and values) | llm (a chat model over --llm-url)")
	cmd.Flags().IntVar(&beam, "beam", 5, "beam width W: the open set keeps its W best nodes by f")
	cmd.Flags().IntVar(&from, "from", 901, "first puzzle rank of 24.csv")
	cmd.Flags().IntVar(&to, "to", 1000, "last puzzle rank of 24.csv")
	cmd.Flags().Int64Var(&quota, "quota", 0, "token quota per search (cl100k_base tokens; 0: none)")
	cmd.Flags().StringVar(&scope, "scope", events.DefaultScope, "scope of the searches")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	cmd.Flags().StringVar(&lockFile, "lock", "", "a lock file written by chronicle solver lock: refuse to run when the proposer, evaluator, model, config or a prompt differs from it")
	cmd.Flags().BoolVar(&baseline, "baseline", true, "also run plain breadth-first search on the same proposer (in memory) for comparison")
	return cmd
}

// noEmbedder stands in for the memory-search embedder in commands that run
// no memory processor (search): it is never called with text.
type noEmbedder struct{}

func (noEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	return make([][]float32, len(texts)), nil
}
func (noEmbedder) Model() string { return "none" }
func (noEmbedder) Dim() int      { return 1 }

// groupIsFree refuses to run the search (or import tot's searches) against
// brokers whose processors' group (processors.ProcessorsGroup) has members
// — a running serve. This command's pipeline would join that group, be
// assigned no partition of
// chronicle.searches (the serve holds them), never see its own events,
// and leave behind a search nobody drives (found by a new user's
// walkthrough: a 30 s wait ending in a message about dead letters there
// were none of). Without brokers it runs its own embedded broker: free.
func groupIsFree(ctx context.Context, brokers []string) error {
	if len(brokers) == 0 {
		return nil
	}
	cl, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	groups, err := kadm.NewClient(cl).DescribeGroups(ctx, string(processors.ProcessorsGroup))
	if err != nil {
		return fmt.Errorf("--brokers: describe the group %s: %w", processors.ProcessorsGroup, err)
	}
	if g, ok := groups[string(processors.ProcessorsGroup)]; ok && g.Err == nil && len(g.Members) > 0 {
		return fmt.Errorf("--brokers: the processors' group %s has %d member(s) (a running chronicle serve): this command would be assigned none of chronicle.searches' partitions and never see its own steps; stop the service, or run the search with --data and its own embedded broker", processors.ProcessorsGroup, len(g.Members))
	}
	return nil
}

// otherSearchFlags names the flags that give a search command other
// searches: --scope, and --data when the log is the embedded broker's
// (with --brokers the log is the cluster's, and another --data holds the
// same searches: a re-test, 2026-12-01).
func otherSearchFlags(brokers []string) string {
	if len(brokers) > 0 {
		return "--scope (the log is the cluster's, so another --data holds the same searches)"
	}
	return "--scope or --data"
}
