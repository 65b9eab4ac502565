package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
)

// dagCatalog is the bundled airline catalogue (outputs learned from the
// bundled sessions), built once.
var dagCatalog = sync.OnceValues(dag.AirlineCatalog)

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
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		err = bodyError(err)
		writeErr(w, bodyStatus(err), "%v", err)
		return
	}
	if len(body.Tools) == 0 {
		writeErr(w, http.StatusBadRequest, "tools: at least one tool name or {name, parameters, output} is required")
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
		if json.Unmarshal(raw, &name) == nil {
			names = append(names, name)
			continue
		}
		var t dag.Tool
		if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
			writeErr(w, http.StatusBadRequest, "tools[%d]: a tool name or {name, parameters, output} (%v)", i, err)
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
