package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Service writes workflow events and waits until the workflows processor
// has handled them, so a caller reads its own writes: the HTTP API's
// workflow routes and the benchmarks use it.
type Service struct {
	Store    *projections.Store
	Producer *events.Producer
	// Wait bounds the wait for the processor after the broker acknowledged
	// (default 5 s).
	Wait time.Duration
	// MaxStateBytes bounds a workflow's state row, in bytes of JSON: Check
	// refuses a write that would grow the state above it (ErrStateTooLarge,
	// naming the event's member that carries the growth). 0:
	// DefaultMaxStateBytes; negative: no bound. Only writes through the
	// Service are checked: the processor takes what the log holds, so a
	// replay of a log written before, or written straight to Kafka, is
	// unchanged. A write that does not grow the state, a checkpoint, a
	// resume, a decision's answer and the completion pass whatever the
	// state's size.
	MaxStateBytes int
}

// DefaultMaxStateBytes is Service.MaxStateBytes' default: 16 MiB. Every
// event of a workflow rewrites its state row (the state is one row), so a
// 60-byte checkpoint of a 16 MiB state writes 16 MiB to the store's
// write-ahead log; and the Go workflow client refuses answers above
// 64 MiB, which a state's answer, with its markup as sent, can reach from
// about a quarter of that (a security walkthrough, 2026-12-05: a 17 MB
// state and 40 checkpoints of {"layer":1}).
const DefaultMaxStateBytes = 16 << 20

// ErrStateTooLarge is wrapped by Check's *Refusal for a write that would
// grow the workflow's state above Service.MaxStateBytes.
var ErrStateTooLarge = errors.New("the workflow's state would grow above this service's limit")

// ErrRejected is wrapped by Submit's error for an event the workflows
// processor refused (dead-lettered with the reason).
var ErrRejected = errors.New("rejected by the workflows processor (dead-lettered with the reason on chronicle.deadletter)")

// ErrNotProcessed is wrapped by Submit's error when the processor did not
// reach the event within Service.Wait; the event is in the log and will be
// processed.
var ErrNotProcessed = errors.New("written to the log, not yet processed")

// ErrIDReused is wrapped by Submit's error for an event whose id (with its
// source) the workflows processor applied before with other content: a
// retry must resend the same write; another write needs another id.
// Nothing is written when Submit sees it before producing; a write that
// raced another under the same id is in the log, dead-lettered as a
// conflicting duplicate.
var ErrIDReused = errors.New("already used for another write (a retry must send the same write; use a new id for a new one)")

// Submit validates env (a producer event of the workflow family), produces
// it, waits for the broker's acknowledgement and then for the workflows
// processor to pass its offset, and returns its position in the log — for
// a workflow.checkpoint.saved.v1, the checkpoint's id. For a retry of a
// write already applied (same idempotency key and content) it is the
// first write's position: the retry's own record is a dropped duplicate. The error wraps a
// *events.ValidationError for an invalid event, ErrRejected when the
// processor refused it, ErrNotProcessed after Service.Wait.
func (s *Service) Submit(ctx context.Context, env events.Envelope) (projections.Position, error) {
	raw, err := env.MarshalJSON() // json.Marshal(env) would compact it again, writing '<' as \u003c
	if err != nil {
		return projections.Position{}, err
	}
	if env, err = events.ParseProducerEvent(raw); err != nil {
		return projections.Position{}, err
	}
	if err := events.CheckTopic(&env, events.TopicWorkflows); err != nil {
		return projections.Position{}, err
	}
	key, err := events.Key(&env)
	if err != nil {
		return projections.Position{}, err
	}
	if err := s.checkID(&env); err != nil {
		return projections.Position{}, err
	}
	rec, err := events.Record(&env)
	if err != nil {
		return projections.Position{}, err
	}
	if len(rec.Value) > events.MaxEventBytes {
		// the broker would refuse it (MESSAGE_TOO_LARGE), which read as a
		// retryable outage; no retry can make it fit
		return projections.Position{}, &events.ValidationError{Index: -1, Pointer: "/", Err: events.ErrEventTooLarge,
			Reason: fmt.Sprintf("%d bytes encoded, above the %d-byte limit of one event", len(rec.Value), events.MaxEventBytes)}
	}
	if err := s.Producer.ProduceRecords(ctx, []*kgo.Record{rec}); err != nil {
		return projections.Position{}, err
	}
	pos := projections.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
	wait := s.Wait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	deadline := time.Now().Add(wait)
	for sleep := 50 * time.Microsecond; ; sleep = min(2*sleep, 2*time.Millisecond) {
		if next, ok := s.Store.NextOffset(Name, pos.Topic, pos.Partition); ok && next > pos.Offset {
			break
		}
		if time.Now().After(deadline) {
			return pos, fmt.Errorf("workflows: event %s at %s: %w after %v", env.ID, pos, ErrNotProcessed, wait)
		}
		select {
		case <-ctx.Done():
			return pos, ctx.Err()
		case <-time.After(sleep):
		}
	}
	off, applied, same, err := s.Store.AppliedAt(Name, &env)
	switch {
	case err != nil:
		return pos, err
	case applied && !same:
		return pos, fmt.Errorf("event_id %q: %w", env.ID, ErrIDReused) // raced another write under the same id
	case applied:
		pos.Offset = off // a retry: the write's own position, not the dropped repeat's
	}
	ok, err := Applied(s.Store, key, env.ID)
	if err != nil {
		return pos, err
	}
	if !ok {
		// it passed Check, and another write applied between them (two
		// answers to one decision racing): the processor's reason is what
		// the workflow's state now says of it, as Check would have said
		// had it come second (before, a bare 409 naming no reason; found
		// by an agent-runtime walkthrough)
		var ref *Refusal
		if errors.As(s.try(env), &ref) {
			ref.Err = fmt.Errorf("%s%w", WrittenPrefix(pos.String()), ref.Err)
			ref.Written = pos.String()
			return pos, ref
		}
		return pos, fmt.Errorf("workflows: event %s (%s) at %s: %w; GET /v1/deadletters?scope=%s names the reason", env.ID, env.Type, pos, ErrRejected, env.EffectiveScope())
	}
	return pos, nil
}

// WrittenPrefix is how a Refusal of a write rejected from the log at pos
// begins (Refusal.Written).
func WrittenPrefix(pos string) string {
	return "written at " + pos + " and rejected there, another write having changed the workflow first: "
}

// Refusal is Check's error for a write the workflows processor would
// reject on the workflow's current state: the processor's reason, with the JSON pointer it
// names when it names one ("/" otherwise). It wraps ErrRejected and the
// processor's error (ErrCompleted, ErrNotPending, ErrDuplicateID, ...).
type Refusal struct {
	Pointer, Reason string
	Err             error
	// Written is the log position of a write that raced another and was
	// rejected from the log (Submit); empty for Check's refusal, made
	// before anything was written.
	Written string
}

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap returns ErrRejected and the processor's error.
func (r *Refusal) Unwrap() []error { return []error{ErrRejected, r.Err} }

// Check applies env to the current state without writing anything
// (Store.Try), as the log will hand it to the processor (with a time), and
// returns a *Refusal when the processor rejects it, so that a caller can
// answer with the reason before calling Submit. A write that passes can
// still be rejected from the log (the state may change in between):
// Submit's ErrRejected then, with the reason on chronicle.deadletter. It
// must run where the workflow's rows are (its partition's owner).
func (s *Service) Check(env events.Envelope) error {
	if applied, _, err := s.Store.AppliedContent(Name, &env); err != nil || applied {
		return err // a retry (Submit answers it) or a reused id (Submit refuses it)
	}
	return s.try(env)
}

// try is Check without its idempotency test: the schema, then the
// processor on the current state (Store.Try), a *Refusal for its
// rejection.
func (s *Service) try(env events.Envelope) error {
	// the event's schema first, as Submit checks it: the processor's
	// reason for an event its schema refuses is beside the point (an empty
	// command id in processed_commands read "not pending", a 409, where
	// the schema says minLength 1, a 400)
	raw, err := env.MarshalJSON() // json.Marshal(env) would compact it again, writing '<' as \u003c
	if err != nil {
		return err
	}
	if _, err := events.ParseProducerEvent(raw); err != nil {
		return err
	}
	if env.Time == "" {
		env.Time, env.TimeFromLog = time.Now().UTC().Format(time.RFC3339Nano), true
	}
	err = s.Store.Try(Name, &env, s.applyBounded)
	var rej *projections.RejectedError
	if !errors.As(err, &rej) {
		return err
	}
	ref := &Refusal{Pointer: "/", Reason: rej.Err.Error(), Err: rej.Err}
	if fe := (*FieldError)(nil); errors.As(rej.Err, &fe) {
		ref.Pointer, ref.Reason = fe.Pointer, fe.Err.Error()
	}
	return ref
}

// applyBounded is the processor's Apply, refusing an event that grows the
// state above MaxStateBytes (a *FieldError wrapping ErrStateTooLarge,
// naming the member of the event that carries the growth).
func (s *Service) applyBounded(tx *projections.Tx, env *events.Envelope) error {
	limit := s.MaxStateBytes
	if limit == 0 {
		limit = DefaultMaxStateBytes
	}
	ptr := growthPointer(env.Type)
	if limit < 0 || ptr == "" {
		return Processor{}.Apply(tx, env)
	}
	key, err := keyOf(env)
	if err != nil {
		return err
	}
	before, _, err := tx.Get(stateKey(key))
	if err != nil {
		return err
	}
	if err := (Processor{}).Apply(tx, env); err != nil {
		return err
	}
	after, _, err := tx.Get(stateKey(key))
	if err != nil {
		return err
	}
	if len(after) > limit && len(after) > len(before) {
		return fieldError(ptr, "%w: %d bytes of JSON after this write (%d before), above %d (serve --workflow-state-max-mib): keep large values out of the state (store them elsewhere and put their reference in it), or start a new workflow",
			ErrStateTooLarge, len(after), len(before), limit)
	}
	return nil
}

// growthPointer names the member of an event of type typ that adds
// content to a workflow's state; "" for the types the bound lets through:
// a checkpoint marks the state, a resume restores a saved one, an answer
// and the completion end what was started (each at most one event's
// size), so a workflow at or above the bound can still be resumed,
// answered and ended.
func growthPointer(typ events.Type) string {
	switch typ {
	case events.WorkflowReducerApplied, events.WorkflowForked:
		return "/data/update"
	case events.WorkflowCommandEnqueued:
		return "/data/args"
	case events.WorkflowDecisionRequested:
		return "/data/question"
	}
	return ""
}

// checkID fails with ErrIDReused when the processor applied env's id
// before with other content.
func (s *Service) checkID(env *events.Envelope) error {
	applied, same, err := s.Store.AppliedContent(Name, env)
	if err != nil {
		return err
	}
	if applied && !same {
		return fmt.Errorf("event_id %q: %w", env.ID, ErrIDReused)
	}
	return nil
}
