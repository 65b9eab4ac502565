package events

import "github.com/valyala/fastjson"

// dataParsers parse the data of events for their key field (EntityID,
// keyField): Key runs on every event two or three times (the producer's
// record key, the engine's parse, the processor's Apply), and decoding the
// whole data into a map[string]json.RawMessage for one member cost 8 µs
// and 52 allocations per call on a search node event (issue 12's expansion
// latency).
var dataParsers fastjson.ParserPool

// dataMember is the top-level member name of the JSON document data, with
// encoding/json's reading of it into a map[string]json.RawMessage on valid
// UTF-8 JSON without \u escapes (dataString checks that and otherwise asks
// encoding/json; RecordType, which only skips records, does not): obj is
// false when data is no JSON object (null counts as an empty object); when
// the member occurs more than once the last one counts. str is its value
// when it is a JSON string (isStr), unescaped; present is false when the
// member is absent.
func dataMember(data []byte, name string) (str string, isStr, present, obj bool) {
	p := dataParsers.Get()
	defer dataParsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		// fastjson refuses a document nested deeper than its MaxDepth
		// (300) that encoding/json reads: it answers, as it does for every
		// other document it parses (a workflow update nested 299 levels
		// was refused as "/data: not a JSON object": a workflows
		// walkthrough, 2026-11-30)
		k, obj, present, str := dataStringSlow(data, name)
		return k, str, present, obj
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return "", false, false, true
	case fastjson.TypeObject:
	default:
		return "", false, false, false
	}
	o, _ := v.Object()
	var last *fastjson.Value
	o.Visit(func(k []byte, v *fastjson.Value) {
		if string(k) == name {
			last = v
		}
	})
	switch {
	case last == nil:
		return "", false, false, true
	case last.Type() == fastjson.TypeString:
		return string(last.GetStringBytes()), true, true, true
	case last.Type() == fastjson.TypeNull:
		return "", true, true, true
	}
	return "", false, true, true
}
