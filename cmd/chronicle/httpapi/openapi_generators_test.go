package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// TestOpenAPISchemasTypeForGenerators checks the schemas of openapi.json
// for three forms a validator reads as meant but a client generator does
// not, so the generated types stood in the integrator's way (a TypeScript
// integrator's walkthrough with openapi-typescript, 2026-12-06):
//
//   - an object schema that says nothing of its members ({"type":
//     "object"} alone) is an object with no member to openapi-typescript,
//     Record<string, never>: GET /v1/workflows/{id}'s context, the
//     digest, /healthz's 503 could not be read, and a replan_dag's args or
//     a DAG tool's parameters could not be sent, without a cast. A
//     free-form object says additionalProperties: true; an object that
//     holds nothing says maxProperties: 0;
//   - a required member that is no property of the same schema object
//     ({"required": ["data"]} as an anyOf branch, or an allOf part that
//     only makes Error's members required) is no member to a generator,
//     which makes the branch unknown (the whole CloudEvent was unknown, so
//     any body compiled) or an empty object (EventError's error was
//     never);
//   - an anyOf or oneOf branch that is not a typed schema (no type, $ref,
//     const or enum) is unknown to a generator, which swallows the union;
//   - an anyOf beside properties is read by openapi-typescript as a union
//     with them (the properties, or else one branch alone), not as
//     their intersection: it goes in an allOf, {"allOf": [{"anyOf": …}]},
//     which validates the same.
func TestOpenAPISchemasTypeForGenerators(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var bad []string
	var walk func(s any, at string)
	walk = func(v any, at string) {
		s, ok := v.(map[string]any)
		if !ok {
			return
		}
		props, _ := s["properties"].(map[string]any)
		if schemaTypes(s)["object"] && props == nil && !hasAny(s, "additionalProperties", "patternProperties", "unevaluatedProperties",
			"allOf", "anyOf", "oneOf", "$ref", "const", "enum") && s["maxProperties"] != 0.0 {
			bad = append(bad, at+": an object with no properties and no additionalProperties (a generator's empty object: say additionalProperties: true, or describe its members)")
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, _ := r.(string); props[name] == nil {
				bad = append(bad, fmt.Sprintf("%s: required %q is no property of this schema object (a generator reads no such member)", at, name))
			}
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			branches, _ := s[k].([]any)
			for i, b := range branches {
				if bm, _ := b.(map[string]any); bm != nil && !hasAny(bm, "type", "$ref", "const", "enum", "allOf", "anyOf", "oneOf") {
					bad = append(bad, fmt.Sprintf("%s/%s/%d: a branch with no type (a generator's unknown, which swallows the union)", at, k, i))
				}
			}
		}
		if props != nil && s["anyOf"] != nil {
			bad = append(bad, at+": anyOf beside properties (a generator's union with them: put it in an allOf)")
		}
		for name, p := range props {
			walk(p, at+"/properties/"+name)
		}
		for _, k := range []string{"items", "additionalProperties", "unevaluatedProperties", "contains", "propertyNames"} {
			walk(s[k], at+"/"+k)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
			parts, _ := s[k].([]any)
			for i, p := range parts {
				walk(p, fmt.Sprintf("%s/%s/%d", at, k, i))
			}
		}
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for name, s := range schemas {
		walk(s, "#/components/schemas/"+name)
	}
	content := func(c any, at string) {
		m, _ := c.(map[string]any)
		for ct, mt := range m {
			mtm, _ := mt.(map[string]any)
			walk(mtm["schema"], at+" "+ct)
		}
	}
	responses, _ := comps["responses"].(map[string]any)
	for name, r := range responses {
		rm, _ := r.(map[string]any)
		content(rm["content"], "#/components/responses/"+name)
	}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			o, _ := op.(map[string]any)
			at := strings.ToUpper(method) + " " + path
			params, _ := o["parameters"].([]any)
			for _, p := range params {
				pm, _ := p.(map[string]any)
				walk(pm["schema"], fmt.Sprintf("%s ?%v", at, pm["name"]))
			}
			if rb, ok := o["requestBody"].(map[string]any); ok {
				content(rb["content"], at+" body")
			}
			rs, _ := o["responses"].(map[string]any)
			for code, r := range rs {
				rm, _ := r.(map[string]any)
				content(rm["content"], at+" "+code)
			}
		}
	}
	sort.Strings(bad)
	bad = slices.Compact(bad)
	if len(bad) > 0 {
		t.Errorf("openapi.json: %d schemas a client generator misreads:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// schemaTypes is the set of a schema's types ("type": "object" or
// ["object", "null"]).
func schemaTypes(s map[string]any) map[string]bool {
	out := map[string]bool{}
	switch t := s["type"].(type) {
	case string:
		out[t] = true
	case []any:
		for _, x := range t {
			if name, ok := x.(string); ok {
				out[name] = true
			}
		}
	}
	return out
}

func hasAny(s map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}
