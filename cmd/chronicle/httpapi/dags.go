package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/google/jsonschema-go/jsonschema"
)

// dagCatalog is the bundled airline catalogue (outputs learned from the
// bundled sessions), built once.
var dagCatalog = sync.OnceValues(dag.AirlineCatalog)

// MaxDAGTools is the most tools one POST /v1/dags orders: twice the 128
// OpenAI's function calling takes per request. Every tool may feed every
// other, so a DAG can hold n² edges: the cap bounds the answer (one
// request of 10,000 tools held a core for 26 s before the parameters were
// indexed: a walkthrough).
const MaxDAGTools = 256

// MaxDAGSchemaDepth is the deepest nesting of objects and arrays a
// declared tool's parameters or output schema may have (JSON levels: a
// schema nested in properties takes two). The DAG indexes every property
// path of a schema, whose cost grows with the square of its depth: one
// 200 KB output schema nested 4,900 levels held a core for 29 s (a
// workflows walkthrough, 2026-11-30; 500 levels 0.3 s). Tool schemas
// are shallow (the 14 tau-bench tools' are at most 6 levels deep).
const MaxDAGSchemaDepth = 64

// MaxDAGMatches is the most (output property, parameter) pairs of
// matching names one POST /v1/dags may compare (dag.Candidates, 2^18):
// each can be a match listed in the answer. Tools that share names pair
// up as the square of their number, so MaxDAGTools alone did not bound
// the work: 128 declared tools returning the 100 names 128 others take,
// a 782 KB request, were answered 1.6 million matches, 89 MB, and grew
// the server by 300 MB; 256 tools taking and returning 120 shared names
// (1.9 MB) held a core for 17 s before their 422 (a security
// walkthrough, 2026-12-05). 256 tools that all take and return the same
// 4 names compare 261,120 pairs.
const MaxDAGMatches = 1 << 18

// postDAG serves POST /v1/dags: {"tools": [name | {name, parameters,
// output}], "rule": "exact" | "exact_or_plural_id", "skip_echo": bool}.
// A tool named by a string comes from the bundled airline catalogue; an
// object declares its own schemas (output optional: without it the tool
// feeds nothing). Answers the DAG {tools, edges, layers}; 400 naming the
// field for bad input or an unknown tool, 422 {error, cycle} when the
// dependencies form a cycle. It reads no scoped data: any token may call it.
func (s *Server) postDAG(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Tools    []json.RawMessage `json:"tools"`
		Rule     string            `json:"rule"`
		SkipEcho *bool             `json:"skip_echo"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeBodyErr(w, err, "")
		return
	}
	if len(body.Tools) == 0 {
		writeFieldErr(w, "tools", "/tools", "at least one tool name or {name, parameters, output} is required")
		return
	}
	if len(body.Tools) > MaxDAGTools {
		writeFieldErr(w, "tools", "/tools", fmt.Sprintf("%d tools, at most %d per request", len(body.Tools), MaxDAGTools))
		return
	}
	rule := dag.DefaultRule
	switch body.Rule {
	case "":
	case dag.Exact.String():
		rule.Names = dag.Exact
	case dag.ExactOrPluralID.String():
		rule.Names = dag.ExactOrPluralID
	default:
		writeFieldErr(w, "rule", "/rule", fmt.Sprintf("%q is not exact or exact_or_plural_id", body.Rule))
		return
	}
	if body.SkipEcho != nil {
		rule.SkipEcho = *body.SkipEcho
	}
	base, err := dagCatalog()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	catalog := append([]dag.Tool(nil), base...)
	names := make([]string, 0, len(body.Tools))
	declared := map[string]bool{}
	for i, raw := range body.Tools {
		at := "/tools/" + strconv.Itoa(i)
		var name string
		if jsonKindOf(raw) == "string" && json.Unmarshal(raw, &name) == nil {
			if name == "" {
				writeFieldErr(w, fmt.Sprintf("tools[%d]", i), at, "an empty tool name")
				return
			}
			names = append(names, name)
			continue
		}
		t, bad := dagTool(raw)
		switch {
		case bad.variant != "":
			writeFieldErr(w, "body: "+at+bad.variant, at+bad.variant, bad.why)
			return
		case bad.why != "":
			field, ptr := fmt.Sprintf("tools[%d]", i), at
			if bad.member != "" {
				field, ptr = field+"."+bad.member, ptr+"/"+bad.member
			}
			writeFieldErr(w, field, ptr, bad.why)
			return
		}
		// a declared tool replaces the catalogue's of that name
		for j := range catalog {
			if catalog[j].Name == t.Name {
				catalog = append(catalog[:j:j], catalog[j+1:]...)
				break
			}
		}
		catalog = append(catalog, t)
		declared[t.Name] = true
		names = append(names, t.Name)
	}
	// a tool named twice: the later entry would silently replace the
	// earlier one's schemas (a declaration replaces the catalogue's, and
	// the last of two declarations won), and so the edges (a walkthrough's
	// finding): the 400 names both positions
	first := map[string]int{}
	for i, n := range names {
		if j, seen := first[n]; seen {
			writeFieldErr(w, fmt.Sprintf("tools[%d]", i), "/tools/"+strconv.Itoa(i),
				fmt.Sprintf("tool %q is named twice (at /tools/%d and here): name each tool once, as a catalogue name or one declaration", n, j))
			return
		}
		first[n] = i
	}
	// a name neither the catalogue nor the request declares: the 400
	// names its position (dag.Build's error names the tool only)
	for i, n := range names {
		if !declared[n] && !slices.ContainsFunc(base, func(t dag.Tool) bool { return t.Name == n }) {
			writeFieldErr(w, fmt.Sprintf("tools[%d]", i), "/tools/"+strconv.Itoa(i),
				fmt.Sprintf("unknown tool %q: not in the bundled airline catalogue and not declared as {name, parameters, output}", n))
			return
		}
	}
	if n := dag.Candidates(catalog, names, rule); n > MaxDAGMatches {
		writeFieldErr(w, "tools", "/tools", fmt.Sprintf("the tools' output properties and parameters pair up by name %d times, at most %d per request (MaxDAGMatches): each pair is compared and may be a match in the answer; send fewer tools or fewer shared names", n, MaxDAGMatches))
		return
	}
	d, err := dag.Build(catalog, names, rule)
	var ce *dag.CycleError
	switch {
	case errors.As(err, &ce):
		msg := err.Error()
		if !rule.SkipEcho {
			// say when skip_echo would build it: the everyday
			// get_user_details → book_reservation pair is a cycle through
			// echoed ids, and the 422 gave no way out (a workflows
			// walkthrough, 2026-12-06); checked, not guessed
			echo := rule
			echo.SkipEcho = true
			if _, e := dag.Build(catalog, names, echo); e == nil {
				msg += `; with "skip_echo": true (an output named like one of its tool's own parameters is an echo of its input, not something it produces) these tools have no cycle`
			}
		}
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": msg, "cycle": ce.Cycle})
	case errors.Is(err, dag.ErrUnknownTool):
		writeErr(w, http.StatusBadRequest, "tools: %v", err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"tools": d.Tools, "edges": d.Edges, "layers": d.Layers, "rule": rule.String()})
	}
}

// dagToolError is what is wrong with a declared tool of POST /v1/dags;
// the zero value means nothing. why is the reason the 400 gives; member,
// when not empty, is the tool's member it is about ("name", "parameters":
// the 400 names tools[i].name and /tools/i/name); variant, when not
// empty, is the JSON pointer (within the tool) of a member named like one
// of the four only ignoring case ("/Name") or like a JSON Schema keyword
// in parameters or output ("/parameters/Type", schemaCaseVariant): the
// caller refuses it as every route body refuses such a member
// (decodeRead), naming its pointer and that member names are
// case-sensitive.
type dagToolError struct {
	member, variant, why string
}

// dagTool reads a declared tool of POST /v1/dags, {name, parameters,
// output}, or says what is wrong with it. Before, the answer ended in
// "(<nil>)" for a tool without a name and in a Go type dump for a schema
// of the wrong type (found by a new user's walkthrough); a case variant
// was an "unknown member" without the pointer, and a keyword's variant
// was taken for the keyword (the schema decoder matches keywords
// ignoring case: "Type" set the type); and no 400 of the route had the
// pointer and reason members the other routes' 400s have (a walkthrough,
// 2026-11-30).
func dagTool(raw json.RawMessage) (t dag.Tool, bad dagToolError) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return t, dagToolError{why: "a tool name or an object {name, parameters, output}, got " + jsonKindOf(raw)}
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys) // one answer for one body, not the map's order
	known := []string{"name", "description", "parameters", "output"}
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		for _, n := range known {
			if strings.EqualFold(k, n) {
				return t, dagToolError{variant: "/" + pointerToken(k), why: fmt.Sprintf("unknown field %q (member names are case-sensitive)", k)}
			}
		}
		return t, dagToolError{why: fmt.Sprintf("unknown member %q (name, description, parameters, output)", k)}
	}
	if err := json.Unmarshal(members["name"], &t.Name); err != nil || t.Name == "" {
		return t, dagToolError{member: "name", why: "required, a non-empty string"}
	}
	if d, ok := members["description"]; ok {
		if err := json.Unmarshal(d, &t.Description); err != nil {
			return t, dagToolError{member: "description", why: "a string, got " + jsonKindOf(d)}
		}
	}
	for _, m := range []struct {
		name string
		into **jsonschema.Schema
	}{{"parameters", &t.Parameters}, {"output", &t.Output}} {
		v, ok := members[m.name]
		if !ok || string(v) == "null" {
			continue
		}
		if jsonKindOf(v) != "object" {
			return t, dagToolError{member: m.name, why: "a JSON Schema object, got " + jsonKindOf(v)}
		}
		if d := jsonDepth(v); d > MaxDAGSchemaDepth {
			return t, dagToolError{member: m.name, why: fmt.Sprintf("nested %d levels deep, above the %d levels a tool's schema may have (MaxDAGSchemaDepth)", d, MaxDAGSchemaDepth)}
		}
		if p, kw, ok := schemaCaseVariant(v, "/"+m.name); ok {
			return t, dagToolError{variant: p, why: fmt.Sprintf("the JSON Schema keyword is %q (member names are case-sensitive)", kw)}
		}
		if err := json.Unmarshal(v, m.into); err != nil {
			return t, dagToolError{member: m.name, why: "not a JSON Schema: " + strings.TrimPrefix(err.Error(), "json: ")}
		}
	}
	return t, dagToolError{}
}

// schemaKeywords are the keywords jsonschema.Schema decodes, by kind of
// value: a schema, an array of schemas (items may be either), an object
// whose member values are schemas, dependencies' values (a schema or an
// array of names), or anything else.
var schemaKeywords = func() map[string]string {
	kw := map[string]string{}
	for name := range fieldsOf(reflect.TypeFor[jsonschema.Schema]()) {
		kw[name] = "value"
	}
	// decoded by its UnmarshalJSON, not by field tags
	kw["type"], kw["items"], kw["dependencies"] = "value", "schemas", "dependencies"
	for _, k := range []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"} {
		kw[k] = "schema"
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		kw[k] = "schemas"
	}
	for _, k := range []string{"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"} {
		kw[k] = "schemaMap"
	}
	return kw
}()

// schemaCaseVariant returns the JSON pointer (at + within raw) of the
// first member of the JSON Schema raw, at any depth of subschemas, named
// like a keyword only ignoring case ("Type", "Properties"), and the
// keyword: the
// schema decoder took it for the keyword, as encoding/json matches names,
// and kept it as an unknown keyword too. Other unknown keywords are
// allowed (JSON Schema ignores them), and so are the property names under
// properties, which are data. Members are visited in name order.
func schemaCaseVariant(raw json.RawMessage, at string) (pointer, keyword string, ok bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return "", "", false // a boolean schema, or not a schema: decoding says so
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ptr := at + "/" + pointerToken(k)
		kind, exact := schemaKeywords[k]
		if !exact {
			for kw := range schemaKeywords {
				if strings.EqualFold(k, kw) {
					return ptr, kw, true
				}
			}
			continue
		}
		v := members[k]
		var subs map[string]json.RawMessage // the subschemas to look into, by pointer
		switch kind {
		case "schema":
			subs = map[string]json.RawMessage{ptr: v}
		case "schemas", "dependencies", "schemaMap":
			var list []json.RawMessage
			var byName map[string]json.RawMessage
			if json.Unmarshal(v, &list) == nil {
				if kind == "dependencies" {
					continue // an array value is of names
				}
				subs = map[string]json.RawMessage{}
				for i, s := range list {
					subs[ptr+"/"+strconv.Itoa(i)] = s
				}
			} else if kind != "schemas" && json.Unmarshal(v, &byName) == nil {
				subs = map[string]json.RawMessage{}
				for n, s := range byName {
					subs[ptr+"/"+pointerToken(n)] = s
				}
			} else if kind == "schemas" { // items: one schema
				subs = map[string]json.RawMessage{ptr: v}
			}
		}
		ptrs := make([]string, 0, len(subs))
		for p := range subs {
			ptrs = append(ptrs, p)
		}
		sort.Strings(ptrs)
		for _, p := range ptrs {
			if jsonKindOf(subs[p]) != "object" {
				continue
			}
			if q, n, found := schemaCaseVariant(subs[p], p); found {
				return q, n, true
			}
		}
	}
	return "", "", false
}

// jsonKindOf names the JSON kind of raw: object, array, string, number,
// boolean or null ("invalid JSON" otherwise).
func jsonKindOf(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || !json.Valid(b) {
		return "invalid JSON"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// jsonDepth is the deepest nesting of objects and arrays in raw, valid
// JSON (1 for {} or [], 0 for a scalar).
func jsonDepth(raw []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
