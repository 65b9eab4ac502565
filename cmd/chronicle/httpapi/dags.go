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
		writeErr(w, http.StatusBadRequest, "tools: at least one tool name or {name, parameters, output} is required")
		return
	}
	if len(body.Tools) > MaxDAGTools {
		writeErr(w, http.StatusBadRequest, "tools: %d tools, at most %d per request", len(body.Tools), MaxDAGTools)
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
		writeErr(w, http.StatusBadRequest, "rule: %q is not exact or exact_or_plural_id", body.Rule)
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
	for i, raw := range body.Tools {
		var name string
		if jsonKindOf(raw) == "string" && json.Unmarshal(raw, &name) == nil {
			if name == "" {
				writeErr(w, http.StatusBadRequest, "tools[%d]: an empty tool name", i)
				return
			}
			names = append(names, name)
			continue
		}
		t, reason, variant, why := dagTool(raw)
		if variant != "" {
			writeErr(w, http.StatusBadRequest, "body: /tools/%d%s: %s", i, variant, why)
			return
		}
		if reason != "" {
			writeErr(w, http.StatusBadRequest, "tools[%d]%s", i, reason)
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
		names = append(names, t.Name)
	}
	d, err := dag.Build(catalog, names, rule)
	var ce *dag.CycleError
	switch {
	case errors.As(err, &ce):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": err.Error(), "cycle": ce.Cycle})
	case errors.Is(err, dag.ErrUnknownTool):
		writeErr(w, http.StatusBadRequest, "tools: %v", err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"tools": d.Tools, "edges": d.Edges, "layers": d.Layers, "rule": rule.String()})
	}
}

// dagTool reads a declared tool of POST /v1/dags, {name, parameters,
// output}; reason, when not empty, names the member and what is wrong with
// it (".parameters: not a JSON Schema object"), as the 400 says it. Before,
// the answer ended in "(<nil>)" for a tool without a name and in a Go type
// dump for a schema of the wrong type (found by a new user's walkthrough).
// variant, when not empty, is the JSON pointer (within the tool) of a
// member named like one of the four only ignoring case ("/Name") or like a
// JSON Schema keyword in parameters or output ("/parameters/Type",
// schemaCaseVariant), and why says so: the caller refuses it as every
// route body refuses such a member (decodeRead), naming its pointer and
// that member names are case-sensitive. Before, the first was an "unknown
// member" without the pointer, unlike the other routes (the last closing
// note's gap), and the second was taken for the keyword: the schema
// decoder matches keywords ignoring case ("Type" set the type).
func dagTool(raw json.RawMessage) (t dag.Tool, reason, variant, why string) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return t, ": a tool name or an object {name, parameters, output}, got " + jsonKindOf(raw), "", ""
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
				return t, "", "/" + pointerToken(k), fmt.Sprintf("unknown field %q (member names are case-sensitive)", k)
			}
		}
		return t, fmt.Sprintf(": unknown member %q (name, description, parameters, output)", k), "", ""
	}
	if err := json.Unmarshal(members["name"], &t.Name); err != nil || t.Name == "" {
		return t, ".name: required, a non-empty string", "", ""
	}
	if d, ok := members["description"]; ok {
		if err := json.Unmarshal(d, &t.Description); err != nil {
			return t, ".description: a string, got " + jsonKindOf(d), "", ""
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
			return t, "." + m.name + ": a JSON Schema object, got " + jsonKindOf(v), "", ""
		}
		if p, kw, ok := schemaCaseVariant(v, "/"+m.name); ok {
			return t, "", p, fmt.Sprintf("the JSON Schema keyword is %q (member names are case-sensitive)", kw)
		}
		if err := json.Unmarshal(v, m.into); err != nil {
			return t, "." + m.name + ": not a JSON Schema: " + strings.TrimPrefix(err.Error(), "json: "), "", ""
		}
	}
	return t, "", "", ""
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
