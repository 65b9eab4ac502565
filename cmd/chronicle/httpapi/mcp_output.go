package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// mcpOutputs names, for each MCP tool whose structured content is the
// body of an HTTP route, the route's operation and status in openapi.json.
var mcpOutputs = map[string]struct{ method, path, status string }{
	"pair_improvement": {"post", "/v1/sessions/{id}/improve", "200"},
	"search_get":       {"get", "/v1/searches/{id}", "200"},
	"search_resume":    {"post", "/v1/searches/{id}/resume", "202"},
	"next_tool":        {"get", "/v1/graph/next", "200"},
	"memory_list":      {"get", "/v1/memories", "200"},
	"pattern_get":      {"get", "/v1/patterns/{id}", "200"},
	"pattern_history":  {"get", "/v1/patterns/{id}/history", "200"},
}

// MCPOutputSchemas returns the output schemas (mcpserver.Options'
// OutputSchemas) of the MCP tools whose structured content is an HTTP
// route's JSON body: pair_improvement (POST /v1/sessions/{id}/improve's
// Improvement), search_get (GET /v1/searches/{id}'s Search),
// search_resume (POST /v1/searches/{id}/resume's 202 body), next_tool
// (GET /v1/graph/next's NextPrediction), memory_list (GET /v1/memories'
// MemoryList), pattern_get (GET /v1/patterns/{id}'s Pattern) and
// pattern_history (GET /v1/patterns/{id}/history's PatternHistory). Each is the route's response
// schema in openapi.json made a document of its own: the components it
// references, transitively, under $defs, and its $refs pointed there; a
// response schema that is only a $ref is replaced by the component, as
// MCP wants "type": "object" at an outputSchema's root. The
// same schemas check those routes' answers in the tests, so a tool's
// output is typed as its route's body; before 2026-12-07 the four tools
// declared an open object. It returns a new map of new schemas on every
// call (a caller may change them); it panics when openapi.json lacks one
// of the operations, which TestMCPOutputSchemasFromOpenAPI rules out.
func MCPOutputSchemas() map[string]*jsonschema.Schema {
	raw, err := mcpOutputDocs()
	if err != nil {
		panic(err)
	}
	out := make(map[string]*jsonschema.Schema, len(raw))
	for name, b := range raw {
		s := new(jsonschema.Schema)
		if err := json.Unmarshal(b, s); err != nil {
			panic(fmt.Sprintf("httpapi: MCP output schema of %s: %v", name, err))
		}
		out[name] = s
	}
	return out
}

// mcpOutputDocs is the JSON of each tool's output schema, built once.
var mcpOutputDocs = sync.OnceValues(func() (map[string][]byte, error) {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		return nil, fmt.Errorf("httpapi: openapi.json: %w", err)
	}
	out := make(map[string][]byte, len(mcpOutputs))
	for name, op := range mcpOutputs {
		var o struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		}
		if err := json.Unmarshal(doc.Paths[op.path][op.method], &o); err != nil || o.Responses == nil {
			return nil, fmt.Errorf("httpapi: openapi.json has no operation %s %s for the MCP tool %s (%v)", strings.ToUpper(op.method), op.path, name, err)
		}
		schema := o.Responses[op.status].Content["application/json"].Schema
		if schema == nil {
			return nil, fmt.Errorf("httpapi: openapi.json: %s %s has no application/json schema for %s, the MCP tool %s's output", strings.ToUpper(op.method), op.path, op.status, name)
		}
		defs := map[string]any{}
		var walk func(v any) (any, error)
		walk = func(v any) (any, error) {
			switch v := v.(type) {
			case map[string]any:
				m := make(map[string]any, len(v))
				for k, x := range v {
					if ref, ok := x.(string); ok && k == "$ref" {
						comp, found := strings.CutPrefix(ref, "#/components/schemas/")
						if !found {
							return nil, fmt.Errorf("httpapi: openapi.json: $ref %q in %s's output: only #/components/schemas/ is read", ref, name)
						}
						m[k] = "#/$defs/" + comp
						if _, seen := defs[comp]; !seen {
							c, ok := doc.Components.Schemas[comp]
							if !ok {
								return nil, fmt.Errorf("httpapi: openapi.json: $ref %q: no such component", ref)
							}
							defs[comp] = nil // marks it: a recursive reference ends here
							w, err := walk(c)
							if err != nil {
								return nil, err
							}
							defs[comp] = w
						}
						continue
					}
					w, err := walk(x)
					if err != nil {
						return nil, err
					}
					m[k] = w
				}
				return m, nil
			case []any:
				l := make([]any, len(v))
				for i, x := range v {
					w, err := walk(x)
					if err != nil {
						return nil, err
					}
					l[i] = w
				}
				return l, nil
			}
			return v, nil
		}
		// a root that is only a $ref is the component itself: MCP's
		// outputSchema is an object schema ("type": "object") at its root
		if r, ok := schema.(map[string]any); ok && len(r) == 1 {
			if ref, ok := r["$ref"].(string); ok {
				comp, _ := strings.CutPrefix(ref, "#/components/schemas/")
				if c, ok := doc.Components.Schemas[comp]; ok {
					schema = c
				}
			}
		}
		root, err := walk(schema)
		if err != nil {
			return nil, err
		}
		m, ok := root.(map[string]any)
		if !ok || m["type"] != "object" {
			return nil, fmt.Errorf("httpapi: openapi.json: %s's output schema is not of type object, as MCP's outputSchema must be", name)
		}
		if len(defs) > 0 {
			m["$defs"] = defs
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
})
