package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// DefaultDrainWait is how long [ServeStdio] waits, once stdin ends, for
// the answers of the requests it read before the end (Options.DrainWait
// zero), and the default of `chronicle mcp --drain-wait`. A tool call
// over `chronicle mcp` makes at most two requests to the service
// (pair_improvement: start the loop, then read it), each bounded by the
// backend client's 30 s timeout; the calls run concurrently, so this
// bounds them all.
const DefaultDrainWait = 65 * time.Second

// ServeStdio serves the memory tools over stdin/stdout (newline-delimited
// JSON-RPC) for opts.Caller until the client closes stdin or ctx ends.
//
// When stdin ends (EOF, or a read error), every request read before it
// is still answered: the server waits for their responses, at most
// opts.DrainWait (default [DefaultDrainWait]), then returns. A client may
// so pipe a batch of requests and close stdin (printf '…' | chronicle
// mcp). Requests left unanswered — the wait ran out, stdout failed, or ctx
// ended first — make it return an [*UnansweredError] naming them. Before,
// the SDK's connection stopped writing as soon as its reader saw EOF: the
// requests still queued or running were dropped unanswered, and it
// returned nil.
//
// A JSON-RPC batch (an array of messages) is answered as the protocol
// version negotiated in initialize says: served before
// 2025-06-18, refused from 2025-06-18 on (that version removed batching)
// with an Invalid Request error for each call of it, the connection going
// on ([batchFilter]).
func ServeStdio(ctx context.Context, backend search.Backend, opts Options) error {
	return serveDraining(ctx, New(backend, opts), os.Stdin, nopWriteCloser{os.Stdout}, opts.DrainWait)
}

// nopWriteCloser is a writer whose Close does nothing (stdout stays open,
// as the SDK's StdioTransport leaves it).
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveDraining runs s on newline-delimited JSON-RPC read from in and
// written to out, holding back the end of in until the requests read
// before it are answered (drainConn), at most wait (0: DefaultDrainWait),
// and refusing the batches the negotiated version does not allow
// (batchFilter).
func serveDraining(ctx context.Context, s *mcp.Server, in io.ReadCloser, out io.WriteCloser, wait time.Duration) error {
	if wait <= 0 {
		wait = DefaultDrainWait
	}
	w := &lockedWriter{w: out}
	t := &mcp.IOTransport{Reader: &batchFilter{in: in, out: w}, Writer: w}
	dt := &drainTransport{Transport: t, wait: wait, stop: ctx.Done()}
	err := s.Run(ctx, dt)
	if u := dt.unanswered(); u != nil {
		return errors.Join(u, err)
	}
	return err
}

// UnansweredError is the error of a stdio server that ended with requests
// it read left unanswered.
type UnansweredError struct {
	// Requests name each request: its id, method and, for tools/call, the
	// tool ("id 4 (tools/call memory_record)"), in the order read.
	Requests []string
	// Why says what ended the wait.
	Why string
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("%d request(s) read before stdin ended were left unanswered (%s): %s", len(e.Requests), e.Why, strings.Join(e.Requests, ", "))
}

// drainTransport wraps a transport's connection in a drainConn.
type drainTransport struct {
	mcp.Transport
	wait time.Duration
	stop <-chan struct{} // the server's context ended: stop waiting

	mu   sync.Mutex
	conn *drainConn
}

func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc := &drainConn{Connection: c, wait: t.wait, stop: t.stop, pending: map[jsonrpc.ID]pendingCall{}, changed: make(chan struct{}, 1), closed: make(chan struct{})}
	t.mu.Lock()
	t.conn = dc
	t.mu.Unlock()
	return dc, nil
}

// unanswered is the error naming the requests the connection read and
// did not answer, nil when there are none.
func (t *drainTransport) unanswered() *UnansweredError {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	calls := make([]pendingCall, 0, len(c.pending))
	for _, p := range c.pending {
		calls = append(calls, p)
	}
	slices.SortFunc(calls, func(a, b pendingCall) int { return a.seq - b.seq })
	e := &UnansweredError{Why: c.why}
	if e.Why == "" {
		e.Why = "the server stopped first"
	}
	for _, p := range calls {
		e.Requests = append(e.Requests, p.name)
	}
	return e
}

// pendingCall is a request read and not answered yet.
type pendingCall struct {
	seq  int    // order read
	name string // "id 4 (tools/call memory_record)"
}

// drainConn is a connection whose Read, when the underlying one fails
// (EOF: the client closed stdin), first waits until every call it
// returned has had its response written, at most wait, or until the
// connection is closed or a write fails. The SDK's jsonrpc2 connection
// writes nothing once its reader has failed (it answers every call still
// in flight with "closing" and drops the answer), so the failure is held
// back until the answers are out.
type drainConn struct {
	mcp.Connection
	wait time.Duration
	stop <-chan struct{} // the server's context ended (Ctrl-C, SIGTERM)

	mu      sync.Mutex
	pending map[jsonrpc.ID]pendingCall
	seq     int
	why     string        // what ended the wait with calls pending
	changed chan struct{} // a response was written, or a write failed
	broken  bool          // a write failed: no more answers can go out

	closeOnce sync.Once
	closed    chan struct{}
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.pending[req.ID] = pendingCall{seq: c.seq, name: callName(req)}
			c.seq++
			c.mu.Unlock()
		}
		return msg, nil
	}
	c.drain(err)
	return nil, err
}

// drain waits until no call is pending, the wait runs out, a write fails,
// the server's context ends (then the failure cancels the calls still
// running, as the SDK does on EOF, rather than the stop waiting for
// them) or the connection is closed; readErr is the read's failure.
func (c *drainConn) drain(readErr error) {
	timer := time.NewTimer(c.wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n, broken := len(c.pending), c.broken
		c.mu.Unlock()
		if n == 0 || broken {
			return
		}
		select {
		case <-c.changed:
		case <-timer.C:
			c.setWhy(fmt.Sprintf("stdin ended (%v) and they were not answered within %s", readErr, c.wait))
			return
		case <-c.stop:
			c.setWhy("the server was stopped while they ran")
			return
		case <-c.closed:
			c.setWhy("the server was stopped while they ran")
			return
		}
	}
}

func (c *drainConn) setWhy(why string) {
	c.mu.Lock()
	if c.why == "" {
		c.why = why
	}
	c.mu.Unlock()
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	resp, isResp := msg.(*jsonrpc.Response)
	if err == nil && !isResp {
		return nil
	}
	c.mu.Lock()
	if err != nil {
		c.broken = true
		if c.why == "" {
			c.why = fmt.Sprintf("writing to stdout failed: %v", err)
		}
	} else {
		delete(c.pending, resp.ID)
	}
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return err
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// callName names a call for UnansweredError: its id, its method and, for
// tools/call, the tool.
func callName(req *jsonrpc.Request) string {
	id, _ := json.Marshal(req.ID.Raw())
	what := req.Method
	if req.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.Name != "" {
			what += " " + p.Name
		}
	}
	return fmt.Sprintf("id %s (%s)", id, what)
}

// batchVersion is the first protocol version without JSON-RPC batching.
const batchVersion = "2025-06-18"

// batchFilter is the input of a stdio connection as the SDK's connection
// reads it, less the JSON-RPC batches the negotiated protocol version does
// not allow. From 2025-06-18 on a batch is not a valid message: the SDK's
// stdio connection refuses it (by ending the connection), as /mcp does
// (400), but drainConn, wrapping that connection, hides from it the
// version negotiated in initialize (the SDK tells it through an unexported
// method), so every batch was served whatever the version (the last
// closing note's gap). The filter decides from the initialize request it
// reads, before any later batch, so a client that pipes its requests
// without waiting for the answers is answered the same: the server
// answers a client's version when it supports it, else its latest (from
// 2025-06-18 on), so batches are served only when the client asked for a
// supported version before 2025-06-18 (or before initialize, as the SDK
// does). A refused batch is not handed on: each call in it is answered
// with an Invalid Request error (-32600) naming the version, in one array
// as JSON-RPC answers a batch, and the connection goes on.
//
// The bytes handed on are those read, unchanged: the filter only finds
// where each top-level JSON value ends (no decoding but of initialize, of
// a batch to refuse, and the SDK's own check of each object). What the
// SDK's reader would end the connection on is answered here and not
// handed on (malformed): a line that starts no object or array, a value
// that is not JSON, not UTF-8, holds a lone surrogate's \u escape or a
// value broken by a newline, in a string or not (-32700), an object
// jsonrpc.DecodeMessage refuses (-32600). A value longer than the SDK's
// frame limit (16 MiB) is read to its end without being kept and answered
// as an Invalid Request (-32600), with its id when the first 16 MiB name
// it (startDropping); of a line that starts no message, at most that limit
// is kept, and it is answered as a Parse error at its newline.
type batchFilter struct {
	in  io.ReadCloser
	out *lockedWriter

	ready    []byte // to hand on
	value    []byte // the top-level value being read
	depth    int
	inStr    bool
	escaped  bool
	skipping bool // in a line that is no message, up to its newline
	long     bool // that line passed the frame limit: the rest is not kept
	// dropping: in a value that passed the frame limit, up to its end or
	// its line's; dropID is its id when the part held named one
	dropping bool
	dropID   json.RawMessage
	err      error // the read error of in, once it failed

	seenInit     bool
	version      string // asked in initialize
	allowBatches bool
}

func (f *batchFilter) Read(p []byte) (int, error) {
	var chunk [32 << 10]byte
	for len(f.ready) == 0 && f.err == nil {
		n, err := f.in.Read(chunk[:])
		f.scan(chunk[:n])
		if err != nil {
			f.err = err
			f.ready = append(f.ready, f.value...) // an incomplete value: the SDK reports it
			f.value = nil
		}
	}
	if len(f.ready) == 0 {
		return 0, f.err
	}
	n := copy(p, f.ready)
	f.ready = f.ready[n:]
	return n, nil
}

func (f *batchFilter) Close() error { return f.in.Close() }

// scan takes bytes read: whitespace between values goes to ready at once,
// a value when it is complete (or never, a refused batch, a malformed
// line or a value too large, answered here).
func (f *batchFilter) scan(b []byte) {
	for _, c := range b {
		if f.dropping {
			f.drop(c)
			continue
		}
		if f.skipping {
			// a line that is no JSON-RPC message: dropped up to its
			// newline, then answered
			if c == '\n' {
				f.skipping = false
				if f.long {
					f.answer(wireAnswer{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wireError{Code: jsonrpc.CodeParseError,
						Message: fmt.Sprintf("Parse error: the line is longer than %d bytes and starts no JSON-RPC message", mcp.DefaultMaxLineLength)}})
				} else {
					f.malformed(f.value)
				}
				f.value, f.long = nil, false
				f.ready = append(f.ready, c)
			} else if len(f.value) < mcp.DefaultMaxLineLength {
				f.value = append(f.value, c)
			} else {
				// no more is kept of it: a line of garbage without a
				// newline (a binary file piped in) grew the process
				// without bound
				f.long = true
			}
			continue
		}
		if f.depth == 0 {
			switch c {
			case ' ', '\t', '\r', '\n':
				f.ready = append(f.ready, c)
				continue
			case '{', '[':
			default: // no message starts so: skip its line
				f.skipping = true
				f.value = append(f.value[:0], c)
				continue
			}
		}
		if c == '\n' {
			// a newline inside a value, in a string or not: malformed (the
			// stdio transport's messages hold none, and JSON escapes it in
			// a string), the line ends here. Before, only a string ended
			// so: a line holding an unclosed object ({"id":2,"method":"ping")
			// took in every later line as part of its value, so no later
			// request was answered (a new user's walkthrough)
			f.malformed(f.value)
			f.value, f.depth, f.inStr, f.escaped = nil, 0, false, false
			f.ready = append(f.ready, c)
			continue
		}
		f.value = append(f.value, c)
		if f.track(c) {
			f.complete()
		}
		if len(f.value) > mcp.DefaultMaxLineLength {
			f.startDropping()
		}
	}
}

// track follows byte c of a top-level value through its strings, escapes
// and nesting; true when c closes the value.
func (f *batchFilter) track(c byte) bool {
	switch {
	case f.inStr && f.escaped:
		f.escaped = false
	case f.inStr && c == '\\':
		f.escaped = true
	case f.inStr && c == '"':
		f.inStr = false
	case f.inStr:
	case c == '"':
		f.inStr = true
	case c == '{' || c == '[':
		f.depth++
	case c == '}' || c == ']':
		f.depth--
		return f.depth == 0
	}
	return false
}

// startDropping turns to dropping the value being read, which passed the
// SDK's frame limit (mcp.DefaultMaxLineLength, 16 MiB): the SDK's reader
// ended the connection on it, so a client that sent one message too large
// lost every later answer, chronicle mcp exiting (the last closing
// note's gap). Now the value is read to its end without being kept and
// answered as an Invalid Request, with its id when the part held names one
// before the large member, and serving goes on.
func (f *batchFilter) startDropping() {
	f.dropping, f.dropID = true, leadingID(f.value)
	f.value = nil
}

// drop takes byte c of a value being dropped: its end (depth 0 again, or
// the end of its line, which a stdio message never holds) answers it.
func (f *batchFilter) drop(c byte) {
	if c != '\n' && !f.track(c) {
		return
	}
	id := f.dropID
	if id == nil {
		id = json.RawMessage("null")
	}
	f.answer(wireAnswer{JSONRPC: "2.0", ID: id, Error: wireError{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("Invalid Request: the message is longer than %d bytes, the stdio transport's limit for one message; it was not read", mcp.DefaultMaxLineLength)}})
	f.dropping, f.dropID, f.depth, f.inStr, f.escaped = false, nil, 0, false, false
	if c == '\n' {
		f.ready = append(f.ready, c)
	}
}

// leadingID is the id of the JSON-RPC message prefix starts, when one of
// its top-level members before the first that does not end in prefix is
// "id" with a valid id; nil otherwise.
func leadingID(prefix []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil
		}
		if k == "id" {
			if _, err := jsonrpc.MakeID(idValue(v)); err != nil || bytes.Equal(v, []byte("null")) {
				return nil
			}
			return v
		}
	}
	return nil
}

// malformed answers a line or value that is not a JSON-RPC message, which
// is not handed on: not JSON, a Parse error (-32700), else (a number, a
// string …) an Invalid Request (-32600), with the id null, as JSON-RPC 2.0
// says when the id cannot be read. The connection goes on: the SDK's
// reader ended it at the first such line, leaving the requests after it
// unanswered and unnamed (found by a new user's walkthrough, who piped
// "not json" between two calls: chronicle mcp exited 1).
func (f *batchFilter) malformed(v []byte) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	code, msg := jsonrpc.CodeParseError, "Parse error: the line is not JSON"
	if json.Valid(v) {
		code, msg = jsonrpc.CodeInvalidRequest, "Invalid Request: a JSON-RPC message is an object (or, before 2025-06-18, an array of them)"
	}
	f.answer(wireAnswer{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wireError{Code: code, Message: msg}})
}

// complete takes a whole top-level value: an initialize request sets
// whether batches are served; a batch they are not is answered here and
// not handed on.
func (f *batchFilter) complete() {
	v := f.value
	f.value = nil
	if !json.Valid(v) {
		f.malformed(v)
		return
	}
	// bytes that are no UTF-8, and \u escapes of lone surrogates, which
	// the SDK's decoder reads as U+FFFD, are a Parse error, as /mcp
	// answers them (textChecked): a memory_record's title or content was
	// stored changed, and two titles differing only there were one (the
	// last closing note's gap)
	if !utf8.Valid(v) {
		f.answer(wireAnswer{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wireError{Code: jsonrpc.CodeParseError,
			Message: "Parse error: the message is not valid UTF-8 (JSON is UTF-8, RFC 8259, section 8.1)"}})
		return
	}
	if ptr, reason, ok := events.LoneSurrogate(v); ok {
		f.answer(wireAnswer{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wireError{Code: jsonrpc.CodeParseError,
			Message: fmt.Sprintf("Parse error: %s: %s", ptr, reason)}})
		return
	}
	if v[0] == '{' {
		if id, code, text, bad := badMessage(v); bad {
			f.answer(wireAnswer{JSONRPC: "2.0", ID: id, Error: wireError{Code: code, Message: text}})
			return
		}
	}
	if v[0] == '{' {
		// what the SDK's reader would end the connection on: answered
		// here instead, with the id when it can be read
		if _, err := jsonrpc.DecodeMessage(v); err != nil {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			id := json.RawMessage("null")
			if json.Unmarshal(v, &m) == nil && m.ID != nil {
				if _, err := jsonrpc.MakeID(idValue(m.ID)); err == nil {
					id = m.ID
				}
			}
			f.answer(wireAnswer{JSONRPC: "2.0", ID: id, Error: wireError{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + err.Error()}})
			return
		}
	}
	if v[0] == '{' {
		if id, why, bad := unanswerableID(v); bad {
			f.answer(wireAnswer{JSONRPC: "2.0", ID: id, Error: wireError{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + why}})
			return
		}
		if id, why, bad := invalidParams(v); bad {
			f.answer(wireAnswer{JSONRPC: "2.0", ID: id, Error: wireError{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + why}})
			return
		}
	}
	if v[0] == '{' {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(v, &m) == nil && m.Method == "initialize" && m.ID != nil {
			if f.seenInit {
				// the SDK answered it with the error code 0, which
				// JSON-RPC does not define (an MCP mutation walkthrough,
				// 2026-12-03)
				f.answer(wireAnswer{JSONRPC: "2.0", ID: m.ID, Error: wireError{Code: jsonrpc.CodeInvalidRequest,
					Message: `Invalid Request: duplicate "initialize" received: a connection is initialized once (MCP lifecycle)`}})
				return
			}
			f.seenInit = true
			f.version = m.Params.ProtocolVersion
			f.allowBatches = slices.Contains(mcp.SupportedProtocolVersions(), f.version) && f.version < batchVersion
		}
	}
	if v[0] == '[' && f.invalidBatch(v) {
		return
	}
	if v[0] == '[' && f.seenInit && !f.allowBatches && f.refuse(v) {
		return
	}
	// each value on a line of its own: the SDK's reader ends the
	// connection when a value is followed by anything but a line end, so
	// two messages on one line made chronicle mcp exit, leaving them and
	// every later request unanswered (an MCP mutation walkthrough,
	// 2026-12-03)
	f.ready = append(append(f.ready, v...), '\n')
}

// invalidBatch answers a batch that holds no JSON-RPC message as JSON-RPC
// 2.0 (section 6) says, whatever the protocol version: an empty array is
// one Invalid Request error, an array of values none of which is an
// object is an array of them, one per value, each with the id null. It
// reports whether it answered. Before, the SDK answered neither (a
// client waiting for the answer hung; an MCP mutation walkthrough,
// 2026-12-03). A batch mixing messages with other values is left to the
// version's rule (served by the SDK, or refused by refuse).
func (f *batchFilter) invalidBatch(batch []byte) bool {
	var msgs []json.RawMessage
	if json.Unmarshal(batch, &msgs) != nil {
		return false
	}
	if len(msgs) == 0 {
		f.answer(wireAnswer{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wireError{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid Request: an empty batch (JSON-RPC 2.0, section 6)"}})
		return true
	}
	answers := make([]wireAnswer, 0, len(msgs))
	for _, m := range msgs {
		if m = bytes.TrimSpace(m); len(m) > 0 && m[0] == '{' {
			return false
		}
		answers = append(answers, wireAnswer{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: wireError{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid Request: a JSON-RPC message is an object"}})
	}
	f.answer(answers)
	return true
}

// refuse answers each call of batch with an Invalid Request error, false
// when batch is not an array of JSON values (the SDK reports it).
func (f *batchFilter) refuse(batch []byte) bool {
	var msgs []json.RawMessage
	if json.Unmarshal(batch, &msgs) != nil {
		return false
	}
	why := fmt.Sprintf("JSON-RPC batching is not supported in %s and later (initialize asked for protocol version %q): send each message on its own", batchVersion, f.version)
	var answers []wireAnswer
	for _, m := range msgs {
		var call struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m, &call) == nil && call.ID != nil && !bytes.Equal(call.ID, []byte("null")) {
			answers = append(answers, wireAnswer{JSONRPC: "2.0", ID: call.ID, Error: wireError{Code: jsonrpc.CodeInvalidRequest, Message: why}})
		}
	}
	if len(answers) > 0 {
		f.answer(answers)
	}
	return true
}

// idValue is raw, a JSON-RPC id as read, as jsonrpc.MakeID takes it: a
// string or a float64 (MakeID refuses an int64, so an integer id made
// int64 here was never valid, and a message refused with one was answered
// with id null: the client could not tell which request failed).
func idValue(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	return v
}

// wireError and wireAnswer are a JSON-RPC error answer as written.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type wireAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   wireError       `json:"error"`
}

// answer writes v, a JSON-RPC answer or an array of them (a batch's),
// as one line.
func (f *batchFilter) answer(v any) {
	b, err := json.Marshal(v)
	if err == nil {
		// a failed write fails the connection's next one too
		_, _ = f.out.Write(append(b, '\n'))
	}
}

// lockedWriter serialises the writes of the SDK's connection and of
// batchFilter's refusals, each a whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (w *lockedWriter) Close() error { return w.w.Close() }
