package mcpserver

import (
	"bytes"
	"encoding/json"
)

// invalidParams reports whether the JSON-RPC message msg (one object) is a
// request whose params the server cannot read, with its id and why: params
// sent as an array, a string, a number or a boolean (MCP's methods take
// named parameters, an object), or an initialize without params or with
// null ones (initialize's are required). Such a request is answered with
// -32602 Invalid params, over stdio and /mcp alike. Before, the SDK
// answered an initialize whose params were not an object with the error
// code 0, which JSON-RPC 2.0 does not define (a mutation test of the HTTP
// API, 2026-12-03); other methods were -32602 already, with the SDK's Go
// unmarshalling text. A notification (no id) is left to the SDK: nothing
// can be answered to it.
func invalidParams(msg []byte) (id json.RawMessage, why string, bad bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil || m.Method == nil {
		return nil, "", false
	}
	p := bytes.TrimSpace(m.Params)
	switch {
	case len(p) > 0 && p[0] != '{' && !bytes.Equal(p, []byte("null")):
		return m.ID, "params: " + jsonKind(p) + ", want an object (MCP's methods take named parameters)", true
	case *m.Method == "initialize" && (len(p) == 0 || bytes.Equal(p, []byte("null"))):
		return m.ID, "params: initialize takes an object (protocolVersion, capabilities, clientInfo), and it is required", true
	}
	return nil, "", false
}

// jsonKind names the JSON type of the value v starts with: "an array", "a
// string", "a boolean" or "a number".
func jsonKind(v []byte) string {
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
