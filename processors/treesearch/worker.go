package treesearch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

// ComponentsFunc builds the proposer and evaluator a search recorded in
// search.started.v1 (name and version), when that needs no model call;
// ok is false otherwise (an LLM proposer, a test component, an unknown
// name or version).
type ComponentsFunc func(proposer, evaluator events.SearchComponent) (p Proposer, e Evaluator, ok bool)

// ResumeWorker continues a search inside a running pipeline once a human
// answered the node it paused on: on search.resumed.v1 it drives the
// search with the Beam-A* Runner until it completes or pauses again.
//
//   - "approve": the node stays at the head of the open set and is
//     expanded next.
//   - "reject": the processor already pruned the node (status
//     NodeRejected, out of the open set; its subtree is never generated),
//     and the search goes on with the rest of the frontier: the next best
//     open node is expanded, and a frontier left empty completes the
//     search with outcome exhausted (search.completed.v1), as any search
//     that runs out of open nodes.
//
// It only drives searches whose proposer and evaluator Components can
// build without a model; for any other search it does nothing, and
// whoever started the search drives it on.
//
// Who drives: the worker drives a search whose resume's decision is still
// its last decision and which is running. A resume the search has moved on
// from — paused again, completed, or decided again later — is skipped, so
// a resume redelivered or replayed from the start of the topic writes
// nothing. A search still running past its last resume is driven on from
// the projection (Runner.Run resumes an expansion in flight): its steps
// since are that resume's drive, cut by a crash before the resume's offset
// was committed, so the record is handed again (before, the worker left
// such a search alone, running with nobody driving it, for good), or an
// external runner's. Two drivers of one search derive the same event ids
// (search key, expansion, node), and the log applies an id once (a repeat
// is a duplicate, a copy with another time a conflicting duplicate that is
// dead-lettered), so no step is applied twice.
type ResumeWorker struct {
	Store      *projections.Store
	Producer   *events.Producer
	Components ComponentsFunc
	// ApplyTimeout bounds the wait for the projection to apply the resume
	// and, through the Runner, the events it writes (default 30 s).
	ApplyTimeout time.Duration
	// Log, when set, is told what the worker did with each resume.
	Log func(format string, args ...any)

	mu     sync.Mutex
	runner *Runner
}

// ResumeWorkerName is the worker's name (its consumer group is
// chronicle.treesearch-resume.chronicle.searches).
const ResumeWorkerName = "treesearch-resume"

// Name implements processors.Worker.
func (*ResumeWorker) Name() string { return ResumeWorkerName }

// Topic implements processors.Worker.
func (*ResumeWorker) Topic() events.Topic { return events.TopicSearches }

// Types implements processors.TypedWorker: the worker acts on
// search.resumed.v1 only, so the runner skips every other search event
// without parsing it (each expansion writes k + 2 events; a resume is one
// per human decision), fetching and committing in 100 ms batches. A
// resume handed again after a crash finds the search moved on, or drives
// it with the same event ids (see ResumeWorker).
func (*ResumeWorker) Types() []events.Type { return []events.Type{events.SearchResumed} }

// StreamsOutputs implements processors.StreamingWorker: a resumed search
// writes each step and waits for the projection to apply it before the
// next, so its events cannot wait for one transaction at the end of
// Handle. The Runner writes each step in a transaction of its own under
// the partition's fenced transactional id: an instance that lost the
// partition cannot write another step, and a resume handed again after a
// crash finds the search moved on and leaves it alone.
func (*ResumeWorker) StreamsOutputs() bool { return true }

func (w *ResumeWorker) logf(format string, args ...any) {
	if w.Log != nil {
		w.Log(format, args...)
	}
}

// Handle implements processors.Worker. It returns an error (the resume is
// dead-lettered for this worker with the reason) when the projection does
// not apply the resume within ApplyTimeout or the runner fails; a search
// that pauses again is not an error.
func (w *ResumeWorker) Handle(ctx context.Context, env *events.Envelope) error {
	if env.Type != events.SearchResumed {
		return nil
	}
	var d events.SearchResumedData
	if err := env.Decode(&d); err != nil {
		return fmt.Errorf("treesearch-resume: data: %w", err)
	}
	if d.Decision != "approve" && d.Decision != "reject" {
		return nil
	}
	key := events.EntityKey(env.Scope, d.SearchID)
	s, dec, err := w.waitDecision(ctx, key, env, d)
	if errors.Is(err, errRepeatedResume) {
		w.logf("treesearch-resume: search %s: resume %s repeats one already applied (a retried or raced request): left alone", key, env.ID)
		return nil
	}
	if errors.Is(err, errRejectedResume) {
		w.logf("treesearch-resume: search %s: resume %s was rejected by the projection (its dead letter on chronicle.deadletter says why): left alone", key, env.ID)
		return nil
	}
	if err != nil {
		return err
	}
	untouched := s.Status == StatusRunning && s.Current == nil && dec.NodeID != "" && dec.Seq == s.Seq
	if d.Decision == "approve" {
		untouched = untouched && len(s.Open) > 0 && s.Open[0].ID == dec.NodeID && !s.Open[0].NeedsHuman
	}
	if !untouched && !(s.Status == StatusRunning && dec.NodeID != "") {
		w.logf("treesearch-resume: search %s moved on since the resume of node %s (paused again, completed, or resumed later): left alone", key, dec.NodeID)
		return nil
	}
	if !untouched {
		// running, and this resume is its last decision: the steps since
		// are this resume's drive, cut before the resume's offset was
		// committed (the process was killed: the record is handed again to
		// whoever holds the partition now, and the old driver's
		// transactional id is fenced), or an external runner's (search
		// resume), whose steps have the same ids as ours. Before, such a
		// search was left alone, running, with nobody driving it, for good
		// (a walkthrough, 2026-11-30: kill -9 of serve 75 ms after a resume)
		w.logf("treesearch-resume: search %s moved on since the resume of node %s and is still running: driving it on from the projection", key, dec.NodeID)
	}
	if w.Components == nil {
		return nil
	}
	p, e, ok := w.Components(s.Proposer, s.Evaluator)
	if !ok {
		w.logf("treesearch-resume: search %s: proposer %s/%s, evaluator %s/%s need their own driver: left alone", key, s.Proposer.Name, s.Proposer.Version, s.Evaluator.Name, s.Evaluator.Version)
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runner == nil {
		if w.runner, err = NewRunner(w.Store, w.Producer, p, e); err != nil {
			return err
		}
	}
	w.runner.Proposer, w.runner.Evaluator, w.runner.ApplyTimeout = p, e, w.ApplyTimeout
	s, err = w.runner.Run(ctx, key)
	switch {
	case errors.Is(err, ErrPaused):
		w.logf("treesearch-resume: search %s paused again at node %s", key, s.PausedAt)
		return nil
	case err != nil:
		return fmt.Errorf("treesearch-resume: search %s: %w", key, err)
	}
	w.logf("treesearch-resume: search %s completed after the %s of node %s: %s", key, d.Decision, dec.NodeID, s.Outcome)
	return nil
}

// errRepeatedResume is waitDecision's answer for a resume whose id (the
// search and its pause) the projection applied from an earlier record.
var errRepeatedResume = errors.New("repeats an applied resume")

// errRejectedResume is waitDecision's answer for a resume the projection
// went past without applying it: the treesearch processor rejected it
// (its dead letter holds the reason; a second one from this worker would
// say only that it waited). Before, the worker waited its ApplyTimeout
// (30 s) for such a resume while every other search's resumes on the
// partition, any tenant's, stood still behind it: one tenant's resume of
// a search it never started held another's approved search 30 s per
// event (a walkthrough, 2026-11-30).
var errRejectedResume = errors.New("rejected by the projection")

// waitDecision waits until the projection of search key recorded the
// decision of resume env, and returns the search and that decision; the
// decision must be the last one recorded for the search to be driven. A
// resume whose id the projection applied from another record (the routes
// derive the id from the search and the pause, so a retried or raced
// request repeats it; the projection drops the repeat) is
// errRepeatedResume at once: the decision applied has the first record's
// time, so waiting for this record's was waiting ApplyTimeout (30 s) for
// nothing, while the worker's partition, every other search's resumes
// with it, stood still (found by a new user's walkthrough: four
// concurrent resumes of one search held the others' for 90 s).
func (w *ResumeWorker) waitDecision(ctx context.Context, key string, env *events.Envelope, d events.SearchResumedData) (Search, Decision, error) {
	pos, hasPos := processors.RecordPosition(ctx)
	timeout := w.ApplyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		s, ok, err := Get(w.Store, key)
		if err != nil {
			return s, Decision{}, err
		}
		if ok {
			for i := len(s.Decisions) - 1; i >= 0; i-- {
				dec := s.Decisions[i]
				if isDecisionAt(dec, env.TimeUTC(), d) {
					if i != len(s.Decisions)-1 {
						dec.NodeID = "" // a later decision was taken: not the head any more
					}
					return s, dec, nil
				}
			}
		}
		// checked after the search: a decision applied from this record
		// is in the search read above, so applied here means another's
		if _, applied, _, err := w.Store.AppliedAt(Name, env); err != nil {
			return s, Decision{}, err
		} else if applied && ok {
			if s2, ok2, err := Get(w.Store, key); err == nil && ok2 && !hasDecisionAt(s2, env.TimeUTC(), d) {
				return s2, Decision{}, errRepeatedResume
			}
			continue // applied in between: the search read again finds it
		}
		// the processor past this record without applying it: rejected.
		// Its offset and its rows are committed in one batch, so once the
		// offset is past, AppliedAt (asked again: it may have been applied
		// since the ask above) is the processor's last word
		if next, ok := w.Store.NextOffset(Name, pos.Topic, pos.Partition); hasPos && ok && next > pos.Offset {
			if _, applied, _, err := w.Store.AppliedAt(Name, env); err != nil {
				return s, Decision{}, err
			} else if !applied {
				return s, Decision{}, errRejectedResume
			}
			// applied since: the next round's read of the search finds it
		}
		if time.Now().After(deadline) {
			return s, Decision{}, fmt.Errorf("treesearch-resume: search %s: the projection did not apply resume %s within %v (rejected? see chronicle.deadletter)", key, env.ID, timeout)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return s, Decision{}, ctx.Err()
		}
	}
}

// hasDecisionAt reports whether s recorded resume decision d at time t.
func hasDecisionAt(s Search, t string, d events.SearchResumedData) bool {
	return slices.ContainsFunc(s.Decisions, func(dec Decision) bool { return isDecisionAt(dec, t, d) })
}

// isDecisionAt reports whether dec is resume decision d recorded at time t
// (RFC 3339). The times are compared as instants: a Chronicle before
// Envelope.TimeUTC stored a decision's time as the event was sent
// ("…T05:00:00+02:00"), and this worker asks with the time in UTC, so after
// an upgrade a resume that the old build applied and this build's worker
// handled (its offset not committed before the stop) was taken for a
// repeat, and its search was never driven (an upgrade walkthrough,
// 2026-12-07).
func isDecisionAt(dec Decision, t string, d events.SearchResumedData) bool {
	return sameInstant(dec.Time, t) && dec.Decision == d.Decision && dec.Note == d.Note && dec.By == d.By
}

// sameInstant reports whether RFC 3339 times a and b are equal strings or
// parse to the same instant.
func sameInstant(a, b string) bool {
	if a == b {
		return true
	}
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	return errA == nil && errB == nil && ta.Equal(tb)
}
