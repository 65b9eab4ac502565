package events_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
)

// Publish refuses what every other producer path refuses
// (ParseProducerEvent: HTTP, ingest, import), naming the same field, and
// writes nothing. It used to validate as a consumer does, so a Go
// producer's memory with initial_confidence or source "distilled", a
// member repeated within an object and an integer beyond its payload's
// range were acknowledged (found by a new user's walkthrough of the Go
// package). The producer's broker is a closed port: a refusal comes
// before any connection.
func TestPublishRefusesWhatProducerPathsRefuse(t *testing.T) {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:1"}, PublishTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	memory := func(data string) []byte {
		return []byte(`{"specversion":"1.0","id":"m","source":"go/test","type":"memory.recorded.v1","data":` + data + `}`)
	}
	cases := map[string][]byte{
		"/data/initial_confidence": memory(`{"memory_id":"m1","title":"t","description":"d","content":"c","outcome":"success","source":"explicit","initial_confidence":0.9}`),
		"/data/source":             memory(`{"memory_id":"m1","title":"t","description":"d","content":"c","outcome":"success","source":"distilled"}`),
		"/data/memory_id":          memory(`{"memory_id":"m1","memory_id":"m2","title":"t","description":"d","content":"c","outcome":"success","source":"explicit"}`),
	}
	// and every invalid case of testdata/types that decodes into an
	// envelope (a repeated attribute or a wrongly typed one does not)
	for typ, c := range loadCases(t) {
		for i, inv := range c.Invalid {
			var env events.Envelope
			if json.Unmarshal(inv.Event, &env) != nil {
				continue
			}
			raw, err := env.MarshalJSON()
			if err != nil {
				continue
			}
			_, perr := events.ParseProducerEvent(raw)
			var ve *events.ValidationError
			if !errors.As(perr, &ve) {
				t.Fatalf("%s invalid[%d] re-encoded: ParseProducerEvent %v, want a refusal", typ, i, perr)
			}
			cases[ve.Pointer+" ("+string(typ)+")"] = raw
		}
	}
	for want, raw := range cases {
		want, _, _ = strings.Cut(want, " (")
		var env events.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		err := p.Publish(context.Background(), env)
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != want {
			t.Errorf("Publish of %s: %v, want a ValidationError at %s", raw, err, want)
		}
		if time.Since(t0) > time.Second {
			t.Errorf("Publish of %s took %v: the refusal must come before the broker is asked", raw, time.Since(t0))
		}
	}
}

// A derived type is refused on every producer path with an error that
// errors.Is ErrDerivedType, as its doc says (the ValidationError named it
// in its text only).
func TestDerivedTypeErrorWrapsErrDerivedType(t *testing.T) {
	raw := []byte(`{"specversion":"1.0","id":"e","source":"go/test","type":"evaluation.completed.v1","sessionid":"s","data":{}}`)
	if _, err := events.ParseProducerEvent(raw); !errors.Is(err, events.ErrDerivedType) {
		t.Errorf("ParseProducerEvent: %v, want ErrDerivedType", err)
	}
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env, err := events.New(events.EvaluationCompleted, "go/test", "e", time.Now(), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), env); !errors.Is(err, events.ErrDerivedType) {
		t.Errorf("Publish: %v, want ErrDerivedType", err)
	}
}

// ProducerConfig.Validate names a broker that is no host:port and a
// negative or too short duration: they passed, and failed later as a
// broker outage (a negative PublishTimeout made every Publish fail in
// 20 ms with ErrNotAcknowledged) or in franz-go's words.
func TestProducerConfigValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  events.ProducerConfig
		want string
	}{
		{events.ProducerConfig{Brokers: []string{"nohostport"}}, "Brokers[0]"},
		{events.ProducerConfig{Brokers: []string{"127.0.0.1:9092", ":9092"}}, "Brokers[1]"},
		{events.ProducerConfig{Brokers: []string{"h:1"}, PublishTimeout: -time.Second}, "PublishTimeout"},
		{events.ProducerConfig{Brokers: []string{"h:1"}, DeliveryTimeout: -time.Second}, "DeliveryTimeout"},
		{events.ProducerConfig{Brokers: []string{"h:1"}, DeliveryTimeout: 500 * time.Millisecond}, "DeliveryTimeout"},
		{events.ProducerConfig{Brokers: []string{"h:1"}, InitialBackoff: -time.Second}, "InitialBackoff"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "ProducerConfig."+c.want) {
			t.Errorf("Validate(%+v): %v, want an error naming %s", c.cfg, err, c.want)
		}
		if _, err := events.NewProducer(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewProducer(%+v): %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	if err := (events.ProducerConfig{Brokers: []string{"[::1]:9092", "broker-0.kafka:9093"}}).Validate(); err != nil {
		t.Errorf("valid brokers refused: %v", err)
	}
}

// events.New with a zero time leaves the time attribute out, so the
// record's timestamp stands in for it (it wrote 0001-01-01T00:00:00Z).
func TestNewWithoutTime(t *testing.T) {
	env, err := events.New(events.MinuteRecorded, "go/test", "e", time.Time{}, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if env.Time != "" {
		t.Fatalf("time %q, want none", env.Time)
	}
	raw, _ := env.MarshalJSON()
	if strings.Contains(string(raw), `"time"`) {
		t.Fatalf("encoded with a time: %s", raw)
	}
}

// events.New refuses a type no processor or schema knows, naming /type
// (it built the envelope and returned a nil error; the mistake surfaced
// only when the event was published or, written straight to Kafka,
// dead-lettered).
func TestNewRefusesAnUnknownType(t *testing.T) {
	_, err := events.New(events.Type("coordination.minute.recorded"), "go/test", "e", time.Now(), map[string]any{})
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/type" || !strings.Contains(ve.Reason, `"coordination.minute.recorded"`) {
		t.Fatalf("New with an unknown type: %v", err)
	}
	for _, typ := range events.Types() {
		if _, err := events.New(typ, "go/test", "e", time.Now(), map[string]any{}); err != nil {
			t.Errorf("New(%s): %v", typ, err)
		}
	}
}

// Two events of one Publish with the same scope, source and id but other
// data are refused at the second's index, pointer /id, before anything is
// written (over HTTP a batch was answered 202 and its second event then
// dead-lettered as a conflicting duplicate; found by a walkthrough). The
// same event twice, another time or the default scope spelled out is the
// same event; the same id in another scope is another event. The broker
// is a closed port: the refusal comes before any connection, and the
// accepted batches fail there instead.
func TestPublishRefusesOneIDWithTwoContents(t *testing.T) {
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:1"}, PublishTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mk := func(memory, scope string, at int64) events.Envelope {
		env, err := events.New(events.MemoryFeedback, "agent://d", "dup-1", time.Unix(at, 0), events.MemoryFeedbackData{MemoryID: memory, Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = scope
		return env
	}
	// the same data with its strings escaped otherwise (\u0064 is "d")
	escaped := func(env events.Envelope) events.Envelope {
		env.Data = bytes.ReplaceAll(env.Data, []byte(`"mem-d1"`), []byte(`"mem-\u0064\u0031"`))
		return env
	}
	// the same event without datacontenttype (structured mode's usual
	// form; events.New writes application/json, as binary mode does)
	noDCT := func(env events.Envelope) events.Envelope {
		env.DataContentType = ""
		return env
	}
	err = p.Publish(context.Background(), mk("mem-d0", "", 1), mk("mem-d1", "project:a", 1), mk("mem-d2", "project:a", 1))
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Index != 2 || ve.Pointer != "/id" || !strings.Contains(ve.Reason, "event 1 of this batch") {
		t.Fatalf("one id with two contents: %v, want a refusal at index 2, /id", err)
	}
	for name, batch := range map[string][]events.Envelope{
		"the same event twice":      {mk("mem-d1", "project:a", 1), mk("mem-d1", "project:a", 1)},
		"another time":              {mk("mem-d1", "project:a", 1), mk("mem-d1", "project:a", 2)},
		"other escapes":             {mk("mem-d1", "project:a", 1), escaped(mk("mem-d1", "project:a", 1))},
		"the default scope spelled": {mk("mem-d1", "", 1), mk("mem-d1", events.DefaultScope, 1)},
		"another scope":             {mk("mem-d1", "project:a", 1), mk("mem-d2", "project:b", 1)},
		"datacontenttype left out":  {mk("mem-d1", "project:a", 1), noDCT(mk("mem-d1", "project:a", 1))},
	} {
		if err := p.Publish(context.Background(), batch...); errors.As(err, &ve) || err == nil {
			t.Fatalf("%s: %v, want it accepted (and then the closed port's error)", name, err)
		}
	}
}

// An event is not HTML: '<', '>' and '&' in a producer's data are kept as
// sent, not escaped to \u003c (six bytes each), so a tool result of
// 300,000 such characters is within MaxEventBytes and its record holds
// the data as sent. Before, it was refused as 1,799,120 bytes encoded
// (found by a producer walkthrough sending code as a tool result).
func TestMarkupIsNotEscaped(t *testing.T) {
	data := []byte(`{"event_type":"tool","actor":"assistant","data":{},"memory_note":"if a < b && c > d { return }"}`)
	env := events.Envelope{SpecVersion: "1.0", ID: "markup-1", Source: "agent://m", Type: events.MinuteRecorded, SessionID: "s1", Data: data}
	rec, err := events.Record(&env)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec.Value, []byte(`"if a < b && c > d { return }"`)) {
		t.Errorf("record value %s: the data's markup is escaped", rec.Value)
	}
	big := env
	big.ID = "markup-2"
	big.Data = []byte(`{"event_type":"tool","actor":"assistant","data":{},"memory_note":"` + strings.Repeat("<", 300_000) + `"}`)
	p, err := events.NewProducer(events.ProducerConfig{Brokers: []string{"127.0.0.1:1"}, PublishTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ve *events.ValidationError
	if err := p.Publish(context.Background(), big); errors.As(err, &ve) || !errors.Is(err, events.ErrNotAcknowledged) {
		t.Fatalf("300,000 '<' characters: %v, want it accepted (and then the closed port's error)", err)
	}
}

// A producer's dataschema is an absolute URI, as CloudEvents 1.0 says
// ("not a uri" was acknowledged with 202: found by a producer's
// walkthrough); a consumer still takes one, so a log written before the
// check replays as it did.
func TestDataSchemaIsAnAbsoluteURI(t *testing.T) {
	ev := func(schema string) []byte {
		return []byte(`{"specversion":"1.0","id":"m","source":"go/test","type":"memory.recorded.v1","dataschema":` + schema +
			`,"data":{"memory_id":"m1","title":"t","description":"d","content":"c","outcome":"success","source":"explicit"}}`)
	}
	for _, bad := range []string{`"not a uri"`, `"/schemas/memory"`, `"memory.recorded.v1"`, `"http://"`} {
		_, err := events.ParseProducerEvent(ev(bad))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/dataschema" || !strings.Contains(ve.Reason, "absolute URI") {
			t.Errorf("dataschema %s: %v, want refused naming /dataschema", bad, err)
		}
		if _, err := events.ParseEvent(ev(bad)); err != nil {
			t.Errorf("dataschema %s: a consumer refused it: %v", bad, err)
		}
	}
	for _, good := range []string{`"urn:chronicle:schema:memory.recorded.v1"`, `"https://example.com/schemas/memory.json"`} {
		if _, err := events.ParseProducerEvent(ev(good)); err != nil {
			t.Errorf("dataschema %s: %v", good, err)
		}
	}
}

// A Checker remembers every event it checked: an id repeated with other
// content is refused however many events lie between (chronicle ingest
// checks a whole file with one before producing it in batches of 500),
// its reason naming the earlier event by Checker.Name; the same event
// again is accepted, and each accepted event gets its record.
func TestCheckerRemembersIDsAcrossBatches(t *testing.T) {
	mk := func(id, memory string) events.Envelope {
		env, err := events.New(events.MemoryFeedback, "agent://c", id, time.Unix(1, 0), events.MemoryFeedbackData{MemoryID: memory, Signal: "task_completion", Positive: true})
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	c := events.Checker{Name: func(i int) string { return fmt.Sprintf("line %d", i+1) }}
	for i := range 600 {
		env := mk(fmt.Sprintf("c-%d", i), "m")
		if r, err := c.Check(&env); err != nil || r == nil {
			t.Fatalf("event %d: %v, record %v", i, err, r)
		}
	}
	again := mk("c-3", "m")
	if _, err := c.Check(&again); err != nil {
		t.Fatalf("the same event again: %v, want it accepted", err)
	}
	other := mk("c-3", "other")
	_, err := c.Check(&other)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Index != 601 || ve.Pointer != "/id" || !strings.Contains(ve.Reason, "is line 4 with other content") {
		t.Fatalf("id c-3 with other content after 600 events: %v, want a refusal at index 601, /id, naming line 4", err)
	}
}

// A producer's sessionid is an id (CheckID) on every type, not only on the
// types keyed by it: "bad//id", "-lead", "has space" and "trail/" on
// search.paused.v1, workflow.reducer.applied.v1 and
// reasoning.pass.completed.v1 were accepted (202 on POST /v1/events) while
// coordination.minute.recorded.v1 refused them naming /sessionid (found by
// an agent-runtime developer's walkthrough). A consumer still takes them
// on the types not keyed by it, so a log written before replays as it did.
func TestSessionIDIsCheckedOnEveryType(t *testing.T) {
	datas := map[string]string{
		"search.paused.v1":                `{"search_id":"s1","node_id":"r.0","question":"ok?"}`,
		"workflow.reducer.applied.v1":     `{"workflow_id":"w1","layer":0,"channel":"messages","update":"hi"}`,
		"reasoning.pass.completed.v1":     `{"task_id":"t1","pass_number":1,"phase":"A","ttl_remaining":1,"convergence":{"converged":false,"completeness":0,"coherence":0,"consistency":0}}`,
		"coordination.minute.recorded.v1": `{"event_type":"note","actor":"agent","data":{}}`,
	}
	ev := func(typ, sid string) []byte {
		return []byte(`{"specversion":"1.0","id":"e","source":"go/test","type":"` + typ + `","sessionid":"` + sid + `","data":` + datas[typ] + `}`)
	}
	for typ := range datas {
		if _, err := events.ParseProducerEvent(ev(typ, "good/id-1")); err != nil {
			t.Errorf("%s with a good sessionid: %v", typ, err)
		}
		for _, bad := range []string{"bad//id", "-lead", "has space", "trail/"} {
			_, err := events.ParseProducerEvent(ev(typ, bad))
			var ve *events.ValidationError
			if !errors.As(err, &ve) || ve.Pointer != "/sessionid" {
				t.Errorf("%s with sessionid %q: %v, want refused naming /sessionid", typ, bad, err)
			}
			if typ != "coordination.minute.recorded.v1" {
				if _, err := events.ParseEvent(ev(typ, bad)); err != nil {
					t.Errorf("%s with sessionid %q: a consumer refused it: %v", typ, bad, err)
				}
			}
		}
	}
}

// A producer's source is an RFC 3986 URI-reference, as CloudEvents 1.0
// says: "has spaces and <brackets>" was acknowledged with 202 (found by an
// agent-runtime developer's walkthrough). Relative references stay valid,
// and a consumer still takes a bad one, so a log written before replays as
// it did.
func TestSourceIsAURIReference(t *testing.T) {
	ev := func(source string) []byte {
		b, _ := json.Marshal(source)
		return []byte(`{"specversion":"1.0","id":"m","source":` + string(b) + `,"type":"memory.recorded.v1",` +
			`"data":{"memory_id":"m1","title":"t","description":"d","content":"c","outcome":"success","source":"explicit"}}`)
	}
	for _, bad := range []string{"has spaces and <brackets>", "a b", "x<y>", `back\slash`, "per%zzcent", "trail%4", "a#b#c", "a[b]", "1abc:x", "é/agent", "tab\there", `quo"te`, "{brace}", "pipe|", "caret^"} {
		_, err := events.ParseProducerEvent(ev(bad))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/source" || !strings.Contains(ve.Reason, "URI-reference") {
			t.Errorf("source %q: %v, want refused naming /source", bad, err)
		}
		if strings.ContainsAny(bad, "\t") {
			continue
		}
		if _, err := events.ParseEvent(ev(bad)); err != nil {
			t.Errorf("source %q: a consumer refused it: %v", bad, err)
		}
	}
	for _, good := range []string{"test/mallory", "/sensors/1", "go/test", "agent://c", "urn:chronicle:agent:1", "https://example.com/a/b?x=1&y=2#frag",
		"http://[::1]:8080/x", "mcp:client", "chronicle/api/workflows/w~1@x+y=z", "a%20b", "./rel", "?q", "#f", "user@host", "a(b)!$'*,;"} {
		if _, err := events.ParseProducerEvent(ev(good)); err != nil {
			t.Errorf("source %q: %v", good, err)
		}
	}
}

// A decision's options must all be answerable: producer paths refuse an
// empty option and one named twice, naming the item; the consumer's parse
// still applies such a record of a log written before (a walkthrough,
// 2026-11-30: a human decision offering [""] left its workflow waiting).
func TestDecisionOptionsAreAnswerable(t *testing.T) {
	event := func(options string) []byte {
		return []byte(`{"specversion":"1.0","id":"d1","source":"test","type":"workflow.decision.requested.v1","data":{"workflow_id":"wf1","decision_id":"h1","kind":"human","question":"q","options":` + options + `}}`)
	}
	for options, pointer := range map[string]string{`[""]`: "/data/options/0", `["a","b","a"]`: "/data/options/2", `["a",""]`: "/data/options/1"} {
		_, err := events.ParseProducerEvent(event(options))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != pointer {
			t.Errorf("options %s: %v, want a refusal at %s", options, err, pointer)
		}
		if _, err := events.ParseEvent(event(options)); err != nil {
			t.Errorf("options %s: the consumer's parse refused it: %v", options, err)
		}
	}
	if _, err := events.ParseProducerEvent(event(`["a","b"]`)); err != nil {
		t.Errorf("distinct options: %v", err)
	}
}

// A quota_exhausted completion names the reservation the quota refused:
// producer paths refuse one without refused_tokens, naming it, since the
// treesearch processor takes such a completion on the producer's word (a
// search with quota 1000 and nothing reserved was completed
// quota_exhausted through POST /v1/events: a tree-search walkthrough,
// 2026-12-07); the consumer's parse still applies such a record of a log
// written before, and other outcomes need no refused_tokens.
func TestQuotaExhaustedNeedsRefusedTokens(t *testing.T) {
	event := func(data string) []byte {
		return []byte(`{"specversion":"1.0","id":"c1","source":"test","type":"search.completed.v1","data":` + data + `}`)
	}
	without := event(`{"search_id":"s1","outcome":"quota_exhausted","node_id":"r","path":["r"]}`)
	_, err := events.ParseProducerEvent(without)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/data/refused_tokens" || !strings.Contains(ve.Reason, "quota_exhausted") {
		t.Errorf("quota_exhausted without refused_tokens: %v, want a refusal at /data/refused_tokens naming the outcome", err)
	}
	if _, err := events.ParseEvent(without); err != nil {
		t.Errorf("the consumer's parse refused a log's completion without refused_tokens: %v", err)
	}
	for _, ok := range []string{
		`{"search_id":"s1","outcome":"quota_exhausted","refused_tokens":120}`,
		`{"search_id":"s1","outcome":"exhausted"}`,
		`{"search_id":"s1","outcome":"max_expansions"}`,
	} {
		if _, err := events.ParseProducerEvent(event(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A search node sent without its state still names it by its SHA-256, 64
// lower-case hex digits as treesearch.Digest writes them, by which the
// processor finds a state reached before: producer paths refuse any other
// state_digest, naming it (a tree-search walkthrough, 2026-12-07:
// "not-a-digest" was acknowledged and applied); the consumer's parse
// still applies such a record of a log written before.
func TestStateDigestWithoutStateIsASHA256(t *testing.T) {
	event := func(digest string) []byte {
		return []byte(`{"specversion":"1.0","id":"n1","source":"test","type":"search.node.expanded.v1","data":{"search_id":"s1","node_id":"r.0","parent_id":"r","expansion":1,"depth":1,"state_digest":` +
			strconv.Quote(digest) + `,"candidate":"4+4","g":0.25,"h":0.5,"f":0.75,"score":0.5}}`)
	}
	sum := sha256.Sum256([]byte("4 8"))
	good := hex.EncodeToString(sum[:])
	for _, bad := range []string{"not-a-digest", good[:63], good + "0", strings.ToUpper(good), "sha256:" + good[7:], good[:62] + "zz"} {
		_, err := events.ParseProducerEvent(event(bad))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/data/state_digest" || !strings.Contains(ve.Reason, "SHA-256") {
			t.Errorf("state_digest %q without state: %v, want a refusal at /data/state_digest naming a SHA-256", bad, err)
		}
		if _, err := events.ParseEvent(event(bad)); err != nil {
			t.Errorf("state_digest %q: the consumer's parse refused a log's node: %v", bad, err)
		}
	}
	if _, err := events.ParseProducerEvent(event(good)); err != nil {
		t.Errorf("a SHA-256 without state: %v", err)
	}
}

// A pass cannot have more steps left, or have used more, than its profile
// allocates: producer paths refuse ttl_remaining or ttl_used above
// TaskProfile.TTL when the pass carries its profile, naming the member;
// the consumer's parse still applies such a record of a log written
// before (a walkthrough, 2026-11-30: ttl_remaining 50 of 6 was taken).
func TestPassTTLWithinItsProfile(t *testing.T) {
	event := func(ttl string) []byte {
		return []byte(`{"specversion":"1.0","id":"p1","source":"test","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","pass_number":1,"phase":"D",` + ttl +
			`,"profile":{"reasoning_depth":3,"information_sufficiency":0.5,"expected_tool_usage":"moderate","output_breadth":"moderate","confidence_requirement":"medium"},"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
	}
	if got := events.DefaultTaskProfile().TTL(); got != 6 {
		t.Fatalf("the default profile's TTL: %d, want the design's 6", got)
	}
	for ttl, pointer := range map[string]string{`"ttl_remaining":7`: "/data/ttl_remaining", `"ttl_remaining":50`: "/data/ttl_remaining", `"ttl_remaining":0,"ttl_used":7`: "/data/ttl_used",
		`"ttl_remaining":3,"ttl_used":4`: "/data/ttl_remaining"} { // 7 of 6 in all
		_, err := events.ParseProducerEvent(event(ttl))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != pointer {
			t.Errorf("%s: %v, want a refusal at %s", ttl, err, pointer)
		}
		if _, err := events.ParseEvent(event(ttl)); err != nil {
			t.Errorf("%s: the consumer's parse refused it: %v", ttl, err)
		}
	}
	for _, ttl := range []string{`"ttl_remaining":6`, `"ttl_remaining":0`, `"ttl_remaining":2,"ttl_used":4`} {
		if _, err := events.ParseProducerEvent(event(ttl)); err != nil {
			t.Errorf("%s: %v", ttl, err)
		}
	}
	// without a profile the pass takes the previous pass's, which only the
	// processor knows: not checked here
	noProfile := []byte(`{"specversion":"1.0","id":"p2","source":"test","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","pass_number":2,"phase":"D","ttl_remaining":50,"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
	if _, err := events.ParseProducerEvent(noProfile); err != nil {
		t.Errorf("a pass without a profile: %v", err)
	}
}

// A refinement ADD without a description is refused on the producer paths
// (the step it adds would have none, while a snapshot's step needs one: a
// walkthrough, 2026-11-30, saw a step described ""); the consumer's parse
// still takes it, so a log written before replays as it did.
func TestPassAddNeedsADescription(t *testing.T) {
	event := func(changes string) []byte {
		return []byte(`{"specversion":"1.0","id":"p1","source":"test","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","pass_number":2,"phase":"B","ttl_remaining":1,` +
			`"refinement_actions":[{"type":"MODIFY","target":"a","changes":{"description":"x"}},{"type":"ADD","target":"nod"` + changes + `}],"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
	}
	for _, ch := range []string{``, `,"changes":{}`, `,"changes":{"description":""}`, `,"changes":{"description":"   "}`} {
		_, err := events.ParseProducerEvent(event(ch))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/data/refinement_actions/1/changes/description" {
			t.Errorf("ADD%s: %v, want a refusal at /data/refinement_actions/1/changes/description", ch, err)
		}
		if _, err := events.ParseEvent(event(ch)); err != nil {
			t.Errorf("ADD%s: the consumer's parse refused it: %v", ch, err)
		}
	}
	if _, err := events.ParseProducerEvent(event(`,"changes":{"description":"a step"}`)); err != nil {
		t.Errorf("an ADD with a description: %v", err)
	}
	// a MODIFY that blanks a description, and a snapshot's blank step, are
	// refused too (a re-test, 2026-11-30: a MODIFY to "" was taken)
	for body, pointer := range map[string]string{
		`"refinement_actions":[{"type":"MODIFY","target":"a","changes":{"description":""}}]`: "/data/refinement_actions/0/changes/description",
		`"plan":{"steps":[{"step_id":"a","description":"  "}]}`:                              "/data/plan/steps/0/description",
	} {
		raw := []byte(`{"specversion":"1.0","id":"p2","source":"test","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","pass_number":2,"phase":"B","ttl_remaining":1,` + body +
			`,"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
		_, err := events.ParseProducerEvent(raw)
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != pointer {
			t.Errorf("%s: %v, want a refusal at %s", body, err, pointer)
		}
	}
	modify := []byte(`{"specversion":"1.0","id":"p3","source":"test","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","pass_number":2,"phase":"B","ttl_remaining":1,` +
		`"refinement_actions":[{"type":"MODIFY","target":"a","changes":{"incoming_context":"x"}}],"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
	if _, err := events.ParseProducerEvent(modify); err != nil {
		t.Errorf("a MODIFY that leaves the description: %v", err)
	}
}

// A number beyond a 64-bit float's range is refused on a producer path,
// naming its member; one too small for a float reads as 0 and is taken.
// Before, 1e400 was acknowledged into a workflow's context and answered
// back as such, which JavaScript's JSON.parse reads as Infinity (a
// workflows walkthrough, 2026-11-30).
func TestNumbersBeyondAFloatAreRefused(t *testing.T) {
	update := func(u string) []byte {
		return []byte(`{"specversion":"1.0","id":"u","source":"go/test","type":"workflow.reducer.applied.v1","data":{"workflow_id":"wf","layer":0,"channel":"context","update":` + u + `}}`)
	}
	refused := map[string]string{
		`{"x":1e400}`:                            "/data/update/x",
		`{"x":{"y":[1,"1e400",-1.5E+309]}}`:      "/data/update/x/y/2",
		`{"x":` + strings.Repeat("9", 310) + `}`: "/data/update/x",
	}
	for u, want := range refused {
		_, err := events.ParseProducerEvent(update(u))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != want || !strings.Contains(ve.Reason, "64-bit float") {
			t.Errorf("update %.60s: %v, want a refusal at %s", u, err, want)
		}
	}
	for _, u := range []string{`{"x":1e-400}`, `{"x":1.7976931348623157e308}`, `{"x":"1e400"}`, `{"x\"1e400":2}`} {
		if _, err := events.ParseProducerEvent(update(u)); err != nil {
			t.Errorf("update %s: %v, want it taken", u, err)
		}
	}
}

// A command or decision id holding a control character is refused on a
// producer path, naming the member; a printable one (spaces, non-ASCII)
// is taken. Before, "c\u0007\n" was enqueued and listed as pending (a
// workflows walkthrough, 2026-11-30).
func TestWorkflowIDsRefuseControlCharacters(t *testing.T) {
	ev := func(typ, data string) []byte {
		return []byte(`{"specversion":"1.0","id":"w","source":"go/test","type":"` + typ + `","data":` + data + `}`)
	}
	cases := []struct {
		typ, data, member string
	}{
		{"workflow.command.enqueued.v1", `{"workflow_id":"wf","command_id":%s,"command":"abort"}`, "command_id"},
		{"workflow.decision.requested.v1", `{"workflow_id":"wf","decision_id":%s,"kind":"human","question":"ok?"}`, "decision_id"},
		{"workflow.decision.answered.v1", `{"workflow_id":"wf","decision_id":%s,"answer":"yes"}`, "decision_id"},
	}
	for _, c := range cases {
		for _, bad := range []string{`"c\u0007"`, `"a\nb"`, `"x\u0085"`, `"\u007f"`} {
			_, err := events.ParseProducerEvent(ev(c.typ, fmt.Sprintf(c.data, bad)))
			var ve *events.ValidationError
			if !errors.As(err, &ve) || ve.Pointer != "/data/"+c.member || !strings.Contains(ve.Reason, "control character") {
				t.Errorf("%s with %s %s: %v, want a refusal at /data/%s", c.typ, c.member, bad, err, c.member)
			}
		}
		if c.typ != "workflow.decision.requested.v1" {
			// who sent the command or the answer is listed as the ids are
			data := strings.Replace(fmt.Sprintf(c.data, `"ok-1"`), `{"workflow_id"`, `{"by":"x\u0007","workflow_id"`, 1)
			var ve *events.ValidationError
			if _, err := events.ParseProducerEvent(ev(c.typ, data)); !errors.As(err, &ve) || ve.Pointer != "/data/by" {
				t.Errorf("%s with by \"x\\u0007\": %v, want a refusal at /data/by", c.typ, err)
			}
		}
		for _, good := range []string{`"c-1"`, `"approve step 2"`, `"décision"`} {
			if _, err := events.ParseProducerEvent(ev(c.typ, fmt.Sprintf(c.data, good))); err != nil {
				t.Errorf("%s with %s %s: %v, want it taken", c.typ, c.member, good, err)
			}
		}
	}
}

// A datacontenttype naming a charset other than UTF-8 is refused on the
// producer paths (JSON is UTF-8, RFC 8259 section 8.1), as HTTP's
// Content-Type and a Kafka binary record's content-type are; UTF-8 in any
// spelling is taken (a re-test, 2026-12-01: charset=latin-1 was taken).
func TestDataContentTypeCharsetIsUTF8(t *testing.T) {
	ev := func(dct string) []byte {
		return []byte(`{"specversion":"1.0","id":"c","source":"go/test","type":"memory.feedback.v1","datacontenttype":"` + dct + `","data":{"memory_id":"m1","signal":"task_completion","positive":true}}`)
	}
	for _, bad := range []string{"application/json; charset=latin-1", "application/json; charset=utf-16"} {
		var ve *events.ValidationError
		if _, err := events.ParseProducerEvent(ev(bad)); !errors.As(err, &ve) || ve.Pointer != "/datacontenttype" {
			t.Errorf("%q: %v, want a refusal at /datacontenttype", bad, err)
		}
	}
	for _, good := range []string{"application/json", "application/json; charset=utf-8", "application/json; charset=UTF8"} {
		if _, err := events.ParseProducerEvent(ev(good)); err != nil {
			t.Errorf("%q: %v, want it taken", good, err)
		}
	}
}

// An integer member written with a fraction or an exponent (1.0, 2e0),
// which JSON Schema's integer admits, is refused on a producer path naming
// the member and saying how to write it; one beyond 64 bits says so.
// Before, 1.0 was refused as "beyond the range of a 64-bit integer" (a
// passes walkthrough from Python, whose json.dumps writes a float so).
func TestIntegerWrittenAsAFloatIsRefusedSayingWhy(t *testing.T) {
	pass := func(n, ttl string) []byte {
		return []byte(`{"specversion":"1.0","id":"p1","source":"py","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","pass_number":` + n +
			`,"phase":"C","ttl_remaining":` + ttl + `,"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
	}
	for _, c := range []struct{ n, ttl, pointer, reason string }{
		{"1.0", "2", "/data/pass_number", "without a fraction or an exponent"},
		{"1", "2.0", "/data/ttl_remaining", "without a fraction or an exponent"},
		{"1", "2e0", "/data/ttl_remaining", "without a fraction or an exponent"},
		{"99999999999999999999", "2", "/data/pass_number", "beyond the range of a 64-bit integer"},
	} {
		_, err := events.ParseProducerEvent(pass(c.n, c.ttl))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != c.pointer || !strings.Contains(ve.Reason, c.reason) {
			t.Errorf("pass_number %s, ttl_remaining %s: %v; want a refusal at %s saying %q", c.n, c.ttl, err, c.pointer, c.reason)
		}
	}
	if _, err := events.ParseProducerEvent(pass("1", "2")); err != nil {
		t.Errorf("integers: %v", err)
	}
}

// A pass's data.session_id is an id, as the sessionid attribute is: one
// with a space or an empty segment is refused naming /data/session_id.
// Before, both were taken (a passes walkthrough, 2026-12-01).
func TestPassSessionIDIsAnID(t *testing.T) {
	pass := func(sid string) []byte {
		return []byte(`{"specversion":"1.0","id":"p1","source":"py","type":"reasoning.pass.completed.v1","data":{"task_id":"t1","session_id":"` + sid +
			`","pass_number":1,"phase":"C","ttl_remaining":0,"convergence":{"converged":false,"completeness":0.5,"coherence":0.5,"consistency":0.5}}}`)
	}
	for _, sid := range []string{"has space", "a//b", "-lead"} {
		_, err := events.ParseProducerEvent(pass(sid))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/data/session_id" {
			t.Errorf("session_id %q: %v; want a refusal at /data/session_id", sid, err)
		}
	}
	if _, err := events.ParseProducerEvent(pass("hotpot/q-7")); err != nil {
		t.Errorf("session_id hotpot/q-7: %v", err)
	}
}

// Every producer type has a typed payload (events.PayloadTypes) that the
// producer paths decode its data into, as its processor will: without
// one, a value the schema admits and the processor's decoding refuses (an
// integer written 1.0, or beyond 64 bits) is acknowledged and then
// dead-lettered. memory.retrieved.v1 had none (a new contributor's
// walkthrough, 2026-12-07, adding an event type and looking for what a
// type needs).
func TestEveryProducerTypeHasAPayload(t *testing.T) {
	for _, typ := range events.ProducerTypes() {
		if _, ok := events.PayloadTypes[typ]; !ok {
			t.Errorf("%s: no typed payload in payloadTypes (events/payloadcheck.go)", typ)
		}
	}
}

// A usage's rank is refused on the producer paths when the memory bank
// could not decode it; before, it was acknowledged and then dead-lettered
// by the memories processor ("cannot unmarshal number 1.0 into ... int").
func TestRetrievalRankIsRefusedAsTheProcessorWouldReadIt(t *testing.T) {
	usage := func(rank string) []byte {
		return []byte(`{"specversion":"1.0","id":"u1","source":"py","type":"memory.retrieved.v1","data":{"memory_id":"m1","rank":` + rank + `}}`)
	}
	for _, c := range []struct{ rank, reason string }{
		{"1.0", "without a fraction or an exponent"},
		{"2e0", "without a fraction or an exponent"},
		{"99999999999999999999", "beyond the range of a 64-bit integer"},
	} {
		_, err := events.ParseProducerEvent(usage(c.rank))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != "/data/rank" || !strings.Contains(ve.Reason, c.reason) {
			t.Errorf("rank %s: %v; want a refusal at /data/rank saying %q", c.rank, err, c.reason)
		}
	}
	if _, err := events.ParseProducerEvent(usage("3")); err != nil {
		t.Errorf("rank 3: %v", err)
	}
}
