package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// A workflow update carrying markup is stored as sent: its record holds
// '<', '>' and '&', not json.Marshal's \u003c escapes, which made markup
// six times longer (as /v1/events has stored it since the envelope's
// encoding stopped escaping; found by a review: the workflow routes built
// their events with events.New and re-encoded them with json.Marshal).
func TestWorkflowUpdateKeepsMarkupAsSent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, c, _ := startAt(t, t.TempDir())
	const markup = `<b>fares & fees</b> -> <i>ok</i>`
	res, err := c.Update(ctx, "wf-markup", 0, "messages", map[string]any{"role": "tool", "content": markup})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(res.Position, ":")
	part, _ := strconv.ParseInt(parts[len(parts)-2], 10, 32)
	off, _ := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	topic := strings.Join(parts[:len(parts)-2], ":")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(part): kgo.NewOffset().At(off)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("record at %s: %v", res.Position, err)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset != off {
				continue
			}
			if !strings.Contains(string(r.Value), markup) {
				t.Fatalf("the record at %s holds %s; want the markup %q as sent", res.Position, r.Value, markup)
			}
			return
		}
	}
}

// A workflow update nested deeper than fastjson's 300 levels is applied,
// and a checkpoint of its state forks. Before, a 299-level update was a
// 400 "/data: not a JSON object" (the record key's member was looked up
// with fastjson alone), and a 298-level state could not be forked (a
// workflows walkthrough, 2026-11-30).
func TestDeepWorkflowUpdateAppliesAndForks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, c, _ := startAt(t, t.TempDir())
	var deep any = "leaf"
	for range 400 {
		deep = map[string]any{"a": deep}
	}
	if _, err := c.Update(ctx, "wf-deep", 0, "messages", deep); err != nil {
		t.Fatalf("a 400-level update: %v", err)
	}
	cp, err := c.Checkpoint(ctx, "wf-deep", 0)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if _, err := c.Fork(ctx, "wf-deep", cp.CheckpointID, "wf-deep-2", nil); err != nil {
		t.Fatalf("fork of the deep state: %v", err)
	}
	st, err := c.State(ctx, "wf-deep-2")
	if err != nil || len(st.Messages) != 1 {
		t.Fatalf("the fork's state: %+v %v", st, err)
	}
}

// GET /v1/workflows/{id}/checkpoints ends a page before the checkpoint
// that takes it past CheckpointsPageBytes, with or without limit, and the
// Go client's History reads every page. Before, the list without limit
// came in one body (180 MB for a walkthrough's workflow), and the client
// cut answers at 64 MiB and failed with "unexpected end of JSON input".
func TestCheckpointPagesAreBoundedAndTheClientReadsThemAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, c, _ := startAt(t, t.TempDir())
	var ids []string
	for layer := range 3 {
		if _, err := c.Update(ctx, "wf-pages", layer, "messages", strings.Repeat("x", 1000)); err != nil {
			t.Fatal(err)
		}
		cp, err := c.Checkpoint(ctx, "wf-pages", layer)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cp.CheckpointID)
	}
	defer func(n int) { httpapi.CheckpointsPageBytes = n }(httpapi.CheckpointsPageBytes)
	httpapi.CheckpointsPageBytes = 1500 // one checkpoint (its state holds ≥ 1,000 bytes) a page
	var page struct {
		Checkpoints []json.RawMessage
		NextCursor  string `json:"next_cursor"`
	}
	resp, err := http.Get(c.Base + "/v1/workflows/wf-pages/checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || len(page.Checkpoints) != 1 || page.NextCursor != ids[0] {
		t.Fatalf("the first page without limit: %d checkpoints, next %q (%v); want 1 and %q", len(page.Checkpoints), page.NextCursor, err, ids[0])
	}
	h, err := c.History(ctx, "wf-pages")
	if err != nil || len(h) != 3 {
		t.Fatalf("History over pages: %d checkpoints, %v; want 3", len(h), err)
	}
	for i, e := range h {
		if e.CheckpointID != ids[i] {
			t.Fatalf("History[%d] = %s, want %s", i, e.CheckpointID, ids[i])
		}
	}
}

// Completing a workflow as a success while a decision is pending is a 409
// naming /outcome and the decision: it would leave the question
// unanswerable for good. Before, 200, and the workflow ended completed
// with the decision pending (a workflows walkthrough). failure (or
// aborted) still ends it; once answered, success does.
func TestCompleteSuccessWithAPendingDecisionIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, c, _ := startAt(t, t.TempDir())
	if _, err := c.Update(ctx, "wf-hil", 0, "messages", "start"); err != nil {
		t.Fatal(err)
	}
	res, err := c.Interrupt(ctx, "wf-hil", "human", "Cancel the reservation?", "approve", "reject")
	if err != nil || len(res.State.PendingDecisions) != 1 {
		t.Fatalf("interrupt: %+v %v", res, err)
	}
	did := res.State.PendingDecisions[0].DecisionID
	_, err = c.Complete(ctx, "wf-hil", "success", "done")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 409 || ce.Pointer != "/outcome" || !strings.Contains(ce.Message, did) {
		t.Fatalf("complete success with %s pending: %v, want a 409 at /outcome naming it", did, err)
	}
	if _, err := c.Answer(ctx, "wf-hil", did, "approve", "alice"); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Complete(ctx, "wf-hil", "success", "done"); err != nil || res.State.Outcome != "success" {
		t.Fatalf("complete success once answered: %+v %v", res, err)
	}
	// failure ends a workflow with its question open
	if _, err := c.Interrupt(ctx, "wf-hil2", "human", "Go on?", "yes", "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, "wf-hil2", "failure", "given up"); err != nil {
		t.Fatalf("complete failure with a decision pending: %v", err)
	}
}

// A fork carries the checkpoint's state with its markup as sent. Before,
// the state read back from the projection kept encoding/json's HTML
// escapes, so 200,000 bytes of '<' became 1.2 MB and the fork was refused
// above the event limit (a workflows walkthrough: 300 KB of markup, 413).
func TestForkOfAStateWithMarkup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, c, _ := startAt(t, t.TempDir())
	markup := strings.Repeat("<", 200_000)
	if _, err := c.Update(ctx, "wf-mk", 0, "messages", markup); err != nil {
		t.Fatal(err)
	}
	cp, err := c.Checkpoint(ctx, "wf-mk", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fork(ctx, "wf-mk", cp.CheckpointID, "wf-mk-2", nil); err != nil {
		t.Fatalf("fork of a state with 200,000 bytes of markup: %v", err)
	}
	st, err := c.State(ctx, "wf-mk-2")
	if err != nil || len(st.Messages) != 1 {
		t.Fatalf("the fork's state: %v, %d messages", err, len(st.Messages))
	}
	var got string
	if err := json.Unmarshal(st.Messages[0], &got); err != nil || got != markup {
		t.Fatalf("the fork's message is not the markup sent (%v, %d bytes)", err, len(got))
	}
	// the state and checkpoint reads answer the markup as sent, not the
	// projection rows' escapes (a 74 MB answer for 12 MB of markup in a
	// re-test, which the Go client then refused)
	for _, path := range []string{"/v1/workflows/wf-mk", "/v1/workflows/wf-mk/checkpoints", "/v1/workflows/wf-mk/checkpoints/" + cp.CheckpointID} {
		resp, err := http.Get(c.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(body), `\u003c`) || !strings.Contains(string(body), markup) || len(body) > len(markup)*2 {
			t.Fatalf("GET %s: %d, %d bytes; want the markup as sent", path, resp.StatusCode, len(body))
		}
	}
}

// A workflow update holding a number beyond a 64-bit float's range is a
// 400 naming the body's member, and the workflow is not started. Before,
// {"x": 1e400} was applied into the context and answered back as such
// (a workflows walkthrough, 2026-11-30).
func TestWorkflowUpdateRefusesANumberBeyondAFloat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, c, _ := startAt(t, t.TempDir())
	_, err := c.Update(ctx, "wf-big", 0, "context", json.RawMessage(`{"x":1e400}`))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Pointer != "/update/x" || !strings.Contains(ce.Message, "64-bit float") {
		t.Fatalf("update with 1e400: %v, want a 400 at /update/x", err)
	}
	if _, err := c.State(ctx, "wf-big"); !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
		t.Fatalf("state after the refusal: %v, want a 404", err)
	}
}
