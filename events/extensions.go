package events

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	gojson "github.com/goccy/go-json"
)

// contextAttributes are the attribute names the Envelope has fields for:
// the CloudEvents 1.0 context attributes, data, and Chronicle's own
// extension attributes. Every other member of an event is an extension
// attribute kept in Envelope.Extensions.
var contextAttributes = map[string]bool{
	"specversion": true, "id": true, "source": true, "type": true, "subject": true, "time": true,
	"datacontenttype": true, "dataschema": true, "data": true,
	"sessionid": true, "scope": true, "causationid": true, "correlationid": true,
}

// MaxExtensionNameLen is the longest extension attribute name accepted.
// CloudEvents 1.0 says names SHOULD NOT exceed 20 characters; Chronicle
// accepts longer ones up to this bound.
const MaxExtensionNameLen = 64

// CheckAttributeName returns a *ValidationError naming the attribute when
// name breaks the CloudEvents 1.0 attribute naming rule: lower-case
// letters a–z and digits 0–9 only, at most MaxExtensionNameLen characters.
func CheckAttributeName(name string) error {
	bad := name == "" || len(name) > MaxExtensionNameLen
	for i := 0; i < len(name) && !bad; i++ {
		c := name[i]
		bad = !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9')
	}
	if bad {
		return &ValidationError{Index: -1, Pointer: "/" + name, Reason: fmt.Sprintf("attribute name %q breaks the CloudEvents naming rule (lower-case a-z and 0-9 only, at most %d characters); unknown attributes are kept as extensions only when named so", name, MaxExtensionNameLen)}
	}
	return nil
}

// extensionsOf collects the extension attributes of a decoded event (doc
// is the event's JSON object): every member not in contextAttributes. It
// rejects, naming the attribute, a name that breaks CheckAttributeName and
// a value that is not a string, number or boolean (the JSON types the
// CloudEvents JSON format gives extension attributes).
func extensionsOf(doc map[string]any) (map[string]any, error) {
	var ext map[string]any
	for k, v := range doc {
		if contextAttributes[k] {
			continue
		}
		if err := CheckAttributeName(k); err != nil {
			return nil, err
		}
		switch v.(type) {
		case string, bool, json.Number:
		default:
			return nil, &ValidationError{Index: -1, Pointer: "/" + k, Reason: "an extension attribute must be a string, a number or a boolean"}
		}
		if ext == nil {
			ext = map[string]any{}
		}
		ext[k] = v
	}
	return ext, nil
}

// envelopeFields is Envelope without its methods, so encoding it uses the
// struct tags.
type envelopeFields Envelope

// MarshalJSON encodes the event in the CloudEvents JSON format: the
// fields in their declared order, then the extension attributes sorted by
// name. Without extensions the bytes are those of the plain struct
// encoding, so the digest of existing data does not change.
//
// It does not escape '<', '>' and '&' as HTML (json.Marshal's default):
// an event is no HTML, and the escapes made a producer's data six times
// longer there, so a 300 KB tool result holding code or markup was
// refused as "1,799,120 bytes encoded" (above MaxEventBytes) and stored
// as \u003c. Data already escaped (Chronicle's own payloads, encoded with
// Marshal) is copied as it is, so their records keep their bytes.
func (e Envelope) MarshalJSON() ([]byte, error) {
	b, err := gojson.MarshalWithOption((*envelopeFields)(&e), gojson.DisableHTMLEscape())
	if err == nil && CheckEncoding.Load() {
		std, serr := marshalVerbatim((*envelopeFields)(&e))
		if serr != nil || !bytes.Equal(std, b) {
			return nil, fmt.Errorf("events: envelope %s: goccy/go-json wrote %s, encoding/json %s (%v)", e.ID, b, std, serr)
		}
	}
	if err != nil || len(e.Extensions) == 0 {
		return b, err
	}
	names := make([]string, 0, len(e.Extensions))
	for k, v := range e.Extensions {
		if contextAttributes[k] {
			return nil, &ValidationError{Index: -1, Pointer: "/" + PointerToken(k), Reason: fmt.Sprintf("extension %q shadows a context attribute", k)}
		}
		if v == nil {
			// a nil extension is the attribute left out, as a JSON null
			// is (CloudEvents JSON format 2.2): it was written as null,
			// which Publish took and the processors then dead-lettered
			// (a Go embedder's walkthrough)
			continue
		}
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1]) // up to the closing brace
	for _, k := range names {
		v, err := json.Marshal(e.Extensions[k])
		if err != nil {
			return nil, &ValidationError{Index: -1, Pointer: "/" + PointerToken(k), Reason: fmt.Sprintf("extension %q: %v", k, err)}
		}
		kb, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes the CloudEvents JSON format, keeping every member
// that is not a context attribute in Extensions (numbers as json.Number).
// It does not validate: ParseEvent does.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	if err := gojson.Unmarshal(b, (*envelopeFields)(e)); err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := gojson.Unmarshal(b, &members); err != nil {
		return err
	}
	e.Extensions = nil
	for k, raw := range members {
		if contextAttributes[k] {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		e.Extensions[k] = v
	}
	return nil
}

// RecordTime is the time attribute an event without one gets on consume:
// the Kafka record's timestamp, UTC, RFC 3339 with nanoseconds
// (time.RFC3339Nano). The timestamp is part of the log, so a replay gives
// every processor the same time.
func RecordTime(ts time.Time) string { return ts.UTC().Format(time.RFC3339Nano) }

// dataBase64 accepts the JSON format's data_base64 member (the official
// SDKs use it for data given as bytes): when the event has no data member,
// its base64 content must be a JSON document; it replaces data_base64 by
// data in doc and is returned (nil when there is no data_base64).
func dataBase64(doc map[string]any) (json.RawMessage, error) {
	v, ok := doc["data_base64"]
	if !ok {
		return nil, nil
	}
	if _, both := doc["data"]; both {
		return nil, &ValidationError{Index: -1, Pointer: "/data_base64", Reason: "an event has data or data_base64, not both"}
	}
	s, ok := v.(string)
	if !ok {
		return nil, &ValidationError{Index: -1, Pointer: "/data_base64", Reason: "must be a base64 string"}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, &ValidationError{Index: -1, Pointer: "/data_base64", Reason: "not valid base64: " + err.Error()}
	}
	data, err := decodeAny(b)
	if err != nil {
		return nil, &ValidationError{Index: -1, Pointer: "/data_base64", Reason: "only JSON data is accepted, and this is not valid JSON: " + err.Error()}
	}
	delete(doc, "data_base64")
	doc["data"] = data
	return json.RawMessage(bytes.TrimSpace(b)), nil
}
