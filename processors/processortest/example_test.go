package processortest_test

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/processortest"
	"github.com/chronicle-dev/chronicle/projections"
)

// refunds counts each scope's successful refund calls and refuses a call
// of the tool "refund_all": a processor of one's own, its rows keyed by
// the event's scope (events.EntityKey).
type refunds struct{}

func (refunds) Name() string           { return "refunds" }
func (refunds) Topics() []events.Topic { return []events.Topic{events.TopicSessions} }
func (refunds) Types() []events.Type   { return []events.Type{events.WorkflowTaskCompleted} }
func (refunds) Apply(tx *projections.Tx, env *events.Envelope) error {
	var d events.TaskCompletedData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if d.ToolID == "refund_all" {
		return errors.New("refund_all may not be called")
	}
	if d.ToolID != "refund" || !d.Success {
		return nil
	}
	key := events.EntityKey(env.Scope, "refund")
	v, _, err := tx.Get(key)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(string(v))
	return tx.Set(key, []byte(strconv.Itoa(n+1)))
}

// A processor is run as the engine runs it, without a broker: Publish
// checks the events as a producer does, applies them (a repeat is a
// Duplicate, an Apply error a dead letter, another type Ignored) and
// relays what they caused; the projection is read from Store; a replay of
// the tester's log gives the same digest. In a test, New(t, procs) and
// CheckReplay(t, tt) do the same and fail the test instead.
func Example() {
	tt, err := processortest.Open([]processors.Processor{refunds{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tt.Close()

	call := func(id, tool string) events.Envelope {
		env, _ := events.New(events.WorkflowTaskCompleted, "agent/demo", id, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
			events.TaskCompletedData{WorkflowID: "w1", TaskID: id, ToolID: tool, Success: true})
		env.SessionID = "s1"
		return env
	}
	outs, err := tt.Publish(call("c1", "refund"), call("c2", "search"), call("c1", "refund"), call("c3", "refund_all"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range outs {
		fmt.Println(o["refunds"].Result, o["refunds"].Err)
	}
	v, _, _ := tt.Store.Get("refunds", events.EntityKey(events.DefaultScope, "refund"))
	fmt.Println("refunds:", string(v), "dead letters:", len(tt.DeadLetters()))

	// a producer's refusal names the member and writes nothing
	_, err = tt.Publish(call("c4", "has space"))
	fmt.Println(err)

	live, _ := tt.Store.Digest()
	replayed, _ := tt.ReplayDigest(0)
	fmt.Println("replay equals live:", replayed.All == live.All)
	// Output:
	// Applied <nil>
	// Applied <nil>
	// Duplicate <nil>
	// DeadLettered refund_all may not be called
	// refunds: 1 dead letters: 1
	// event 0: /data/tool_id: "has space" is not a tool name the tool graph can hold: character ' ' at byte 3 is not allowed (ASCII letters, digits and ._~:@+=-/ only)
	// replay equals live: true
}
