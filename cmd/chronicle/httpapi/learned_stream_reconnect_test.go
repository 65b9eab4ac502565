package httpapi_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// block reads one SSE block (up to a blank line), applying its id: line
// as an EventSource does, and returns its lines; nil at the stream's end.
func (s *sseReader) block() []string {
	var lines []string
	for s.sc.Scan() {
		line := strings.TrimSuffix(s.sc.Text(), "\r")
		if line == "" {
			return lines
		}
		lines = append(lines, line)
		if v, ok := strings.CutPrefix(line, "id:"); ok {
			s.lastID = strings.TrimPrefix(v, " ")
		}
	}
	return nil
}

// TestLearnedStreamReconnectBeforeFirstEvent: a ?from=end client whose
// connection drops before its first event reconnects (as an EventSource
// does, the same URL and its last event ID) and still gets what was
// learned during the drop. The stream opens with an id-only block holding
// its start; before, the start was only a comment, the client had no last
// event ID, and the reconnect began at the new end (a subscriber's
// walkthrough, 2026-12-06).
func TestLearnedStreamReconnectBeforeFirstEvent(t *testing.T) {
	_, srv := setup(t) // 2 partitions
	url := srv.URL + "/v1/learned/stream?from=end&types=memory.created.v1"
	ctx1, cancel1 := context.WithTimeout(context.Background(), 5*time.Second)
	resp, rd := openStream(t, ctx1, url, "")
	var opening []string
	for rd.lastID == "" { // the opening blocks: a comment, then the position
		if opening = rd.block(); opening == nil {
			t.Fatal("the stream ended before it gave its position")
		}
	}
	resp.Body.Close()
	cancel1()
	start := rd.lastID
	// a named event with data: the npm eventsource package records the id
	// of a dispatched event only, and dispatches none without data (an
	// id-only block: a re-test with it, 2026-12-06)
	if want := []string{"id: " + start, "event: position", `data: {"position":"` + start + `"}`}; !slices.Equal(opening, want) {
		t.Fatalf("the opening position block %q, want %q", opening, want)
	}
	if _, err := httpapi.ParseLearnedCursor(start); err != nil {
		t.Fatalf("the stream's opening set last event ID %q (%v), want its starting position", start, err)
	}
	// learned while the client is away
	recordIn(t, srv, "project:a", "Learned during the drop")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp2, rd2 := openStream(t, ctx, url, start)
	defer resp2.Body.Close()
	ev, ok := rd2.next()
	if !ok {
		t.Fatalf("resumed from %s: the stream ended without the memory learned during the drop: %v", start, rd2.sc.Err())
	}
	if env := ceOf(t, ev); !strings.Contains(string(env.Data), "Learned during the drop") {
		t.Fatalf("resumed from %s: first event %s, want the memory learned during the drop", start, ev.Data)
	}
}
