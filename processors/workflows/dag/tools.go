// Package dag builds the DAG of a workflow from its tools' JSON Schemas
// (PML design, "DAG builder from JSON Schema"): a dependency A → B when an
// output property of A matches an input parameter of B by name and a
// compatible type, ambiguous matches counted as dependencies, cycles
// rejected with the cycle named, and the tools sorted topologically into
// layers that can run in parallel.
//
// Tools declare their inputs (OpenAI function schemas); outputs are
// usually undeclared, so they are learned from observed replies with Infer.
// The bundled catalogue is tau-bench's 14 airline tools
// (airline/airline-tools.json, MIT licence in airline/LICENSE) with
// outputs learned from the bundled tau-bench sessions.
package dag

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/google/jsonschema-go/jsonschema"
)

// airlineTools is tau-bench's airline tool schemas (OpenAI function
// format), MIT licence (airline/LICENSE).
//
//go:embed airline/airline-tools.json
var airlineTools []byte

// AirlineLicense is the licence of the airline tool schemas.
//
//go:embed airline/LICENSE
var AirlineLicense string

// Tool is a tool with its input schema (parameters) and output schema
// (declared, or learned from replies; nil when unknown).
type Tool struct {
	Name        string             `json:"name"`
	Description string             `json:"description,omitempty"`
	Parameters  *jsonschema.Schema `json:"parameters,omitempty"`
	Output      *jsonschema.Schema `json:"output,omitempty"`
}

// ParseOpenAITools reads tools in the OpenAI function format: a JSON array
// of {"type": "function", "function": {name, description, parameters}} or
// of bare {name, description, parameters}.
func ParseOpenAITools(raw []byte) ([]Tool, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("dag: tools: %w", err)
	}
	out := make([]Tool, 0, len(list))
	for i, r := range list {
		var wrap struct {
			Function *Tool `json:"function"`
		}
		if err := json.Unmarshal(r, &wrap); err != nil {
			return nil, fmt.Errorf("dag: tools[%d]: %w", i, err)
		}
		t := wrap.Function
		if t == nil {
			t = &Tool{}
			if err := json.Unmarshal(r, t); err != nil {
				return nil, fmt.Errorf("dag: tools[%d]: %w", i, err)
			}
		}
		if t.Name == "" {
			return nil, fmt.Errorf("dag: tools[%d]: name is required", i)
		}
		out = append(out, *t)
	}
	return out, nil
}

// Replies collects the JSON replies of each tool in tau-bench records
// whose index passes keep (nil keeps all): the text of every tool message,
// keyed by tool name. Error replies ("Error: ...") are left out: they
// describe a failure, not the tool's output.
func Replies(recs []taubench.Record, keep func(i int, r taubench.Record) bool) map[string][]json.RawMessage {
	out := map[string][]json.RawMessage{}
	for i, r := range recs {
		if keep != nil && !keep(i, r) {
			continue
		}
		for _, m := range r.Traj {
			if m.Role != "tool" || m.Name == "" {
				continue
			}
			txt := bytes.TrimSpace([]byte(m.Text()))
			if len(txt) == 0 || bytes.HasPrefix(txt, []byte("Error")) {
				continue
			}
			if !json.Valid(txt) {
				q, _ := json.Marshal(string(txt))
				txt = q
			}
			out[m.Name] = append(out[m.Name], json.RawMessage(txt))
		}
	}
	return out
}

// WithLearnedOutputs returns tools with Output set, where not declared, to
// the schema Infer learns from the tool's replies.
func WithLearnedOutputs(tools []Tool, replies map[string][]json.RawMessage) []Tool {
	out := slices.Clone(tools)
	for i := range out {
		if out[i].Output == nil {
			out[i].Output = Infer(replies[out[i].Name])
		}
	}
	return out
}

// AirlineCatalog is the 14 tau-bench airline tools with their outputs
// learned from every reply in the bundled 200 sessions.
func AirlineCatalog() ([]Tool, error) {
	tools, err := ParseOpenAITools(airlineTools)
	if err != nil {
		return nil, err
	}
	recs, err := taubench.SampleRecords()
	if err != nil {
		return nil, err
	}
	return WithLearnedOutputs(tools, Replies(recs, nil)), nil
}
