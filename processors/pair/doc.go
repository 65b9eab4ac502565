// Package pair is PAIR retrieval (the PAIR self-improving coordination
// design): when FLUX finds gaps in a session, the pair worker looks up what
// worked before for each gap and writes that context to the log for the
// producer's next attempt; when a revised attempt fixes its parent's gaps,
// it records the improvement as a memory and a coordination minute.
//
// # The loop
//
// A producer runs a session (iteration 1). The sessions processor evaluates
// it (evaluation.completed.v1). If the composite is below 95, the pair worker
// writes pair.context.retrieved.v1 for the session: per gap, the success
// patterns it found and a recommendation. The producer's revised attempt is
// a new session whose coordination.session.started.v1 carries iteration
// (previous + 1, given as next_iteration in the context) and
// parent_session (the failed session). The loop stops at the third
// iteration or at a composite ≥ 95. When a session with a parent completes
// with a composite ≥ 95 while its parent scored below 95, the worker
// records a memory.recorded.v1 tagged pair_improvement_completed and a
// pair_improvement_completed minute on the parent.
//
// Without a pair worker (demo, a serve instance without it), POST
// /v1/sessions/{id}/improve starts the loop: Worker.RetrieveNow runs the
// same retrieval for the evaluation the pairloop projection keeps
// (EvaluationEvent) and writes the same event, with the same derived id;
// the worker writes no context for a session whose context the projection
// already holds (Derive), so the two never write two different contexts
// under one id.
//
// # Design decisions
//
// Worker, not processor. Retrieval reads the memory-search index, which is
// not a deterministic function of the log (it depends on how far the memory
// bank had got, and on the embedding model), so PAIR retrieval is a
// processors.Worker named "pair" on chronicle.evaluations whose answer goes
// into the log with an id derived from the evaluation (events.Derive): a
// redelivery produces byte-identical events that consumers drop, and a
// replay reads the answer from the log and never queries again. The worker
// writes no memory.retrieved.v1 usage events: their effect on the memory
// bank (usage counts, consensus) would then
// depend on the timing of the retrieval, and the memory projection would
// stop being reproducible from one clean run to the next; the context event
// itself names every memory it returned.
//
// Topic. pair.context.retrieved.v1 goes to chronicle.learned (the
// learned-patterns topic for downstream consumers), keyed by session_id
// (KeyField "session_id"), so one session's contexts stay in order on one
// partition. It does not go to chronicle.evaluations: the distiller and the
// judge workers consume that topic and decode every record as an
// evaluation, so a second type there would make the distiller distil a
// session twice. The pairloop processor (Loop, loop.go) reads the context
// events with the evaluations and projects each session's loop state and
// its deterministic revision (Revise, revision.go).
//
// LLM revision. With an LLM configured, the RevisionWorker
// ("pair-revision", on chronicle.learned) answers each context that asks
// for a revision with the design's revision prompt (RevisionPrompt,
// llmrevision.go) and writes the model's raw answer, or the error of the
// call after its retries, as pair.revision.written.v1 (id derived from
// the context). The pairloop processor parses it (ParseRevisionAnswer:
// the asked-for JSON, or free text) into LoopState.LLMRevision, next to
// the deterministic Revision, or records why it falls back to it
// (InterpretRevision). Replay reads the answer from the log.
//
// Which evaluations. Only revision 0 (a judge re-score, revision > 0, is
// not a new attempt) and only composite < 95. The iteration is the
// session's Iteration from the sessions projection (0 or absent means 1).
// At iteration ≥ MaxIterations (3) the worker does not retrieve: it writes
// the context with the session's gaps, no patterns and the recommendation
// stop_iteration_limit, so the producer sees why the loop ended.
//
// Gaps. The gaps of weighted criteria (weight > 0): only they move the
// composite, and a composite below 95 always has at least one. Weight-0
// criteria (tau-bench's read-only lookups) report informative gaps that
// would only add noise queries. At most MaxGaps, in the evaluator's
// priority order. A session whose criteria all weigh 0 uses all its gaps.
//
// Query. For each gap, "Coordination pattern: <gap description>" (the
// criterion id when the gap has no description) through
// (*search.Index).Search: outcome success, ExcludeSourceSession = the
// evaluated session (retrieval never sees memories distilled from it),
// min_confidence 0.5 and then confidence strictly above 0.5, up to
// QueryLimit hits, scope restricted by Worker.Readable (default: only the
// session's own scope).
//
// Coordination patterns. The PAIR design searches success memories and a
// separate collection of coordination patterns. Both exist: each gap's
// query runs on the memory bank and on the CoordinationPattern collection
// (sessions.Pattern: the tool sequences of evaluated sessions with their
// success rates), with the same filters; the hits are merged by relevance
// (one formula ranks both) before grouping (Ranked). An example says where
// it came from (collection "Memory" or "CoordinationPattern"). Its kind is
// "coordination_pattern" for a pattern and for a memory whose tags mark a
// coordination strategy — the deterministic distiller's "strategy"
// memories, this worker's "pair_improvement_completed" memories, and
// explicit memories tagged "coordination_pattern" — and "success_memory"
// otherwise. A pattern's source sessions are every session that followed
// it, so a pattern the evaluated session followed is never retrieved for
// it, and its success rate is the share of those sessions that met their
// criteria.
//
// Category. Hits are grouped by the first tag that is not generic
// ("strategy", "anti-pattern", "pair_improvement_completed",
// "coordination_pattern", and the severities low, medium, high, critical);
// "uncategorised" when there is none. For distilled strategies that is the
// first database-writing tool of the task. Groups are ordered by their best
// example's relevance, examples by relevance, at most MaxExamples per group.
//
// Success rate. The filter keeps success memories only, so the share of
// successful examples would always be 1. Instead an example's success rate
// is the share of its source sessions whose current evaluation (the latest
// revision, in the sessions projection) meets the criteria, with sessions =
// how many source sessions were found evaluated; a group's success rate
// pools its examples' sessions. For a distilled strategy it is 1 unless a
// judge re-score demoted one of its sessions; an explicit memory has no
// source session, so its success rate is absent (null, not 0).
//
// Recommendation. revise_with_patterns (at least one gap has patterns),
// revise_without_patterns (none has), stop_iteration_limit.
//
// pair_improvement_completed. On an evaluation (revision 0) with composite
// ≥ 95 of a session whose parent_session has an evaluation below 95, the
// worker records the improvement twice, as the PAIR design says, in one
// produce call, both through events.Derive from the evaluation (indexes 0
// of their types), so a redelivery or a second worker run writes
// byte-identical events that consumers drop, and replay reads them from
// the log:
//
//   - memory.recorded.v1 (source "distilled" — written by Chronicle, not by
//     a producer — so the producer rule that rejects distilled memories
//     from producers does not apply), outcome success, source_session the
//     improved session, initial_confidence final_score / 100 (the improved
//     composite, ImprovementConfidence: the memory bank starts the memory
//     there instead of the distilled 0.7), titled "PAIR improvement: <first
//     fixed gap>", tags pair_improvement_completed and the tools (or check
//     kinds) of the fixed gaps, content the fixed gaps and the improved
//     attempt's tool sequence (argument names only, like the deterministic
//     distiller, so equal improvements merge as evidence and keep the
//     first one's confidence). A fixed gap is a weighted gap of the parent
//     whose criterion has no gap, or a higher score, in the improved
//     session.
//   - coordination.minute.recorded.v1 with event_type
//     pair_improvement_completed, actor chronicle/pair, data
//     ImprovementMinute (improved session, iteration, both composites,
//     fixed gaps, memory id and confidence), on the parent session: its
//     sessionid and record key on chronicle.sessions are the parent's.
//     The parent, not the improved session, because the loop's chain is
//     otherwise only readable backwards (parent_session links): the minute
//     puts "improved by <session>" into the failed attempt's own trace,
//     where a reader of that session looks. The minute's actor is not
//     "assistant", so a later re-evaluation of the parent (a judge
//     revision) is unchanged by it (FLUX reads assistant minutes only).
//
// A parent without an evaluation yet gives neither.
//
// Cost. Every search syncs the index, so a running pair worker embeds each
// memory of the bank as it arrives (USE lite: about 40 ms per memory on a
// 2-core machine) plus one short query per gap. On the 200-session demo
// that was about 13 s more than without the worker (18.7 s against 5.3 s),
// so it belongs where PAIR is used (the service), behind a switch, rather
// than in every batch run.
//
// # Evaluation: pair_recall_at_3
//
// RecallAt3 measures retrieval on the 200 bundled tau-bench sessions; see
// its documentation for the protocol. Measured with USE lite (issue 11
// ranking and distiller): 58 cases; the index's ranking of memories puts
// a memory of a successful trial of the same task in the top 3 for 51
// (0.879), BM25 alone on the gap's criterion for 46 (0.793); on the 30
// cases of the report half (never tuned on) 24 (0.800) against BM25's 24
// on the gap and 27 (0.900) on the goal-expanded query. Before issue 11
// (alpha rule: vector only for memories with fewer than 5 observations,
// the gap alone as query) the index ranked 29 (0.500). The worker's merged
// ranking of memories and coordination patterns puts a memory or pattern
// of such a trial there for 47 (0.810); patterns are ranked by
// search.OtherRanking, untuned.
package pair
