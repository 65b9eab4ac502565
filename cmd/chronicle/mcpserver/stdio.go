package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// DefaultDrainWait is how long [ServeStdio] waits, once stdin ends, for
// the answers of the requests it read before the end (Options.DrainWait
// zero), and the default of `chronicle mcp --drain-wait`. A tool call over `chronicle mcp` makes at most two requests to
// the service (pair_improvement: start the loop, then read it), each
// bounded by the backend client's 30 s timeout; the calls run
// concurrently, so this bounds them all.
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
func ServeStdio(ctx context.Context, backend search.Backend, opts Options) error {
	return serveDraining(ctx, New(backend, opts), &mcp.StdioTransport{}, opts.DrainWait)
}

// serveDraining runs s on t, holding back the end of t's input until
// the requests read before it are answered (drainConn), at most wait
// (0: DefaultDrainWait).
func serveDraining(ctx context.Context, s *mcp.Server, t mcp.Transport, wait time.Duration) error {
	if wait <= 0 {
		wait = DefaultDrainWait
	}
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
