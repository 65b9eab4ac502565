package pair_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/pair"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestCategoryAndKind(t *testing.T) {
	for _, c := range []struct {
		tags      []string
		cat, kind string
	}{
		{[]string{"strategy", "cancel_reservation", "book_reservation"}, "cancel_reservation", pair.KindPattern},
		{[]string{"strategy"}, pair.Uncategorised, pair.KindPattern},
		{[]string{"anti-pattern", "critical", "update_reservation_flights"}, "update_reservation_flights", pair.KindSuccess},
		{[]string{"pair_improvement_completed", "send_certificate"}, "send_certificate", pair.KindPattern},
		{[]string{"High", "coordination_pattern", "handoff"}, "handoff", pair.KindPattern},
		{[]string{"refunds", "strategy"}, "refunds", pair.KindPattern},
		{[]string{"refunds"}, "refunds", pair.KindSuccess},
		{nil, pair.Uncategorised, pair.KindSuccess},
		{[]string{" ", "low", "medium"}, pair.Uncategorised, pair.KindSuccess},
	} {
		if got := pair.Category(c.tags); got != c.cat {
			t.Errorf("Category(%q) = %q, want %q", c.tags, got, c.cat)
		}
		if got := pair.KindOf(c.tags); got != c.kind {
			t.Errorf("KindOf(%q) = %q, want %q", c.tags, got, c.kind)
		}
	}
}

func TestQueryBuilding(t *testing.T) {
	g := events.Gap{CriterionID: "action-2", Description: "call cancel_reservation(reservation_id=Z7GOZK)", Score: 0, Severity: "critical", ImprovementPriority: 10}
	if got, want := pair.Query(g), "Coordination pattern: call cancel_reservation(reservation_id=Z7GOZK)"; got != want {
		t.Fatalf("Query = %q, want %q", got, want)
	}
	if got := pair.Query(events.Gap{CriterionID: "output-0", Description: "  "}); got != "Coordination pattern: output-0" {
		t.Fatalf("Query without description = %q", got)
	}
	if got := pair.QueryFor(g, "the user wants to cancel"); got != pair.Query(g)+" — task: the user wants to cancel" {
		t.Fatalf("QueryFor = %q", got)
	}
	if got := pair.QueryFor(g, " "); got != pair.Query(g) {
		t.Fatalf("QueryFor without goal = %q", got)
	}
	q := pair.SearchQuery(g, "the user wants to cancel", "s-1", nil)
	if q.Text != pair.QueryFor(g, "the user wants to cancel") || q.Outcome != "success" || q.ExcludeSourceSession != "s-1" || q.Limit != pair.QueryLimit ||
		q.MinConfidence == nil || *q.MinConfidence != 0.5 || q.Readable != nil {
		t.Fatalf("SearchQuery = %+v", q)
	}
}

func TestWeightedGaps(t *testing.T) {
	ev := events.EvaluationData{SessionID: "s", Criteria: []events.CriterionResult{
		{ID: "a", Weight: 0}, {ID: "b", Weight: 1}, {ID: "c", Weight: 2}, {ID: "d", Weight: 1}, {ID: "e", Weight: 1}, {ID: "f", Weight: 1}, {ID: "g", Weight: 1},
	}}
	for _, id := range []string{"c", "a", "b", "d", "e", "f", "g"} {
		ev.Gaps = append(ev.Gaps, events.Gap{CriterionID: id})
	}
	var ids []string
	for _, g := range pair.WeightedGaps(ev) {
		ids = append(ids, g.CriterionID)
	}
	if want := []string{"c", "b", "d", "e", "f"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("weighted gaps %v, want %v (priority order, weight 0 left out, at most %d)", ids, want, pair.MaxGaps)
	}
	zero := events.EvaluationData{Criteria: []events.CriterionResult{{ID: "a"}, {ID: "b"}}, Gaps: []events.Gap{{CriterionID: "b"}, {CriterionID: "a"}}}
	if got := pair.WeightedGaps(zero); len(got) != 2 || got[0].CriterionID != "b" {
		t.Fatalf("no weighted criterion: %+v, want every gap", got)
	}
}

func hit(id string, rel, conf float64, outcome string, tags []string, src ...string) search.Hit {
	return search.Hit{ID: id, Title: "t " + id, Description: "d " + id, Content: "c " + id, Outcome: outcome, Confidence: conf,
		Relevance: rel, Tags: tags, SourceSessions: src}
}

func TestKeep(t *testing.T) {
	hits := []search.Hit{
		hit("a", 0.9, 0.7, "success", nil, "s1"),
		hit("own", 0.8, 0.9, "success", nil, "s0", "me"),
		hit("fail", 0.7, 0.9, "failure", nil, "s2"),
		hit("half", 0.6, 0.5, "success", nil, "s3"),
		hit("b", 0.5, 0.51, "success", nil),
	}
	var ids []string
	for _, h := range pair.Keep(hits, "me") {
		ids = append(ids, h.ID)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Keep kept %v, want %v (own session, failure and confidence 0.5 dropped)", ids, want)
	}
}

func TestGroupHits(t *testing.T) {
	strat := func(tool string) []string { return []string{"strategy", tool} }
	hits := []search.Hit{
		hit("m1", 0.91, 0.7, "success", strat("cancel_reservation"), "s1"),
		hit("m2", 0.90, 0.9, "success", []string{"refunds"}, "s2", "s3"),
		hit("m3", 0.80, 0.8, "success", strat("cancel_reservation"), "s4"),
		hit("m4", 0.70, 0.7, "success", strat("cancel_reservation"), "s5"),
		hit("m5", 0.60, 0.6, "success", strat("cancel_reservation"), "s6"), // fourth of its group: left out
		hit("m6", 0.50, 0.8, "success", []string{"strategy"}),              // no source session: no rate
		hit("m7", 0.40, 0.7, "success", []string{"refunds"}, "unknown"),
	}
	// s1..s6 evaluated, s3 did not meet its criteria; "unknown" has no evaluation
	met := map[string]bool{"s1": true, "s2": true, "s3": false, "s4": true, "s5": true, "s6": true}
	calls := 0
	rate := func(_ string, ids []string) (int, int, error) {
		calls++
		m, k := 0, 0
		for _, id := range ids {
			if ok, known := met[id]; known {
				k++
				if ok {
					m++
				}
			}
		}
		return m, k, nil
	}
	groups, err := pair.GroupHits(hits, rate)
	if err != nil {
		t.Fatal(err)
	}
	var cats []string
	for _, g := range groups {
		cats = append(cats, g.Category)
	}
	if want := []string{"cancel_reservation", "refunds", pair.Uncategorised}; !reflect.DeepEqual(cats, want) {
		t.Fatalf("groups %v, want %v (by best relevance)", cats, want)
	}
	cancel := groups[0]
	if len(cancel.Examples) != pair.MaxExamples || cancel.Examples[0].MemoryID != "m1" || cancel.Examples[2].MemoryID != "m4" {
		t.Fatalf("cancel group examples %+v", cancel.Examples)
	}
	if cancel.SuccessRate == nil || *cancel.SuccessRate != 1 || cancel.Sessions != 3 || cancel.Confidence != 0.7333 {
		t.Fatalf("cancel group rate %v sessions %d confidence %v", cancel.SuccessRate, cancel.Sessions, cancel.Confidence)
	}
	for _, e := range cancel.Examples {
		if e.Kind != pair.KindPattern || e.SuccessRate == nil || *e.SuccessRate != 1 || e.Sessions != 1 {
			t.Fatalf("cancel example %+v", e)
		}
	}
	refunds := groups[1]
	if len(refunds.Examples) != 2 || refunds.Examples[0].Kind != pair.KindSuccess {
		t.Fatalf("refunds group %+v", refunds)
	}
	if r := refunds.Examples[0].SuccessRate; r == nil || *r != 0.5 || refunds.Examples[0].Sessions != 2 {
		t.Fatalf("m2 (s2 met, s3 not): rate %v sessions %d", r, refunds.Examples[0].Sessions)
	}
	if refunds.Examples[1].SuccessRate != nil || refunds.Examples[1].Sessions != 0 {
		t.Fatalf("m7 has no evaluated session, rate must be absent: %+v", refunds.Examples[1])
	}
	if refunds.SuccessRate == nil || *refunds.SuccessRate != 0.5 || refunds.Sessions != 2 {
		t.Fatalf("refunds pooled rate %v over %d", refunds.SuccessRate, refunds.Sessions)
	}
	if u := groups[2]; u.SuccessRate != nil || u.Sessions != 0 || len(u.Examples) != 1 || u.Examples[0].MemoryID != "m6" {
		t.Fatalf("uncategorised group %+v", u)
	}
	if calls != 7 {
		t.Fatalf("rate looked up %d times, want 7 (kept examples with source sessions, 5, and each group with some, 2, once per scope)", calls)
	}
	// without a rate function there are no rates
	groups, err = pair.GroupHits(hits, nil)
	if err != nil || groups[0].SuccessRate != nil || groups[0].Examples[0].SuccessRate != nil {
		t.Fatalf("nil rate: %+v %v", groups[0], err)
	}
	boom := errors.New("boom")
	if _, err := pair.GroupHits(hits, func(string, []string) (int, int, error) { return 0, 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("rate error not returned: %v", err)
	}
	// two examples learned from one session: the group's rate counts the
	// session once (it read "sessions": 2 for one session that called the
	// tool: a new user's walkthrough, 2026-11-30)
	twice := []search.Hit{
		hit("a1", 0.9, 0.8, "success", strat("book_flight"), "s1"),
		hit("a2", 0.8, 0.8, "success", strat("book_flight"), "s1"),
	}
	groups, err = pair.GroupHits(twice, rate)
	if err != nil || len(groups) != 1 || groups[0].Sessions != 1 || groups[0].SuccessRate == nil || *groups[0].SuccessRate != 1 {
		t.Fatalf("one session behind two examples: %+v %v; want the group's rate over 1 session", groups, err)
	}
}

// fakeSearcher answers every memory query with hits and every pattern
// query with patterns, and records the queries.
type fakeSearcher struct {
	hits, patterns []search.Hit
	queries        []search.Query
}

func (f *fakeSearcher) Search(_ context.Context, q search.Query) (search.Result, error) {
	f.queries = append(f.queries, q)
	if q.Collection == search.Patterns {
		return search.Result{Memories: f.patterns, TotalFound: len(f.patterns)}, nil
	}
	return search.Result{Memories: f.hits, TotalFound: len(f.hits)}, nil
}

func TestRetrieveAndBuild(t *testing.T) {
	fs := &fakeSearcher{hits: []search.Hit{
		hit("own", 0.95, 0.9, "success", []string{"strategy", "x"}, "me"),
		hit("m1", 0.9, 0.7, "success", []string{"strategy", "x"}, "s1"),
	}}
	gaps := []events.Gap{
		{CriterionID: "a", Description: "call x(id=1)", Score: 0, Severity: "critical", ImprovementPriority: 10},
		{CriterionID: "b", Description: "tell the user \"42\"", Score: 80, Severity: "medium", ImprovementPriority: 2},
	}
	readable := func(scope string) bool { return scope == "project:a" }
	got, err := pair.Retrieve(context.Background(), fs, nil, "me", "", gaps, readable)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.queries) != 4 || fs.queries[2].Text != "Coordination pattern: tell the user \"42\"" || fs.queries[0].ExcludeSourceSession != "me" ||
		fs.queries[0].Readable == nil || !fs.queries[0].Readable("project:a") || fs.queries[0].Readable("project:b") {
		t.Fatalf("queries %+v", fs.queries)
	}
	for i, q := range fs.queries {
		want := []search.Collection{search.Memories, search.Patterns}[i%2]
		if q.Collection != want || q.Text != fs.queries[i-i%2].Text || q.ExcludeSourceSession != "me" || q.Outcome != "success" || q.Readable == nil {
			t.Fatalf("query %d: %+v, want the gap's query on %s", i, q, want)
		}
	}
	if len(got) != 2 || got[0].CriterionID != "a" || got[0].Query != pair.Query(gaps[0]) || got[1].Severity != "medium" || got[1].Score != 80 {
		t.Fatalf("gap contexts %+v", got)
	}
	for _, g := range got {
		if len(g.Patterns) != 1 || len(g.Patterns[0].Examples) != 1 || g.Patterns[0].Examples[0].MemoryID != "m1" {
			t.Fatalf("gap %s patterns %+v (the session's own memory must be left out)", g.CriterionID, g.Patterns)
		}
	}

	ev := events.EvaluationData{SessionID: "me", Composite: 40, Gaps: gaps, Criteria: []events.CriterionResult{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}}}
	c := pair.Build(ev, 1, "", got)
	if c.Recommendation != pair.ReviseWithPatterns || c.NextIteration != 2 || c.Iteration != 1 || c.Composite != 40 || len(c.Gaps) != 2 {
		t.Fatalf("iteration 1: %+v", c)
	}
	c = pair.Build(ev, 2, "parent", []pair.GapContext{{CriterionID: "a", Patterns: []pair.Group{}}})
	if c.Recommendation != pair.ReviseWithoutPatterns || c.NextIteration != 3 || c.ParentSession != "parent" {
		t.Fatalf("iteration 2 without patterns: %+v", c)
	}
	c = pair.Build(ev, pair.MaxIterations, "parent", got)
	if c.Recommendation != pair.StopIterationLimit || c.NextIteration != 0 || len(c.Gaps) != 2 {
		t.Fatalf("iteration 3: %+v", c)
	}
	for _, g := range c.Gaps {
		if g.Query != "" || len(g.Patterns) != 0 || g.Patterns == nil {
			t.Fatalf("stop context retrieved for gap %+v", g)
		}
	}
}

// The Context marshals to data valid against
// schemas/pair.context.retrieved.v1.json (compiled here directly, so this
// holds before the type is in the events registry), and the schema rejects
// what the worker must never write.
func TestContextMatchesSchema(t *testing.T) {
	raw, err := os.ReadFile("../../schemas/pair.context.retrieved.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("urn:chronicle:schema:pair.context.retrieved.v1", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("urn:chronicle:schema:pair.context.retrieved.v1")
	if err != nil {
		t.Fatal(err)
	}
	valid := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(inst)
	}
	rate := func(_ string, ids []string) (int, int, error) { return len(ids), len(ids), nil }
	hits := []search.Hit{hit("m1", 0.9, 0.7, "success", []string{"strategy", "x"}, "s1"), hit("m2", 0.8, 0.8, "success", nil)}
	gaps, err := pair.Retrieve(context.Background(), &fakeSearcher{hits: hits}, rate, "me", "", []events.Gap{{CriterionID: "a", Description: "d", Severity: "high", ImprovementPriority: 5, Score: 50}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := events.EvaluationData{SessionID: "me", Composite: 50, Gaps: []events.Gap{{CriterionID: "a", Severity: "high", ImprovementPriority: 5}}}
	for _, ctx := range []pair.Context{pair.Build(ev, 1, "", gaps), pair.Build(ev, 3, "p", gaps), pair.Build(ev, 1, "", nil)} {
		if err := valid(ctx); err != nil {
			t.Fatalf("%s context invalid: %v", ctx.Recommendation, err)
		}
	}
	bad := pair.Build(ev, 1, "", gaps)
	bad.Gaps[0].Patterns[0].Examples = append(bad.Gaps[0].Patterns[0].Examples, bad.Gaps[0].Patterns[0].Examples[0], bad.Gaps[0].Patterns[0].Examples[0], bad.Gaps[0].Patterns[0].Examples[0])
	if valid(bad) == nil {
		t.Fatal("4 examples in a group passed the schema")
	}
	if valid(pair.Context{SessionID: "me", Iteration: 0, Gaps: []pair.GapContext{}, Recommendation: pair.StopIterationLimit}) == nil {
		t.Fatal("iteration 0 passed the schema")
	}
	if valid(map[string]any{"session_id": "me", "iteration": 1, "composite": 3, "gaps": []any{}, "recommendation": "retry"}) == nil {
		t.Fatal("an unknown recommendation passed the schema")
	}
}

func TestInterleave(t *testing.T) {
	l := func(ids ...string) []search.Hit {
		var out []search.Hit
		for _, id := range ids {
			out = append(out, search.Hit{ID: id})
		}
		return out
	}
	ids := func(hs []search.Hit) string {
		var s []string
		for _, h := range hs {
			s = append(s, h.ID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		lists [][]search.Hit
		want  string
	}{
		{[][]search.Hit{l("a", "b", "c"), l("d", "e")}, "a,d,b"},
		{[][]search.Hit{l("a", "b"), l("a", "c")}, "a,b,c"},
		{[][]search.Hit{l("a"), nil, l("b")}, "a,b"},
		{nil, ""},
	} {
		if got := ids(pair.Interleave(c.lists, 3)); got != c.want {
			t.Errorf("Interleave(%v) = %s, want %s", c.lists, got, c.want)
		}
	}
}

func TestImprovementMemory(t *testing.T) {
	parent := events.EvaluationData{SessionID: "p", Composite: 40,
		Criteria: []events.CriterionResult{{ID: "look", Weight: 0}, {ID: "cancel", Kind: events.CheckToolCall, Name: "cancel_reservation", Weight: 1},
			{ID: "tell", Kind: events.CheckOutputContains, Weight: 1}, {ID: "nowrite", Weight: 1}},
		Gaps: []events.Gap{
			{CriterionID: "cancel", Description: "call cancel_reservation(reservation_id=Z7GOZK)", Score: 0, Severity: "critical", ImprovementPriority: 10},
			{CriterionID: "look", Description: "call get_reservation_details(reservation_id=Z7GOZK)", Score: 0, Severity: "critical", ImprovementPriority: 10},
			{CriterionID: "tell", Description: "tell the user \"120\"", Score: 0, Severity: "critical", ImprovementPriority: 10},
			{CriterionID: "nowrite", Description: "no airline-database write", Score: 80, Severity: "medium", ImprovementPriority: 2},
		}}
	improved := events.EvaluationData{SessionID: "r", Composite: 97, Gaps: []events.Gap{{CriterionID: "nowrite", Score: 80, Severity: "medium", ImprovementPriority: 2}}}
	var fixed []string
	for _, g := range pair.FixedGaps(parent, improved) {
		fixed = append(fixed, g.CriterionID)
	}
	if want := []string{"cancel", "tell"}; !reflect.DeepEqual(fixed, want) {
		t.Fatalf("fixed gaps %v, want %v (weight 0 and unchanged gaps left out)", fixed, want)
	}
	calls := []events.TaskCompletedData{
		{ToolID: "get_reservation_details", Inputs: json.RawMessage(`{"reservation_id":"Z7GOZK"}`), Success: true},
		{ToolID: "get_reservation_details", Inputs: json.RawMessage(`{"reservation_id":"Z7GOZK"}`), Success: true},
		{ToolID: "cancel_reservation", Inputs: json.RawMessage(`{"reservation_id":"Z7GOZK"}`), Success: false},
		{ToolID: "cancel_reservation", Inputs: json.RawMessage(`{"reservation_id":"Z7GOZK"}`), Success: true},
	}
	m := pair.Improvement("project:a", improved, 2, calls, parent)
	if !strings.HasPrefix(m.Title, "PAIR improvement: call cancel_reservation") || utf8.RuneCountInString(m.Title) > 50 {
		t.Fatalf("title %q", m.Title)
	}
	if want := []string{pair.ImprovementTag, "cancel_reservation", "output_contains"}; !reflect.DeepEqual(m.Tags, want) {
		t.Fatalf("tags %v, want %v", m.Tags, want)
	}
	if m.Outcome != "success" || m.Source != "distilled" || m.SourceSession != "r" || !strings.HasPrefix(m.MemoryID, "mem-") {
		t.Fatalf("memory %+v", m)
	}
	for _, want := range []string{"get_reservation_details(reservation_id) ×2", "2. cancel_reservation(reservation_id)", "tell the user \"120\""} {
		if !strings.Contains(m.Content, want) {
			t.Errorf("content lacks %q:\n%s", want, m.Content)
		}
	}
	if !strings.Contains(m.Description, "40.00 → 97.00") || !strings.Contains(m.Description, "and 1 more gaps") {
		t.Errorf("description %q", m.Description)
	}
	if pair.Category(m.Tags) != "cancel_reservation" || pair.KindOf(m.Tags) != pair.KindPattern {
		t.Fatalf("category %q kind %q", pair.Category(m.Tags), pair.KindOf(m.Tags))
	}
	// the same improvement in another session has the same content address
	again := improved
	again.SessionID = "r2"
	if m2 := pair.Improvement("project:a", again, 2, calls, parent); m2.MemoryID != m.MemoryID {
		t.Fatal("equal improvements got different memory ids")
	}
	// a memory.recorded.v1 event (registered type) that validates
	env, err := events.New(events.MemoryRecorded, "chronicle/pair", "x", time.Unix(0, 0), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := events.Validate(&env); err != nil {
		t.Fatalf("improvement memory invalid: %v", err)
	}
}

// Memories and coordination patterns are merged by relevance into the
// same groups; a pattern example says where it came from and counts as a
// coordination pattern, and a pattern the evaluated session followed is
// left out like its own memories.
func TestRetrieveMergesPatterns(t *testing.T) {
	fs := &fakeSearcher{
		hits: []search.Hit{hit("m1", 0.9, 0.7, "success", []string{"anti-pattern", "cancel_reservation"}, "s1"), hit("m2", 0.5, 0.7, "success", []string{"book_reservation"}, "s2")},
		patterns: []search.Hit{hit("pat-own", 0.99, 0.9, "success", []string{"cancel_reservation"}, "s3", "me"),
			hit("pat-1", 0.7, 0.75, "success", []string{"cancel_reservation"}, "s4", "s5")},
	}
	rate := func(_ string, ids []string) (int, int, error) { return len(ids) - 1, len(ids), nil }
	got, err := pair.Retrieve(context.Background(), fs, rate, "me", "", []events.Gap{{CriterionID: "a", Description: "cancel", Severity: "high"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Patterns) != 2 {
		t.Fatalf("groups %+v", got)
	}
	cancel, book := got[0].Patterns[0], got[0].Patterns[1]
	if cancel.Category != "cancel_reservation" || book.Category != "book_reservation" || len(cancel.Examples) != 2 || len(book.Examples) != 1 {
		t.Fatalf("groups %+v", got[0].Patterns)
	}
	m, p := cancel.Examples[0], cancel.Examples[1]
	if m.MemoryID != "m1" || m.Collection != search.Memories || m.Kind != pair.KindSuccess {
		t.Fatalf("memory example %+v", m)
	}
	if p.MemoryID != "pat-1" || p.Collection != search.Patterns || p.Kind != pair.KindPattern || p.SuccessRate == nil || *p.SuccessRate != 0.5 || p.Sessions != 2 {
		t.Fatalf("pattern example %+v", p)
	}
}

// A query stays bounded whatever the task and criterion: each part at
// most MaxQueryGoal characters (a 960,000-character task without a
// sentence break was the goal whole, twice in a context event of 1.9 MB,
// and the pair worker dead-lettered the evaluation: a walkthrough,
// 2026-11-30); short ones are as they were.
func TestQueryIsBounded(t *testing.T) {
	g := events.Gap{CriterionID: "c1", Description: strings.Repeat("d", 500_000)}
	q := pair.QueryFor(g, strings.Repeat("q", 960_000))
	if n := utf8.RuneCountInString(q); n > 2*pair.MaxQueryGoal+len(pair.GoalSeparator) {
		t.Fatalf("query of %d characters", n)
	}
	short := events.Gap{CriterionID: "c1", Description: "book the flight"}
	if got, want := pair.QueryFor(short, "Book a flight."), pair.Query(short)+pair.GoalSeparator+"Book a flight."; got != want {
		t.Fatalf("a short query changed: %q, want %q", got, want)
	}
}
