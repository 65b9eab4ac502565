package dag

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/google/jsonschema-go/jsonschema"
)

func TestInfer(t *testing.T) {
	cases := []struct {
		name    string
		samples []string
		want    string
	}{
		{"scalar types", []string{`1`}, `{"type":"integer"}`},
		{"integer and number fold into number", []string{`1`, `2.5`}, `{"type":"number"}`},
		{"mixed types are listed", []string{`"a"`, `null`}, `{"type":["null","string"]}`},
		{"required = present in every object", []string{`{"a":1,"b":"x"}`, `{"a":2}`},
			`{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`},
		{"array items merge every element", []string{`[{"id":"x"},{"id":"y","n":1}]`, `[]`},
			`{"type":"array","items":{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"n":{"type":"integer"}}}}`},
		{"text that is not JSON is a string", []string{`Transfer successful`}, `{"type":"string"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var raws []json.RawMessage
			for _, s := range c.samples {
				raws = append(raws, json.RawMessage(s))
			}
			got, err := json.Marshal(Infer(raws))
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			_ = json.Unmarshal(got, &a)
			_ = json.Unmarshal([]byte(c.want), &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("got %s\nwant %s", got, c.want)
			}
		})
	}
	if Infer(nil) != nil {
		t.Fatal("Infer(nil) is not nil")
	}
}

func obj(props map[string]string, required ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, Required: required}
	for k, typ := range props {
		s.Properties[k] = &jsonschema.Schema{Type: typ}
	}
	return s
}

func TestBuildLayersAndCycles(t *testing.T) {
	cat := []Tool{
		{Name: "find_user", Parameters: obj(map[string]string{"email": "string"}, "email"), Output: obj(map[string]string{"user_id": "string"})},
		{Name: "get_orders", Parameters: obj(map[string]string{"user_id": "string"}, "user_id"), Output: &jsonschema.Schema{Type: "array", Items: obj(map[string]string{"order_id": "string", "total": "integer"})}},
		{Name: "refund", Parameters: obj(map[string]string{"order_id": "string", "amount": "number"}, "order_id"), Output: obj(map[string]string{"status": "string"})},
		{Name: "weather", Parameters: obj(map[string]string{"city": "string"}), Output: obj(map[string]string{"temp": "number"})},
		{Name: "typeless", Parameters: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"user_id": {}}}},
		{Name: "count_user", Parameters: obj(map[string]string{"user_id": "integer"})},
		// a → b → a
		{Name: "ping", Parameters: obj(map[string]string{"pong": "string"}), Output: obj(map[string]string{"ping": "string"})},
		{Name: "pong", Parameters: obj(map[string]string{"ping": "string"}), Output: obj(map[string]string{"pong": "string"})},
	}
	d, err := Build(cat, []string{"refund", "get_orders", "find_user", "weather"}, Rule{Names: Exact})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"find_user", "weather"}, {"get_orders"}, {"refund"}}; !reflect.DeepEqual(d.Layers, want) {
		t.Fatalf("layers %v, want %v", d.Layers, want)
	}
	if len(d.Edges) != 2 || d.Edges[0].From != "find_user" || d.Edges[1].Matches[0].Output != "[].order_id" {
		t.Fatalf("edges %+v", d.Edges)
	}
	// no dependencies: everything in parallel
	if d, err := Build(cat, []string{"weather", "find_user"}, Rule{Names: Exact}); err != nil || len(d.Layers) != 1 || len(d.Layers[0]) != 2 {
		t.Fatalf("independent tools: %v %v", d.Layers, err)
	}
	// a parameter without a type is ambiguous: a dependency is assumed;
	// a string never feeds an integer
	d, err = Build(cat, []string{"find_user", "typeless", "count_user"}, Rule{Names: Exact})
	if err != nil || len(d.Edges) != 1 || d.Edges[0].To != "typeless" || !d.Edges[0].Ambiguous {
		t.Fatalf("ambiguous and incompatible: %+v %v", d.Edges, err)
	}
	_, err = Build(cat, []string{"weather", "ping", "pong"}, Rule{Names: Exact})
	var ce *CycleError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Cycle, []string{"ping", "pong", "ping"}) || !strings.Contains(err.Error(), "ping → pong → ping") {
		t.Fatalf("cycle: %v", err)
	}
	if _, err := Build(cat, []string{"nope"}, Rule{Names: Exact}); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
}

// On the real airline tools: a read-only lookup chain, and the cycle the
// conservative rule finds between the two lookups.
func TestAirlineCatalog(t *testing.T) {
	cat, err := AirlineCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(cat) != 14 {
		t.Fatalf("%d tools", len(cat))
	}
	// cancel_reservation returns the reservation it cancelled, whose
	// reservation_id feeds get_reservation_details: with the default rule
	// the two form a cycle; skipping echoed inputs breaks it, and loses
	// the lookup → cancel order with it (reservation_id is an echo there too)
	_, err = Build(cat, []string{"cancel_reservation", "get_reservation_details", "think"}, DefaultRule)
	var ce *CycleError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Cycle, []string{"cancel_reservation", "get_reservation_details", "cancel_reservation"}) {
		t.Fatalf("cancel ↔ lookup: %v", err)
	}
	d, err := Build(cat, []string{"cancel_reservation", "get_reservation_details", "think"}, Rule{Names: ExactOrPluralID, SkipEcho: true})
	if err != nil || !reflect.DeepEqual(d.Layers, [][]string{{"cancel_reservation", "get_reservation_details", "think"}}) {
		t.Fatalf("layers %v %v", d.Layers, err)
	}
	d, err = Build(cat, []string{"search_direct_flight", "list_all_airports", "calculate"}, DefaultRule)
	if err != nil || len(d.Layers) != 1 {
		t.Fatalf("independent airline tools: %v %v", d.Layers, err)
	}
}

func TestSessionFlows(t *testing.T) {
	s := func(x string) *string { return &x }
	rec := taubench.Record{Traj: []taubench.Message{
		{Role: "assistant", ToolCalls: []taubench.ToolCall{{ID: "1", Function: taubench.Function{Name: "get_user_details", Arguments: `{"user_id":"mia_li_3668"}`}}}},
		{Role: "tool", Name: "get_user_details", Content: s(`{"reservations":["NO6JO3"],"payment":{"id":"credit_card_1","amount":3}}`)},
		{Role: "assistant", ToolCalls: []taubench.ToolCall{
			{ID: "2", Function: taubench.Function{Name: "get_reservation_details", Arguments: `{"reservation_id":"NO6JO3"}`}},
			{ID: "3", Function: taubench.Function{Name: "send_certificate", Arguments: `{"user_id":"mia_li_3668","amount":3}`}},
		}},
		{Role: "tool", Name: "get_reservation_details", Content: s(`{"reservation_id":"NO6JO3","user_id":"mia_li_3668","price":255.0}`)},
		{Role: "tool", Name: "send_certificate", Content: s(`Certificate added`)},
		{Role: "assistant", ToolCalls: []taubench.ToolCall{{ID: "4", Function: taubench.Function{Name: "book_reservation", Arguments: `{"user_id":"mia_li_3668","payment":"credit_card_1","amount":255}`}}}},
	}}
	got := sessionFlows(rec)
	want := []string{"get_reservation_details\x00book_reservation", "get_user_details\x00book_reservation", "get_user_details\x00get_reservation_details"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flows %q, want %q (the user id in the arguments of send_certificate was in no reply yet; 3 is below the number threshold)", got, want)
	}
}

// The report is consistent: the rule is the learn half's best, precision
// and recall are the counts' ratios, the intervals hold them.
func TestEvaluate(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(recs)
	if err != nil {
		t.Fatal(err)
	}
	if rep.LearnSessions+rep.ReportSessions != 200 || rep.ReportSessions == 0 || rep.Observed == 0 || rep.Flows == 0 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Rule != DefaultRule.String() {
		t.Fatalf("the learn half chose %s, DefaultRule is %s", rep.Rule, DefaultRule)
	}
	chosen := -1.0
	for _, r := range rep.Rules {
		if r.Rule == rep.Rule {
			chosen = r.LearnF1
		}
	}
	for _, r := range rep.Rules {
		if r.LearnF1 > chosen {
			t.Fatalf("rule %s chosen (learn F1 %.3f), %s has %.3f", rep.Rule, chosen, r.Rule, r.LearnF1)
		}
	}
	if p := float64(rep.Both) / float64(rep.Predicted); p != rep.Precision || float64(rep.Both)/float64(rep.Observed) != rep.Recall {
		t.Fatalf("precision %v recall %v from %d/%d/%d", rep.Precision, rep.Recall, rep.Both, rep.Predicted, rep.Observed)
	}
	if rep.PrecisionCI95[0] > rep.Precision || rep.RecallCI95[0] > rep.RecallCI95[1] || len(rep.Missed) != rep.Observed-rep.Both || len(rep.Spurious) != rep.Predicted-rep.Both {
		t.Fatalf("intervals or lists: %+v", rep)
	}
}

// compatible's cases, the design's conservative rule: a side without a
// type is ambiguous and compatible — an array whose elements have no type
// too (it was no edge: a walkthrough's "reservations": {"type": "array"}
// did not feed reservation_id under exact_or_plural_id).
func TestCompatible(t *testing.T) {
	s := func(typ string) *jsonschema.Schema { return &jsonschema.Schema{Type: typ} }
	arr := func(items *jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", Items: items}
	}
	for _, c := range []struct {
		name          string
		out, in       *jsonschema.Schema
		ok, ambiguous bool
	}{
		{"same type", s("string"), s("string"), true, false},
		{"integer into number", s("integer"), s("number"), true, false},
		{"number into integer", s("number"), s("integer"), true, true},
		{"untyped side", &jsonschema.Schema{}, s("string"), true, true},
		{"list of ids into an id", arr(s("string")), s("string"), true, false},
		{"list of objects into an id", arr(s("object")), s("string"), false, false},
		{"untyped list into an id", s("array"), s("string"), true, true},
		{"an id into an untyped list", s("string"), s("array"), true, true},
		{"object into string", s("object"), s("string"), false, false},
	} {
		if ok, amb := compatible(c.out, c.in); ok != c.ok || amb != c.ambiguous {
			t.Errorf("%s: compatible %v, ambiguous %v; want %v, %v", c.name, ok, amb, c.ok, c.ambiguous)
		}
	}
}

// Candidates counts the pairs Dependencies compares: at least its matches
// on the airline catalogue (some pairs' types differ), exactly them when
// every property is a string.
func TestCandidatesBoundsTheMatches(t *testing.T) {
	matches := func(edges []Edge) (n int) {
		for _, e := range edges {
			n += len(e.Matches)
		}
		return n
	}
	cat, err := AirlineCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range cat {
		names = append(names, tl.Name)
	}
	for _, rule := range Rules {
		if c, m := Candidates(cat, names, rule), matches(Dependencies(cat, rule)); c < m || c == 0 {
			t.Errorf("airline, %s: %d candidates, %d matches", rule, c, m)
		}
	}
	str := &jsonschema.Schema{Type: "string"}
	obj := func(names ...string) *jsonschema.Schema {
		s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
		for _, n := range names {
			s.Properties[n] = str
		}
		return s
	}
	tools := []Tool{
		{Name: "a", Parameters: obj("x", "y"), Output: obj("x", "z")},
		{Name: "b", Parameters: obj("z"), Output: obj("x", "y")},
		{Name: "c", Parameters: obj("x", "z"), Output: obj("w")},
	}
	for _, rule := range Rules {
		// a: x→c, z→b, z→c (x→a is itself); b: x→a, x→c, y→a; under
		// SkipEcho a's x is an echo of its own parameter
		want := 6
		if rule.SkipEcho {
			want = 5
		}
		if c, m := Candidates(tools, []string{"a", "b", "c", "a", "nosuch"}, rule), matches(Dependencies(tools, rule)); c != want || m != want {
			t.Errorf("%s: %d candidates, %d matches, want %d", rule, c, m, want)
		}
	}
}
