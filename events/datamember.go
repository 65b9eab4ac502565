package events

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// dataString reads the member name of data the way encoding/json decodes
// data into a map[string]json.RawMessage and the member into a string:
// obj is false when data is not a JSON object; present when the member
// is there (the last one of repeated names, as the map keeps); str when
// it decodes into a string (null too, giving ""), with k its value.
//
// Finding a record's key this way cost a full encoding/json decode of the
// event's data per derived event (5% of the default processors' CPU in
// `chronicle bench`); a fastjson parse of valid UTF-8 gives the same
// answer (TestDataStringAgrees), and anything else takes encoding/json.
// Errors: none; a malformed data is obj false.
func dataString(data []byte, name string) (k string, obj, present, str bool) {
	// \u escapes take encoding/json: fastjson keeps a lone surrogate's
	// escape as text where encoding/json writes U+FFFD
	if utf8.Valid(data) && !bytes.Contains(data, []byte(`\u`)) && gojson.Valid(data) {
		k, str, present, obj = dataMember(data, name)
		return k, obj, present, str
	}
	return dataStringSlow(data, name)
}

// dataStringSlow is dataString with encoding/json.
func dataStringSlow(data []byte, name string) (k string, obj, present, str bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return "", false, false, false
	}
	raw, ok := m[name]
	if !ok {
		return "", true, false, false
	}
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", true, true, false
	}
	return k, true, true, true
}
