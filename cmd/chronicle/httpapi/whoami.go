package httpapi

import (
	"net/http"

	"github.com/chronicle-dev/chronicle/events"
)

// WhoAmI is the answer of GET /v1/whoami: the authenticated caller's
// token name and scopes, and where a write that names no scope goes.
type WhoAmI struct {
	// Name is the token's name ("local" on a service without tokens).
	Name string `json:"name"`
	// Read and Write are the token's scopes ("*": every scope).
	Read  []string `json:"read"`
	Write []string `json:"write"`
	// DefaultWriteScope is where POST /v1/memories and the MCP tools'
	// memory_record write without a scope: the token's first concrete
	// write scope, else events.DefaultScope (org:default) for a token
	// that writes "*"; "" for a token that writes nothing, and on a
	// read-only server (where Write is empty too).
	DefaultWriteScope string `json:"default_write_scope"`
}

// whoami serves GET /v1/whoami: what the caller's token may do. `chronicle
// mcp` asks it for the scope memory_record writes to when --scope is not
// given, so a scoped token works without repeating its scope.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	c := CallerOf(r)
	def := c.DefaultWriteScope()
	if def == "" && c.CanWrite(events.DefaultScope) {
		def = events.DefaultScope
	}
	read, write := c.Read, c.Write
	if s.ReadOnly { // chronicle inspect: nobody writes
		write, def = nil, ""
	}
	if read == nil {
		read = []string{}
	}
	if write == nil {
		write = []string{}
	}
	writeJSON(w, http.StatusOK, WhoAmI{Name: c.Name, Read: read, Write: write, DefaultWriteScope: def})
}
