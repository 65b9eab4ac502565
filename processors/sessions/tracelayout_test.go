package sessions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/projections"
)

// twoSessions returns the events of two bundled sessions with tool calls,
// the one whose key sorts later first, and their keys in that order.
func twoSessions(t *testing.T) (first, second []events.Envelope, firstKey, secondKey string) {
	t.Helper()
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var found [][]events.Envelope
	for _, r := range recs {
		envs, err := taubench.Events(r)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(envs, func(e events.Envelope) bool { return e.Type == events.WorkflowTaskCompleted }) {
			found = append(found, envs)
		}
		if len(found) == 2 {
			break
		}
	}
	if len(found) < 2 {
		t.Fatal("the sample has fewer than two sessions with tool calls")
	}
	a, b := found[0], found[1]
	ka, _ := events.Key(&a[0])
	kb, _ := events.Key(&b[0])
	if ka < kb {
		a, b, ka, kb = b, a, kb, ka
	}
	return a, b, ka, kb
}

// The t/ rows of a session started later sort after those of a session
// started earlier, whatever their ids: the trace rows, most of a session
// projection's bytes, are written at the end of their key range, so
// Pebble's compactions do not rewrite older sessions' rows with every
// flush. The session whose id sorts later is started first here; with
// t/<key>/<seq> its rows sorted last.
func TestTraceRowsSortByFirstEvent(t *testing.T) {
	first, second, k1, k2 := twoSessions(t)
	store := openStore(t)
	var off int64
	for _, envs := range [][]events.Envelope{first, second} {
		for i := range envs {
			if err := ApplyLocally(store, Processor{}, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &envs[i]); err != nil {
				t.Fatal(err)
			}
			off++
		}
	}
	var keys []string
	if err := store.Scan(Name, "t/", "", func(key string, _ []byte) (bool, error) {
		keys = append(keys, key)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(first)+len(second) {
		t.Fatalf("%d trace rows, want %d", len(keys), len(first)+len(second))
	}
	for i, k := range keys {
		want := k1
		if i >= len(first) {
			want = k2
		}
		if !strings.Contains(k, "/"+want+"/") {
			t.Fatalf("trace row %d is %q, want one of %s (started first: %s)", i, k, want, k1)
		}
	}
	for _, c := range []struct {
		key  string
		envs []events.Envelope
	}{{k1, first}, {k2, second}} {
		items, err := Trace(store, c.key)
		if err != nil || len(items) != len(c.envs) {
			t.Fatalf("Trace(%s): %d items, %v; want %d", c.key, len(items), err, len(c.envs))
		}
		for i, it := range items {
			if it.ID != c.envs[i].ID {
				t.Fatalf("Trace(%s)[%d] = %s, want %s", c.key, i, it.ID, c.envs[i].ID)
			}
		}
		v, ok, err := Get(store, c.key)
		if err != nil || !ok || v.Evaluation == nil {
			t.Fatalf("Get(%s): %v %v, evaluation %v", c.key, ok, err, v.Evaluation)
		}
		if v.TraceAt != "" {
			t.Fatalf("Get(%s) answers trace_at %q: where rows sit is not part of the answer", c.key, v.TraceAt)
		}
	}
	if items, err := Trace(store, "project:none/nobody"); err != nil || items != nil {
		t.Fatalf("Trace of an unknown session: %v, %v", items, err)
	}
}

// A session a store recorded before Session.TraceAt existed (its trace rows
// at t/<key>/<seq>) goes on in that layout: its next events are appended
// there, its evaluation sees every event, and Trace and Input read it,
// exactly as for a session recorded in the new layout.
func TestTraceOfASessionInTheOldLayout(t *testing.T) {
	envs, _, key, _ := twoSessions(t)
	old, fresh := openStore(t), openStore(t)
	pos := func(i int) projections.Position {
		return projections.Position{Topic: string(events.TopicSessions), Offset: int64(i)}
	}
	// The first event as the processor before TraceAt wrote it.
	if err := applyFirstOld(old, pos(0), &envs[0]); err != nil {
		t.Fatal(err)
	}
	if err := ApplyLocally(fresh, Processor{}, pos(0), &envs[0]); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(envs); i++ {
		for _, store := range []*projections.Store{old, fresh} {
			if err := ApplyLocally(store, Processor{}, pos(i), &envs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	var oldKeys []string
	if err := old.Scan(Name, "t/", "", func(k string, _ []byte) (bool, error) {
		oldKeys = append(oldKeys, k)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(oldKeys) != len(envs) || !strings.HasPrefix(oldKeys[0], "t/"+key+"/") || !strings.HasPrefix(oldKeys[len(oldKeys)-1], "t/"+key+"/") {
		t.Fatalf("old-layout session's rows: %d, first %q, last %q; want %d at t/%s/", len(oldKeys), oldKeys[0], oldKeys[len(oldKeys)-1], len(envs), key)
	}
	vo, _, err := Get(old, key)
	if err != nil {
		t.Fatal(err)
	}
	vf, _, err := Get(fresh, key)
	if err != nil {
		t.Fatal(err)
	}
	if vo.Evaluation == nil || !reflect.DeepEqual(vo, vf) {
		jo, _ := json.Marshal(vo)
		jf, _ := json.Marshal(vf)
		t.Fatalf("old layout's session:\n%s\nnew layout's:\n%s", jo, jf)
	}
	io, _, err := Input(old, key)
	if err != nil {
		t.Fatal(err)
	}
	inf, _, err := Input(fresh, key)
	if err != nil || !reflect.DeepEqual(io, inf) || len(io.Calls) == 0 {
		t.Fatalf("Input: old layout %d calls, new %d (%v)", len(io.Calls), len(inf.Calls), err)
	}
}

// In the layout without a position, session "p"'s trace prefix t/<scope>/p/
// also covers session "p/1"'s rows (ids may hold '/'): p was evaluated with
// p/1's tool calls. Reads keep to p's own rows now, so p, which never
// called the tool its criterion names, fails it (found by a helper's
// review of an upgraded directory: p scored 100 there, 0 after a replay).
func TestOldLayoutTraceKeepsToItsSession(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mk := func(sid string, typ events.Type, n int, data any) events.Envelope {
		e, err := events.New(typ, "test/layout", fmt.Sprintf("%s-%d", sid, n), at.Add(time.Duration(n)*time.Second), data)
		if err != nil {
			t.Fatal(err)
		}
		e.SessionID, e.Scope = sid, "project:a"
		return e
	}
	start := func(sid string) events.Envelope {
		return mk(sid, events.SessionStarted, 0, events.SessionStartedData{OriginalTask: "Look up the user.", SuccessCriteria: []events.Criterion{
			{ID: "lookup", Description: "user looked up", Weight: 1, Check: events.Check{Kind: events.CheckToolCall, Name: "get_user_details"}}}})
	}
	call := mk("p/1", events.WorkflowTaskCompleted, 1, events.TaskCompletedData{WorkflowID: "p/1", TaskID: "t1", ToolID: "get_user_details", Inputs: json.RawMessage(`{}`), Success: true})
	store := openStore(t)
	off := 0
	apply := func(env events.Envelope, old bool) {
		t.Helper()
		pos := projections.Position{Topic: string(events.TopicSessions), Offset: int64(off)}
		off++
		apply := ApplyLocally
		if old {
			apply = func(store *projections.Store, _ Processor, pos projections.Position, env *events.Envelope) error {
				return applyFirstOld(store, pos, env)
			}
		}
		if err := apply(store, Processor{}, pos, &env); err != nil {
			t.Fatal(err)
		}
	}
	apply(start("p"), true)
	apply(start("p/1"), true)
	apply(call, false)
	apply(mk("p", events.SessionCompleted, 2, events.SessionCompletedData{Output: "done", Outcome: "failure"}), false)
	key := events.EntityKey("project:a", "p")
	v, _, err := Get(store, key)
	if err != nil || v.Evaluation == nil {
		t.Fatalf("session p: %+v %v", v, err)
	}
	if v.Evaluation.Composite != 0 {
		t.Fatalf("session p, which never called get_user_details, scored %v: evaluated with p/1's call", v.Evaluation.Composite)
	}
	if items, err := Trace(store, key); err != nil || len(items) != 2 {
		t.Fatalf("Trace(p): %d items, %v; want its own 2", len(items), err)
	}
	if in, _, err := Input(store, key); err != nil || len(in.Calls) != 0 {
		t.Fatalf("Input(p): %d calls, %v; want none", len(in.Calls), err)
	}
}

// applyFirstOld applies a session's first event as the processor before
// Session.TraceAt wrote it: its trace row at t/<key>/000000 and no
// trace_at in the s/ row.
func applyFirstOld(store *projections.Store, pos projections.Position, env *events.Envelope) error {
	key, err := events.Key(env)
	if err != nil {
		return err
	}
	_, err = store.Apply(Name, pos, env, func(tx *projections.Tx, env *events.Envelope) error {
		if err := (Processor{}).Apply(tx, env); err != nil {
			return err
		}
		var s Session
		if _, err := tx.GetJSON(sessionKey(key), &s); err != nil {
			return err
		}
		row, ok, err := tx.Get(traceKey(s.TraceAt, key, 0))
		if err != nil || !ok {
			return fmt.Errorf("no trace row at %q (%v): not a session's first event", traceKey(s.TraceAt, key, 0), err)
		}
		if err := tx.Delete(traceKey(s.TraceAt, key, 0)); err != nil {
			return err
		}
		if err := tx.Put(traceKey("", key, 0), row); err != nil {
			return err
		}
		s.TraceAt = ""
		return tx.SetJSON(sessionKey(key), s)
	})
	return err
}
