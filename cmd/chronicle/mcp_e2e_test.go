package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// The tests in this file run `chronicle serve` and `chronicle mcp` as child
// processes and drive the MCP side with the official SDK client, so the
// whole path is the production one: stdio JSON-RPC → mcpserver →
// httpapi.Client → HTTP API → Kafka log → memory bank → search index.

// startServe runs `chronicle serve` with extra args on a fresh data
// directory with loopback ports (embedded broker and HTTP API on any free
// port) and returns the API's base URL once /healthz answers 200. The
// process is stopped with SIGTERM when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	base, _ := startServeLogs(t, args...)
	return base
}

// startServeLogs is startServe that also returns serve's stderr as it
// comes.
func startServeLogs(t *testing.T, args ...string) (string, *mcptest.Buffer) {
	t.Helper()
	base, logs, _ := startServeProcess(t, args...)
	return base, logs
}

// startServeProcess is startServeLogs that also returns the process, for
// a test that signals it.
func startServeProcess(t *testing.T, args ...string) (string, *mcptest.Buffer, *os.Process) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := new(mcptest.Buffer)
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("serve did not stop within 15 s of SIGTERM")
		}
		if !cmd.ProcessState.Success() {
			t.Errorf("serve did not shut down cleanly on SIGTERM: %v", cmd.ProcessState)
		}
		if t.Failed() {
			t.Logf("serve stderr:\n%s", logs.String())
		}
	})
	// The API prints its address once it listens ("HTTP API on http://…").
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.Write([]byte(line + "\n"))
			if _, url, ok := strings.Cut(line, "HTTP API on "); ok {
				select {
				case addr <- strings.Fields(url)[0]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	var base string
	select {
	case base = <-addr:
	case <-exited:
		t.Fatalf("serve exited before listening: %v\n%s", cmd.ProcessState, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen within 30 s:\n%s", logs.String())
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := hc.Get(base + "/healthz")
		last := fmt.Sprint(err)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, logs, cmd.Process
			}
			last = resp.Status
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/healthz not ready within 20 s (last: %s):\n%s", base, last, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startMCP runs `chronicle mcp --api base` with extra args and
// CHRONICLE_TOKEN=token (unset when empty) through the SDK's command
// transport. Closing the session at the end of the test must end the
// process cleanly.
func startMCP(t *testing.T, base, token string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp", "--api", base}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CHRONICLE_TOKEN=") })
	if token != "" {
		cmd.Env = append(cmd.Env, "CHRONICLE_TOKEN="+token)
	}
	srv := mcptest.Start(t, cmd)
	t.Cleanup(func() { srv.Close(t) })
	cs := srv.Session
	if got := cs.InitializeResult().ServerInfo.Name; got != "chronicle" {
		t.Errorf("server name %q, want chronicle", got)
	}
	return cs
}

// callOK calls a tool that must succeed and decodes its structured result
// strictly (an unknown field fails).
func callOK[T any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) T {
	t.Helper()
	return mcptest.Structured[T](t, mcptest.Call(t, cs, tool, args))
}

// callError calls a tool that must answer a tool error and returns its text.
func callError(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := mcptest.Call(t, cs, tool, args)
	mcptest.WantToolError(t, res)
	return mcptest.Text(res)
}

// searchUntil repeats memory_search until want accepts a hit (the memory
// bank and the search index follow the log asynchronously) and returns
// that hit; it fails after 20 s.
func searchUntil(t *testing.T, cs *mcp.ClientSession, args map[string]any, what string, want func(search.Hit) bool) search.Hit {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := callOK[search.Result](t, cs, "memory_search", args)
		for _, h := range res.Memories {
			if want(h) {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory_search %v: no %s within 20 s; last answer %+v", args, what, res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func hitIDs(hits []search.Hit) []string {
	ids := []string{}
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// successArgs are memory_record's arguments for a strategy that worked.
func successArgs(title, description, content string, tags ...string) map[string]any {
	return map[string]any{"title": title, "description": description, "content": content, "outcome": "success", "tags": tags}
}

// The consensus message of memory_feedback (memories.Service):
// under usage 3 a single signal is stored and confidence does not move.
const consensusMessage = "signal stored; confidence moves once 2 agreeing signals from distinct sources, not yet applied, exist within 7 days (consensus while fewer than 3 distinct callers used the memory; signals that already moved it do not count again)" +
	// this serve has no tokens: every caller is token:local
	"; this server has no API tokens, so every HTTP and MCP caller is one source (token:local) and cannot be the second: serve with --tokens, one token per agent, or let another session's task_completion signal agree"

// TestMCPStdioAgainstServe drives `chronicle mcp` (stdio) against a real
// `chronicle serve`: list the tools, record a memory, find it, move its
// confidence with feedback, and the error answers.
func TestMCPStdioAgainstServe(t *testing.T) {
	t.Parallel()
	base := startServe(t)
	cs := startMCP(t, base, "") // --scope defaults to org:default

	tools, err := cs.ListTools(mcptest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"memory_feedback", "memory_list", "memory_record", "memory_search", "next_tool", "pair_improvement", "pattern_get", "pattern_history", "search_get", "search_resume"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	// the search tools go through GET and POST /v1/searches/{id}: a missing search is not found
	mcptest.WantToolError(t, mcptest.Call(t, cs, "search_get", map[string]any{"search_id": "no-such-search"}), "not found")
	mcptest.WantToolError(t, mcptest.Call(t, cs, "search_resume", map[string]any{"search_id": "no-such-search", "decision": "approve"}), "not found")
	// the pattern tools go through GET /v1/patterns/{id} and its history
	for _, tool := range []string{"pattern_get", "pattern_history"} {
		mcptest.WantToolError(t, mcptest.Call(t, cs, tool, map[string]any{"pattern_id": "no-such-pattern"}), "not found")
	}
	// next_tool goes through GET /v1/graph/next: an empty graph suggests
	// nothing, the route's refusal of a scope comes back as the tool's
	// error, and a scope kind is the route's too
	if next := mcptest.Structured[map[string]any](t, mcptest.Call(t, cs, "next_tool", map[string]any{"after": []string{"get_user_details"}, "failed": []int{}, "text": "change my flight"})); next["suggestions"] == nil {
		t.Fatalf("next_tool: %v, want the route's object with its suggestions", next)
	}
	mcptest.WantToolError(t, mcptest.Call(t, cs, "next_tool", map[string]any{"scope": "projects"}), "scope")
	if next := mcptest.Structured[map[string]any](t, mcptest.Call(t, cs, "next_tool", map[string]any{"scope": "project"})); next["suggestions"] == nil {
		t.Fatalf("next_tool in the kind project: %v", next)
	}

	rec := successArgs("Verify the booking class before refunds",
		"Check the fare class of a reservation before promising a refund.",
		"1. get_reservation_details 2. compare the cabin class with the refund policy 3. only then call cancel_reservation",
		"airline", "refund")
	recorded := callOK[search.Recorded](t, cs, "memory_record", rec)
	wantID := distill.MemoryID("org:default", rec["title"].(string), rec["content"].(string))
	if recorded.ID != wantID || recorded.InitialConfidence == nil || *recorded.InitialConfidence != 0.8 || recorded.Message != "memory recorded in org:default" {
		t.Fatalf("memory_record: %+v, want id %s, initial_confidence 0.8, message \"memory recorded in org:default\"", recorded, wantID)
	}

	query := map[string]any{"query": "refund fare class of a reservation"}
	hit := searchUntil(t, cs, query, "hit "+wantID, func(h search.Hit) bool { return h.ID == wantID })
	if hit.Title != rec["title"] || hit.Description != rec["description"] || hit.Content != rec["content"] ||
		hit.Outcome != "success" || hit.Scope != "org:default" || hit.Confidence != 0.8 || hit.UsageCount != 0 || hit.Relevance <= 0 {
		t.Errorf("memory_search hit %+v, want the recorded memory in org:default with confidence 0.8, usage 0 and a positive relevance", hit)
	}
	// memory_list goes through GET /v1/memories: the memory is listed,
	// as the route lists it
	list := callOK[map[string]any](t, cs, "memory_list", map[string]any{"scope": "org:default"})
	if ms, _ := list["memories"].([]any); len(ms) != 1 || ms[0].(map[string]any)["id"] != wantID || list["next_cursor"] != "" {
		t.Errorf("memory_list: %v, want the one recorded memory %s", list, wantID)
	}
	// Filters reach the service: a failure-only search leaves it out.
	if res := callOK[search.Result](t, cs, "memory_search", map[string]any{"query": query["query"], "outcome": "failure"}); slices.Contains(hitIDs(res.Memories), wantID) {
		t.Errorf("memory_search outcome=failure returned the success memory: %v", hitIDs(res.Memories))
	}

	// Usage is below 3 (one retrieval at most), so one helpful signal waits
	// for consensus and leaves confidence at 0.8; a second one from the
	// same caller (the server counts it by its token, "local" here) is no
	// consensus either: it waits too (issue 11: two clicks of one client
	// used to apply 0.8 + 2 × 0.3). processors/memories tests the signal of
	// a second source.
	fb := map[string]any{"memory_id": wantID, "helpful": true, "comment": "saved a wrong refund"}
	first := callOK[search.FeedbackResult](t, cs, "memory_feedback", fb)
	if want := (search.FeedbackResult{Success: true, NewConfidence: new(0.8), Message: consensusMessage}); feedbackText(first) != feedbackText(want) {
		t.Errorf("first memory_feedback: %s, want %s", feedbackText(first), feedbackText(want))
	}
	// its answer says it adds no vote (it said "signal stored" as the
	// first did: a walkthrough, 2026-12-06)
	second := callOK[search.FeedbackResult](t, cs, "memory_feedback", fb)
	if !second.Success || second.NewConfidence == nil || *second.NewConfidence != 0.8 || !strings.HasPrefix(second.Message, "signal stored, but it brings consensus no nearer") ||
		!strings.HasSuffix(second.Message, "cannot be the second: serve with --tokens, one token per agent, or let another session's task_completion signal agree") {
		t.Errorf("second memory_feedback of the same caller: %s, want it stored, saying it adds no vote", feedbackText(second))
	}
	searchUntil(t, cs, map[string]any{"query": query["query"], "min_confidence": 0.75}, "hit with confidence 0.8",
		func(h search.Hit) bool { return h.ID == wantID && h.Confidence == 0.8 })

	// Errors are tool errors naming the field or the memory, and the
	// session survives them.
	if msg := callError(t, cs, "memory_search", map[string]any{"query": "refund", "limit": 50}); !strings.Contains(msg, "limit") {
		t.Errorf("memory_search limit 50: %q does not name limit", msg)
	}
	if msg := callError(t, cs, "memory_feedback", map[string]any{"memory_id": "no-such-memory", "helpful": true}); msg != "memory not found: no-such-memory" {
		t.Errorf("memory_feedback on an unknown id: %q, want \"memory not found: no-such-memory\"", msg)
	}
	if msg := callError(t, cs, "memory_record", map[string]any{"title": "t", "description": "d", "content": "c", "outcome": "maybe"}); !strings.Contains(msg, "outcome") {
		t.Errorf("memory_record outcome maybe: %q does not name outcome", msg)
	}
	searchUntil(t, cs, query, "hit after the errors", func(h search.Hit) bool { return h.ID == wantID })
}

// feedbackText is r with its confidence, or "absent" (a write-only
// caller's answer leaves it out).
func feedbackText(r search.FeedbackResult) string {
	c := "absent"
	if r.NewConfidence != nil {
		c = fmt.Sprint(*r.NewConfidence)
	}
	return fmt.Sprintf("{success %v, new_confidence %s, message %q}", r.Success, c, r.Message)
}

// createToken runs `chronicle token create` and returns the printed token.
func createToken(t *testing.T, file, name, read, write string) string {
	t.Helper()
	out, err := exec.Command(binary, "token", "create", "--file", file, "--name", name, "--read", read, "--write", write).Output()
	if err != nil {
		t.Fatalf("token create %s: %v", name, err)
	}
	tok := strings.TrimSpace(string(out))
	if !strings.HasPrefix(tok, "chr_") {
		t.Fatalf("token create %s printed %q", name, out)
	}
	return tok
}

// TestMCPScopedTokens runs `chronicle mcp` with scoped API tokens against
// `serve --tokens`: project:b's token neither finds project:a's memory nor
// learns that it exists.
func TestMCPScopedTokens(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	tokA := createToken(t, file, "agent-a", "project:a", "project:a")
	tokB := createToken(t, file, "agent-b", "project:b", "project:b")
	tokR := createToken(t, file, "reader-a", "project:a", "")
	tokW := createToken(t, file, "producer-a", "", "project:a")
	base := startServe(t, "--tokens", file)

	a := startMCP(t, base, tokA, "--scope", "project:a")
	b := startMCP(t, base, tokB, "--scope", "project:b")

	rec := successArgs("Rotate the staging database password",
		"Project a keeps its staging credentials in the vault.",
		"vault write staging/db password=...; restart the api pods",
		"staging", "vault")
	recorded := callOK[search.Recorded](t, a, "memory_record", rec)
	if recorded.Message != "memory recorded in project:a" || recorded.InitialConfidence == nil || *recorded.InitialConfidence != 0.8 {
		t.Fatalf("memory_record as project:a: %+v", recorded)
	}
	query := map[string]any{"query": "staging database password vault"}
	// project:a sees it: the memory is in the memory bank and the index
	// before project:b looks, so what b gets is the scope check, not lag.
	searchUntil(t, a, query, "hit "+recorded.ID, func(h search.Hit) bool { return h.ID == recorded.ID && h.Scope == "project:a" })

	res := callOK[search.Result](t, b, "memory_search", query)
	if len(res.Memories) != 0 || res.TotalFound != 0 {
		t.Errorf("memory_search as project:b: %+v, want nothing", res)
	}
	hidden := callError(t, b, "memory_feedback", map[string]any{"memory_id": recorded.ID, "helpful": false})
	missing := callError(t, b, "memory_feedback", map[string]any{"memory_id": "no-such-memory", "helpful": false})
	if hidden != "memory not found: "+recorded.ID || strings.ReplaceAll(hidden, recorded.ID, "no-such-memory") != missing {
		t.Errorf("memory_feedback as project:b on project:a's memory: %q; on a missing one: %q; want the same not-found answer", hidden, missing)
	}
	// project:b's token with --scope project:a is refused at start, naming
	// the flag and the scopes it writes (before, mcp started and only the
	// first memory_record answered the 403: a tenant-isolation review)
	bIntoA := exec.Command(binary, "mcp", "--api", base, "--scope", "project:a")
	bIntoA.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CHRONICLE_TOKEN=") }), "CHRONICLE_TOKEN="+tokB)
	bIntoA.Stdin = strings.NewReader("")
	if out, err := bIntoA.CombinedOutput(); err == nil || !strings.Contains(string(out), `--scope project:a: the token "agent-b" may not write project:a (it writes [project:b])`) {
		t.Errorf("chronicle mcp --scope project:a with project:b's token: %v\n%s\nwant a refusal at start naming --scope and the scopes it writes", err, out)
	}
	// b's refused calls changed nothing: a still sees confidence 0.8.
	if h := searchUntil(t, a, query, "hit "+recorded.ID, func(h search.Hit) bool { return h.ID == recorded.ID }); h.Confidence != 0.8 {
		t.Errorf("confidence after project:b's refused feedback: %v, want 0.8", h.Confidence)
	}
	// without --scope, chronicle mcp writes to the token's own scope (GET
	// /v1/whoami), not org:default, which project:b's token may not write
	bDefault := startMCP(t, base, tokB)
	own := successArgs("Restart the worker pool after a deploy",
		"Project b's workers keep stale config until restarted.",
		"kubectl rollout restart deploy/workers", "deploy", "workers")
	if got := callOK[search.Recorded](t, bDefault, "memory_record", own); got.Message != "memory recorded in project:b" {
		t.Errorf("memory_record without --scope as project:b's token: %+v, want it recorded in project:b", got)
	}
	// a write-only token (a producer of project:a that reads nothing)
	// records, and its answer has no confidence, initial_confidence nor
	// evidence member, the same for a's memory again (a merge) as for a
	// new one; feedback has no new_confidence: before, the typed answers
	// read 0 where the route leaves them out
	producer := startMCP(t, base, tokW, "--scope", "project:a")
	fresh := successArgs("Drain the queue before a deploy",
		"Project a's queue loses messages when the consumers restart mid-batch.",
		"scale the consumers to zero after the queue drains", "deploy", "queue")
	for _, args := range []map[string]any{rec, fresh} {
		res := mcptest.Call(t, producer, "memory_record", args)
		got := mcptest.Structured[map[string]any](t, res)
		for _, k := range []string{"confidence", "initial_confidence", "evidence", "merged_into", "pruned"} {
			if _, ok := got[k]; ok {
				t.Errorf("memory_record %q with a write-only token answers %s: %v", args["title"], k, got)
			}
		}
		if got["id"] == nil || !strings.Contains(fmt.Sprint(got["message"]), "may not read project:a") {
			t.Errorf("memory_record %q with a write-only token: %v, want the id and a message saying what is left out", args["title"], got)
		}
	}
	if fb := callOK[map[string]any](t, producer, "memory_feedback", map[string]any{"memory_id": recorded.ID, "helpful": true}); fb["success"] != true || fb["new_confidence"] != nil {
		t.Errorf("memory_feedback with a write-only token: %v, want success without new_confidence", fb)
	}
	// its read tools are refused, as /mcp refuses them (before, over
	// stdio they answered empty lists: a walkthrough's finding)
	for tool, args := range map[string]map[string]any{"memory_search": query, "next_tool": {"after": []any{"get_user_details"}}, "search_get": {"search_id": "s-1"},
		"memory_list": {}, "pattern_get": {"pattern_id": "p-1"}, "pattern_history": {"pattern_id": "p-1"}} {
		if msg := callError(t, producer, tool, args); !strings.Contains(msg, "may read no scope") {
			t.Errorf("%s with a write-only token over stdio: %q, want the refusal /mcp answers (the caller may read no scope)", tool, msg)
		}
	}
	// a read-only token serves the read tools (a new user's walkthrough:
	// chronicle mcp refused to start without --scope); the writing ones
	// say why they are refused
	reader := startMCP(t, base, tokR)
	searchUntil(t, reader, query, "hit "+recorded.ID+" as the reader", func(h search.Hit) bool { return h.ID == recorded.ID })
	if msg := callError(t, reader, "memory_record", rec); !strings.Contains(msg, "no scope") {
		t.Errorf("memory_record with a read-only token: %q, want the refusal naming that it writes no scope", msg)
	}
}
