package processors_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

// toolCalls counts the successful calls of each tool in each scope: a
// custom processor. Its projection is its rows, keyed relative to its
// Name, and each key holds the event's scope (events.EntityKey), so two
// tenants' counts of one tool stay apart.
type toolCalls struct{}

func (toolCalls) Name() string           { return "toolcalls" }
func (toolCalls) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }

// Types makes it a TypedProcessor: Apply sees tool calls only.
func (toolCalls) Types() []events.Type { return []events.Type{events.WorkflowTaskCompleted} }

func (toolCalls) Apply(tx *projections.Tx, env *events.Envelope) error {
	var d events.TaskCompletedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if d.ToolID == "" {
		return errors.New("tool call without tool_id")
	}
	if !d.Success {
		return nil
	}
	key := events.EntityKey(env.Scope, d.ToolID) // e.g. "org:default/refund"
	v, _, err := tx.Get(key)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(string(v))
	return tx.Set(key, []byte(strconv.Itoa(n+1)))
}

var _ processors.TypedProcessor = toolCalls{}

// A processor is tested without a broker by applying events to a store
// with projections.Store.Apply, as the engine does: an event whose (scope,
// source, id) was applied before is a Duplicate and not given to Apply
// again, and an Apply error is a *projections.RejectedError that writes
// nothing (the engine dead-letters such an event). Store.Apply checks no
// schema and relays nothing; processors/processortest runs a processor as
// the engine does (its Example), and checks that a replay rebuilds it
// (CheckReplay). To run it live, add it
// to pipeline.Config.Processors (with pipeline.DefaultProcessors()); to
// rebuild its projection from a log, give it to Replay.
func ExampleProcessor() {
	dir, _ := os.MkdirTemp("", "chronicle-example")
	defer os.RemoveAll(dir)
	store, err := projections.Open(dir, projections.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	call := func(id, tool string) *events.Envelope {
		env, _ := events.New(events.WorkflowTaskCompleted, "agent/demo", id, time.Time{},
			events.TaskCompletedData{WorkflowID: "s1", TaskID: id, ToolID: tool, Success: true})
		env.SessionID = "s1"
		return &env
	}
	p := toolCalls{}
	for i, env := range []*events.Envelope{call("c1", "refund"), call("c2", "refund"), call("c2", "refund")} {
		pos := projections.Position{Topic: string(events.TopicSessions), Offset: int64(i)}
		res, err := store.Apply(p.Name(), pos, env, p.Apply)
		fmt.Println(env.ID, res == projections.Applied, res == projections.Duplicate, err)
	}
	_, err = store.Apply(p.Name(), projections.Position{Topic: string(events.TopicSessions), Offset: 3}, call("c3", ""), p.Apply)
	var rej *projections.RejectedError
	fmt.Println("c3 rejected:", errors.As(err, &rej), err)
	v, _, _ := store.Get(p.Name(), events.EntityKey(events.DefaultScope, "refund"))
	fmt.Println("refund calls:", string(v))
	// Output:
	// c1 true false <nil>
	// c2 true false <nil>
	// c2 false true <nil>
	// c3 rejected: true tool call without tool_id
	// refund calls: 2
}
