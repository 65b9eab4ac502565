package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
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
	// without a token the answer is human:$USER's
	t.Setenv("USER", "tester")
	t.Setenv("CHRONICLE_TOKEN", "")
	var ans workflows.WriteResult
	if err := json.Unmarshal(run("answer", "w", d.EventID, "approve"), &ans); err != nil || ans.State.Status != workflows.StatusRunning || len(ans.State.Decisions) != 1 || answeredBy(ans.State.Decisions[0]) != "human:tester" {
		t.Fatalf("answer: %+v %v", ans, err)
	}

	// With a token the answer is the token's: the command leaves by out
	// and the service records token:<name>. Before, it sent human:$USER
	// and every service with tokens refused it (403 naming /by: a
	// workflows walkthrough, 2026-12-06).
	tokens := access.File{Tokens: []access.Token{{Name: "a", SHA256: access.Hash("tok-a"), Read: []string{"project:a"}, Write: []string{"project:a"}}}}
	scoped := httptest.NewServer((&httpapi.Server{P: p, Tokens: &tokens}).Handler())
	defer scoped.Close()
	ca := client.New(scoped.URL, "tok-a")
	d2, err := ca.Interrupt(ctx, "w3", events.DecisionHuman, "go on?")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENT_A_TOKEN", "tok-a")
	answer := func(args ...string) ([]byte, error) {
		cmd := workflowCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"answer", "w3", d2.EventID, "approve", "--api", scoped.URL, "--token-env", "AGENT_A_TOKEN"}, args...))
		err := cmd.ExecuteContext(ctx)
		return out.Bytes(), err
	}
	if _, err := answer("--by", "human:alice"); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "token:a") {
		t.Fatalf("answer --by another name with a token: %v, want the service's 403 naming token:a", err)
	}
	out, err := answer()
	if err != nil {
		t.Fatalf("answer with a token: %v", err)
	}
	if err := json.Unmarshal(out, &ans); err != nil || len(ans.State.Decisions) != 1 || answeredBy(ans.State.Decisions[0]) != "token:a" {
		t.Fatalf("answer with a token: %+v %v, want it by token:a", ans, err)
	}
}

// answeredBy is the by of a decision of a workflow's decisions channel.
func answeredBy(raw json.RawMessage) string {
	var d workflows.Decision
	_ = json.Unmarshal(raw, &d)
	return d.By
}
