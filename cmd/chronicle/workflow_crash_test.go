package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// serveOn starts `chronicle serve` on data with loopback ports and returns
// the process and the API's base URL once it listens.
func serveOn(t *testing.T, data string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--data", data, "--kafka-listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "HTTP API on "); ok {
				select {
				case addr <- strings.Fields(u)[0]:
				default:
				}
			}
		}
	}()
	select {
	case base := <-addr:
		return cmd, base
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve did not listen within 30 s")
	}
	return nil, ""
}

// resumeOnce resumes id from its last checkpoint, waiting up to 20 s for
// the restarted service's workflows processor to catch up with the log (a
// 404 until it did).
func resumeOnce(ctx context.Context, c *client.Client, id string) (r workflows.WriteResult, err error) {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err = c.Resume(ctx, id, "")
		var e *client.Error
		if err == nil || !errors.As(err, &e) || e.Status != 404 || time.Now().After(deadline) {
			return r, err
		}
	}
}

// taskUpdate is the update of task i of layer l: its event id is fixed, so
// a re-run after a crash sends the same event.
func taskUpdate(l, i, epoch int) (string, []any) {
	return fmt.Sprintf("wfcrash-r%d-l%d-t%d", epoch, l, i), []any{map[string]any{"id": fmt.Sprintf("l%d-t%d", l, i), "layer": l}}
}

// runLayers drives workflow id from its last checkpoint (after a resume)
// to the end: layers × tasks task updates, a checkpoint per layer. It
// stops early (returning false) when stop is closed.
func runLayers(ctx context.Context, c *client.Client, id string, epoch, from, layers, tasks int) error {
	for l := from; l < layers; l++ {
		for i := 0; i < tasks; i++ {
			eid, u := taskUpdate(l, i, epoch)
			if _, err := c.UpdateEventID(ctx, id, eid, l, events.ChannelTasks, u); err != nil {
				return err
			}
		}
		if _, err := c.Checkpoint(ctx, id, l); err != nil {
			return err
		}
	}
	return nil
}

// TestWorkflowCrashMidLayer SIGKILLs `chronicle serve` at least 3 times at
// random points in the middle of a layer (after some of its task updates
// were acknowledged, before its checkpoint), restarts it on the same
// --data, resumes the workflow from its last checkpoint and re-runs the
// layer's tasks with the same event ids. At the end every task of every
// layer is recorded exactly once, the tasks equal an uninterrupted run's,
// and audit passes.
//
// A resume reverts the state to the checkpoint (the layer's acknowledged
// updates are dropped), so the re-run sends the same task ids under event
// ids of its resume epoch (the state's resume count): a retry within an
// attempt keeps its event id (applied once), a re-run after a resume is a
// new event. Re-sending the pre-crash event ids would be deduplicated by
// the log and lose those tasks.
func TestWorkflowCrashMidLayer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts chronicle serve several times")
	}
	const layers, tasks, id = 4, 6, "wfcrash"
	ctx := context.Background()

	// the uninterrupted run
	cleanCmd, base := serveOn(t, t.TempDir())
	if err := runLayers(ctx, client.New(base, ""), id, 0, 0, layers, tasks); err != nil {
		_ = cleanCmd.Process.Kill()
		t.Fatal(err)
	}
	clean, err := client.New(base, "").State(ctx, id)
	_ = cleanCmd.Process.Signal(syscall.SIGTERM)
	_ = cleanCmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(clean.Tasks) != layers*tasks {
		t.Fatalf("clean run recorded %d tasks, want %d", len(clean.Tasks), layers*tasks)
	}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 14))
	t.Logf("kill seed %d", seed)
	data := t.TempDir()
	kills, next := 0, 0 // next: the layer to run after a resume
	for kills < 3 && next < layers {
		cmd, base := serveOn(t, data)
		c := client.New(base, "")
		epoch := 0
		if kills > 0 {
			r, err := resumeOnce(ctx, c, id)
			if err != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("resume after kill %d: %v", kills, err)
			}
			if r.NextLayer != nil {
				next = *r.NextLayer
			}
			epoch = r.State.Resumes
		}
		// run complete layers up to the victim layer, then part of it
		victim := max(1, next+rng.IntN(min(2, layers-next))) // layer 0 checkpointed: a resume has a checkpoint
		acked := 1 + rng.IntN(tasks-1)                       // acknowledged task updates of the victim layer before the kill
		if err := runLayers(ctx, c, id, epoch, next, victim, tasks); err != nil {
			_ = cmd.Process.Kill()
			t.Fatal(err)
		}
		for i := 0; i < acked; i++ {
			eid, u := taskUpdate(victim, i, epoch)
			if _, err := c.UpdateEventID(ctx, id, eid, victim, events.ChannelTasks, u); err != nil {
				_ = cmd.Process.Kill()
				t.Fatal(err)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		kills++
		next = victim
		t.Logf("kill %d: in layer %d after %d of %d task updates acknowledged", kills, victim, acked, tasks)
	}
	cmd, base := serveOn(t, data)
	c := client.New(base, "")
	r, err := resumeOnce(ctx, c, id)
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	from := 0
	if r.NextLayer != nil {
		from = *r.NextLayer
	}
	if err := runLayers(ctx, c, id, r.State.Resumes, from, layers, tasks); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	final, err := c.State(ctx, id)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, raw := range final.Tasks {
		var task struct{ ID string }
		if err := json.Unmarshal(raw, &task); err != nil {
			t.Fatal(err)
		}
		seen[task.ID]++
	}
	for l := 0; l < layers; l++ {
		for i := 0; i < tasks; i++ {
			if n := seen[fmt.Sprintf("l%d-t%d", l, i)]; n != 1 {
				t.Errorf("task l%d-t%d recorded %d times", l, i, n)
			}
		}
	}
	got, _ := json.Marshal(final.Tasks)
	want, _ := json.Marshal(clean.Tasks)
	if string(got) != string(want) {
		t.Errorf("tasks after crashes differ from the uninterrupted run:\n got %s\nwant %s", got, want)
	}
	if final.Checkpoints < layers {
		t.Errorf("%d checkpoints, want at least %d", final.Checkpoints, layers)
	}
	if out, err := exec.Command(binary, "audit", "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("audit after crashes: %v\n%s", err, out)
	}
}
