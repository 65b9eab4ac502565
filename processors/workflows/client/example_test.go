package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// A workflow driven through a running Chronicle (here one in-process, on
// an embedded broker; usually client.New("http://127.0.0.1:8080", token)):
// a reducer update and a checkpoint per DAG layer, a human decision that
// pauses the workflow until it is answered, the state read back, and the
// checkpoint to resume from after a crash. Each write returns once the
// workflows processor applied it, with the state after it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "chronicle-example")
	defer os.RemoveAll(dir)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	defer srv.Close()

	c := client.New(srv.URL, "") // no token: a service started without tokens
	if _, err := c.Update(ctx, "w1", 0, events.ChannelTasks, []any{map[string]any{"task_id": "t1", "tool": "get_reservation"}}); err != nil {
		fmt.Println(err)
		return
	}
	cp, err := c.Checkpoint(ctx, "w1", 0) // layer 0 done
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("checkpoint:", cp.CheckpointID == cp.Position, cp.State.Checkpoints, cp.State.CurrentLayer)

	d, err := c.Interrupt(ctx, "w1", events.DecisionHuman, "Cancel reservation ABC123?", "approve", "reject")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("interrupted:", d.State.Status, len(d.State.PendingDecisions))
	a, err := c.Answer(ctx, "w1", d.State.PendingDecisions[0].DecisionID, "approve", "user:ana")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("answered:", a.State.Status, len(a.State.PendingDecisions))

	st, err := c.State(ctx, "w1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("state:", st.WorkflowID, st.Scope, len(st.Tasks), st.CheckpointID == cp.CheckpointID)

	// after a crash: back to the last checkpoint, run the next layer
	r, err := c.Resume(ctx, "w1", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("resume at layer:", *r.NextLayer)

	// a refusal is a *client.Error with the status and the request body's member
	_, err = c.Update(ctx, "w1", 1, "nonsense", []any{})
	var ce *client.Error
	if errors.As(err, &ce) {
		fmt.Println(ce.Status, ce.Pointer)
	}
	// Output:
	// checkpoint: true 1 0
	// interrupted: waiting_for_human 1
	// answered: running 0
	// state: w1 org:default 1 true
	// resume at layer: 1
	// 400 /channel
}
