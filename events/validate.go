package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"mime"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/valyala/fastjson"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ValidationError says why an event was rejected: the JSON pointer of the
// failing field (relative to the event, so data fields start with /data)
// and the reason. Index is the event's position in a batch, or -1.
type ValidationError struct {
	Index   int    `json:"index"`
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
	// Err, when set, is the sentinel the error wraps (ErrEventTooLarge).
	Err error `json:"-"`
}

// Unwrap returns Err.
func (e *ValidationError) Unwrap() error { return e.Err }

func (e *ValidationError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("event %d: %s: %s", e.Index, e.Pointer, e.Reason)
	}
	return fmt.Sprintf("event: %s: %s", e.Pointer, e.Reason)
}

// ErrDerivedType is wrapped by the ValidationError for a derived type sent
// by a producer.
var ErrDerivedType = errors.New("derived event types are written by processors only")

type compiled struct {
	envelope *jsonschema.Schema
	// dateTime is the envelope schema's rule for the time attribute alone
	// (#/properties/time), for parseFast.
	dateTime *jsonschema.Schema
	data     map[Type]*jsonschema.Schema
	// opaque lists, per type, the data members its schema constrains by
	// JSON type alone (opaqueMembers), for parseFast.
	opaque map[Type]map[string]fastjson.Type
	// fast is each type's data schema evaluated on the fastjson parse
	// (fastSchema), for parseFast.
	fast map[Type]*fastSchema
}

var (
	compileOnce sync.Once
	schemaSet   *compiled
	compileErr  error
)

func loadSchemas() (*compiled, error) {
	compileOnce.Do(func() { schemaSet, compileErr = compileSchemas(schemas.FS, registry) })
	return schemaSet, compileErr
}

// compileSchemas compiles the *.json schemas of files (package schemas'
// FS) for the envelope and each of types. A type without its file is an
// error naming the file to add and its $id (the validator's own error was
// "failing loading "urn:chronicle:schema:…": invalid file url").
func compileSchemas(files fs.FS, types map[Type]TypeInfo) (*compiled, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		return nil, err
	}
	raws := make(map[string][]byte, len(names))
	for _, f := range names {
		b, err := fs.ReadFile(files, f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("events: schema %s: %w", f, err)
		}
		if err := c.AddResource("urn:chronicle:schema:"+strings.TrimSuffix(f, ".json"), doc); err != nil {
			return nil, fmt.Errorf("events: schema %s: %w", f, err)
		}
		raws[strings.TrimSuffix(f, ".json")] = b
	}
	out := &compiled{data: map[Type]*jsonschema.Schema{}, opaque: map[Type]map[string]fastjson.Type{}, fast: map[Type]*fastSchema{}}
	memo := map[*jsonschema.Schema]*fastSchema{}
	if out.envelope, err = c.Compile("urn:chronicle:schema:cloudevent"); err != nil {
		return nil, err
	}
	if out.dateTime, err = c.Compile("urn:chronicle:schema:cloudevent#/properties/time"); err != nil {
		return nil, err
	}
	for t := range types {
		raw, ok := raws[string(t)]
		if !ok {
			return nil, fmt.Errorf("events: type %s has no schema: add schemas/%s.json (JSON Schema draft 2020-12, $id %q; package schemas embeds every *.json there)", t, t, SchemaURI(t))
		}
		s, err := c.Compile(SchemaURI(t))
		if err != nil {
			return nil, fmt.Errorf("events: schema of %s: %w", t, err)
		}
		out.data[t] = s
		out.fast[t] = compileFast(s, memo)
		out.opaque[t] = opaqueMembers(raw)
	}
	return out, nil
}

// Schema returns the raw JSON Schema of type t (or "cloudevent" for the
// envelope) and whether it exists.
func Schema(name string) ([]byte, bool) {
	b, err := schemas.FS.ReadFile(name + ".json")
	return b, err == nil
}

var printer = message.NewPrinter(language.English)

// ptrEscaper escapes a JSON Pointer reference token (RFC 6901).
var ptrEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// schemaError turns the first leaf of a jsonschema error tree into a
// ValidationError whose pointer is prefixed with prefix.
func schemaError(err error, prefix string) *ValidationError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Index: -1, Pointer: prefix, Reason: err.Error()}
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	var p strings.Builder
	p.WriteString(prefix)
	for _, tok := range ve.InstanceLocation {
		p.WriteByte('/')
		p.WriteString(ptrEscaper.Replace(tok))
	}
	ptr := p.String()
	if ptr == "" {
		ptr = "/"
	}
	if rk, ok := ve.ErrorKind.(*kind.Required); ok && len(rk.Missing) == 1 {
		// the missing member's own pointer, as binary mode names a
		// missing ce-source /source: before, structured mode said "/"
		// for a missing type and "/data" for a missing data member, so
		// one mistake had two pointers by content mode (a producer's
		// walkthrough, 2026-11-30). Several missing: the object's.
		ptr = strings.TrimSuffix(ptr, "/") + "/" + ptrEscaper.Replace(rk.Missing[0])
	}
	if ak, ok := ve.ErrorKind.(*kind.AdditionalProperties); ok && len(ak.Properties) == 1 {
		// the unknown member's own pointer, as POST /v1/memories names it:
		// before, "/data" with "additional properties 'colour' not
		// allowed" (a producer's walkthrough, 2026-12-06). Several
		// unknown: the object's, the reason naming them all.
		ptr = strings.TrimSuffix(ptr, "/") + "/" + ptrEscaper.Replace(ak.Properties[0])
	}
	if fk, ok := ve.ErrorKind.(*kind.Format); ok && fk.Want == "date-time" {
		if got, ok := fk.Got.(string); ok && zoneless.MatchString(got) {
			// Python's datetime.utcnow().isoformat(): the validator said
			// "invalid time element: offset must be 6 characters long"
			// (a producer's walkthrough, 2026-12-06)
			return &ValidationError{Index: -1, Pointer: ptr, Reason: fmt.Sprintf("%q has no time zone: RFC 3339 needs Z or ±hh:mm after the time, e.g. %sZ", got, got)}
		}
	}
	if pk, ok := ve.ErrorKind.(*kind.Pattern); ok && ptr == "/scope" {
		// in ScopeReason's words, as every route names a scope: the
		// schema's regular expression says nothing of which character
		// is wrong (a producer's walkthrough, 2026-12-06)
		return &ValidationError{Index: -1, Pointer: ptr, Reason: ScopeReason(pk.Got)}
	}
	if pk, ok := ve.ErrorKind.(*kind.Pattern); ok && ptr == "/datacontenttype" {
		// the schema's pattern spells application/json in any case: the
		// regular expression says nothing to a producer
		return &ValidationError{Index: -1, Pointer: ptr, Reason: fmt.Sprintf("%q: only application/json data is accepted (parameters such as charset=utf-8 may follow)", pk.Got)}
	}
	return &ValidationError{Index: -1, Pointer: ptr, Reason: ve.ErrorKind.LocalizedString(printer)}
}

// zoneless is a date and a time without a time zone, which RFC 3339
// requires (section 5.6).
var zoneless = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?$`)

// ParseProducerEvent validates one event sent by a producer (CloudEvents
// JSON format) and decodes it. It rejects, with a *ValidationError naming
// the field: malformed JSON, an envelope that breaks the CloudEvents schema,
// an unknown or derived type, data that breaks the type's JSON Schema, data
// the type's payload cannot hold although the schema admits it (an integer
// beyond the 64-bit range: checkPayload), and a missing record key.
//
// A member name repeated within one object ({"id":"a","id":"b"}) is refused
// with its pointer: decoders disagree on which one counts, and the id is
// the idempotency key. The processors' parse of what they consume accepts
// it (the last one counts, as encoding/json), so a log written before
// keeps replaying as it did.
func ParseProducerEvent(raw []byte) (Envelope, error) {
	set, err := loadSchemas()
	if err != nil {
		return Envelope{}, err
	}
	if env, _, ok := parseFast(set, raw, false, false); ok {
		if err := checkSurrogates(raw); err != nil {
			return Envelope{}, err
		}
		if err := checkNumbers(raw); err != nil {
			return Envelope{}, err
		}
		return env, checkProduced(&env) // the fast path refuses repeated members
	}
	if ptr, reason, bad := InvalidUTF8(raw); bad {
		// the member and the byte, as the other routes' bodies (it was
		// "/: not valid UTF-8", parseSlow's words, which the processors
		// keep for a log's dead letters: a subscriber's walkthrough)
		return Envelope{}, &ValidationError{Index: -1, Pointer: ptr, Reason: reason}
	}
	if ptr, reason, ok := RepeatedMember(raw); ok {
		return Envelope{}, &ValidationError{Index: -1, Pointer: ptr, Reason: reason}
	}
	env, err := parseSlow(set, raw, false)
	if err != nil {
		// a lone surrogate is named before the schema error it caused: an
		// unknown member whose name holds one was "additional properties
		// 'x�' not allowed" (a re-test, 2026-12-01)
		if json.Valid(raw) {
			if serr := checkSurrogates(raw); serr != nil {
				return Envelope{}, serr
			}
		}
		return env, err
	}
	if err := checkSurrogates(raw); err != nil {
		return Envelope{}, err
	}
	if err := checkNumbers(raw); err != nil {
		return Envelope{}, err
	}
	return env, checkProduced(&env)
}

// checkNumbers refuses, naming its member, a number in raw (a valid JSON
// text) beyond the range of a 64-bit float (about ±1.8e308), such as 1e400
// or an integer of 310 digits. JSON's grammar sets no limit, but RFC 8259
// (section 6) warns that such a number is not interoperable and I-JSON
// (RFC 7493, section 2.2) forbids it: JavaScript's JSON.parse reads 1e400
// as Infinity and writes it back as null, Python's json reads inf and
// writes the invalid Infinity, Go's encoding/json refuses it into a
// float64. Before, a workflow's context took {"x": 1e400} and answered it
// back as such (a workflows walkthrough, 2026-11-30). A number too small
// for a float (1e-400) reads as 0 everywhere and is taken. Producer paths
// only: a log written before replays as it did. Cost: one pass over raw,
// skipping strings with IndexByte; a number is parsed only when it has an
// exponent or more than 300 digits.
func checkNumbers(raw []byte) error {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			i = skipString(raw, i)
			continue
		case c == '-' || c >= '0' && c <= '9':
		default:
			i++
			continue
		}
		j := i
		exp := false
		for j < len(raw) {
			d := raw[j]
			if d == 'e' || d == 'E' {
				exp = true
			} else if !(d >= '0' && d <= '9' || d == '-' || d == '+' || d == '.') {
				break
			}
			j++
		}
		if exp || j-i > 300 {
			if f, err := strconv.ParseFloat(string(raw[i:j]), 64); errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
				ptr := PointerAt(raw, int64(j))
				if ptr == "" {
					ptr = "/"
				}
				return &ValidationError{Index: -1, Pointer: ptr, Reason: fmt.Sprintf("number %s is beyond the range of a 64-bit float (about ±1.8e308): JSON readers make it Infinity, null or an error (RFC 8259 section 6, I-JSON RFC 7493 section 2.2)", shorten(raw[i:j]))}
			}
		}
		i = j
	}
	return nil
}

// HugeNumber reports the first number of raw, a valid JSON text, beyond
// the range of a 64-bit float (as the producer paths refuse it): its JSON
// pointer ("/" for the top level) and the reason. The MCP transports check
// their messages with it: the SDK's refusal of {"query": 1e400} named a Go
// struct field and type (an MCP mutation walkthrough, 2026-12-03).
func HugeNumber(raw []byte) (pointer, reason string, ok bool) {
	var ve *ValidationError
	if err := checkNumbers(raw); errors.As(err, &ve) {
		return ve.Pointer, ve.Reason, true
	}
	return "", "", false
}

// shorten quotes a number for an error, its first and last digits when it
// is long.
func shorten(num []byte) string {
	if len(num) <= 40 {
		return string(num)
	}
	return fmt.Sprintf("%s…%s (%d characters)", num[:16], num[len(num)-8:], len(num))
}

// LoneSurrogate reports the first \u escape of a lone UTF-16 surrogate in
// raw, a valid JSON text, as the producer paths refuse it
// (ParseProducerEvent): its JSON pointer ("/" for the top level) and the
// reason. The HTTP API's JSON bodies are checked with it too: decoders
// read such an escape as U+FFFD, so two titles differing only there were
// one memory, and its evidence counted twice (a Python integrator's
// walkthrough, 2026-12-01).
func LoneSurrogate(raw []byte) (pointer, reason string, ok bool) {
	var ve *ValidationError
	if err := checkSurrogates(raw); errors.As(err, &ve) {
		return ve.Pointer, ve.Reason, true
	}
	return "", "", false
}

// checkSurrogates refuses, naming its member, a \u escape of a lone UTF-16
// surrogate (a high one, U+D800–U+DBFF, not followed by an escaped low
// one, or a low one, U+DC00–U+DFFF, alone) in raw, a valid JSON text: it
// is no character, and JSON decoders replace it with U+FFFD (RFC 8259,
// section 8.2: the behaviour is unpredictable), so ids "a\ud800" and
// "a\udbff" were one id, the second event answered 202 and then
// dead-lettered as a conflicting duplicate (a producer's walkthrough,
// 2026-11-30), and a text's content changed silently. Producer paths only:
// a log written before replays as it did.
func checkSurrogates(raw []byte) error {
	if bytes.IndexByte(raw, '\\') < 0 {
		return nil
	}
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' || i+6 > len(raw) {
			i++ // \\, \" and the others: the escaped byte is no backslash
			continue
		}
		c, _ := hex4(raw, i+2) // valid JSON: four hex digits
		switch {
		case c >= 0xD800 && c <= 0xDBFF:
			if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if lo, _ := hex4(raw, i+8); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
		case c >= 0xDC00 && c <= 0xDFFF:
		default:
			i += 5
			continue
		}
		ptr := PointerAt(raw, int64(i+1))
		where := ""
		if inMemberName(raw, i) {
			// the member's own pointer would hold U+FFFD for the
			// surrogate: name the object that holds the member (a
			// re-test, 2026-12-01)
			ptr, where = ObjectOfNameAt(raw, int64(i+1)), " of a member name"
		}
		if ptr == "" {
			ptr = "/"
		}
		return &ValidationError{Index: -1, Pointer: ptr, Reason: fmt.Sprintf("%s at byte %d%s is a lone UTF-16 surrogate, no character: JSON decoders replace it with U+FFFD, so two different ids or texts would read as one (RFC 8259, section 8.2); send the character itself, or a surrogate pair for one beyond U+FFFF", raw[i:i+6], i, where)}
	}
	return nil
}

// inMemberName reports whether byte i of raw, a valid JSON text, is inside
// a string that is an object's member name: the string's closing quote is
// followed, after white space, by a colon.
func inMemberName(raw []byte, i int) bool {
	for i < len(raw) && raw[i] != '"' {
		if raw[i] == '\\' {
			i++
		}
		i++
	}
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return raw[i] == ':'
	}
	return false
}

// checkUTF8 refuses, naming the attribute or data's member, an event built
// in Go (Producer.Publish) whose strings or data are not valid UTF-8: its
// encoding replaced each invalid byte with U+FFFD, so the log held other
// content than the producer's, acknowledged without an error, and two ids
// differing only there were one (a producer's walkthrough, 2026-11-30);
// HTTP refuses such bytes ("not valid UTF-8").
func checkUTF8(e *Envelope) error {
	attrs := []struct{ name, v string }{{"specversion", e.SpecVersion}, {"id", e.ID}, {"source", e.Source}, {"type", string(e.Type)},
		{"subject", e.Subject}, {"time", e.Time}, {"datacontenttype", e.DataContentType}, {"dataschema", e.DataSchema},
		{"sessionid", e.SessionID}, {"scope", e.Scope}, {"causationid", e.CausationID}, {"correlationid", e.CorrelationID}}
	for _, a := range attrs {
		if !utf8.ValidString(a.v) {
			return &ValidationError{Index: -1, Pointer: "/" + a.name, Reason: fmt.Sprintf("%q is not valid UTF-8", a.v)}
		}
	}
	for _, name := range sortedNames(e.Extensions) {
		if s, ok := e.Extensions[name].(string); ok && !utf8.ValidString(s) {
			return &ValidationError{Index: -1, Pointer: "/" + name, Reason: fmt.Sprintf("%q is not valid UTF-8", s)}
		}
	}
	if !utf8.Valid(e.Data) {
		off := 0
		for off < len(e.Data) {
			r, n := utf8.DecodeRune(e.Data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return &ValidationError{Index: -1, Pointer: "/data" + PointerAt(e.Data, int64(off+1)), Reason: fmt.Sprintf("not valid UTF-8 (byte 0x%02x at byte %d of data)", e.Data[off], off)}
	}
	return nil
}

// MaxTimeAhead is how far ahead of the producing host's clock an event's
// time may be on producer paths (checkProduced): a producer's clock a
// little fast passes, a local time sent as UTC from a zone east of UTC+1
// and a far-future time do not. The processors' parse of what they
// consume takes any time, so a log written before replays as it did.
const MaxTimeAhead = time.Hour

// aheadBy is how far at is after now, for a message: a duration in whole
// seconds, or in days beyond three (from Unix seconds: time.Time.Sub
// saturates at about 292 years, and 9999-12-31 is further).
func aheadBy(at, now time.Time) string {
	if d := at.Sub(now); d < 72*time.Hour {
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%d days", (at.Unix()-now.Unix())/86400)
}

// checkProduced is what a producer path checks beyond what a processor
// does on what it consumes (so a log written before a check replays as it
// did): dataschema, when set, is an absolute URI, as CloudEvents 1.0 says
// (type URI: a scheme and its part; "not a uri" was acknowledged with 202,
// found by a producer's walkthrough); sessionid, when set, is an id
// (CheckID) on every type — before, only the types keyed by it checked it,
// so "bad//id", "-lead", "has space" or "trail/" on search.paused.v1,
// workflow.reducer.applied.v1 or reasoning.pass.completed.v1 (keyed by
// their data) was acknowledged with 202 while coordination.minute.recorded.v1
// got a 400 (an agent-runtime developer's walkthrough); then the payload
// (checkPayload).
func checkProduced(e *Envelope) error {
	if err := checkAttributeStrings(e); err != nil {
		return err
	}
	if e.Time != "" {
		at, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			return &ValidationError{Index: -1, Pointer: "/time", Reason: fmt.Sprintf("%q: write the time as yyyy-mm-ddThh:mm:ss[.fraction] and Z or ±hh:mm, with a capital T and Z and seconds up to 59; a lower-case t or z and a leap second (:60) are RFC 3339 but neither Chronicle's processors nor the official CloudEvents SDKs read them, so such an event was acknowledged and then lost downstream; or leave time out (the record's timestamp stands in)", e.Time)}
		}
		if now := time.Now(); at.Sub(now) > MaxTimeAhead {
			return &ValidationError{Index: -1, Pointer: "/time", Reason: fmt.Sprintf("%q is %s ahead of this host's clock (%s), more than the %s allowed: an event's time is when its occurrence happened (a local time sent with Z, or a producer's clock set ahead?); send the time in UTC with Z or with its offset, or leave time out (the record's timestamp stands in)",
				e.Time, aheadBy(at, now), now.UTC().Format(time.RFC3339), MaxTimeAhead)}
		}
	}
	if e.DataContentType != "" && e.DataContentType != ContentTypeJSON {
		_, params, err := mime.ParseMediaType(e.DataContentType)
		if err != nil {
			return &ValidationError{Index: -1, Pointer: "/datacontenttype", Reason: fmt.Sprintf("%q is not a media type (RFC 2046: type/subtype, then parameters as ; name=value): %v", e.DataContentType, err)}
		}
		if !UTF8Charset(params) {
			return &ValidationError{Index: -1, Pointer: "/datacontenttype", Reason: fmt.Sprintf("%q: JSON data is UTF-8 (RFC 8259, section 8.1); say charset=utf-8 or no charset", e.DataContentType)}
		}
	}
	if e.SessionID != "" {
		if err := CheckID(e.SessionID); err != nil {
			return &ValidationError{Index: -1, Pointer: "/sessionid", Reason: err.Error()}
		}
	}
	if err := checkURIReference(e.Source); err != nil {
		return &ValidationError{Index: -1, Pointer: "/source", Reason: fmt.Sprintf("%q is not a URI-reference (CloudEvents 1.0, RFC 3986: e.g. https://example.com/agents/1, urn:agent:1 or a relative reference such as agents/1): %v", e.Source, err)}
	}
	if e.DataSchema != "" {
		if u, err := url.Parse(e.DataSchema); err != nil || u.Scheme == "" || u.Opaque == "" && u.Host == "" && u.Path == "" {
			return &ValidationError{Index: -1, Pointer: "/dataschema", Reason: fmt.Sprintf("%q is not an absolute URI (CloudEvents 1.0: dataschema is a URI, e.g. %s)", e.DataSchema, SchemaURI(e.Type))}
		}
	}
	for _, name := range sortedNames(e.Extensions) {
		if err := checkExtensionValue(name, e.Extensions[name]); err != nil {
			return err
		}
	}
	payload, err := checkPayload(e)
	if err != nil {
		return err
	}
	if err := checkSearchEvent(payload); err != nil {
		return err
	}
	if err := checkCriterionIDs(e); err != nil {
		return err
	}
	if err := checkNodeID(e); err != nil {
		return err
	}
	if err := checkRefusedTokens(e); err != nil {
		return err
	}
	if err := checkDecisionOptions(e); err != nil {
		return err
	}
	if err := checkWorkflowIDs(e); err != nil {
		return err
	}
	if err := checkPass(e); err != nil {
		return err
	}
	if err := checkPassDescriptions(e); err != nil {
		return err
	}
	return checkToolNames(e)
}

// checkPassDescriptions refuses a reasoning.pass.completed.v1 whose refinement ADD
// has no description, whose MODIFY sets an empty one, or whose plan
// snapshot has a step without one (blank counts as none): a step needs a
// description (an ADD without changes.description was taken and shown as
// a step described "": a walkthrough, 2026-11-30). Producer paths only:
// the passes processor applies a log written before as it did.
func checkPassDescriptions(e *Envelope) error {
	if e.Type != ReasoningPassCompleted {
		return nil
	}
	var d struct {
		Plan              *Plan              `json:"plan"`
		RefinementActions []RefinementAction `json:"refinement_actions"`
	}
	if gojson.Unmarshal(e.Data, &d) != nil {
		return nil // checkPayload judged the shape
	}
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	if d.Plan != nil {
		for i, st := range d.Plan.Steps {
			if blank(st.Description) {
				return &ValidationError{Index: -1, Pointer: fmt.Sprintf("/data/plan/steps/%d/description", i), Reason: "required, at least one character that is not a space"}
			}
		}
	}
	for i, a := range d.RefinementActions {
		ptr := fmt.Sprintf("/data/refinement_actions/%d/changes/description", i)
		switch {
		case a.Type == RefineAdd && (a.Changes == nil || a.Changes.Description == nil || blank(*a.Changes.Description)):
			return &ValidationError{Index: -1, Pointer: ptr, Reason: "required for an ADD, at least one character that is not a space: the step it adds needs a description, as a plan snapshot's step does"}
		case a.Type == RefineModify && a.Changes != nil && a.Changes.Description != nil && blank(*a.Changes.Description):
			// a MODIFY left a step described "" (a re-test, 2026-11-30)
			return &ValidationError{Index: -1, Pointer: ptr, Reason: "a MODIFY that sets the description sets at least one character that is not a space (leave it out to keep the step's)"}
		}
	}
	return nil
}

// checkPass refuses a reasoning.pass.completed.v1 whose data.session_id
// is not an id (CheckID), as a sessionid attribute is refused ("has
// space" and "a//b" were taken: a passes walkthrough, 2026-12-01), or that
// carries its profile and whose ttl_remaining is above the TTL that
// profile allocates
// (TaskProfile.TTL), or whose ttl_used is: a pass cannot have more steps
// left, or have used more, than it was given (ttl_remaining 50 of 6 was
// taken and shown as such: a walkthrough, 2026-11-30). A pass without a
// profile takes the previous pass's, which only the processor knows, so
// it is not checked here. Producer paths only: the passes processor
// applies a log written before as it did.
func checkPass(e *Envelope) error {
	if e.Type != ReasoningPassCompleted {
		return nil
	}
	var d ReasoningPassData
	if gojson.Unmarshal(e.Data, &d) != nil {
		return nil // checkPayload judged the shape
	}
	if d.SessionID != "" {
		if err := CheckID(d.SessionID); err != nil {
			return &ValidationError{Index: -1, Pointer: "/data/session_id", Reason: err.Error()}
		}
	}
	if d.Profile == nil {
		return nil
	}
	allocated := d.Profile.TTL()
	if d.TTLRemaining > allocated {
		return &ValidationError{Index: -1, Pointer: "/data/ttl_remaining", Reason: fmt.Sprintf("%d is above the %d steps this pass's profile allocates (TTL = max(1, ceil(2 · reasoning_depth · tools · breadth · confidence · (1.5 − information_sufficiency))); README \"Multi-pass reasoning\")", d.TTLRemaining, allocated)}
	}
	if d.TTLUsed != nil && *d.TTLUsed > allocated {
		return &ValidationError{Index: -1, Pointer: "/data/ttl_used", Reason: fmt.Sprintf("%d is above the %d steps this pass's profile allocates", *d.TTLUsed, allocated)}
	}
	// used and remaining are parts of one allocation (a walkthrough,
	// 2026-11-30: used 1 and remaining 1 of a TTL of 1 was taken)
	if d.TTLUsed != nil && *d.TTLUsed+d.TTLRemaining > allocated {
		return &ValidationError{Index: -1, Pointer: "/data/ttl_remaining", Reason: fmt.Sprintf("ttl_used %d + ttl_remaining %d is above the %d steps this pass's profile allocates", *d.TTLUsed, d.TTLRemaining, allocated)}
	}
	return nil
}

// checkDecisionOptions refuses a workflow.decision.requested.v1 whose
// options cannot all be answered, naming the item: an empty option (an
// answer is at least one character, so a human decision offering only ""
// left its workflow waiting for good) or one named twice (one option).
// Both were accepted (a walkthrough, 2026-11-30). Producer paths only: the
// workflows processor applies a log written before as it did.
func checkDecisionOptions(e *Envelope) error {
	if e.Type != WorkflowDecisionRequested {
		return nil
	}
	var d struct {
		Options []string `json:"options"`
	}
	if gojson.Unmarshal(e.Data, &d) != nil {
		return nil // checkPayload judged the shape
	}
	for i, o := range d.Options {
		if o == "" {
			return &ValidationError{Index: -1, Pointer: fmt.Sprintf("/data/options/%d", i), Reason: "minLength: an option is an answer the decision takes, at least one character"}
		}
		if j := slices.Index(d.Options, o); j < i {
			return &ValidationError{Index: -1, Pointer: fmt.Sprintf("/data/options/%d", i), Reason: fmt.Sprintf("%q is option %d already: options are distinct", o, j)}
		}
	}
	return nil
}

// checkNodeID refuses a search.node.expanded.v1 whose node_id is no id
// (CheckID: node ids are path segments of GET /v1/searches/{id}/nodes and
// are printed in reports; "a\nb" or "a b" was taken), or whose state is
// sent empty with another digest than the empty state's (state is
// optional: a producer may keep it and send its digest; sent as "", it is
// the empty state; any digest was taken). Both found by a walkthrough,
// 2026-11-30. A state_digest sent without state must be a SHA-256 as
// the processor writes one, 64 lower-case hex digits (treesearch.Digest):
// the processor keys the search's closed set by it, and "not-a-digest"
// was taken (a tree-search walkthrough, 2026-12-07). Producer paths only,
// as every check here: the treesearch processor applies a log written
// before as it did (a node id with a space, or a digest of another form,
// taken then, is applied on replay as then).
func checkNodeID(e *Envelope) error {
	if e.Type != SearchNodeExpanded {
		return nil
	}
	if err := checkIDMember(e, "node_id", "a node id"); err != nil {
		return err
	}
	state, obj, present, str := dataString(e.Data, "state")
	if obj && !present {
		// the state kept to itself: its digest can be checked for its
		// form only
		if digest, _, _, str := dataString(e.Data, "state_digest"); str && (len(digest) != 2*sha256.Size || !isLowerHex(digest)) {
			return &ValidationError{Index: -1, Pointer: "/data/state_digest", Reason: fmt.Sprintf("is not a SHA-256 (%d characters sent): the SHA-256 of the node's state as 64 hex digits, lower case, by which the treesearch processor finds a state reached before", utf8.RuneCountInString(digest))}
		}
		return nil
	}
	if obj && present && str {
		// any state sent is checked against its digest here, as the
		// processor checks it (a non-empty one was accepted with another
		// digest, 202, and dead-lettered after: a walkthrough, 2026-11-30)
		digest, _, _, _ := dataString(e.Data, "state_digest")
		if sum := sha256.Sum256([]byte(state)); digest != hex.EncodeToString(sum[:]) {
			if state == "" {
				return &ValidationError{Index: -1, Pointer: "/data/state_digest", Reason: fmt.Sprintf("is not the SHA-256 of state (the empty state's is %s)", hex.EncodeToString(sum[:]))}
			}
			return &ValidationError{Index: -1, Pointer: "/data/state_digest", Reason: "is not the SHA-256 of state (hex, lower case)"}
		}
	}
	return nil
}

// checkRefusedTokens refuses a search.completed.v1 of outcome
// quota_exhausted without refused_tokens, the reservation the quota
// refused: the treesearch processor refuses a completion whose
// refused_tokens fits the quota, but takes one without it on the
// producer's word (logs written before 2026-12-06 hold such), so a
// producer that left it out completed a search quota_exhausted with its
// quota untouched (a tree-search walkthrough, 2026-12-07: quota 1000,
// nothing reserved, acknowledged and applied). Producer paths only: the
// processor applies a log written before as it did.
func checkRefusedTokens(e *Envelope) error {
	if e.Type != SearchCompleted {
		return nil
	}
	var d struct {
		Outcome       string `json:"outcome"`
		RefusedTokens *int64 `json:"refused_tokens"`
	}
	if gojson.Unmarshal(e.Data, &d) != nil {
		return nil // checkPayload judged the shape
	}
	if d.Outcome == SearchQuotaExhausted && d.RefusedTokens == nil {
		return &ValidationError{Index: -1, Pointer: "/data/refused_tokens", Reason: "required by outcome quota_exhausted: the reservation the quota refused (used + outstanding + refused_tokens above quota_tokens), which the treesearch processor checks against the search's quota"}
	}
	return nil
}

// checkWorkflowIDs refuses a command id or decision id (of
// workflow.command.enqueued.v1, workflow.decision.requested.v1 and
// workflow.decision.answered.v1), or the by of a command or an answer,
// holding a control character (U+0000–U+001F, U+007F–U+009F), naming the
// member: such an id is shown by the CLI, written
// to logs and named in URLs (/v1/workflows/{id}/decisions/{decision_id}),
// where a newline or an escape sequence breaks the line or the terminal, as
// CloudEvents forbids them in an event's own id. Before, "c\u0007\n" was
// enqueued and listed as pending (a workflows walkthrough, 2026-11-30).
// Producer paths only: a log written before replays as it did.
func checkWorkflowIDs(e *Envelope) error {
	var member string
	switch e.Type {
	case WorkflowCommandEnqueued:
		member = "command_id"
	case WorkflowDecisionRequested, WorkflowDecisionAnswered:
		member = "decision_id"
	default:
		return nil
	}
	members := []string{member}
	if e.Type != WorkflowDecisionRequested {
		members = append(members, "by") // who sent the command or the answer, listed as the ids are
	}
	for _, m := range members {
		if id, obj, present, str := dataString(e.Data, m); obj && present && str {
			for i, r := range id {
				if r < 0x20 || r >= 0x7f && r <= 0x9f {
					return &ValidationError{Index: -1, Pointer: "/data/" + m, Reason: fmt.Sprintf("the control character %U at byte %d is not allowed in an id (it is shown in logs and terminals and named in URLs)", r, i)}
				}
			}
		}
	}
	return nil
}

// checkCriterionIDs refuses a coordination.session.started.v1 that names
// one success criterion id twice, naming the second: the evaluation
// reports per criterion id, and its gaps, PAIR's queries and the judge's
// answers are matched by it (two criteria "c1" gave two results and a gap
// that could be either: a walkthrough). Producer paths only.
func checkCriterionIDs(e *Envelope) error {
	if e.Type != SessionStarted {
		return nil
	}
	var d struct {
		SuccessCriteria []struct {
			ID string `json:"id"`
		} `json:"success_criteria"`
	}
	if gojson.Unmarshal(e.Data, &d) != nil {
		return nil // checkPayload judged the shape
	}
	first := map[string]int{}
	for i, c := range d.SuccessCriteria {
		if j, dup := first[c.ID]; dup {
			return &ValidationError{Index: -1, Pointer: fmt.Sprintf("/data/success_criteria/%d/id", i), Reason: fmt.Sprintf("%q is the id of criterion %d too: criterion ids are unique within a session (the evaluation, its gaps and PAIR match criteria by id)", c.ID, j)}
		}
		first[c.ID] = i
	}
	return nil
}

// checkToolNames refuses a workflow.task.completed.v1 whose tool_id is no
// id (CheckID: ASCII letters, digits and ._~:@+=-/, which OpenAI's and
// MCP's tool names fit): its tool becomes a node of the tool graph, whose
// events are keyed by tool, and the toolgraph processor dead-letters such
// a call (before, it was lost with the next call's edge, and only a log
// line said so: a walkthrough). Producer paths only.
func checkToolNames(e *Envelope) error {
	if e.Type != WorkflowTaskCompleted {
		return nil
	}
	return checkIDMember(e, "tool_id", "a tool name the tool graph can hold")
}

// checkIDMember refuses e when its data's string member is no id
// (CheckID), naming /data/<member>: "%q is not <what>: <why>".
func checkIDMember(e *Envelope, member, what string) error {
	if id, obj, present, str := dataString(e.Data, member); obj && present && str {
		if err := CheckID(id); err != nil {
			return &ValidationError{Index: -1, Pointer: "/data/" + member, Reason: fmt.Sprintf("%q is not %s: %v", id, what, err)}
		}
	}
	return nil
}

// checkAttributeStrings refuses, naming the attribute, a String attribute
// (id, subject, causationid, correlationid, dataschema or a string extension) that
// holds a control character: CloudEvents 1.0.2 (Type System, String) says
// the C0 and C1 controls, U+0000–U+001F and U+007F–U+009F, MUST NOT be
// used, as they are "not usable in contexts such as HTTP headers" (such an
// event could not be sent on in binary mode). Before, "a\nb" was
// acknowledged and kept. dataschema is checked too: url.Parse refuses the
// ASCII controls only (U+0085 passed). The other attributes with a syntax
// of their own (source, type, time, sessionid, scope) refuse them already.
// Producer paths only (checkProduced).
func checkAttributeStrings(e *Envelope) error {
	attrs := [...]struct{ name, v string }{{"id", e.ID}, {"subject", e.Subject}, {"causationid", e.CausationID}, {"correlationid", e.CorrelationID}, {"dataschema", e.DataSchema}}
	for _, a := range attrs {
		if err := noControl(a.name, a.v); err != nil {
			return err
		}
	}
	for _, name := range sortedNames(e.Extensions) {
		if v, ok := e.Extensions[name].(string); ok {
			if err := noControl(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// noControl is checkAttributeStrings' test of one attribute's value.
func noControl(name, v string) error {
	for i, r := range v {
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return &ValidationError{Index: -1, Pointer: "/" + name, Reason: fmt.Sprintf("the control character %U at byte %d is not allowed in an attribute (CloudEvents 1.0.2, String: U+0000–U+001F and U+007F–U+009F MUST NOT be used); put such text in data", r, i)}
		}
	}
	return nil
}

// checkExtensionValue refuses, naming the attribute, an extension value
// CloudEvents 1.0 has no type for. Its type system has no fractions and
// bounds Integer to 32 bits (-2,147,483,648 to 2,147,483,647), and the JSON
// format writes an Integer as "only the integer component optionally
// prefixed with a minus sign": 3.5, 1e3 and 3000000000 are none. Before,
// they were acknowledged and kept, and the official Go SDK then refused
// the whole event read back (3000000000: out of range) or truncated the
// value (3.5 became 3). Producer paths only (checkProduced).
func checkExtensionValue(name string, v any) error {
	n, ok := v.(json.Number) // a parsed event's numbers (extensionsOf, parseFast)
	if !ok {
		return nil
	}
	if _, err := strconv.ParseInt(string(n), 10, 32); err == nil && integerSyntax(string(n)) {
		return nil
	}
	return &ValidationError{Index: -1, Pointer: "/" + name, Reason: fmt.Sprintf("%s is no CloudEvents Integer (a whole number from -2147483648 to 2147483647, written without fraction or exponent); send another value as a string", n)}
}

// integerSyntax reports whether n is an optional minus sign and digits
// without a leading zero: the CloudEvents JSON format's Integer.
func integerSyntax(n string) bool {
	n = strings.TrimPrefix(n, "-")
	if n == "" || len(n) > 1 && n[0] == '0' {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// sortedNames is the keys of m in order, so the first bad extension named
// is the same every time.
func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// checkURIReference reports whether s is an RFC 3986 URI-reference, as
// CloudEvents 1.0 requires of source: net/url parses it (a scheme, a
// percent-encoding, a host), and since url.Parse is lenient about what a
// path, query or fragment holds, every character must also be one RFC 3986
// admits (unreserved, reserved, or '%' with two hex digits), with at most
// one '#' and '[' ']' only in the host (an IP literal). Producer paths
// only (checkProduced): before, "has spaces and <brackets>" was a source
// (found by an agent-runtime developer's walkthrough); a relative reference
// such as "test/mallory" or "/sensors/1" is one.
func checkURIReference(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return fmt.Errorf("'%%' at byte %d is not followed by two hex digits", i)
			}
		case c == '[' || c == ']':
			if !strings.Contains(u.Host, string(c)) || strings.Count(s, string(c)) != strings.Count(u.Host, string(c)) {
				return fmt.Errorf("%q at byte %d: brackets are allowed only around an IP literal host", c, i)
			}
		case !uriByte[c]:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return fmt.Errorf("character %q at byte %d is not allowed in a URI (percent-encode it)", r, i)
		}
	}
	if strings.Count(s, "#") > 1 {
		return errors.New("more than one '#'")
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// uriByte tells the bytes RFC 3986 admits in a URI besides '%' and the
// brackets: unreserved, gen-delims and sub-delims.
var uriByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isAlnum(byte(c)) || strings.IndexByte("-._~:/?#@!$&'()*+,;=", byte(c)) >= 0
	}
	return t
}()

// ParseEvent validates and decodes one event of any known type, producer or
// derived. Processors use it on what they consume.
func ParseEvent(raw []byte) (Envelope, error) { return parseEvent(raw, true, false) }

// parseEvent is ParseEvent (allowDerived) or ParseProducerEvent; with
// alias, Data may share raw's bytes.
func parseEvent(raw []byte, allowDerived, alias bool) (Envelope, error) {
	env, _, err := parseEventKey(raw, allowDerived, alias)
	return env, err
}

// parseEventKey is parseEvent that also returns the event's Key (computed
// by the fast path on its own parse).
func parseEventKey(raw []byte, allowDerived, alias bool) (Envelope, string, error) {
	set, err := loadSchemas()
	if err != nil {
		return Envelope{}, "", err
	}
	if env, key, ok := parseFast(set, raw, allowDerived, alias); ok {
		return env, key, nil
	}
	env, err := parseSlow(set, raw, allowDerived)
	if err != nil {
		return env, "", err
	}
	key, err := Key(&env)
	return env, key, err
}

// parseSlow is the generic path: the whole event decoded into `any`, the
// CloudEvents envelope schema and the type's data schema run on it. It
// decides every event parseFast leaves undecided and writes the error.
func parseSlow(set *compiled, raw []byte, allowDerived bool) (Envelope, error) {
	// RFC 8259 JSON is UTF-8; decoding would replace invalid bytes with
	// U+FFFD, silently merging distinct ids and sources
	if !utf8.Valid(raw) {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/", Reason: "not valid UTF-8"}
	}
	doc, err := decodeAny(raw)
	if err != nil {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/", Reason: "not valid JSON: " + err.Error()}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/", Reason: "an event must be a JSON object"}
	}
	if !allowDerived {
		dropNullAttributes(obj)
	}
	data64, err := dataBase64(obj)
	if err != nil {
		return Envelope{}, err
	}
	// the required attributes first: a body without them is not an event
	// (typically data sent as application/json with binary mode's ce-
	// headers forgotten), and its members are data, not badly named
	// extensions; the schema's error names what is missing
	if missingRequired(obj) {
		if err := set.envelope.Validate(requiredOnly(obj)); err != nil {
			return Envelope{}, schemaError(err, "")
		}
	}
	// then the names, before the schema: the schema does not check them
	// (CheckAttributeName does), and its message for an extension's bad
	// value does not name the naming rule
	ext, err := extensionsOf(obj)
	if err != nil {
		return Envelope{}, err
	}
	if err := set.envelope.Validate(doc); err != nil {
		err = schemaError(err, "")
		var ve *ValidationError
		if data64 != nil && errors.As(err, &ve) && strings.HasPrefix(ve.Pointer, "/data") {
			ve.Reason += " (in the JSON decoded from data_base64)" // e.g. an array, not an object
		}
		return Envelope{}, err
	}
	if s, ok := obj["subject"].(string); ok && s == "" && !allowDerived {
		// CloudEvents 1.0: subject, if present, MUST be a non-empty string;
		// the envelope's omitempty dropped it silently before. Producer paths
		// only, so a log written before replays as it did
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/subject", Reason: "must be a non-empty string when present (CloudEvents 1.0); leave subject out instead"}
	}
	var env Envelope
	if err := gojson.Unmarshal(raw, (*envelopeFields)(&env)); err != nil {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/", Reason: err.Error()}
	}
	env.Extensions = ext
	if data64 != nil {
		env.Data = data64
	}
	if !allowDerived && registry[env.Type].Derived {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("%s: %v", env.Type, ErrDerivedType), Err: ErrDerivedType}
	}
	data := obj["data"]
	if err := validateData(set, &env, data); err != nil {
		var ve *ValidationError
		if data64 != nil && errors.As(err, &ve) && strings.HasPrefix(ve.Pointer, "/data") {
			// the data came from data_base64: say so, or the answer
			// named a /data the event never sent (a subscriber walkthrough)
			ve.Reason += " (in the JSON decoded from data_base64)"
		}
		return Envelope{}, err
	}
	if !allowDerived && env.Type == MemoryRecorded && data.(map[string]any)["source"] == "distilled" {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/data/source", Reason: "distilled memories are written by the distillation processor only; producers record explicit memories"}
	}
	if _, set := data.(map[string]any)["initial_confidence"]; !allowDerived && env.Type == MemoryRecorded && set {
		return Envelope{}, &ValidationError{Index: -1, Pointer: "/data/initial_confidence", Reason: "set by Chronicle's own writers only (the PAIR improvement memory); a producer's memory starts at the memory bank's confidence for its source"}
	}
	return env, nil
}

// dropNullAttributes removes the attributes of a producer's event sent as
// JSON null: the CloudEvents JSON format (1.0.2, section 2.2) says a null
// attribute "MUST be treated as the equivalent of unset or omitted" (its
// examples send "subject": null). A null required attribute is then a
// missing one. data is no attribute: null data is an explicit null
// payload, which the type's schema judges. The envelope decodes a null
// member as absent already, and Publish encodes the envelope, so the
// record is the one of the event without the nulls. Only producer paths
// do this: the processors' parse of what they consume is unchanged.
func dropNullAttributes(obj map[string]any) {
	for k, v := range obj {
		if v == nil && k != "data" {
			delete(obj, k)
		}
	}
}

// requiredAttributes are the members the envelope schema requires.
var requiredAttributes = []string{"specversion", "id", "source", "type", "data"}

// missingRequired reports whether obj lacks a required attribute.
func missingRequired(obj map[string]any) bool {
	for _, k := range requiredAttributes {
		if _, ok := obj[k]; !ok {
			return true
		}
	}
	return false
}

// requiredOnly is obj without its extension attributes (the members
// extensionsOf checks), for the envelope schema to name the missing
// required ones.
func requiredOnly(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if contextAttributes[k] {
			out[k] = v
		}
	}
	return out
}

// decodeAny decodes raw as jsonschema.UnmarshalJSON does (numbers as
// json.Number, one value and nothing after it), with goccy/go-json:
// decoding into any is the larger half of validating an event, and
// go-json does it in about half the time of encoding/json (BenchmarkParseEvent).
func decodeAny(raw []byte) (any, error) {
	dec := gojson.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid character after top-level value")
	}
	return doc, nil
}

func validateData(set *compiled, env *Envelope, data any) error {
	s, ok := set.data[env.Type]
	if !ok {
		return &ValidationError{Index: -1, Pointer: "/type", Reason: fmt.Sprintf("unknown event type %q (producers send: %s)", env.Type, TypeList(ProducerTypes()))}
	}
	if err := s.Validate(data); err != nil {
		return schemaError(err, "/data")
	}
	if _, err := Key(env); err != nil {
		return err
	}
	return nil
}

// Validate checks an already decoded envelope the way ParseEvent checks
// raw JSON; producers in Go call it through Producer.Publish.
func Validate(env *Envelope) error {
	// its own compact encoding (json.Marshal would compact it a second time)
	raw, err := env.MarshalJSON()
	if err != nil {
		return &ValidationError{Index: -1, Pointer: "/data", Reason: err.Error()}
	}
	_, err = parseEvent(raw, true, true)
	return err
}

// BodyPointer is the pointer of an error about an event written from a
// request whose body holds the event's data members under names of its
// own: "/data/<member>…" is "/<name>…" when members maps member to name
// (most routes send a member under its own name), and ok is false for
// any other pointer (the envelope's, or a data member the route filled
// in), which stays the event's. Workflow writes, suggestion feedback and
// memory recordings answer with it: the event's pointers named members no
// request body has ("/data/update", "/data/tags/0"; found by new users'
// walkthroughs).
func BodyPointer(ptr string, members map[string]string) (body string, ok bool) {
	rest, found := strings.CutPrefix(ptr, "/data/")
	if !found {
		return ptr, false
	}
	member, tail, more := strings.Cut(rest, "/")
	name, ok := members[member]
	if !ok {
		return ptr, false
	}
	if more {
		return "/" + name + "/" + tail, true
	}
	return "/" + name, true
}
