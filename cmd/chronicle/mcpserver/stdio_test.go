package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// slowBackend is the fake backend whose Record takes delay (or until its
// context ends).
type slowBackend struct {
	*fakeBackend
	delay time.Duration
}

func (b slowBackend) Record(ctx context.Context, r search.Record) (search.Recorded, error) {
	select {
	case <-time.After(b.delay):
	case <-ctx.Done():
		return search.Recorded{}, ctx.Err()
	}
	return b.fakeBackend.Record(ctx, r)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// pipedRequests is an initialize, the initialized notification, three
// memory_record calls (ids 2 to 4) and a tools/list (id 5), one a line.
func pipedRequests() string {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	for id := 2; id <= 4; id++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"t%d","description":"d","content":"c","outcome":"success"}}}`, id, id))
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	return strings.Join(lines, "\n") + "\n"
}

// pipeLines serves lines (each a message, then EOF) over stdio with
// backend, as `chronicle mcp` does, and returns what it wrote; serving
// must end without an error.
func pipeLines(t *testing.T, backend search.Backend, lines []string) string {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := io.NopCloser(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err := serveDraining(ctx, New(backend, Options{Caller: stdioCaller}), in, nopCloser{&out}, 10*time.Second); err != nil {
		t.Fatalf("served with an error: %v", err)
	}
	return out.String()
}

// serveString serves in (then EOF) with backend and drain wait wait, and
// returns the ids answered and the server's error.
func serveString(t *testing.T, backend search.Backend, in string, wait time.Duration) (map[float64]bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return serveStringCtx(ctx, backend, in, wait)
}

func serveStringCtx(ctx context.Context, backend search.Backend, in string, wait time.Duration) (map[float64]bool, error) {
	var out bytes.Buffer
	err := serveDraining(ctx, New(backend, Options{Caller: stdioCaller}), io.NopCloser(strings.NewReader(in)), nopCloser{&out}, wait)
	answered := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil && m.Result != nil {
			answered[*m.ID] = true
		}
	}
	return answered, err
}

// Every request read before stdin's EOF is answered, the tool calls still
// running at the EOF included, and the server then returns nil. Before,
// the SDK's connection wrote nothing once its reader saw the EOF: the
// calls were dropped unanswered.
func TestStdioAnswersEveryRequestReadBeforeEOF(t *testing.T) {
	fake := newFake()
	answered, err := serveString(t, slowBackend{fake, 200 * time.Millisecond}, pipedRequests(), 10*time.Second)
	if err != nil {
		t.Fatalf("served with an error: %v", err)
	}
	for id := 1; id <= 5; id++ {
		if !answered[float64(id)] {
			t.Errorf("request %d was not answered (answered: %v)", id, answered)
		}
	}
	if _, r, _ := fake.calls(); len(r) != 3 {
		t.Errorf("%d memory_record calls reached the backend, want 3", len(r))
	}
}

// A call that outlasts the drain wait is named in the server's error
// (so `chronicle mcp` exits non-zero saying which requests it dropped);
// the others are answered.
func TestStdioNamesTheRequestsLeftUnanswered(t *testing.T) {
	start := time.Now()
	answered, err := serveString(t, slowBackend{newFake(), time.Hour}, pipedRequests(), 300*time.Millisecond)
	var u *UnansweredError
	if !errors.As(err, &u) {
		t.Fatalf("error %v, want an UnansweredError", err)
	}
	want := []string{"id 2 (tools/call memory_record)", "id 3 (tools/call memory_record)", "id 4 (tools/call memory_record)"}
	if fmt.Sprint(u.Requests) != fmt.Sprint(want) || !strings.Contains(err.Error(), "not answered within 300ms") {
		t.Errorf("error %q names %v, want %v and the wait", err, u.Requests, want)
	}
	if !answered[1] || !answered[5] {
		t.Errorf("answered %v, want initialize (1) and tools/list (5)", answered)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the server returned after %s, want about the 300ms wait", d)
	}
}

// Stopping the server (its context ends: Ctrl-C, SIGTERM) while it waits
// for the answers ends the wait at once and cancels the calls still
// running, which are named as unanswered.
func TestStdioStopEndsTheWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := serveStringCtx(ctx, slowBackend{newFake(), time.Hour}, pipedRequests(), time.Hour)
	var u *UnansweredError
	if !errors.As(err, &u) || len(u.Requests) != 3 || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("error %v, want the three memory_record calls named, the server stopped", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the server returned %s after it was started, want soon after the stop at 300ms", d)
	}
}
