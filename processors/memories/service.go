package memories

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/google/uuid"
)

// Service is the search.Backend of a running Chronicle (the memory tools):
// searches run on the search.Index, every returned memory writes a memory.retrieved.v1 usage event,
// and records and feedback are events on the log. A Service without a
// Producer is read-only (chronicle inspect): searches write no usage
// events, and Record and Feedback fail with ErrReadOnly.
type Service struct {
	Index    *search.Index
	Store    *projections.Store
	Producer *events.Producer
	// FeedbackWait bounds how long Feedback waits for the memory bank to
	// apply the signal (default 5 s).
	FeedbackWait time.Duration
	// RecordWait bounds how long Record waits for the memory bank to
	// apply the recording (default DefaultRecordWait).
	RecordWait time.Duration
	// Now is the clock of the events the service writes (default time.Now).
	Now func() time.Time
}

var _ search.Backend = (*Service)(nil)

// DefaultRecordWait is how long Record waits for the memory bank to apply
// a recording when Service.RecordWait is 0.
const DefaultRecordWait = 5 * time.Second

// ErrReadOnly is Record's and Feedback's error on a Service without a
// Producer.
var ErrReadOnly = errors.New("memories: read-only: this service writes no events (chronicle inspect); record and give feedback through a running chronicle serve")

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) newEvent(typ events.Type, scope string, data any) (events.Envelope, error) {
	return s.newEventID(typ, uuid.NewString(), scope, data)
}

// newEventID is newEvent with the event's id.
func (s *Service) newEventID(typ events.Type, id, scope string, data any) (events.Envelope, error) {
	env, err := events.NewVerbatim(typ, ToolsSource, id, s.now(), data)
	env.Scope = scope
	return env, err
}

// ToolsSource is the source attribute of the events the memory tools
// write (recordings, feedback, usage).
const ToolsSource = "chronicle/memory-tools"

// RecordEventID is the id of the memory.recorded.v1 event Record writes
// for a call with an idempotency key (search.Record.IdempotencyKey): a
// hash of the scope, the recorder (search.Record.Source) and the key, so
// a retry of the call writes the same event, which the memory bank drops
// as a duplicate (its idempotency key is (scope, ToolsSource, id)); two
// callers, or two scopes, using the same key write two events. The time
// is no part of an event's identity (projections.ContentHash), so the
// retry's own time does not make it another event.
func RecordEventID(scope, recorder, key string) string {
	sum := sha256.Sum256([]byte(strconv.Quote(scope) + " " + strconv.Quote(recorder) + " " + strconv.Quote(key)))
	return "rec-" + hex.EncodeToString(sum[:16])
}

// Search implements Backend. Only memories (q.Collection "" or Memories)
// write usage events: patterns and tools have no usage-driven state.
func (s *Service) Search(ctx context.Context, q search.Query) (search.Result, error) {
	res, err := s.Index.Search(ctx, q)
	if err != nil || len(res.Memories) == 0 || (q.Collection != "" && q.Collection != search.Memories) || s.Producer == nil {
		return res, err
	}
	session, err := s.knownSession(q)
	if err != nil {
		return res, err
	}
	envs := make([]events.Envelope, 0, len(res.Memories))
	for i, h := range res.Memories {
		if q.Writable != nil && !q.Writable(h.Scope) {
			// a usage is a write to the memory's scope: a caller that
			// only reads it changes no state there (before, read-only
			// tokens lifted usage_count to the single-signal rule's 3,
			// and a token writing project:a added usage to project:b's
			// memories; found by a tenant-isolation review)
			continue
		}
		data := map[string]any{
			"memory_id": h.ID, "query": q.Text, "rank": i + 1, "relevance": h.Relevance, "session_id": session,
		}
		if q.Source != "" {
			data["source"] = q.Source
		}
		if rs := ReaderScopes(q.ReadScopes); rs != nil {
			data["reader_scopes"] = rs
		}
		env, err := s.newEvent(events.MemoryRetrieved, h.Scope, data)
		if err != nil {
			return res, err
		}
		envs = append(envs, env)
	}
	if len(envs) == 0 {
		return res, nil // no hit in a scope the caller writes
	}
	// a read must not fail, nor wait the producer's 15 s, because the
	// broker is down or slow: the usage is given UsageWait, then the hits
	// are answered saying so, while the produce goes on in the background
	// for the rest of the producer's own bound (a slow broker still gets
	// the usage, a dead one does not)
	done := make(chan error, 1)
	go func() { done <- s.Producer.Publish(context.WithoutCancel(ctx), envs...) }()
	select {
	case err := <-done:
		if err != nil {
			res.UsageNotRecorded = fmt.Sprintf("the broker did not acknowledge the usage events: %v", err)
		}
	case <-time.After(UsageWait):
		res.UsageNotRecorded = fmt.Sprintf("the broker did not acknowledge the usage events within %s; they are still being sent, for at most the producer's publish timeout", UsageWait)
	case <-ctx.Done():
		return res, ctx.Err()
	}
	return res, nil
}

// UsageWait bounds how long a search waits for the broker to acknowledge
// its usage events (5 s) before it answers without them
// (search.Result.UsageNotRecorded).
var UsageWait = 5 * time.Second

// knownSession is the session_id a search's usage events carry: q's
// SessionID when the sessions projection holds that session in a scope
// the caller reads (q.Readable; any scope when nil), else "" — the usage
// then counts by the searcher's source. Usage counts distinct sessions,
// and a session id the caller merely names is not one: three searches
// with made-up ids would lift a memory's usage to 3, after which one
// signal applies without consensus (found by a new user's walkthrough). A
// session whose start the sessions processor has not applied yet counts
// by source too. The decision is made when the search is answered and
// written into the event, so replay never repeats the lookup.
func (s *Service) knownSession(q search.Query) (string, error) {
	if q.SessionID == "" || s.Store == nil {
		return "", nil
	}
	scopes, err := sessions.Scopes(s.Store, q.SessionID)
	if err != nil {
		return "", fmt.Errorf("search: session_id %q: %w", q.SessionID, err)
	}
	for _, sc := range scopes {
		if q.Readable == nil || q.Readable(sc) {
			return q.SessionID, nil
		}
	}
	return "", nil
}

// Record implements Backend: an explicit memory whose id is its content
// address in its scope, so recording equal content twice adds evidence to
// one memory. It waits up to RecordWait for the memory bank to apply the
// recording and answers the memory the recording is in then: a new one, or
// the existing memory of the scope with the same normalised title and
// content that it was merged into (search.Recorded.MergedInto), with that
// memory's id, confidence and evidence. Before, a merge was answered with
// the recording's own id and a new memory's 0.8, though a merge changes no
// confidence and the memory may have had any id and confidence. When the
// memory bank has not applied it within RecordWait, the answer is what the
// projection held before the write, and Message says so. A caller that may
// not read r.Scope (r.Readable false: a write-only token) is answered the
// id and a message alone, without waiting: the wait's length told it
// whether the recording merged into another writer's memory.
//
// The recording event's id is new for every call, unless r has an
// IdempotencyKey: then it is RecordEventID, so a retry of a call whose
// answer was lost (a timeout, a 504 from a cluster member forwarding it)
// writes the same event, which the memory bank drops as a duplicate,
// instead of adding evidence a second time. A retry of a recording the
// memory bank applied writes nothing and is answered as the call was (the
// memory it created or was merged into, as that memory is now); one it has
// not applied yet is written again, a duplicate, and waited for as the
// call was. The key with other fields (title, description, content,
// outcome, tags) than the recording applied under it is ErrKeyReused, and
// nothing is written; when the two calls race, before the memory bank
// applied either, the loser's event is written and dead-lettered as a
// conflicting duplicate, and its call is ErrKeyReused too.
func (s *Service) Record(ctx context.Context, r search.Record) (search.Recorded, error) {
	out, err := s.record(ctx, r)
	if err == nil && r.Readable != nil && !r.Readable(r.Scope) {
		// a write-only caller: what it wrote, not what the scope held
		// (merged_into, the evidence and the confidence were an oracle of
		// another writer's memories; found by a tenant-isolation review)
		return search.WithheldRecorded(out.ID, r.Scope), nil
	}
	return out, err
}

// record is Record without the Readable check.
func (s *Service) record(ctx context.Context, r search.Record) (search.Recorded, error) {
	switch {
	case s.Producer == nil:
		return search.Recorded{}, ErrReadOnly
	case strings.TrimSpace(r.Title) == "" || utf8.RuneCountInString(r.Title) > distill.MaxTitle:
		return search.Recorded{}, &search.FieldError{Pointer: "/title", Reason: fmt.Sprintf("required, at most %d characters", distill.MaxTitle)}
	case strings.TrimSpace(r.Description) == "" || utf8.RuneCountInString(r.Description) > distill.MaxDescription:
		return search.Recorded{}, &search.FieldError{Pointer: "/description", Reason: fmt.Sprintf("required, at most %d characters", distill.MaxDescription)}
	case strings.TrimSpace(r.Content) == "":
		return search.Recorded{}, &search.FieldError{Pointer: "/content", Reason: "required"}
	case r.Outcome == "":
		return search.Recorded{}, &search.FieldError{Pointer: "/outcome", Reason: "required: success or failure"}
	case r.Outcome != events.OutcomeSuccess && r.Outcome != events.OutcomeFailure:
		return search.Recorded{}, &search.FieldError{Pointer: "/outcome", Reason: fmt.Sprintf("%q is not success or failure", r.Outcome)}
	case r.Scope == "":
		return search.Recorded{}, &search.FieldError{Pointer: "/scope", Reason: "the caller has no scope to write to"}
	}
	id := distill.MemoryID(r.Scope, r.Title, r.Content)
	var (
		before  Memory
		existed bool
		err     error
	)
	if s.Store != nil {
		if before, existed, err = Find(s.Store, r.Scope, r.Title, r.Content); err != nil {
			return search.Recorded{}, err
		}
	}
	eventID := uuid.NewString()
	if r.IdempotencyKey != "" {
		eventID = RecordEventID(r.Scope, r.Source, r.IdempotencyKey)
	}
	env, err := s.newEventID(events.MemoryRecorded, eventID, r.Scope, events.MemoryRecordedData{
		MemoryID: id, Title: r.Title, Description: r.Description, Content: r.Content, Outcome: r.Outcome, Tags: r.Tags, Source: "explicit",
		RecordedBy: r.Source,
	})
	if err != nil {
		return search.Recorded{}, err
	}
	if s.Store != nil && r.IdempotencyKey != "" {
		// a retry of a recording the memory bank applied: answered as
		// the first call was, nothing written
		seen, same, err := s.Store.AppliedContent(Name, &env)
		if err != nil {
			return search.Recorded{}, err
		}
		if seen && !same {
			return search.Recorded{}, keyReused(r, env.ID)
		}
		if seen {
			m, ok, err := Find(s.Store, r.Scope, r.Title, r.Content)
			if err != nil {
				return search.Recorded{}, err
			}
			if ok {
				return s.recorded(m, r.Outcome, env.ID, "")
			}
			// the memory bank refused it (dead-lettered): Try below
			// says why, as it did to the first call
		}
	}
	if s.Store != nil {
		// the memory bank's answer as the rows stand now, before the log
		// gets the event: a recording it would refuse (its memory id
		// already holds other content) is refused here, not answered as
		// recorded after RecordWait (a review's finding)
		if err := s.Store.Try(Name, &env, Processor{}.Apply); err != nil {
			var re *projections.RejectedError
			if errors.As(err, &re) {
				return search.Recorded{}, fmt.Errorf("%w: the memory bank refuses this recording: %v", search.ErrInvalid, re.Err)
			}
			return search.Recorded{}, err
		}
	}
	if err := s.Producer.Publish(ctx, env); err != nil {
		var ve *events.ValidationError
		if errors.As(err, &ve) && errors.Is(err, events.ErrEventTooLarge) {
			// the whole event is too large: name the member that makes
			// it so, as feedback names its comment (before, pointer "/",
			// which names no member of the body a caller can shorten)
			ptr := largestMember(r)
			// the reason's "N of them in /data/content" in the body's
			// terms, as the resume route's "in the note": it named a
			// pointer into the event, which the caller never sent (an MCP
			// walkthrough, 2026-12-06)
			reason := ve.Reason
			if bp := bodyPointer(ve.Pointer); len(bp) > 1 {
				reason = strings.ReplaceAll(reason, "in "+ve.Pointer, "in the "+bp[1:])
			}
			return search.Recorded{}, &search.FieldError{Pointer: ptr, Reason: reason + ": shorten " + ptr[1:], Err: events.ErrEventTooLarge}
		}
		if errors.As(err, &ve) {
			return search.Recorded{}, &search.FieldError{Pointer: bodyPointer(ve.Pointer), Reason: ve.Reason}
		}
		return search.Recorded{}, err
	}
	if r.Readable != nil && !r.Readable(r.Scope) {
		// a write-only caller is answered the id and a message alone
		// (Record), so waiting for the memory bank tells it nothing but
		// how long the apply took, which differs between a merge into
		// another writer's memory and a new one: a timing oracle (the
		// last note's open item). It is answered once the broker has the
		// recording.
		return search.Recorded{ID: id}, nil
	}
	if s.Store != nil {
		wait := s.RecordWait
		if wait == 0 {
			wait = DefaultRecordWait
		}
		deadline := time.Now().Add(wait)
		for {
			applied, same, err := s.Store.AppliedContent(Name, &env)
			if err != nil {
				return search.Recorded{}, err
			}
			if applied && !same {
				// another call under the same idempotency key, with other
				// fields, was written first: this one is a conflicting
				// duplicate, never applied
				return search.Recorded{}, keyReused(r, env.ID)
			}
			if applied {
				m, ok, err := Find(s.Store, r.Scope, r.Title, r.Content)
				if err != nil {
					return search.Recorded{}, err
				}
				if ok {
					return s.recorded(m, r.Outcome, env.ID, "")
				}
				break // refused by the memory bank (dead-lettered): answer as before the write
			}
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return search.Recorded{}, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	const late = "; the memory bank has not applied the recording yet: this answer is the memory as it was before the recording"
	if existed {
		if before.Outcome == r.Outcome {
			before.Evidence++
		}
		return s.recorded(before, r.Outcome, "", late)
	}
	c := InitialConfidence("explicit", r.Outcome)
	return search.Recorded{ID: id, Message: "memory recorded in the log for " + r.Scope + late, Confidence: new(c), InitialConfidence: new(c), Evidence: new(1)}, nil
}

// recordFields are the members of memory.recorded.v1's data that are the
// recording's own arguments, under the same names (search.Record's, the
// body of POST /v1/memories, memory_record's arguments): a schema error
// about one names it in the caller's terms, "/tags/0" for the event's
// "/data/tags/0", a member no request body has (events.BodyPointer; found
// by a new user's walkthrough, as for workflow writes). Other pointers
// (what Record fills in) stay the event's.
var recordFields = map[string]string{"title": "title", "description": "description", "content": "content", "outcome": "outcome", "tags": "tags"}

// bodyPointer is ptr in the caller's terms (recordFields).
func bodyPointer(ptr string) string {
	p, _ := events.BodyPointer(ptr, recordFields)
	return p
}

// largestMember is the pointer of r's longest member among those a
// caller writes without a bound of their own — content and tags (their
// bytes together); title and description are at most a few hundred
// characters — "/content" when they tie.
func largestMember(r search.Record) string {
	tags := 0
	for _, t := range r.Tags {
		tags += len(t)
	}
	if tags > len(r.Content) {
		return "/tags"
	}
	return "/content"
}

// keyReused is Record's error for r, whose idempotency key (event id
// eventID) holds a recording with other fields.
func keyReused(r search.Record, eventID string) error {
	who := r.Source
	if who == "" {
		who = "a caller without a source"
	}
	return fmt.Errorf("%w: %q, used by %s in %s, holds a recording with another title, description, content, outcome or tags (event %s): a retry must send the same fields; a new recording needs a new key",
		search.ErrKeyReused, r.IdempotencyKey, who, r.Scope, eventID)
}

// recorded is Record's answer for memory m the recording is in: created
// by it when m's first change is the event with id created (never when
// created is ""), else merged into it, unless the recording's outcome is
// not m's (ReasonIgnoredOutcome: not evidence for it). note ends the
// message.
func (s *Service) recorded(m Memory, outcome, created, note string) (search.Recorded, error) {
	first, ok, err := FirstChange(s.Store, m.Key())
	if err != nil {
		return search.Recorded{}, err
	}
	initial := m.Confidence
	if ok {
		initial = first.New
	}
	out := search.Recorded{ID: m.ID, Confidence: new(m.Confidence), InitialConfidence: new(initial), Evidence: new(m.Evidence), Pruned: m.Pruned}
	switch {
	case created != "" && ok && first.EventID == created:
		out.Message = "memory recorded in " + m.Scope
	case outcome != m.Outcome:
		out.Message = fmt.Sprintf("not merged: the existing memory %s of %s has the same title and content with outcome %s, and a recording with outcome %s is no evidence for it (its history lists it as %q): give this one a title or content of its own", m.ID, m.Scope, m.Outcome, outcome, ReasonIgnoredOutcome)
	default:
		out.MergedInto = m.ID
		out.Message = fmt.Sprintf("merged into the existing memory %s of %s, whose title and content are the same: evidence %d, confidence %.2f, unchanged by a merge", m.ID, m.Scope, m.Evidence, m.Confidence)
		if m.Pruned {
			out.Message += fmt.Sprintf("; that memory was pruned at %s (confidence below %.2f), so searches do not return it", m.PrunedAt, PruneBelow)
		}
	}
	out.Message += note
	return out, nil
}

// Feedback implements Backend: an explicit_feedback signal. It waits up to
// FeedbackWait for the memory bank to apply the event and answers the
// confidence then; under consensus (usage < 3) the signal is stored and
// confidence moves only with a second agreeing signal within 7 days, which
// Message says.
func (s *Service) Feedback(ctx context.Context, f search.Feedback) (search.FeedbackResult, error) {
	if s.Producer != nil && f.MemoryID != "" && f.Readable != nil {
		sc, blind, err := s.blindScope(f)
		if err != nil {
			return search.FeedbackResult{}, err
		}
		if blind {
			return s.blindFeedback(ctx, f, sc)
		}
	}
	out, err := s.feedback(ctx, f)
	if err == nil && f.Readable != nil {
		// a write-only caller: that the signal was recorded, not the
		// memory's confidence nor whether the signal moved it (it
		// answered "0.60 → 0.90"; found by a tenant-isolation review)
		sc := f.Scope
		if key, kerr := s.feedbackKey(f); kerr == nil {
			sc, _, _ = events.SplitEntityKey(key)
		}
		if sc == "" || !f.Readable(sc) {
			return search.WithheldFeedback(sc), nil
		}
	}
	return out, err
}

// blindScope is the scope a signal of f goes to unseen, blind true, when
// it is one the caller writes but may not read (f.Readable is set): the
// scope f names, or, without one, f.DefaultScope when no scope the caller
// reads and writes holds the memory. It is decided from the request and
// the caller's grants, and from the scopes the caller reads, never from
// what the others hold: a memory id is the content address of its scope,
// title and content (distill.MemoryID), so an answer that depended on
// whether such a scope held it (200 against 404) told a write-only token
// whether another writer had recorded a guessed title and content (the
// oracle the tenant-isolation review closed on Record).
func (s *Service) blindScope(f search.Feedback) (string, bool, error) {
	writes := func(sc string) bool { return f.Writable == nil || f.Writable(sc) }
	if f.Scope != "" {
		return f.Scope, writes(f.Scope) && !f.Readable(f.Scope), nil
	}
	scopes, err := Scopes(s.Store, f.MemoryID)
	if err != nil {
		return "", false, err
	}
	for _, sc := range scopes {
		if writes(sc) && f.Readable(sc) {
			return "", false, nil // resolved among them (feedbackKey)
		}
	}
	d := f.DefaultScope
	return d, d != "" && events.ValidScope(d) && writes(d) && !f.Readable(d), nil
}

// blindFeedback appends f's signal to scope, which the caller writes but
// may not read, without looking at what scope holds: the same answer
// (WithheldFeedback) and the same work whether the memory is there or
// not, at once (the caller is shown nothing the wait for the memory bank
// would tell). A signal on a memory the scope does not hold is
// dead-lettered by the memory bank, as one written through POST
// /v1/events is, and listed to the scope's readers (GET /v1/deadletters).
func (s *Service) blindFeedback(ctx context.Context, f search.Feedback, scope string) (search.FeedbackResult, error) {
	env, err := s.newEvent(events.MemoryFeedback, scope, events.MemoryFeedbackData{MemoryID: f.MemoryID, Signal: "explicit_feedback", Positive: f.Helpful, Comment: f.Comment, Source: f.Source})
	if err != nil {
		return search.FeedbackResult{}, err
	}
	if err := s.Producer.Publish(ctx, env); err != nil {
		return search.FeedbackResult{}, err
	}
	return search.WithheldFeedback(scope), nil
}

// feedback is Feedback without the Readable check.
func (s *Service) feedback(ctx context.Context, f search.Feedback) (search.FeedbackResult, error) {
	if s.Producer == nil {
		return search.FeedbackResult{}, ErrReadOnly
	}
	if f.MemoryID == "" {
		return search.FeedbackResult{}, &search.FieldError{Pointer: "/memory_id", Reason: "required"}
	}
	key, err := s.feedbackKey(f)
	if err != nil {
		return search.FeedbackResult{}, err
	}
	m, ok, err := Get(s.Store, key)
	if err != nil {
		return search.FeedbackResult{}, err
	}
	if !ok || (f.Writable != nil && !f.Writable(m.Scope)) {
		return search.FeedbackResult{}, fmt.Errorf("%w: %s", search.ErrNotFound, f.MemoryID)
	}
	env, err := s.newEvent(events.MemoryFeedback, m.Scope, events.MemoryFeedbackData{MemoryID: f.MemoryID, Signal: "explicit_feedback", Positive: f.Helpful, Comment: f.Comment, Source: f.Source})
	if err != nil {
		return search.FeedbackResult{}, err
	}
	if err := s.Producer.Publish(ctx, env); err != nil {
		return search.FeedbackResult{}, err
	}
	wait := s.FeedbackWait
	if wait == 0 {
		wait = 5 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		changes, stored, err := History(s.Store, key)
		if err != nil {
			return search.FeedbackResult{}, err
		}
		for _, c := range changes {
			if c.EventID != env.ID {
				continue
			}
			cur, _, err := Get(s.Store, key)
			if err != nil {
				return search.FeedbackResult{}, err
			}
			msg := fmt.Sprintf("signal applied: confidence %.2f → %.2f", c.Old, c.New)
			if n := len(c.Signals) - 1; n > 0 {
				// consensus applied stored signals with this one: say so,
				// or the move reads as this signal's alone (1.00 → 0.60
				// for one negative: a walkthrough, 2026-12-06)
				msg = fmt.Sprintf("signal applied with %d stored signal(s) it agreed with (consensus; GET /v1/memories/{id}/history lists them): confidence %.2f → %.2f", n, c.Old, c.New)
			}
			if c.New < PruneBelow && c.Old >= PruneBelow {
				msg += fmt.Sprintf(", below %.2f: the memory is pruned, and searches no longer return it", PruneBelow)
			}
			switch c.Reason {
			case ReasonPending:
				msg = "signal stored; confidence moves once 2 agreeing signals from distinct sources, not yet applied, exist within 7 days (consensus while fewer than 3 distinct callers used the memory; signals that already moved it do not count again)"
				if prior, ok := pendingOfSource(stored, env.ID, f.Source, f.Helpful, env.TimeUTC()); ok {
					// it said "stored" of a second vote that consensus then
					// consumed as a repeat (a walkthrough, 2026-12-06)
					msg = fmt.Sprintf("signal stored, but it brings consensus no nearer: this source's signal %s of %s, the same way, is pending already (one vote per source); confidence moves once a signal from another source agrees within 7 days", prior.EventID, prior.Time)
				}
				if n, err := usageAuthorsIn(storeScan(s.Store), &cur); err == nil && n >= ConsensusUsage && !strings.HasPrefix(msg, "signal stored, but") {
					// it said a second source was needed, and then the
					// same source's next signal applied alone: this one
					// had made its source the memory's third caller (a
					// passes walkthrough, 2026-12-06)
					msg = fmt.Sprintf("signal stored: consensus was needed when it arrived (fewer than %d distinct callers had used the memory), and it made %d: from now on one signal from any source, this one's included, applies alone", ConsensusUsage, n)
				}
				if f.SharedSource {
					// the answer said a second source would come, and none
					// could (a walkthrough, 2026-11-30)
					msg += fmt.Sprintf("; this server has no API tokens, so every HTTP and MCP caller is one source (%s) and cannot be the second: serve with --tokens, one token per agent, or let another session's task_completion signal agree", f.Source)
				}
			case ReasonRepeat:
				msg = fmt.Sprintf("signal recorded, not applied: this source already moved the confidence the same way within %d days; one vote per source and polarity", int(ConsensusWindow.Hours()/24))
			case ReasonIgnoredPruned:
				return search.FeedbackResult{Success: false, NewConfidence: new(cur.Confidence),
					Message: fmt.Sprintf("not applied: the memory was pruned at %s (confidence %.2f below %.2f); the signal is recorded in its history and changes nothing", cur.PrunedAt, cur.Confidence, PruneBelow)}, nil
			}
			return search.FeedbackResult{Success: true, NewConfidence: new(cur.Confidence), Message: msg}, nil
		}
		if time.Now().After(deadline) {
			return search.FeedbackResult{Success: true, NewConfidence: new(m.Confidence), Message: "signal recorded in the log; the memory bank has not applied it yet"}, nil
		}
		select {
		case <-ctx.Done():
			return search.FeedbackResult{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pendingOfSource is a stored signal other than eventID, of source and
// polarity positive, not applied and within ConsensusWindow of at (an
// RFC 3339 time): one consensus will take for this source's vote, so the
// new one adds nothing (Consensus counts distinct sources).
func pendingOfSource(stored []Pending, eventID, source string, positive bool, at string) (Pending, bool) {
	now, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || source == "" {
		return Pending{}, false
	}
	for _, p := range stored {
		t, err := time.Parse(time.RFC3339Nano, p.Time)
		if err != nil || p.EventID == eventID || p.Applied || p.Source != source || p.Positive != positive || now.Sub(t) > ConsensusWindow {
			continue
		}
		return p, true
	}
	return Pending{}, false
}

// feedbackKey resolves the memory f names to its events.EntityKey: in
// f.Scope when given, else in the one writable scope that holds the id.
func (s *Service) feedbackKey(f search.Feedback) (string, error) {
	if f.Scope != "" {
		return events.EntityKey(f.Scope, f.MemoryID), nil
	}
	scopes, err := Scopes(s.Store, f.MemoryID)
	if err != nil {
		return "", err
	}
	var held []string
	for _, sc := range scopes {
		// among the scopes the caller reads too, when it says which: one
		// it may only write is written blind (blindScope), and naming it
		// here (found, or one of several) would tell what it holds
		if (f.Writable == nil || f.Writable(sc)) && (f.Readable == nil || f.Readable(sc)) {
			held = append(held, sc)
		}
	}
	switch len(held) {
	case 0:
		return "", fmt.Errorf("%w: %s", search.ErrNotFound, f.MemoryID)
	case 1:
		return events.EntityKey(held[0], f.MemoryID), nil
	}
	return "", fmt.Errorf("%w: memory_id: %s exists in several scopes you may write (%s): name the scope", search.ErrInvalid, f.MemoryID, strings.Join(held, ", "))
}
