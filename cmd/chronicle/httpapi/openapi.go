package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 description of every route of Server.Routes,
// hand-written in openapi.json next to this file. TestOpenAPIMatchesRoutes
// fails when a registered route is missing from it or it names a path the
// router does not serve, and validates it with kin-openapi.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPI serves GET /openapi.json. It is public (no token): it describes
// the routes and shows no scoped data.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}
