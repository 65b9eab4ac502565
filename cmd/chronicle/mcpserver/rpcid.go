package mcpserver

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// maxExactID is the largest integer id this server answers exactly:
// 2^53 − 1. The SDK decodes a number id as a float64, so a larger one
// was answered as its nearest float64 (9007199254740993 as
// 9007199254740992).
const maxExactID = 1<<53 - 1

// unanswerableID reports whether the JSON-RPC message msg (one object) is
// a request whose id this server cannot answer as sent, with the id to
// answer with (the id as sent, or null) and why. MCP makes a request's id
// a string or an integer, never null (Basic, Requests), and a response
// MUST carry the request's id: the SDK answered id 1.5 as 1 (the answer of
// another request to a client that had one in flight), changed integers
// beyond 2^53 and, over stdio, dropped a request with id null unanswered
// (an MCP walkthrough, 2026-12-03). Such a request is refused with
// -32600 Invalid Request instead, over stdio and /mcp alike.
func unanswerableID(msg []byte) (id json.RawMessage, why string, bad bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil || m.Method == nil {
		return nil, "", false // not a request with an id: a notification, a response, or the SDK's to refuse
	}
	raw := bytes.TrimSpace(m.ID)
	switch {
	case bytes.Equal(raw, []byte("null")):
		return json.RawMessage("null"), "a request's id is a string or an integer, never null (MCP, Basic: Requests)", true
	case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		if bytes.ContainsAny(raw, ".eE") {
			return raw, "a request's id is a string or an integer; " + string(raw) + " has a fraction or an exponent (MCP, Basic: Requests)", true
		}
		if n, err := strconv.ParseInt(string(raw), 10, 64); err != nil || n > maxExactID || n < -maxExactID {
			return raw, "the id " + string(raw) + " is beyond ±9007199254740991, the integers this server answers exactly: send it as a string", true
		} else if n == 0 && raw[0] == '-' {
			return raw, "the id -0 would be answered as 0: send 0, or a string", true
		}
	}
	return nil, "", false
}
