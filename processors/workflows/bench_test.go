package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/projections"
)

// The PML design's targets: state update < 1 ms per reducer operation,
// checkpoint save < 50 ms, command < 10 ms from enqueue to processing.

var task = json.RawMessage(`{"id":"t1","tool":"get_reservation_details","inputs":{"reservation_id":"NO6JO3"},"result":{"status":"ok"}}`)

// BenchmarkReducer: one reducer operation in memory (append a task, merge
// a context key), the design's "state update".
func BenchmarkReducer(b *testing.B) {
	b.Run("append", func(b *testing.B) {
		var s workflows.State
		for b.Loop() {
			if err := workflows.Reduce(&s, events.ChannelTasks, task); err != nil {
				b.Fatal(err)
			}
			if len(s.Tasks) == 1000 {
				s.Tasks = s.Tasks[:0]
			}
		}
	})
	b.Run("merge", func(b *testing.B) {
		var s workflows.State
		upd := json.RawMessage(`{"user":"mia_li_3668","cabin":"economy"}`)
		for b.Loop() {
			if err := workflows.Reduce(&s, events.ChannelContext, upd); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func applyBench(b *testing.B, setup func(h func(typ events.Type, data any)), typ events.Type, data func(i int) any, fn projections.ApplyFunc) {
	st, err := projections.Open(b.TempDir(), projections.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	off := int64(0)
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	apply := func(typ events.Type, data any, fn projections.ApplyFunc) {
		env, err := events.New(typ, "bench", fmt.Sprintf("e%d", off), at.Add(time.Duration(off)*time.Millisecond), data)
		if err != nil {
			b.Fatal(err)
		}
		env.Scope = "project:bench"
		if _, err := st.Apply(workflows.Name, projections.Position{Topic: string(events.TopicWorkflows), Offset: off}, &env, fn); err != nil {
			b.Fatal(err)
		}
		off++
	}
	setup(func(typ events.Type, data any) { apply(typ, data, workflows.Processor{}.Apply) })
	i := 0
	for b.Loop() {
		apply(typ, data(i), fn)
		i++
	}
}

// BenchmarkApply: one workflow event applied through the projection store
// (decode, reducer, state row, idempotency key and offset in one Pebble
// batch) on a workflow of 100 tasks and 50 messages, next to a no-op
// processor on the same path (the store's own cost).
func BenchmarkApply(b *testing.B) {
	grow := func(h func(events.Type, any)) {
		for i := range 100 {
			h(events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: "w", Channel: events.ChannelTasks, Update: task})
			if i%2 == 0 {
				h(events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: "w", Channel: events.ChannelMessages, Update: json.RawMessage(`{"role":"tool","content":"a reply of about sixty bytes, as the sessions have"}`)})
			}
		}
	}
	upd := func(int) any {
		return events.ReducerAppliedData{WorkflowID: "w", Layer: 1, Channel: events.ChannelContext, Update: json.RawMessage(`{"k":"v"}`)}
	}
	b.Run("reducer update", func(b *testing.B) {
		applyBench(b, grow, events.WorkflowReducerApplied, upd, workflows.Processor{}.Apply)
	})
	b.Run("checkpoint", func(b *testing.B) {
		applyBench(b, grow, events.WorkflowCheckpointSaved, func(int) any { return events.CheckpointSavedData{WorkflowID: "w", Layer: 1} }, workflows.Processor{}.Apply)
	})
	b.Run("baseline no-op processor", func(b *testing.B) {
		applyBench(b, grow, events.WorkflowReducerApplied, upd, func(*projections.Tx, *events.Envelope) error { return nil })
	})
}

// BenchmarkEndToEnd: through a running pipeline (embedded broker, the
// live runner) on a workflow of 100 tasks and 50 messages: a command
// enqueued → applied by the workflows processor and visible in the
// projection (the time includes the checkpoint every 10 commands that
// empties the queue), and a checkpoint written → saved, each next to the
// broker's acknowledgement alone (the produce part of the same path).
// Reports p50 and p99 in ms.
func BenchmarkEndToEnd(b *testing.B) {
	ctx := context.Background()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: b.TempDir(), KafkaListen: "127.0.0.1:0", Processors: []processors.Processor{workflows.Processor{}}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	svc := &workflows.Service{Store: p.Store, Producer: p.Producer}
	n := 0
	env := func(typ events.Type, data any) events.Envelope {
		n++
		e, err := events.New(typ, "bench", fmt.Sprintf("e%d", n), time.Now(), data)
		if err != nil {
			b.Fatal(err)
		}
		e.Scope = "project:bench"
		return e
	}
	run := func(b *testing.B, do func(i int) error) {
		var lat []time.Duration
		i := 0
		for b.Loop() {
			t0 := time.Now()
			if err := do(i); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			i++
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	// a workflow of 100 tasks and 50 messages, as in BenchmarkApply
	for i := range 100 {
		if _, err := svc.Submit(ctx, env(events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: "w", Channel: events.ChannelTasks, Update: task})); err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := svc.Submit(ctx, env(events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: "w", Channel: events.ChannelMessages, Update: json.RawMessage(`{"role":"tool","content":"a reply of about sixty bytes, as the sessions have"}`)})); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("command enqueue→processed", func(b *testing.B) {
		// the executor handles the queue at each checkpoint, so it stays
		// short: 10 commands, then a checkpoint that processes them
		var queued []string
		run(b, func(i int) error {
			if len(queued) == 10 {
				if _, err := svc.Submit(ctx, env(events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w", Layer: i, ProcessedCommands: queued})); err != nil {
					return err
				}
				queued = nil
			}
			id := fmt.Sprintf("c%d", i)
			queued = append(queued, id)
			_, err := svc.Submit(ctx, env(events.WorkflowCommandEnqueued, events.CommandEnqueuedData{WorkflowID: "w", CommandID: id, Command: events.CommandInjectTasks}))
			return err
		})
	})
	b.Run("checkpoint write→saved", func(b *testing.B) {
		run(b, func(i int) error {
			_, err := svc.Submit(ctx, env(events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: "w", Layer: i}))
			return err
		})
	})
	b.Run("baseline broker ack only", func(b *testing.B) {
		run(b, func(i int) error {
			return p.Producer.Publish(ctx, env(events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: "w3", Channel: events.ChannelTasks, Update: task}))
		})
	})
}
