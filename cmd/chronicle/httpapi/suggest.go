package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// suggestEmbedder embeds intents and tool descriptions for
// POST /v1/workflows/suggest (USE lite, offline), loaded on first use.
var suggestEmbedder = sync.OnceValues(func() (embedder.Embedder, error) {
	u, err := embedder.NewUSELite()
	if err != nil {
		return nil, err
	}
	u.Workers = 1
	return u, nil
})

// postSuggest serves POST /v1/workflows/suggest {intent, context_tools, k}:
// a DAG from the learned tool graph (which aggregates every scope, so the
// route needs a token that reads *), the airline catalogue's schemas and
// the intent's meaning, with its confidence, mode, safety reasons and
// explanation (package suggest).
func (s *Server) postSuggest(w http.ResponseWriter, r *http.Request) {
	if needsAll(w, r) {
		return
	}
	var req suggest.Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	g, err := s.toolGraph()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	cat, err := dagCatalog()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	emb, err := suggestEmbedder()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	s.suggestMu.Lock() // the Suggester caches vectors
	defer s.suggestMu.Unlock()
	sg := &s.suggester
	sg.Graph, sg.Catalog, sg.Embedder = g, cat, emb
	res, err := sg.Suggest(r.Context(), req)
	switch {
	case errors.Is(err, suggest.ErrInvalid):
		writeErr(w, http.StatusBadRequest, "%v", err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	default:
		writeJSON(w, http.StatusOK, res)
	}
}
