// Package toolgraph is the processor that learns a graph of tools from the
// tool calls of workflows, after the GraphRAG DAG-suggester design, and
// answers next-step, tool-ranking and path queries over it.
//
// # Model (GraphRAG design)
//
// Nodes are tools. Each workflow's workflow.task.completed.v1 events, in
// log order, are its tool calls; two consecutive calls A, B of the same
// workflow are an observation of the sequence edge A→B (A→A included: a
// repeated call). An edge carries its observed_count, its failed_count
// (observations whose call of B failed: success false) and
//
//	confidence = (count(A→B) − failed(A→B)) / (count(A→·) + 1)     (Confidence)
//	weight     = type weight × source weight × confidence          (EdgeWeight)
//
// with the design's type weights dependency 1.0, contains 0.8, sequence
// 0.5, alternative 0.3 and source weights observed 1.0, inferred 0.7,
// template 0.5. Learned edges are sequence/observed. A failed call still
// counts as an observation out of A but not for the edge, so tools that
// fail after A rank lower (PML design: "tools that fail together rank
// lower"; issue 14 item 6). The design's
// thresholds on confidence are 0.7 (an edge may be suggested) and 0.85 (its
// target may be executed speculatively).
//
// Over the weights: weighted PageRank (damping 0.85) and Louvain
// communities (gonum's community.Modularize, directed modularity,
// resolution 1, PCG source with a fixed seed), self-loops left out (a
// repeated call is not a relation between two tools). Node ids are the
// positions of the sorted tool names and every gonum iterator runs in id
// order, so the same graph always gives the same ranks and communities,
// bit for bit. gonum's network.PageRank cannot give that: it starts the
// power iteration from a vector drawn from the unseeded global math/rand
// source, so its last digits change from call to call; this package runs
// the same formulation (gonum's edge-weighted PageRankSparse) from the
// uniform vector and the tests check it against gonum to 1e-6.
//
// Next-step prediction (Graph.NextCalls, Graph.Next) ranks the candidates
// by an interpolated Witten-Bell estimate of P(next | context) over five
// context levels (the last two calls with their outcomes, the last two
// tools, the last tool with its outcome, the last tool or the workflow
// start, every call; see NextCalls), a level above the bigram used when
// its context was followed by at least ContextMinObservations calls. The
// design's score of a candidate B after the context tool A,
//
//	score = 0.6·confidence(A→B) + 0.3·community + 0.1·recency + 0.1·pagerank
//
// (community = 1 when B is in A's community; pagerank normalised by the
// largest; recency = RecencyBoost), with evidence tiers and a prior when A
// has fewer than 5 observations (the design's floor) or there is no
// context, is kept on every suggestion and breaks ties; ranked by it, as
// before issue 11 item 10, the graph was at the bigram baseline's top-1 on
// HotPotQA and below it on tau-bench calls with context. Told the user's
// last message (Graph.NextAfterMessage, GET /v1/graph/next?text=), the
// message's words that followed the last tool rank instead (see
// LevelWords and words.go). Graph.Path is the
// cheapest path under cost −ln(weight) with gonum's Dijkstra.
//
// # Two processors, one topic keyed by the aggregate
//
// Transitions (projection toolgraph.transitions) reads
// workflow.task.completed.v1 on chronicle.sessions, keeps each workflow's
// last tool in a row of the call's own record key, keeps the words of the
// key's last user minute (coordination.minute.recorded.v1 of actor user,
// the one minute it applies: processors.FilteredProcessor) and emits one
// tool.transition.observed.v1 (TransitionData: from, to, failed, words) per call
// to chronicle.toolgraph, keyed by the scope's graph
// (events.EntityKey(scope, GraphID)). Processor (projection toolgraph)
// learns each scope's graph from that topic. Keyed by scope, every row a
// transition touches — both nodes, the edge, the scope's totals that
// trigger a recompute, the confidences of every edge out of the source —
// is the state of the event's own key; keyed by tool it would not be.
// Processor is a processors.GlobalTable: every instance applies every
// partition of chronicle.toolgraph, so each answers next-tool for every
// scope, identically.
//
// # Projection rows
//
//	toolgraph:              n/<scope>/<tool>          node: calls, starts, transitions in/out, first/last seen (Unix ms)
//	                        e/<scope>/<from>/<to>     edge: observed_count, failed_count (omitted when 0), first/last seen (Unix ms)
//	                        t/<scope>                 calls, transitions, workflows, tools, edges of the scope
//	                        x/<scope>/<before>/<0|1>/<from>/<0|1>/<to>
//	                                                  second-order count: to after before, from with their outcomes (1 = failed)
//	toolgraph.transitions:  w/<key>/<workflow>        the workflow's last two tools, their outcomes and number of calls (key = events.Key)
//
// Ids and scopes are path-escaped in keys. Rows hold integers and strings
// only; confidence, weights, PageRank and communities are computed when a
// Graph is built from the rows (LoadIn for some scopes, their union:
// counts summed per tool and edge; Load for every scope), or inside Apply
// for a recompute of one scope.
//
// # Determinism and replay
//
// Apply is a deterministic function of the projection and the event: no
// clock (times are event times), no randomness besides the fixed-seed
// Louvain source, no map order in stored bytes or emitted events. Each
// scope's graph is a function of one partition of chronicle.toolgraph, in
// the log's order, so the derived events (which event first crosses a
// threshold, the counts they carry, the rank snapshots) are the same in
// the live pipeline, in a replay and on every instance, on any number of
// partitions. The transitions' ids are derived from the calls' ids
// (events.DerivedIDIn), so a replay or a restoring partition owner re-emits
// identical events, dropped by their idempotency key. PageRank and
// communities are recomputed from the rows rather than stored: about 1 ms
// for the 14 tau-bench tools including reading the rows from Pebble, 4.7 s
// for 10,000 tools and 100,000 edges, nearly all of it Louvain (PageRank
// alone: 26 ms).
//
// # Derived events
//
// graph.edge.learned.v1 (EdgeLearnedData) on an edge's first observation
// and whenever its confidence crosses 0.7 or 0.85, upwards or downwards
// (observing A→C lowers the confidence of every other A→B); an edge close
// to a threshold can cross it repeatedly as A's successors alternate, and
// the event carries the counts so consumers can debounce.
// graph.ranks.updated.v1 (RanksUpdatedData) when the number of transitions
// of a scope reaches a multiple of Processor.RecomputeEvery (default 50;
// with thousands of tools a recompute takes seconds, so raise it). Both go
// to events.TopicLearned in the scope of the transition, keyed by
// EntityKey(scope, from tool) and EntityKey(scope, "toolgraph").
// The schemas are schemas/graph.edge.learned.v1.json and
// schemas/graph.ranks.updated.v1.json.
//
// # Evaluation (EvaluateNextTool, tau-bench airline, 200 sessions)
//
// Since issue 11 item 10 (the context model ranks; figures in the README,
// "Next-tool prediction"), with the first place gated (TopGateZ): top-1
// 0.527, top-3 0.818 against bigram 0.505 / 0.754 on all calls; report
// half (odd task ids, never used for a choice) 0.559 / 0.816 against
// 0.525 / 0.780; calls with a previous call 0.524 / 0.789 against 0.524 /
// 0.718 (top-1 equal to bigram; without the gate it was 0.517, below by 7
// predictions). On the Reflexion HotPotQA actions
// (EvaluateReflexionActions) top-1 0.848 and 0.884 against bigram 0.706
// and 0.712. Told the user's last message (Accuracy.MessageTop1/3,
// WordsLambda and WordMinObservations chosen on the tuning half,
// TestWordsChoice): report half 0.615 / 0.852 against bigram 0.525 /
// 0.780. The rest of this section is the
// design score's evaluation as the ranking, before that change; its
// ablations (TestEvaluationAblations) still hold for the design score.
//
// Leave-one-task-out over the 50 tasks × 4 trials, 1,164 predicted calls
// (182 of them first calls, predicted from the start prior by the graph
// and from frequency by both baselines):
//
//	                        all calls         calls with a previous call
//	                        top-1   top-3     top-1   top-3
//	learned graph           0.525   0.760     0.522   0.721
//	bigram baseline         0.505   0.754     0.524   0.718
//	frequency baseline      0.324   0.548     0.310   0.474
//
// The graph beats frequency by far and bigram narrowly: 7 more top-3 hits
// out of 1,164 (3 of them with context), 23 more top-1 hits, which all come
// from the start prior (with context it has 2 fewer). Among a tool's
// well-observed successors the design score is the bigram order plus the
// community, recency and PageRank terms, so on 14 tools it can only
// reorder the bigram's candidates at the margin. The choices were compared
// on this same evaluation, never on a held-out task alone; but the variant
// was not chosen in a nested loop, so the small margin over bigram is an
// optimistic estimate. Measured variants (everything else as shipped):
//
//	variant                                             top-1   top-3
//	as shipped                                          0.525   0.760
//	no evidence tiers (all tools ranked by score)       0.525   0.701
//	recency normalised by rank instead of time span     0.525   0.741
//	no recency term                                     0.525   0.750
//	PageRank instead of frequency as the prior          0.441   0.608
//	smoothing k = 0.5 / 2 / 5 instead of 1              0.525   0.760 / 0.760 / 0.759
//	no community term (not the design)                  0.525   0.746
//	second-order bonus, weight 0.1 to 1.0 (removed)     0.519–0.525   0.758–0.765
//
// The table above was measured before failed calls counted against their
// edge (issue 14); with them the learned graph gives top-1 0.525, top-3
// 0.767 on the same evaluation (the baselines are unchanged). The change
// follows the design, not this evaluation.
package toolgraph
