package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
)

// chronicle workflow history / at / answer against a running service.
func TestWorkflowCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	defer srv.Close()
	c := client.New(srv.URL, "")
	if _, err := c.Update(ctx, "w", 0, events.ChannelTasks, map[string]any{"id": "t1"}); err != nil {
		t.Fatal(err)
	}
	cp, err := c.Checkpoint(ctx, "w", 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Interrupt(ctx, "w", events.DecisionHuman, "go on?")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := workflowCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(append(args, "--api", srv.URL))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.Bytes()
	}
	var hist []workflows.HistoryEntry
	if err := json.Unmarshal(run("history", "w"), &hist); err != nil || len(hist) != 1 || hist[0].CheckpointID != cp.CheckpointID {
		t.Fatalf("history: %+v %v", hist, err)
	}
	var at workflows.HistoryEntry
	if err := json.Unmarshal(run("at", "w", cp.CheckpointID), &at); err != nil || len(at.State.Tasks) != 1 || len(at.State.PendingDecisions) != 0 {
		t.Fatalf("at: %+v %v", at, err)
	}
	// chronicle workflow list: a page, its cursor, --all
	if _, err := c.Update(ctx, "w2", 0, events.ChannelTasks, map[string]any{"id": "t1"}); err != nil {
		t.Fatal(err)
	}
	var page workflows.ListPage
	if err := json.Unmarshal(run("list", "--limit", "1"), &page); err != nil || len(page.Workflows) != 1 || page.Workflows[0].WorkflowID != "w" ||
		page.Workflows[0].CheckpointID != cp.CheckpointID || page.Workflows[0].Status != workflows.StatusWaitingForHuman || page.NextCursor != events.EntityKey(events.DefaultScope, "w") {
		t.Fatalf("list --limit 1: %+v %v", page, err)
	}
	if err := json.Unmarshal(run("list", "--limit", "1", "--cursor", page.NextCursor), &page); err != nil || len(page.Workflows) != 1 || page.Workflows[0].WorkflowID != "w2" || page.NextCursor != "" {
		t.Fatalf("list --cursor: %+v %v", page, err)
	}
	if err := json.Unmarshal(run("list", "--limit", "1", "--all"), &page); err != nil || len(page.Workflows) != 2 || page.NextCursor != "" {
		t.Fatalf("list --all: %+v %v", page, err)
	}
	bad := workflowCmd()
	bad.SetOut(&bytes.Buffer{})
	bad.SetErr(&bytes.Buffer{})
	bad.SetArgs([]string{"list", "--cursor", "nonsense", "--api", srv.URL})
	if err := bad.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "cursor:") {
		t.Fatalf("list --cursor nonsense: %v, want the 400 naming cursor", err)
	}
	var ans workflows.WriteResult
	if err := json.Unmarshal(run("answer", "w", d.EventID, "approve"), &ans); err != nil || ans.State.Status != workflows.StatusRunning || len(ans.State.Decisions) != 1 {
		t.Fatalf("answer: %+v %v", ans, err)
	}
}
