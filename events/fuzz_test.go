package events_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/twmb/franz-go/pkg/kgo"
)

// seedEvents adds, as fuzz seeds, the valid and invalid events of
// testdata/types and the events of the first bundled tau-bench sessions
// (real GPT-4o tool calls and outputs).
func seedEvents(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	files, _ := filepath.Glob("testdata/types/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var doc struct {
			Valid   json.RawMessage `json:"valid"`
			Invalid []struct {
				Event json.RawMessage `json:"event"`
			} `json:"invalid"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			f.Fatal(file, err)
		}
		seeds = append(seeds, doc.Valid)
		for _, iv := range doc.Invalid {
			seeds = append(seeds, iv.Event)
		}
	}
	recs, err := taubench.SampleRecords()
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range recs[:3] {
		envs, err := taubench.Events(r)
		if err != nil {
			f.Fatal(err)
		}
		for i := range envs {
			b, _ := json.Marshal(envs[i])
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// FuzzParseProducerEvent: any input is either rejected with a
// *ValidationError or parsed into an envelope that validates again, whose
// record key is its entity key, and which re-encodes to a parseable event.
func FuzzParseProducerEvent(f *testing.F) {
	for _, s := range seedEvents(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, err := events.ParseProducerEvent(raw)
		if err != nil {
			var ve *events.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("rejection is not a ValidationError: %T %v", err, err)
			}
			if ve.Pointer == "" || ve.Reason == "" {
				t.Fatalf("rejection names no field or reason: %+v", ve)
			}
			return
		}
		if err := events.Validate(&env); err != nil {
			t.Fatalf("parsed event does not validate again: %v", err)
		}
		key, err := events.Key(&env)
		if err != nil {
			t.Fatalf("parsed event has no key: %v", err)
		}
		scope, id, ok := events.SplitEntityKey(key)
		if key != "clock" && (!ok || scope != env.EffectiveScope() || events.CheckID(id) != nil) {
			t.Fatalf("key %q of a %s event in %s", key, env.Type, env.EffectiveScope())
		}
		b, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.ParseProducerEvent(b); err != nil {
			t.Fatalf("re-encoded event does not parse: %v", err)
		}
	})
}

// FuzzBinaryModeRecord: a record in binary content mode (ce_* headers, the
// data as value) built from fuzzed attribute values and data either
// decodes to an event whose attributes are the headers' or is rejected
// with an error; it never panics.
func FuzzBinaryModeRecord(f *testing.F) {
	for _, s := range seedEvents(f) {
		var env events.Envelope
		if json.Unmarshal(s, &env) != nil {
			continue
		}
		f.Add(string(env.Type), env.ID, env.Source, env.Time, env.SessionID, env.Scope, []byte(env.Data))
	}
	f.Fuzz(func(t *testing.T, typ, id, source, at, session, scope string, data []byte) {
		headers := []kgo.RecordHeader{
			{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_type", Value: []byte(typ)}, {Key: "ce_id", Value: []byte(id)},
			{Key: "ce_source", Value: []byte(source)}, {Key: "ce_time", Value: []byte(at)}, {Key: "content-type", Value: []byte("application/json")},
		}
		if session != "" {
			headers = append(headers, kgo.RecordHeader{Key: "ce_sessionid", Value: []byte(session)})
		}
		if scope != "" {
			headers = append(headers, kgo.RecordHeader{Key: "ce_scope", Value: []byte(scope)})
		}
		env, err := events.FromRecord(&kgo.Record{Headers: headers, Value: data})
		if err != nil {
			return
		}
		if string(env.Type) != typ || env.ID != id || env.Source != source || env.SessionID != session || env.Scope != scope {
			t.Fatalf("binary-mode attributes changed in decoding: %+v", env)
		}
	})
}

// FuzzPayloadDecoders: every event the producer path accepts decodes into
// its typed payload (ParseProducerEvent checks it: checkPayload; this
// guards that check).
func FuzzPayloadDecoders(f *testing.F) {
	for _, s := range seedEvents(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, err := events.ParseProducerEvent(raw)
		if err != nil {
			return
		}
		if mk, ok := events.PayloadTypes[env.Type]; ok {
			if err := env.Decode(mk()); err != nil {
				t.Fatalf("%s passed its schema but does not decode: %v", env.Type, err)
			}
		}
	})
}
