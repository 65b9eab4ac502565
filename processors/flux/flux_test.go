package flux_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/flux"
)

func TestSeverity(t *testing.T) {
	cases := []struct {
		score float64
		want  string
	}{
		{99.99, "low"}, {90, "low"}, {89.99, "medium"}, {75, "medium"}, {74.99, "high"},
		{50, "high"}, {49.99, "critical"}, {0, "critical"},
	}
	for _, c := range cases {
		if got := flux.Severity(c.score); got != c.want {
			t.Errorf("Severity(%v) = %s, want %s", c.score, got, c.want)
		}
	}
}

func TestPriority(t *testing.T) {
	// max(1, floor((100 − score)/10))
	cases := []struct {
		score float64
		want  int
	}{
		{99.99, 1}, {95, 1}, {90, 1}, {89.99, 1}, {80.01, 1}, {80, 2}, {70, 3},
		{66.67, 3}, {33.33, 6}, {30, 7}, {10, 9}, {0.01, 9}, {0, 10},
	}
	for _, c := range cases {
		if got := flux.Priority(c.score); got != c.want {
			t.Errorf("Priority(%v) = %d, want %d", c.score, got, c.want)
		}
	}
}

func TestComposite(t *testing.T) {
	cases := []struct {
		name            string
		scores, weights []float64
		want            float64
	}{
		{"equal weights", []float64{100, 0}, []float64{1, 1}, 50},
		{"weighted", []float64{100, 0}, []float64{3, 1}, 75},
		{"zero weight ignored", []float64{100, 0}, []float64{1, 0}, 100},
		{"all zero weight: plain mean", []float64{100, 0, 50}, []float64{0, 0, 0}, 50},
		{"rounded to 2 decimals", []float64{100, 100, 0}, []float64{1, 1, 1}, 66.67},
		{"fractional weights", []float64{80, 40}, []float64{0.5, 1.5}, 50},
		{"nothing evaluated", nil, nil, 0},
		// the sums overflow: the weights are divided by the largest (the
		// composite was NaN, and the session's completion dead-lettered:
		// a walkthrough)
		{"weights summing past float64", []float64{100, 0}, []float64{1e308, 1e308}, 50},
		{"a product past float64", []float64{100, 0}, []float64{1e307, 1e307 / 3}, 75},
	}
	for _, c := range cases {
		if got := flux.Composite(c.scores, c.weights); got != c.want {
			t.Errorf("%s: Composite(%v, %v) = %v, want %v", c.name, c.scores, c.weights, got, c.want)
		}
	}
}

func TestRecommendation(t *testing.T) {
	cases := []struct {
		composite float64
		want      string
	}{
		{100, events.MeetsCriteria}, {95, events.MeetsCriteria}, {94.99, events.NeedsImprovement},
		{75, events.NeedsImprovement}, {74.99, events.SignificantGaps}, {25, events.SignificantGaps},
		{24.99, events.TotalFailure}, {0, events.TotalFailure},
	}
	for _, c := range cases {
		if got := flux.Recommendation(c.composite); got != c.want {
			t.Errorf("Recommendation(%v) = %s, want %s", c.composite, got, c.want)
		}
	}
}

// Helpers to build inputs.

var testTime = time.Date(2024, 5, 15, 20, 0, 0, 0, time.UTC)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func call(id, tool, inputs string, ok bool) events.TaskCompletedData {
	return events.TaskCompletedData{WorkflowID: "w", TaskID: id, ToolID: tool, Inputs: raw(inputs), Result: raw(`"r"`), Success: ok}
}

func toolCall(id, name, args string, w float64) events.Criterion {
	c := events.Criterion{ID: id, Description: "call " + name, Weight: w, Check: events.Check{Kind: events.CheckToolCall, Name: name}}
	if args != "" {
		c.Check.Arguments = raw(args)
	}
	return c
}

func minute(actor, content string) events.MinuteData {
	b, _ := json.Marshal(map[string]string{"content": content})
	return events.MinuteData{EventType: "message", Actor: actor, Data: b}
}

// TestEvaluateFormulas checks a whole evaluation against hand-computed
// values: weighted composite, judge left out, zero-weight gap, gap order.
func TestEvaluateFormulas(t *testing.T) {
	in := flux.Input{
		SessionID: "s1",
		Criteria: []events.Criterion{
			toolCall("pass", "book", `{"id":"A"}`, 2),   // 100
			toolCall("fail", "cancel", `{"id":"B"}`, 1), // 0
			{ID: "judge", Weight: 5, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"polite"}}},
			{ID: "writes", Weight: 1, Check: events.Check{Kind: events.CheckNoOtherCalls, Tools: []string{"book", "cancel"},
				Allowed: []events.Call{{Name: "book", Arguments: raw(`{"id":"A"}`)}}}}, // 1 of 2 → 50
			toolCall("lookup", "get", `{"id":"Z"}`, 0),                                                     // 0, weight 0
			{ID: "said", Weight: 1, Check: events.Check{Kind: events.CheckOutputContains, Text: "Booked"}}, // 100
		},
		Output: "booked!",
		Calls: []events.TaskCompletedData{
			call("c1", "book", `{"id":"A","extra":1}`, true),
			call("c2", "book", `{"id":"C"}`, true),
			call("c3", "get", `{"id":"Y"}`, true),
		},
	}
	got := flux.Evaluate(in)
	// composite = (2·100 + 1·0 + 1·50 + 0·0 + 1·100) / (2+1+1+0+1) = 350/5 = 70
	if got.Composite != 70 || got.Recommendation != events.SignificantGaps {
		t.Errorf("composite %v %s, want 70 significant_gaps", got.Composite, got.Recommendation)
	}
	if !reflect.DeepEqual(got.Unevaluated, []string{"judge"}) {
		t.Errorf("unevaluated %v", got.Unevaluated)
	}
	wantScores := map[string]float64{"pass": 100, "fail": 0, "writes": 50, "lookup": 0, "said": 100}
	if len(got.Criteria) != 6 {
		t.Fatalf("criteria %+v", got.Criteria)
	}
	for i, r := range got.Criteria {
		if r.ID != in.Criteria[i].ID || r.Kind != in.Criteria[i].Check.Kind || r.Weight != in.Criteria[i].Weight || r.Detail == "" {
			t.Errorf("criterion %d: %+v", i, r)
		}
		if r.ID == "judge" {
			if r.Evaluated || r.Score != nil {
				t.Errorf("judge evaluated: %+v", r)
			}
			continue
		}
		if !r.Evaluated || r.Score == nil || *r.Score != wantScores[r.ID] {
			t.Errorf("%s: %+v, want score %v", r.ID, r, wantScores[r.ID])
		}
	}
	// Gaps: fail (0, priority 10), lookup (0, priority 10, after fail in
	// criterion order), writes (50, priority 5).
	want := []events.Gap{
		{CriterionID: "fail", Score: 0, Severity: "critical", ImpactOnCriteria: 100, ImprovementPriority: 10},
		{CriterionID: "lookup", Score: 0, Severity: "critical", ImpactOnCriteria: 100, ImprovementPriority: 10},
		{CriterionID: "writes", Score: 50, Severity: "high", ImpactOnCriteria: 50, ImprovementPriority: 5},
	}
	if len(got.Gaps) != len(want) {
		t.Fatalf("gaps %+v", got.Gaps)
	}
	for i, w := range want {
		g := got.Gaps[i]
		if g.CriterionID != w.CriterionID || g.Score != w.Score || g.Severity != w.Severity ||
			g.ImpactOnCriteria != w.ImpactOnCriteria || g.ImprovementPriority != w.ImprovementPriority || g.Detail == "" {
			t.Errorf("gap %d: %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(got.Gaps[2].Detail, "book c2") {
		t.Errorf("writes detail %q does not name the extra call", got.Gaps[2].Detail)
	}

	// Deterministic, and a valid evaluation.completed.v1 payload.
	again := flux.Evaluate(in)
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("Evaluate is not deterministic")
	}
	validEvaluation(t, got)
}

func validEvaluation(t *testing.T, d events.EvaluationData) {
	t.Helper()
	env, err := events.New(events.EvaluationCompleted, "chronicle/flux", "e1", testTime, d)
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = "s1"
	if err := events.Validate(&env); err != nil {
		t.Errorf("evaluation does not validate: %v\n%s", err, env.Data)
	}
}

func TestEvaluateEdgeCases(t *testing.T) {
	score := func(d events.EvaluationData, i int) float64 { return *d.Criteria[i].Score }

	// Nothing evaluated: composite 0, not_evaluated (issue 11: it was
	// total_failure), empty (non-nil) gaps.
	d := flux.Evaluate(flux.Input{SessionID: "s1", Criteria: []events.Criterion{
		{ID: "j", Weight: 1, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"r"}}},
	}})
	if d.Composite != 0 || d.Recommendation != events.NotEvaluated || d.Gaps == nil || len(d.Gaps) != 0 ||
		!reflect.DeepEqual(d.Unevaluated, []string{"j"}) {
		t.Errorf("only judge: %+v", d)
	}
	// the detail says where an answer that was refused went (an LLM-failure
	// walkthrough read "no LLM configured, or not judged yet" for a judge
	// answer in the log that the processor dead-lettered)
	if det := d.Criteria[0].Detail; !strings.Contains(det, "dead-lettered") || !strings.Contains(det, "chronicle deadletter list") {
		t.Errorf("unjudged criterion detail %q, want it to name the dead letters", det)
	}
	validEvaluation(t, d)

	// No criteria at all.
	d = flux.Evaluate(flux.Input{SessionID: "s1"})
	if d.Composite != 0 || d.Recommendation != events.NotEvaluated || d.Criteria == nil || len(d.Criteria) != 0 {
		t.Errorf("no criteria: %+v", d)
	}
	validEvaluation(t, d)

	// The only weighted criterion is a judge one (no LLM); a zero-weight
	// output check passes: composite 100 from the informative check, but
	// not_evaluated, since nothing weighted was scored.
	d = flux.Evaluate(flux.Input{SessionID: "s1", Output: "done", Criteria: []events.Criterion{
		{ID: "j", Weight: 1, Check: events.Check{Kind: events.CheckJudge, Rubric: []string{"r"}}},
		{ID: "o", Weight: 0, Check: events.Check{Kind: events.CheckOutputContains, Text: "done"}},
	}})
	if d.Recommendation != events.NotEvaluated || !reflect.DeepEqual(d.Unevaluated, []string{"j"}) {
		t.Errorf("judge weighted, output informative: %+v", d)
	}
	validEvaluation(t, d)

	// All weights 0: plain mean of 100 and 0 = 50; both appear as gaps or not.
	d = flux.Evaluate(flux.Input{SessionID: "s1", Output: "yes",
		Criteria: []events.Criterion{
			{ID: "a", Weight: 0, Check: events.Check{Kind: events.CheckRegex, Pattern: "^yes$"}},
			{ID: "b", Weight: 0, Check: events.Check{Kind: events.CheckRegex, Pattern: "^no$"}},
		}})
	if d.Composite != 50 || d.Recommendation != events.SignificantGaps || len(d.Gaps) != 1 || d.Gaps[0].CriterionID != "b" {
		t.Errorf("zero weights: %+v", d)
	}

	// Meets criteria at exactly 95: 19 passes and 1 failure of equal weight.
	var cs []events.Criterion
	for i := range 20 {
		p := "^yes$"
		if i == 7 {
			p = "^no$"
		}
		cs = append(cs, events.Criterion{ID: string(rune('a' + i)), Weight: 1, Check: events.Check{Kind: events.CheckRegex, Pattern: p}})
	}
	d = flux.Evaluate(flux.Input{SessionID: "s1", Output: "yes", Criteria: cs})
	if d.Composite != 95 || d.Recommendation != events.MeetsCriteria || len(d.Gaps) != 1 {
		t.Errorf("19/20: composite %v %s", d.Composite, d.Recommendation)
	}

	// Unknown kind and broken checks are unevaluated, not failures.
	d = flux.Evaluate(flux.Input{SessionID: "s1", Output: "x", Criteria: []events.Criterion{
		{ID: "u", Weight: 1, Check: events.Check{Kind: "telepathy"}},
		{ID: "r", Weight: 1, Check: events.Check{Kind: events.CheckRegex, Pattern: "(?=x)"}},
		{ID: "s", Weight: 1, Check: events.Check{Kind: events.CheckJSONSchema, Schema: raw(`{"type": 7}`)}},
		{ID: "ok", Weight: 1, Check: events.Check{Kind: events.CheckRegex, Pattern: "x"}},
	}})
	if !reflect.DeepEqual(d.Unevaluated, []string{"u", "r", "s"}) || d.Composite != 100 || score(d, 3) != 100 {
		t.Errorf("broken checks: %+v", d)
	}
	for _, r := range d.Criteria[:3] {
		if r.Evaluated || r.Detail == "" {
			t.Errorf("broken check %s: %+v", r.ID, r)
		}
	}

	// Fractional no_other_calls score is rounded: 1 of 3 → 33.33, gap impact 66.67.
	d = flux.Evaluate(flux.Input{SessionID: "s1", Criteria: []events.Criterion{
		{ID: "w", Weight: 1, Check: events.Check{Kind: events.CheckNoOtherCalls, Tools: []string{"t"}, Allowed: []events.Call{{Name: "t", Arguments: raw(`{"a":1}`)}}}},
	}, Calls: []events.TaskCompletedData{call("1", "t", `{"a":1}`, true), call("2", "t", `{"a":2}`, true), call("3", "t", `{"a":3}`, true)}})
	if score(d, 0) != 33.33 || d.Composite != 33.33 || d.Gaps[0].ImpactOnCriteria != 66.67 ||
		d.Gaps[0].ImprovementPriority != 6 || d.Gaps[0].Severity != "critical" || d.Recommendation != events.SignificantGaps {
		t.Errorf("1 of 3: %+v", d)
	}
}

// evalOne evaluates a single criterion and returns its score (-1 when
// unevaluated) and detail.
func evalOne(c events.Criterion, in flux.Input) (float64, string) {
	in.Criteria = []events.Criterion{c}
	d := flux.Evaluate(in)
	r := d.Criteria[0]
	if !r.Evaluated {
		return -1, r.Detail
	}
	return *r.Score, r.Detail
}

func TestToolCallCheck(t *testing.T) {
	flights := `{"reservation_id":"R1","flights":[{"flight_number":"HAT1","date":"2024-05-20"},{"flight_number":"HAT2","date":"2024-05-21"}],"amount":250,"insurance":false,"note":null}`
	cases := []struct {
		name   string
		args   string // expected arguments ("" = none)
		calls  []events.TaskCompletedData
		want   float64
		detail string
	}{
		{"exact", flights, []events.TaskCompletedData{call("c", "upd", flights, true)}, 100, "matched successful call c"},
		{"extra keys in call", `{"reservation_id":"R1"}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 100, ""},
		{"nested subset: extra keys in array elements",
			`{"flights":[{"flight_number":"HAT1"},{"flight_number":"HAT2"}]}`,
			[]events.TaskCompletedData{call("c", "upd", `{"flights":[{"flight_number":"HAT1","date":"x","price":9},{"flight_number":"HAT2"}]}`, true)}, 100, ""},
		{"array length differs", `{"flights":[{"flight_number":"HAT1"}]}`,
			[]events.TaskCompletedData{call("c", "upd", flights, true)}, 0, "/flights: want 1 elements, got 2"},
		{"array order matters", `{"flights":[{"flight_number":"HAT2"},{"flight_number":"HAT1"}]}`,
			[]events.TaskCompletedData{call("c", "upd", flights, true)}, 0, "/flights/0/flight_number: want \"HAT2\", got \"HAT1\""},
		{"numbers by value", `{"amount":250.0}`, []events.TaskCompletedData{call("c", "upd", `{"amount":250}`, true)}, 100, ""},
		{"exponent form", `{"amount":2.5e2}`, []events.TaskCompletedData{call("c", "upd", `{"amount":250.00}`, true)}, 100, ""},
		{"number vs string", `{"amount":250}`, []events.TaskCompletedData{call("c", "upd", `{"amount":"250"}`, true)}, 0, "/amount: want 250, got \"250\""},
		{"numbers differ", `{"amount":250}`, []events.TaskCompletedData{call("c", "upd", `{"amount":250.01}`, true)}, 0, "/amount"},
		{"strings exact", `{"reservation_id":"r1"}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 0, "/reservation_id: want \"r1\", got \"R1\""},
		{"bool", `{"insurance":true}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 0, "/insurance"},
		{"null matches null", `{"note":null}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 100, ""},
		{"null vs missing", `{"memo":null}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 0, "/memo: missing"},
		{"object vs array", `{"flights":{}}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 0, "want an object"},
		{"empty object matches any object", `{}`, []events.TaskCompletedData{call("c", "upd", flights, true)}, 100, ""},
		{"no arguments: any call", "", []events.TaskCompletedData{call("c", "upd", `"not json"`, true)}, 100, ""},
		{"unparsed inputs", `{"a":1}`, []events.TaskCompletedData{call("c", "upd", `"{a:1"`, true)}, 0, "want an object, got \"{a:1\""},
		{"only a failed call matches", `{"reservation_id":"R1"}`,
			[]events.TaskCompletedData{call("c", "upd", flights, false)}, 0, "call c had the expected arguments but failed"},
		{"failed calls, none matching", `{"reservation_id":"R9"}`,
			[]events.TaskCompletedData{call("c", "upd", flights, false)}, 0, "no successful call of upd (1 failed"},
		{"other tool", `{"reservation_id":"R1"}`, []events.TaskCompletedData{call("c", "cancel", flights, true)}, 0, "upd was never called"},
		{"closest call named", `{"reservation_id":"R1","amount":250,"insurance":false}`,
			[]events.TaskCompletedData{
				call("far", "upd", `{"reservation_id":"R2","amount":1,"insurance":true}`, true),
				call("near", "upd", `{"reservation_id":"R1","amount":251,"insurance":false}`, true),
			}, 0, "closest near: /amount: want 250, got 251"},
		{"later successful call matches", `{"reservation_id":"R1"}`,
			[]events.TaskCompletedData{call("a", "upd", `{"reservation_id":"R1"}`, false), call("b", "upd", `{"reservation_id":"R1"}`, true)}, 100, "matched successful call b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, detail := evalOne(toolCall("x", "upd", c.args, 1), flux.Input{Calls: c.calls})
			if got != c.want || !strings.Contains(detail, c.detail) {
				t.Errorf("score %v detail %q, want %v containing %q", got, detail, c.want, c.detail)
			}
		})
	}
}

func TestContains(t *testing.T) {
	cases := []struct {
		got, want string
		ok        bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2.0]}`, true},
		{`{"a":1,"b":[1,2]}`, `{"b":[1]}`, false},
		{`{"a":{"b":{"c":"d","e":1}}}`, `{"a":{"b":{"c":"d"}}}`, true},
		{`[{"a":1,"x":0}]`, `[{"a":1}]`, true},
		{`"s"`, `"s"`, true},
		{`1`, `"1"`, false},
		{`{"a~b/c":1}`, `{"a~b/c":1}`, true},
		{`{"a":1}`, ``, true},
		{`{"a":1}`, `{bad`, false},
	}
	for _, c := range cases {
		if got := flux.Contains(raw(c.got), raw(c.want)); got != c.ok {
			t.Errorf("Contains(%s, %s) = %v, want %v", c.got, c.want, got, c.ok)
		}
	}
}

func TestOutputContainsCheck(t *testing.T) {
	minutes := []events.MinuteData{
		minute("user", "my code is 4242"),
		minute("tool", "total 9999"),
		minute("assistant", "You saved $23,553 in total."),
		{EventType: "message", Actor: "assistant", Data: raw(`{"tool_calls":[]}`)},
	}
	cases := []struct {
		name, text, output string
		want               float64
		detail             string
	}{
		{"in output, case-insensitive", "CONFIRMED", "Booking confirmed.", 100, "found in the output"},
		{"in assistant minute, commas removed", "23553", "", 100, "found in assistant minute 2"},
		{"comma in the text too", "23,553", "", 100, ""},
		{"user minutes not searched", "4242", "", 0, "neither the output nor any assistant message"},
		{"tool minutes not searched", "9999", "", 0, ""},
		{"output commas removed", "1000", "refund of 1,000 dollars", 100, ""},
		{"absent", "327", "nothing", 0, `"327"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crit := events.Criterion{ID: "o", Weight: 1, Check: events.Check{Kind: events.CheckOutputContains, Text: c.text}}
			got, detail := evalOne(crit, flux.Input{Output: c.output, Minutes: minutes})
			if got != c.want || !strings.Contains(detail, c.detail) {
				t.Errorf("score %v detail %q, want %v containing %q", got, detail, c.want, c.detail)
			}
		})
	}
}

func TestJSONSchemaCheck(t *testing.T) {
	schema := `{"type":"object","required":["id","email"],"properties":{"id":{"type":"integer"},"email":{"type":"string","format":"email"}}}`
	cases := []struct {
		name, schema, output string
		want                 float64
		detail               string
	}{
		{"valid", schema, `{"id": 3, "email": "a@b.example"}`, 100, "valid"},
		{"missing property", schema, `{"id": 3}`, 0, "email"},
		{"wrong type", schema, `{"id": "3", "email": "a@b.example"}`, 0, "/id"},
		{"format asserted", schema, `{"id": 3, "email": "nope"}`, 0, "/email"},
		{"not JSON", schema, `id=3`, 0, "output is not JSON"},
		{"trailing data", schema, `{"id":3,"email":"a@b.example"} x`, 0, "output is not JSON"},
		{"boolean schema", `true`, `[1]`, 100, ""},
		{"invalid schema", `{"type":"thing"}`, `{}`, -1, "criterion schema is invalid"},
		{"remote ref not loaded", `{"$ref":"https://example.com/s.json"}`, `{}`, -1, "criterion schema is invalid"},
		{"local file ref not loaded", `{"$ref":"file:///etc/passwd"}`, `{}`, -1, "criterion schema is invalid"},
		// a $ref back to itself judges nothing: unevaluated (it was scored
		// 0, the agent blamed for the schema: a walkthrough)
		{"reference cycle", `{"$ref":"#"}`, `{"a":1}`, -1, "reference cycle"},
		{"reference cycle below", `{"properties":{"a":{"$ref":"#/properties/a"}}}`, `{"a":1}`, -1, "reference cycle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crit := events.Criterion{ID: "j", Weight: 1, Check: events.Check{Kind: events.CheckJSONSchema, Schema: raw(c.schema)}}
			got, detail := evalOne(crit, flux.Input{Output: c.output})
			if got != c.want || !strings.Contains(detail, c.detail) {
				t.Errorf("score %v detail %q, want %v containing %q", got, detail, c.want, c.detail)
			}
		})
	}
}

func TestRegexCheck(t *testing.T) {
	cases := []struct {
		pattern, output string
		want            float64
	}{
		{`(?i)reservation [A-Z0-9]{6}`, "Your Reservation ABC123 is cancelled", 100},
		{`^\d+$`, "12a", 0},
		{`[`, "x", -1},
	}
	for _, c := range cases {
		crit := events.Criterion{ID: "r", Weight: 1, Check: events.Check{Kind: events.CheckRegex, Pattern: c.pattern}}
		if got, detail := evalOne(crit, flux.Input{Output: c.output}); got != c.want || detail == "" {
			t.Errorf("regex %q on %q: score %v (%q), want %v", c.pattern, c.output, got, detail, c.want)
		}
	}
}

func TestNoOtherCallsCheck(t *testing.T) {
	tools := []string{"book", "cancel"}
	allowed := []events.Call{{Name: "cancel", Arguments: raw(`{"id":"A"}`)}, {Name: "book"}}
	cases := []struct {
		name    string
		allowed []events.Call
		calls   []events.TaskCompletedData
		want    float64
		detail  string
	}{
		{"no calls", allowed, nil, 100, "no successful call"},
		{"only other tools and failures", allowed, []events.TaskCompletedData{call("1", "get", `{}`, true), call("2", "cancel", `{"id":"B"}`, false)}, 100, ""},
		{"allowed by subset", allowed, []events.TaskCompletedData{call("1", "cancel", `{"id":"A","reason":"x"}`, true)}, 100, "all 1"},
		{"allowed entry without arguments", allowed, []events.TaskCompletedData{call("1", "book", `{"anything":1}`, true)}, 100, ""},
		{"one of two unrequested", allowed, []events.TaskCompletedData{call("1", "cancel", `{"id":"A"}`, true), call("2", "cancel", `{"id":"B"}`, true)}, 50, "1 of 2 successful calls of the listed tools were not allowed: cancel 2"},
		{"nothing allowed", []events.Call{}, []events.TaskCompletedData{call("1", "cancel", `{"id":"A"}`, true)}, 0, "cancel 1"},
		{"many unrequested, list shortened", []events.Call{}, []events.TaskCompletedData{
			call("1", "book", `{}`, true), call("2", "book", `{}`, true), call("3", "book", `{}`, true), call("4", "book", `{}`, true)}, 0, "+1 more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crit := events.Criterion{ID: "n", Weight: 1, Check: events.Check{Kind: events.CheckNoOtherCalls, Tools: tools, Allowed: c.allowed}}
			got, detail := evalOne(crit, flux.Input{Calls: c.calls})
			if got != c.want || !strings.Contains(detail, c.detail) {
				t.Errorf("score %v detail %q, want %v containing %q", got, detail, c.want, c.detail)
			}
		})
	}
}

// exact_match scores the output with HotPotQA's normalisation.
func TestExactMatchCheck(t *testing.T) {
	c := events.Criterion{ID: "answer", Weight: 1, Check: events.Check{Kind: events.CheckExactMatch, Text: `Jonny" Craig`}}
	for out, want := range map[string]float64{"Jonny Craig": 100, "the jonny craig.": 100, "Pete Doherty": 0, "": 0} {
		ev := flux.Evaluate(flux.Input{Criteria: []events.Criterion{c}, Output: out})
		if ev.Composite != want {
			t.Errorf("output %q: composite %v, want %v", out, ev.Composite, want)
		}
	}
}
