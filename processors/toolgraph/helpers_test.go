package toolgraph

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// base is the time of the first test event.
var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// callEvent is a valid workflow.task.completed.v1 of tool in workflow wf
// of session sid, at base + sec seconds.
func callEvent(t testing.TB, id, sid, wf, tool string, sec int) events.Envelope {
	t.Helper()
	env, err := events.New(events.WorkflowTaskCompleted, "test/toolgraph", id, base.Add(time.Duration(sec)*time.Second),
		events.TaskCompletedData{WorkflowID: wf, TaskID: id, ToolID: tool, Success: true})
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = sid
	if err := events.Validate(&env); err != nil {
		t.Fatal(err)
	}
	return env
}

// sequences turns workflows (each a list of tools) into events, one
// workflow after the other, one second apart.
func sequences(t testing.TB, wfs ...[]string) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	for w, tools := range wfs {
		for _, tool := range tools {
			n := len(out)
			out = append(out, callEvent(t, fmt.Sprintf("e%04d", n), fmt.Sprintf("s%d", w+1), fmt.Sprintf("w%d", w+1), tool, n))
		}
	}
	return out
}

// learnAll feeds events to a new Learner.
func learnAll(t testing.TB, evs []events.Envelope) *Graph {
	t.Helper()
	l := NewLearner()
	for i := range evs {
		if err := l.Observe(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return l.Graph()
}

var (
	recsOnce     sync.Once
	recs         []taubench.Record
	recsErr      error
	sessOnce     sync.Once
	sessions     []session
	sessErr      error
	graphOnce    sync.Once
	sampleGraphG *Graph
)

// sampleRecords returns the bundled tau-bench records.
func sampleRecords(t testing.TB) []taubench.Record {
	t.Helper()
	recsOnce.Do(func() { recs, recsErr = taubench.SampleRecords() })
	if recsErr != nil {
		t.Fatal(recsErr)
	}
	return recs
}

// sampleSessions returns the decoded calls of the 200 sessions.
func sampleSessions(t testing.TB) []session {
	t.Helper()
	r := sampleRecords(t)
	sessOnce.Do(func() { sessions, sessErr = sessionsOf(r) })
	if sessErr != nil {
		t.Fatal(sessErr)
	}
	return sessions
}

// sampleEvents returns the events of the first n sessions.
func sampleEvents(t testing.TB, n int) [][]events.Envelope {
	t.Helper()
	var out [][]events.Envelope
	for _, r := range sampleRecords(t)[:n] {
		evs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs)
	}
	return out
}

// sampleGraph is the graph learned from all 200 sessions (shared; read
// only).
func sampleGraph(t testing.TB) *Graph {
	t.Helper()
	ss := sampleSessions(t)
	graphOnce.Do(func() {
		l := NewLearner()
		for _, s := range ss {
			for _, c := range s.calls {
				if err := l.observeCall(c); err != nil {
					panic(err)
				}
			}
		}
		sampleGraphG = l.Graph()
	})
	return sampleGraphG
}
