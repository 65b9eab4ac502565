package toolgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// emitted is a derived event queued through Processor.Emit.
type emitted struct {
	Type events.Type
	Data string // JSON
}

// recorder is an Emit that keeps the events instead of validating them
// against the (not yet registered) types.
type recorder struct{ out []emitted }

func (r *recorder) emit(_ *projections.Tx, typ events.Type, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	r.out = append(r.out, emitted{typ, string(b)})
	return nil
}

func openStore(t *testing.T) *projections.Store {
	t.Helper()
	s, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// applyAll applies evs at consecutive offsets of partition 0 and returns
// the results.
func applyAll(t *testing.T, s *projections.Store, p Processor, evs []events.Envelope) []projections.Result {
	t.Helper()
	var res []projections.Result
	for i := range evs {
		r, err := ApplyLocally(s, p, projections.Position{Topic: string(events.TopicSessions), Partition: 0, Offset: int64(i)}, &evs[i])
		if err != nil {
			t.Fatalf("event %d (%s): %v", i, evs[i].ID, err)
		}
		res = append(res, r)
	}
	return res
}

// rows returns every row of the two projections (the transitions
// projection's with its name in front).
func rows(t *testing.T, s *projections.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, proj := range []string{Name, TransitionsName} {
		if err := s.Scan(proj, "", "", func(k string, v []byte) (bool, error) {
			if proj != Name {
				k = proj + ":" + k
			}
			out[k] = string(v)
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// schemaValidator validates derived payloads against the schema files
// added for them in schemas/ (the registry does not know them yet).
func schemaValidator(t *testing.T) func(typ events.Type, data string) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	compiled := map[events.Type]*jsonschema.Schema{}
	for _, typ := range []events.Type{EdgeLearned, RanksUpdated} {
		b, err := schemas.FS.ReadFile(string(typ) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(events.SchemaURI(typ), doc); err != nil {
			t.Fatal(err)
		}
		if compiled[typ], err = c.Compile(events.SchemaURI(typ)); err != nil {
			t.Fatal(err)
		}
	}
	return func(typ events.Type, data string) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(data))
		if err != nil {
			return err
		}
		return compiled[typ].Validate(v)
	}
}

func edgeEvent(from, to string, count, out int, reason string, threshold float64) emitted {
	c := Confidence(count, out)
	b, _ := json.Marshal(EdgeLearnedData{From: from, To: to, EdgeType: EdgeSequence, EdgeSource: SourceObserved,
		ObservedCount: count, SourceObservations: out, Confidence: c, Weight: 0.5 * c, Reason: reason, Threshold: threshold})
	return emitted{EdgeLearned, string(b)}
}

// Six workflows a b and one a c, applied through a real store: rows,
// idempotency, and the derived events by hand.
func TestProcessorApply(t *testing.T) {
	evs := sequences(t, []string{"a", "b"}, []string{"a", "b"}, []string{"a", "b"}, []string{"a", "b"},
		[]string{"a", "b"}, []string{"a", "b"}, []string{"a", "c"})
	minute, err := events.New(events.MinuteRecorded, "test/toolgraph", "m1", base, events.MinuteData{EventType: "note", Actor: "x", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	minute.SessionID = "s1"
	evs = append(evs, minute, evs[0]) // ignored type; a redelivered duplicate
	s := openStore(t)
	rec := &recorder{}
	res := applyAll(t, s, Processor{RecomputeEvery: 3, Emit: rec.emit}, evs)
	if res[len(res)-1] != projections.Duplicate {
		t.Errorf("redelivered event: %v, want Duplicate", res[len(res)-1])
	}

	// Derived events, by hand: a→b goes 1/2, 2/3, 3/4 (crosses 0.7), 4/5,
	// 5/6, 6/7 (crosses 0.85); then a→c makes it 6/8 (back below 0.85).
	// Ranks at 3 and 6 transitions.
	ranksAt := func(n int) emitted {
		l := NewLearner()
		for i := 0; i < 2*n; i++ {
			if err := l.Observe(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := json.Marshal(ranksData(l.Graph()))
		return emitted{RanksUpdated, string(b)}
	}
	want := []emitted{
		edgeEvent("a", "b", 1, 1, ReasonFirstObserved, 0),
		edgeEvent("a", "b", 3, 3, ReasonAboveSuggestion, 0.7),
		ranksAt(3),
		edgeEvent("a", "b", 6, 6, ReasonAboveSpeculation, 0.85),
		ranksAt(6),
		edgeEvent("a", "b", 6, 7, ReasonBelowSpeculation, 0.85),
		edgeEvent("a", "c", 1, 7, ReasonFirstObserved, 0),
	}
	if !reflect.DeepEqual(rec.out, want) {
		t.Errorf("emitted:\n%v\nwant:\n%v", rec.out, want)
	}
	var ru RanksUpdatedData
	if err := json.Unmarshal([]byte(want[4].Data), &ru); err != nil || ru.Transitions != 6 || ru.Tools != 2 || ru.Edges != 1 ||
		len(ru.Ranks) != 2 || ru.Graph != GraphID {
		t.Errorf("ranks at 6 transitions: %+v (%v)", ru, err)
	}
	valid := schemaValidator(t)
	for _, e := range rec.out {
		if err := valid(e.Type, e.Data); err != nil {
			t.Errorf("%s %s breaks its schema: %v", e.Type, e.Data, err)
		}
	}

	// Rows.
	var a, b nodeRow
	var ab, ac edgeRow
	var tot totalsRow
	var w7 workflowRow
	for key, v := range map[string]any{"n/org:default/a": &a, "n/org:default/b": &b, "e/org:default/a/b": &ab, "e/org:default/a/c": &ac, "t/org:default": &tot} {
		if ok, err := s.GetJSON(Name, key, v); err != nil || !ok {
			t.Fatalf("row %s: %v %v", key, ok, err)
		}
	}
	if ok, err := s.GetJSON(TransitionsName, "w/org:default%2Fs7/w7", &w7); err != nil || !ok {
		t.Fatalf("row w/org:default%%2Fs7/w7: %v %v", ok, err)
	}
	ms := func(sec int) int64 { return base.UnixMilli() + int64(sec)*1000 }
	if a != (nodeRow{Tool: "a", Calls: 7, Starts: 7, Out: 7, FirstSeenMS: ms(0), LastSeenMS: ms(12)}) {
		t.Errorf("n/a = %+v", a)
	}
	if b != (nodeRow{Tool: "b", Calls: 6, In: 6, FirstSeenMS: ms(1), LastSeenMS: ms(11)}) {
		t.Errorf("n/b = %+v", b)
	}
	if ab != (edgeRow{From: "a", To: "b", Count: 6, FirstSeenMS: ms(1), LastSeenMS: ms(11)}) {
		t.Errorf("e/a/b = %+v", ab)
	}
	if ac != (edgeRow{From: "a", To: "c", Count: 1, FirstSeenMS: ms(13), LastSeenMS: ms(13)}) {
		t.Errorf("e/a/c = %+v", ac)
	}
	if tot != (totalsRow{Calls: 14, Transitions: 7, Workflows: 7, Tools: 3, Edges: 2}) {
		t.Errorf("g/totals = %+v", tot)
	}
	if w7 != (workflowRow{Key: "org:default/s7", Workflow: "w7", Last: "c", Before: "a", Calls: 2}) {
		t.Errorf("w/s7/w7 = %+v", w7)
	}
	// second-order counts: every workflow is a → b or a → c, a its first call
	var xab contextRow
	if ok, err := s.GetJSON(Name, "x/org:default//0/a/0/b", &xab); err != nil || !ok || xab != (contextRow{From: "a", To: "b", Count: 6}) {
		t.Errorf("x/org:default//0/a/0/b = %+v, %v %v", xab, ok, err)
	}
	if n := len(rows(t, s)); n != 3+2+1+2+7 { // 7 workflows in the transitions projection
		t.Errorf("%d rows, want 3 nodes, 2 edges, totals, 2 context rows and 7 workflows", n)
	}

	// Queries over the store.
	if v, err := Version(s, nil); err != nil || v != 14 {
		t.Errorf("Version = %d, %v", v, err)
	}
	p, err := Next(s, []string{"a"}, 2)
	if err != nil || p.Basis != BasisGraph || len(p.Suggestions) != 2 || p.Suggestions[0].Tool != "b" || p.Suggestions[0].Count != 6 {
		t.Errorf("Next after a: %+v, %v", p, err)
	}
	if _, err := Next(s, []string{"a"}, 0); !errors.Is(err, ErrBadK) {
		t.Errorf("k = 0: %v", err)
	}
	tools, err := Tools(s)
	if want := learnAll(t, evs[:14]).Tools(); err != nil || len(tools) != 3 || !reflect.DeepEqual(tools, want) {
		t.Errorf("Tools: %+v, %v; want %+v", tools, err, want)
	}
	r, err := Path(s, "a", "c")
	if err != nil || !reflect.DeepEqual(r.Tools, []string{"a", "c"}) {
		t.Errorf("Path a→c: %+v, %v", r, err)
	}
	if _, err := Path(s, "c", "a"); !errors.Is(err, ErrNoPath) {
		t.Errorf("Path c→a: %v", err)
	}
}

func flatten(sessions [][]events.Envelope) []events.Envelope {
	var out []events.Envelope
	for _, s := range sessions {
		out = append(out, s...)
	}
	return out
}

// interleave takes one event of each session in turn, as a consumer of
// several partitions may see them.
func interleave(sessions [][]events.Envelope) []events.Envelope {
	var out []events.Envelope
	for i := 0; ; i++ {
		more := false
		for _, s := range sessions {
			if i < len(s) {
				out = append(out, s[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// The same events applied twice give identical rows and identical derived
// events; another interleaving of the sessions (as with several
// partitions) gives identical rows too; and the projection's Graph equals
// the one the in-memory Learner builds from the same events.
func TestProcessorDeterministicAndReplayable(t *testing.T) {
	sessions := sampleEvents(t, 24)
	seq := flatten(sessions)
	run := func(evs []events.Envelope) (map[string]string, []emitted, *projections.Store) {
		s := openStore(t)
		rec := &recorder{}
		applyAll(t, s, Processor{RecomputeEvery: 20, Emit: rec.emit}, evs)
		return rows(t, s), rec.out, s
	}
	rows1, out1, s1 := run(seq)
	rows2, out2, _ := run(seq)
	if !reflect.DeepEqual(rows1, rows2) {
		t.Error("same events, different rows")
	}
	if !reflect.DeepEqual(out1, out2) {
		t.Error("same events, different derived events")
	}
	ranks := 0
	for _, e := range out1 {
		if e.Type == RanksUpdated {
			ranks++
		}
	}
	g, err := Load(s1)
	if err != nil {
		t.Fatal(err)
	}
	if want := g.Transitions() / 20; ranks != want || ranks == 0 {
		t.Errorf("%d rank updates for %d transitions", ranks, g.Transitions())
	}
	rows3, out3, _ := run(interleave(sessions))
	if !reflect.DeepEqual(rows1, rows3) {
		t.Error("another interleaving of the sessions changed the rows")
	}
	if len(out3) == 0 {
		t.Error("no derived events")
	}
	if !reflect.DeepEqual(observe(g), observe(learnAll(t, seq))) {
		t.Error("projection graph differs from the in-memory learner's")
	}
}

// With the default Emit (projections.Tx.Emit) the derived events are
// validated against the registry and land in the outbox: each call's
// tool.transition.observed.v1 on chronicle.toolgraph keyed by the scope's
// graph, with an id derived from the call's; the edge's
// graph.edge.learned.v1 on chronicle.learned keyed by scope and tool.
func TestProcessorDefaultEmit(t *testing.T) {
	evs := sequences(t, []string{"a", "b"})
	s := openStore(t)
	applyAll(t, s, Processor{}, evs)
	out, err := s.PendingOutbox(10)
	if err != nil || len(out) != 3 {
		t.Fatalf("outbox: %+v, %v", out, err)
	}
	for i, want := range []struct {
		typ   events.Type
		topic events.Topic
		key   string
	}{
		{events.ToolTransitionObserved, events.TopicToolgraph, "org:default/toolgraph"},
		{events.ToolTransitionObserved, events.TopicToolgraph, "org:default/toolgraph"},
		{EdgeLearned, events.TopicLearned, "org:default/a"},
	} {
		if out[i].Type != want.typ || out[i].Topic != string(want.topic) || out[i].Key != want.key {
			t.Errorf("outbox record %d: %s on %s keyed %q, want %s on %s keyed %q", i, out[i].Type, out[i].Topic, out[i].Key, want.typ, want.topic, want.key)
		}
	}
	tr, err := events.ParseEvent(out[1].Value)
	if err != nil {
		t.Fatal(err)
	}
	if want := events.DerivedIDIn(evs[1].Scope, evs[1].Source, evs[1].ID, events.ToolTransitionObserved, 0); tr.ID != want {
		t.Errorf("transition id %s, want %s (derived from the call's id)", tr.ID, want)
	}
	var d TransitionData
	err = tr.Decode(&d)
	ctx := d.Context
	d.Context = nil
	if err != nil || !reflect.DeepEqual(d, TransitionData{Graph: GraphID, WorkflowID: "w1", Entity: "org:default/s1", From: "a", To: "b", Call: 2}) ||
		ctx == nil || *ctx != (TransitionContext{}) {
		t.Errorf("transition data %+v (context %+v), %v", d, ctx, err)
	}
}

// The ranks the processor emits every RecomputeEvery transitions come
// from a graph loaded without its context rows; they must equal the ranks
// of the whole graph (contexts feed next-tool prediction only). On the
// 200 tau-bench sessions: 229 context rows, 81 edges.
func TestRanksIgnoreContexts(t *testing.T) {
	s := openStore(t)
	off := int64(0)
	for _, session := range sampleEvents(t, 200) {
		for i := range session {
			if _, err := ApplyLocally(s, Processor{}, projections.Position{Topic: string(events.TopicSessions), Offset: off}, &session[i]); err != nil {
				t.Fatal(err)
			}
			off++
		}
	}
	scan := func(prefix string, fn func(key string, val []byte) (bool, error)) error {
		return s.Scan(Name, prefix, "", fn)
	}
	scopes := []string{"project:taubench-airline"} // the sample's scope
	whole, err := loadGraph(scan, scopes, true)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := loadGraph(scan, scopes, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.ctxs) == 0 || len(lean.ctxs) != 0 {
		t.Fatalf("contexts: %d loaded with, %d without; want some and none", len(whole.ctxs), len(lean.ctxs))
	}
	a, _ := json.Marshal(ranksData(whole))
	b, _ := json.Marshal(ranksData(lean))
	if string(a) != string(b) {
		t.Fatalf("ranks differ without the context rows:\n%s\n%s", a, b)
	}
}

// edgeChanges skips the scan of the edges out of From only when no other
// edge can cross a threshold: over the 200 bundled tau-bench sessions,
// applied as the pipeline applies them, its list equals the full scan's
// after every transition, and the skip is taken (what the shortcut is for).
func TestEdgeChangesSkipsNoCrossing(t *testing.T) {
	s := openStore(t)
	var transitions, skipped, crossed int
	check := func(tx *projections.Tx, env *events.Envelope) error {
		if err := (Processor{RecomputeEvery: -1}).Apply(tx, env); err != nil {
			return err
		}
		var d TransitionData
		if err := env.Decode(&d); err != nil {
			return err
		}
		if d.From == "" {
			return nil
		}
		o := observation{From: d.From, To: d.To, Failed: d.Failed}
		cs := txCounts{tx, env.EffectiveScope()}
		from, _, err := cs.getNode(o.From)
		if err != nil {
			return err
		}
		got, err := edgeChanges(cs, o)
		if err != nil {
			return err
		}
		want, err := scanEdgeChanges(cs, o, from.Out)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("transition %d %s→%s: edgeChanges %+v, the full scan %+v", transitions, o.From, o.To, got, want)
		}
		e, _, err := cs.getEdge(o.From, o.To)
		if err != nil {
			return err
		}
		transitions++
		if Confidence(from.Out-e.Count, from.Out-1) < SuggestionThreshold {
			skipped++
		}
		for _, c := range want {
			if c.Reason != ReasonFirstObserved {
				crossed++
			}
		}
		return nil
	}
	for _, evs := range sampleEvents(t, 200) {
		for i := range evs {
			next, _ := s.NextOffset(TransitionsName, string(events.TopicSessions), 0)
			var emitted []projections.OutboxRecord
			if _, err := s.Apply(TransitionsName, projections.Position{Topic: string(events.TopicSessions), Offset: next}, &evs[i], func(tx *projections.Tx, env *events.Envelope) error {
				err := Transitions{}.Apply(tx, env)
				emitted = tx.Emitted()
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for _, rec := range emitted {
				tr, err := events.ParseEvent(rec.Value)
				if err != nil {
					t.Fatal(err)
				}
				next, _ := s.NextOffset(Name, string(events.TopicToolgraph), 0)
				if _, err := s.Apply(Name, projections.Position{Topic: string(events.TopicToolgraph), Offset: next}, &tr, check); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("%d transitions, %d without the scan, %d threshold crossings", transitions, skipped, crossed)
	if transitions < 500 || crossed == 0 || skipped < transitions/2 {
		t.Errorf("%d transitions, %d skipped the scan, %d crossings: the sample no longer exercises both paths", transitions, skipped, crossed)
	}
}

// A call whose tool name is no id ("a,c") is rejected naming
// /data/tool_id, deterministically (dead-lettered at once), and costs its
// neighbours nothing: the next call's edge is learned from the call before
// it. Before, the derived graph.edge.learned.v1 of the bad name failed the
// graph's whole transaction, and the next call's edge was lost with it,
// logged only (a walkthrough).
func TestToolNameThatIsNoIDIsRejected(t *testing.T) {
	s := openStore(t)
	p := Processor{}
	evs := sequences(t, []string{"a", "a,c", "n1"})
	if _, err := ApplyLocally(s, p, projections.Position{Topic: string(events.TopicSessions), Offset: 0}, &evs[0]); err != nil {
		t.Fatal(err)
	}
	_, err := ApplyLocally(s, p, projections.Position{Topic: string(events.TopicSessions), Offset: 1}, &evs[1])
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/data/tool_id" || !projections.Deterministic(err) {
		t.Fatalf("tool a,c: %v, want a deterministic rejection at /data/tool_id", err)
	}
	if _, err := ApplyLocally(s, p, projections.Position{Topic: string(events.TopicSessions), Offset: 2}, &evs[2]); err != nil {
		t.Fatal(err)
	}
	g, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.EdgeBetween("a", "n1"); !ok {
		t.Fatalf("edge a → n1 not learned: %+v", g.Edges())
	}
}
