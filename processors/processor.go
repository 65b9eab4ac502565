// Package processors runs Chronicle's processors: deterministic functions of
// the log that write projections into the Pebble store (package
// projections) and emit derived events through its outbox.
//
// The same Apply path serves the live pipeline (Runner: the engine, one
// franz-go consumer group for every topic the processors read, each
// partition's records of a poll applied as one Pebble batch, a rejected
// event dead-lettered through the outbox; only the Workers run on
// Watermill's Router) and Replay (a straight read of the log from offset
// 0), so a replay rebuilds every projection bit for bit. (This comment
// still described the first engine, on Watermill's Router with Retry and a
// poison queue: a new contributor's walkthrough.)
//
// A processor of one's own implements Processor (and TypedProcessor,
// KeyedState or TotalOrder where they hold), is tested with
// processors/processortest (New, Publish, CheckReplay) and runs live in
// pipeline.Config.Processors. Packages depend one way: cmd → processors →
// projections → events → schemas; a processor reads and writes its rows
// through projections.Tx and never imports cmd/ (projections'
// TestLayersRunOneWay checks every non-test file).
package processors

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Processor reacts to events of some topics. Name is also the name of its
// projection and part of its consumer group ids, so it must be stable and
// free of '/'. Apply must be a deterministic function of the projection and
// the event: no wall clock, no random ids (time comes from the event).
// An error from Apply (or a panic in it) rejects the event: since applying
// it again would refuse it again, it is dead-lettered at once (its letter's
// reason is the error's text, which should name the member at fault and
// why; an error implementing PointerError, or an *events.ValidationError,
// also gives the letter the member's JSON pointer, which GET
// /v1/deadletters answers; RunnerConfig.OnDeadLetter is told), nothing it
// wrote is kept, and the next event is applied. Only a failure of the store
// itself (an error of a Tx call, whether or not Apply returns it) is
// retried (RunnerConfig.MaxRetries) before it is dead-lettered. Before, this comment said every error was
// retried first (a Go-package walkthrough counted one Apply call).
// projections.Store.Apply on a store of one's own runs Apply as the engine
// does, without a broker: a rejection is a *projections.RejectedError.
//
// Apply may run more than once for one event: the engine applies a
// partition's records of one poll as one batch, and when an event of the
// batch is refused it applies the batch again one event at a time, after
// throwing away what the first pass wrote; a restart re-applies what was
// not committed. Only what goes through tx is kept, once, so anything done
// outside it (a counter, a log line) may count an event twice.
//
// Keys: a row's key is relative to the processor's projection (Name), and
// nothing adds the event's scope to it. A processor that serves more than
// one tenant keeps its scope in every key (events.EntityKey(env.Scope,
// id), as the built-in processors do); keyed by an id alone, the rows of
// project:a and project:b merge.
//
// Types: a processor reads Chronicle's event types (events.Types), whose
// schemas are in package schemas; an envelope of any other type is refused
// by events.New and dead-lettered by the engine. A new event family is
// added to this repository (a schema in schemas/, its types, registry
// entry, payload and test cases in events: the README's "Adding an event
// type" lists each step), not registered at run time.
type Processor interface {
	Name() string
	Topics() []events.Topic
	Apply(tx *projections.Tx, env *events.Envelope) error
}

// CheckNames fails for a processor of procs that is nil or whose Name is
// empty, holds a '/' or repeats another's, naming field (e.g. "RunnerConfig.Processors")
// and the index: two processors of one
// name share one projection, offsets and idempotency keys, so the second
// saw every event as a duplicate of the first and was never applied (a
// Go-package walkthrough's processor named "sessions", next to the
// built-in one). It fails too for a topic of Topics that is not
// Chronicle's (events.AllTopics: it is never created), and for a
// TypedProcessor listing a type that is not Chronicle's (events.Lookup) or
// is written to a topic not among its Topics: no such event ever reaches
// it (it was taken silently).
func CheckNames(field string, procs []Processor) error {
	seen := make(map[string]int, len(procs))
	for i, p := range procs {
		if p == nil {
			// it panicked in Name (a Go-package walkthrough, 2026-12-06)
			return fmt.Errorf("processors: %s[%d]: nil", field, i)
		}
		name := p.Name()
		switch j, dup := seen[name]; {
		case name == "":
			return fmt.Errorf("processors: %s[%d]: Name is empty", field, i)
		case strings.Contains(name, "/"):
			return fmt.Errorf("processors: %s[%d]: Name %q holds a '/'", field, i, name)
		case dup:
			return fmt.Errorf("processors: %s[%d]: Name %q is also %s[%d]'s: each processor needs its own (it names its projection, offsets and idempotency keys)", field, i, name, field, j)
		}
		seen[name] = i
		for j, t := range p.Topics() {
			if !slices.Contains(events.AllTopics, t) {
				// Start took it and WaitCaughtUp failed with "end offsets:
				// UNKNOWN_TOPIC_OR_PARTITION", naming neither (a new
				// contributor's walkthrough, 2026-12-07)
				return fmt.Errorf("processors: %s[%d] (%s): Topics()[%d] %q is no topic of Chronicle's (events.AllTopics): it is never created, so nothing would be read from it (a new topic is added to events.AllTopics)", field, i, name, j, t)
			}
		}
		if tp, ok := p.(TypedProcessor); ok {
			topics := tp.Topics()
			for j, t := range tp.Types() {
				info, known := events.Lookup(t)
				switch {
				case !known:
					return fmt.Errorf("processors: %s[%d] (%s): Types()[%d] %q is no event type of Chronicle's (events.Lookup): it would never be applied", field, i, name, j, t)
				case !slices.Contains(topics, info.Topic):
					// it was taken silently and never applied (a Go-package
					// walkthrough, 2026-12-06)
					return fmt.Errorf("processors: %s[%d] (%s): Types()[%d] %s is written to %s, which is not among its Topics() %v: it would never be applied", field, i, name, j, t, info.Topic, topics)
				}
			}
		}
	}
	return nil
}

// TotalOrder is implemented by processors whose state spans keys (and so
// partitions): they are deterministic functions of the log only when each
// of their topics has a single partition. The pipeline refuses to start
// them otherwise.
type TotalOrder interface {
	NeedsTotalOrder() bool
}

// Worker reacts to events with effects outside the store (calling a model)
// and writes what it learned as new events, whose ids it derives from the
// cause (events.Derive) so that a repeat is dropped downstream. Its position
// is its consumer group's committed offset. Handle may run again for an
// event (a crash before the commit), but what it publishes through an
// events.Producer with its context is written once: the Runner writes it
// in one Kafka transaction with the consumed offset (WorkerTransactionalID;
// a StreamingWorker's step by step, each step its own transaction under
// the same id). A Handle error
// sends the event to the dead-letter topic with the reason; the worker goes
// on with the next event.
type Worker interface {
	Name() string
	Topic() events.Topic
	Handle(ctx context.Context, env *events.Envelope) error
}

// TypedWorker is implemented by a Worker that handles only a few event
// types of its topic, as the tree-search ResumeWorker handles only
// search.resumed.v1 of chronicle.searches. The Runner hands it only events
// of those types: any other record is skipped by its subscription
// (kafkapubsub SubscriberConfig.Skip) after a look at its type
// (events.RecordType), never converted, parsed, validated or delivered as
// a message (the topic's processors dead-letter an invalid one). Its
// consumer fetches in batches (an event is handed up to
// TypedWorkerFetchWait, 100 ms, after it was written) and commits its
// marks at that interval (kafkapubsub CommitInterval) instead of one
// commit round trip per record, so after a crash the records of up to
// that interval are handed again: Handle must be idempotent, as every
// Worker's should be (at-least-once). On a busy topic this takes a second
// consumer's work off the path of every event (issue 12: the ResumeWorker
// cost each search event about a third more CPU and doubled the tail of
// BenchmarkNodeExpansionToProjection).
type TypedWorker interface {
	Worker
	// Types are the event types Handle acts on; a nil or empty list hands
	// it every event, as a plain Worker.
	Types() []events.Type
}

// TypedProcessor is implemented by a Processor whose Apply acts on a few
// event types of its topics only, as toolgraph.Transitions acts on
// workflow.task.completed.v1 alone of chronicle.sessions. The engine,
// replay, standby replicas and global tables skip its other events
// (applyBatch): their offsets advance in its batches, but no Apply call
// and no idempotency key is spent on them, which on a busy topic is most
// of such a processor's cost. Its Apply must write nothing for the other
// types (it is not called for them).
type TypedProcessor interface {
	Processor
	// Types are the event types Apply acts on; a nil or empty list gives
	// it every event, as a plain Processor.
	Types() []events.Type
}

// FilteredProcessor is a TypedProcessor whose Apply acts on only some
// events of its types, as toolgraph.Transitions acts on the user's
// minutes alone among coordination.minute.recorded.v1. The engine, replay,
// standby replicas and global tables skip an event of its types for which
// ActsOn is false exactly as an event of another type: offset advanced,
// no Apply call, no idempotency key. ActsOn must be a pure function of the
// envelope (a replay skips what the live run skipped), and Apply must
// write nothing for the events it refuses.
type FilteredProcessor interface {
	TypedProcessor
	// ActsOn reports whether Apply acts on env, an event of one of Types.
	ActsOn(env *events.Envelope) bool
}

// actsOn reports whether p's Apply acts on env: a TypedProcessor's types
// hold its type (or it lists none) and, for a FilteredProcessor, ActsOn
// takes it; any other processor acts on every event, and on an unparsed
// record (env nil), which it rejects.
func actsOn(p Processor, env *events.Envelope) bool {
	tp, ok := p.(TypedProcessor)
	if !ok || env == nil {
		return true
	}
	handled := tp.Types()
	if len(handled) != 0 && !slices.Contains(handled, env.Type) {
		return false
	}
	fp, ok := p.(FilteredProcessor)
	return !ok || fp.ActsOn(env)
}

// applyBatch applies items (one topic partition's records) for p through
// store: for a TypedProcessor, the events of other types (and, for a
// FilteredProcessor, those ActsOn refuses) are skipped
// (projections.Item.Skip: the offset moves past them, no Apply call and no
// idempotency key — an Apply that ignores them wrote nothing for them
// anyway). items is not modified.
func applyBatch(store *projections.Store, p Processor, items []projections.Item) ([]projections.Outcome, error) {
	if tp, ok := p.(TypedProcessor); ok {
		handled := tp.Types()
		fp, filtered := p.(FilteredProcessor)
		if len(handled) == 0 && !filtered {
			return store.ApplyBatch(p.Name(), items, p.Apply)
		}
		marked := make([]projections.Item, len(items))
		for i, it := range items {
			// actsOn, with Types read once per batch
			if it.Env != nil && ((len(handled) != 0 && !slices.Contains(handled, it.Env.Type)) || (filtered && !fp.ActsOn(it.Env))) {
				it.Skip = true
			}
			marked[i] = it
		}
		items = marked
	}
	return store.ApplyBatch(p.Name(), items, p.Apply)
}

// WorkerGroupID is the consumer group of worker w: chronicle.<worker>.<topic>.
func WorkerGroupID(w Worker) string { return "chronicle." + w.Name() + "." + string(w.Topic()) }
