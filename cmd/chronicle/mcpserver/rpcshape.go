package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/chronicle-dev/chronicle/events"
)

// badMessage reports a JSON-RPC message (one object, valid JSON) the
// server refuses before the SDK reads it, with the id to answer with, the
// JSON-RPC error code and the message:
//   - a number beyond the range of a 64-bit float anywhere in it
//     (events.HugeNumber): -32602 naming its pointer (-32600 for the id);
//     the SDK's refusal named a Go struct field and type;
//   - a member repeated in the message or in its params (a second "name"
//     of a tools/call ran the tool it named, where a gateway reading the
//     first saw another: a parser differential): -32600 naming it.
//     Repeated members inside params.arguments are the tools' own refusal
//     (refuseRepeatedArguments), a tool error;
//   - an id without a method, result or error: -32600 (the SDK answered
//     nothing, so a client waiting on the id hung).
//
// Found by an MCP mutation walkthrough, 2026-12-03; over stdio and /mcp
// alike.
func badMessage(msg []byte) (id json.RawMessage, code int, text string, bad bool) {
	id = readableID(msg)
	if ptr, reason, ok := events.HugeNumber(msg); ok {
		if ptr == "/id" {
			return json.RawMessage("null"), jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: %s: %s", ptr, reason), true
		}
		return id, jsonrpc.CodeInvalidParams, fmt.Sprintf("Invalid params: %s: %s", ptr, reason), true
	}
	var shape struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &shape) == nil && shape.ID != nil && shape.Method == nil && shape.Result == nil && shape.Error == nil {
		// neither a request nor a response: the SDK answered nothing, so a
		// client waiting on the id hung (JSON-RPC 2.0 asks for -32600)
		return id, jsonrpc.CodeInvalidRequest, "Invalid Request: a request names its method (a response carries result or error)", true
	}
	if ptr, ok := repeatedEnvelopeMember(msg); ok {
		if ptr == "/id" {
			id = json.RawMessage("null")
		}
		return id, jsonrpc.CodeInvalidRequest, "Invalid Request: " + ptr + ": a member given twice in one object (which one counts differs between readers)", true
	}
	return nil, 0, "", false
}

// readableID is msg's id when it is one the server answers (a string or
// an integer it keeps exact), else null.
func readableID(msg []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil {
		return json.RawMessage("null")
	}
	if _, _, bad := unanswerableID(msg); bad {
		return json.RawMessage("null")
	}
	if _, err := jsonrpc.MakeID(idValue(m.ID)); err != nil {
		return json.RawMessage("null")
	}
	return m.ID
}

// repeatedEnvelopeMember is the pointer of the first member repeated at
// the top level of msg or in its params object (not deeper).
func repeatedEnvelopeMember(msg []byte) (string, bool) {
	var top map[string]json.RawMessage
	if ptr, ok := repeatedIn(msg, ""); ok {
		return ptr, true
	}
	if json.Unmarshal(msg, &top) != nil {
		return "", false
	}
	if p := bytes.TrimSpace(top["params"]); len(p) > 0 && p[0] == '{' {
		return repeatedIn(p, "/params")
	}
	return "", false
}

// repeatedIn is the pointer (under at) of the first member of the object
// obj given twice.
func repeatedIn(obj []byte, at string) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(obj))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return "", false
		}
		k, _ := t.(string)
		if seen[k] {
			return at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k), true
		}
		seen[k] = true
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// oneValue reports whether body holds one JSON value and nothing after it
// but whitespace (a body with two messages had the second dropped
// unanswered on /mcp).
func oneValue(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if d.Decode(&v) != nil {
		return true // not JSON: the SDK's parse error
	}
	_, err := d.Token()
	return err != nil
}

// notJSON says why body is not one JSON value followed by whitespace, or
// more values (oneValue's case): empty, or where its syntax breaks (the
// byte offset, from 1, and encoding/json's reason). Nil when it is JSON.
func notJSON(body []byte) error {
	d := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	err := d.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case err == io.EOF:
		return errors.New("the body is empty: send one JSON-RPC message")
	case err == io.ErrUnexpectedEOF:
		return fmt.Errorf("the body is not JSON: it ends inside a value (%d bytes)", len(body))
	case errors.As(err, &se):
		return fmt.Errorf("the body is not JSON: at byte %d: %s", se.Offset, se.Error())
	}
	return fmt.Errorf("the body is not JSON: %s", err.Error())
}
