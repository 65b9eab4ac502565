// Package client drives a workflow through a running Chronicle service's
// HTTP API, the way an agent runtime uses LangGraph's checkpointer: record
// reducer updates and a checkpoint per DAG layer, enqueue commands, pause
// for a human decision and resume with the answer, read the state, the
// checkpoint history and the state as of any checkpoint (time travel),
// fork from a checkpoint with a state update, and resume from the last
// checkpoint after a crash.
//
// Every write carries an event id the client makes up once per call and
// keeps across its retries (a write whose outcome is unknown — a transport
// error, 502, 503 or 504 — is sent again, up to 6 times in about 7 s, none
// after 15 s, and not after a send that timed out, nor after a name that
// does not resolve or a TLS failure, which no resend changes), so a
// retried write is applied once. Each write
// returns after the workflows processor applied it, with the new state;
// when the processor did not get to it within the service's 5 s, the
// error is an *Error with Status 202 (the event is in the log and will be
// applied: read the state again). A write the processor refused is an
// *Error with Status 409, bad input 400 with the JSON pointer.
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("CHRONICLE_TOKEN"))
//	c.Update(ctx, "w1", 0, events.ChannelTasks, []any{task})
//	cp, _ := c.Checkpoint(ctx, "w1", 0)        // cp.CheckpointID = "chronicle.workflows:0:17"
//	c.Interrupt(ctx, "w1", events.DecisionHuman, "Cancel reservation ABC123?", "approve", "reject")
//	...
//	r, _ := c.Resume(ctx, "w1", "")             // after a crash: back to the last checkpoint, run r.NextLayer
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/google/uuid"
)

// writeAttempts bounds the sends of one write whose outcome is unknown
// (a transport error, 502, 503, 504): about 7 s of backoff in all, the
// time a restarted serve takes to answer again.
const writeAttempts = 6

// writeRetryFor bounds the time after the first send within which a write
// is sent again (15 s); a send that timed out is not sent again.
const writeRetryFor = 15 * time.Second

// Client is a workflow client of one service.
type Client struct {
	// Base is the service URL, e.g. http://127.0.0.1:8080 (http or https,
	// with a host; a trailing slash is ignored). Required: every call
	// fails at once naming Base without it.
	Base string
	// Token is sent as a bearer token when set, without the white space
	// around it (a token read from a file often ends in a newline).
	Token string
	// Scope, when set, is sent as ?scope= (needed when the token reads or
	// writes several scopes).
	Scope string
	// HTTP is the client (default: 60 s timeout).
	HTTP *http.Client
}

// New returns a client of the service at base with token ("" for none).
func New(base, token string) *Client { return &Client{Base: base, Token: token} }

// Error is a non-2xx answer of the service. Its text is "HTTP <status>:
// <message>" (and " (at <pointer>)"), without a program name: the CLI
// prefixes its own.
type Error struct {
	// Status is the HTTP status: 400 bad input, 401/403 the token, 404
	// no such workflow, checkpoint or decision, 409 a write the workflows
	// processor refused, 202 a write not applied within the service's 5 s
	// (it is in the log: read the state again).
	Status int
	// Message is the answer's error text.
	Message string
	// Pointer is the JSON pointer of the member at fault, when the
	// service names one: in the request body for bad input ("/channel"
	// for an unknown channel).
	Pointer string
}

func (e *Error) Error() string {
	if e.Pointer != "" {
		return fmt.Sprintf("HTTP %d: %s (at %s)", e.Status, e.Message, e.Pointer)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

// ErrEmptyID is returned, wrapped, by a call given an empty workflow (or
// checkpoint, decision) id, before anything is sent: the request would
// name another route (POST /v1/workflows//updates was a 405 listing
// routes: a Go embedder's walkthrough).
var ErrEmptyID = errors.New("workflows client: an id is required, must not be empty")

// url is the route's URL, "" when id or a sub-route segment is empty
// (do answers ErrEmptyID for it).
func (c *Client) url(id string, sub ...string) string {
	if id == "" || slices.Contains(sub, "") {
		return ""
	}
	p := strings.TrimRight(c.Base, "/") + "/v1/workflows/" + url.PathEscape(id)
	for _, s := range sub {
		p += "/" + url.PathEscape(s)
	}
	if c.Scope != "" {
		p += "?scope=" + url.QueryEscape(c.Scope)
	}
	return p
}

// MaxAnswerBytes is the largest answer the client reads (64 MiB): a
// larger one is an error saying so.
const MaxAnswerBytes = 64 << 20

func (c *Client) do(ctx context.Context, method, u string, body, out any) error {
	if u == "" {
		return fmt.Errorf("%w (nothing was sent)", ErrEmptyID)
	}
	// a Client without a usable Base failed with net/http's `unsupported
	// protocol scheme ""`, which names no field, and a write was sent
	// again for 7 s first, as a transport error (a Go-package walkthrough)
	if b, err := url.Parse(c.Base); err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return fmt.Errorf("workflows client: Client.Base %q: not the http:// or https:// URL of a running chronicle serve (e.g. http://127.0.0.1:8080); nothing was sent", c.Base)
	}
	// a control character inside the token (a newline between two
	// pasted lines) fails every send with net/http's "invalid header
	// field value", which a write sent again for 7 s first
	tok := strings.TrimSpace(c.Token)
	if i := strings.IndexFunc(tok, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }); i >= 0 {
		return fmt.Errorf("workflows client: Client.Token: a control character (%q) at byte %d: a bearer token is one line of printable characters; nothing was sent", tok[i], i)
	}
	var raw []byte
	if body != nil {
		// '<', '>' and '&' as given: json.Marshal's HTML escapes made
		// markup in an update six times longer in the log
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return err
		}
		raw = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(raw))
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		// trimmed: "tok\n" failed every call with net/http's "invalid
		// header field value", and a write only after 7 s of resends
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		var b []byte
		if err == nil {
			b, _ = io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
			resp.Body.Close()
			if len(b) > MaxAnswerBytes {
				// it was cut at the limit and parsed: "unexpected end of
				// JSON input" (a workflows walkthrough, a 68 MB state)
				return fmt.Errorf("workflows client: %s %s: the answer is larger than %d bytes (MaxAnswerBytes), which the client does not read", method, u, MaxAnswerBytes)
			}
		}
		// a write whose outcome is unknown is sent again, with the same
		// body and so the same event id (applied once): the service was
		// away (503), a gateway or a forward gave up waiting (502, 504),
		// or the connection failed — refused while serve restarts, or
		// dropped after the event was written and before the answer. The
		// caller cannot retry such a write itself: its next call makes a
		// new event id, a second checkpoint, command or decision (before,
		// only a 503 was retried, and a transport error was returned)
		// A send that timed out (the HTTP client's Timeout, 60 s by
		// default: a service that hangs) is not sent again, and no resend
		// starts after writeRetryFor: the wait stays bounded (a review:
		// six timeouts would have been six minutes).
		var ne net.Error
		timedOut := err != nil && errors.As(err, &ne) && ne.Timeout()
		if method == http.MethodPost && attempt < writeAttempts && ctx.Err() == nil && !timedOut && !unreachable(err) && time.Since(start) < writeRetryFor &&
			(err != nil || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(min(attempt, 4)) * 500 * time.Millisecond):
			}
			continue // same body, same event id: applied once
		}
		if err != nil {
			return err
		}
		if resp.StatusCode >= 300 || resp.StatusCode == http.StatusAccepted && method == http.MethodPost {
			var e struct {
				Error, Pointer, Status string
			}
			_ = json.Unmarshal(b, &e)
			if e.Error == "" {
				e.Error = e.Status
			}
			if e.Error == "" {
				e.Error = resp.Status
			}
			return &Error{Status: resp.StatusCode, Message: e.Error, Pointer: e.Pointer}
		}
		return json.Unmarshal(b, out)
	}
}

// unreachable reports whether err is a transport failure that no resend
// can change and before which nothing reached the service: its name does
// not resolve, its certificate is not trusted or names another host, or
// it does not speak TLS to an https:// Base. Such a write is not sent
// again (it was, for about 7 s, before the same error).
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var dns *net.DNSError
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	return errors.As(err, &dns) && dns.IsNotFound || errors.As(err, &verify) || errors.As(err, &authority) ||
		errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &record)
}

func (c *Client) write(ctx context.Context, id string, sub []string, body map[string]any) (workflows.WriteResult, error) {
	body["event_id"] = "wf-" + uuid.NewString()
	var res workflows.WriteResult
	return res, c.do(ctx, http.MethodPost, c.url(id, sub...), body, &res)
}

// Update applies a reducer update on channel (events.ChannelMessages,
// ChannelTasks, ChannelDecisions append — a slice appends its elements;
// ChannelContext merges an object) at layer.
func (c *Client) Update(ctx context.Context, id string, layer int, channel string, update any) (workflows.WriteResult, error) {
	return c.write(ctx, id, []string{"updates"}, map[string]any{"layer": layer, "channel": channel, "update": update})
}

// UpdateEventID is Update with the caller's event id: resending the same
// id applies the update once. After a crash and a Resume (which reverts
// the state to the checkpoint), re-run the layer's tasks under new ids
// (e.g. including the state's Resumes count): the log already holds the
// old ids, so resending them would not apply the tasks again.
func (c *Client) UpdateEventID(ctx context.Context, id, eventID string, layer int, channel string, update any) (workflows.WriteResult, error) {
	var res workflows.WriteResult
	body := map[string]any{"event_id": eventID, "layer": layer, "channel": channel, "update": update}
	return res, c.do(ctx, http.MethodPost, c.url(id, "updates"), body, &res)
}

// Checkpoint saves the checkpoint of a finished layer; processed names
// the queued commands handled before it. The result's CheckpointID is the
// checkpoint's id (its log position).
func (c *Client) Checkpoint(ctx context.Context, id string, layer int, processed ...string) (workflows.WriteResult, error) {
	return c.write(ctx, id, []string{"checkpoints"}, map[string]any{"layer": layer, "processed_commands": processed})
}

// Enqueue puts a command (events.CommandInjectTasks, CommandReplanDAG,
// CommandApprove, ...) on the workflow's queue.
func (c *Client) Enqueue(ctx context.Context, id, command string, args any, by string) (workflows.WriteResult, error) {
	body := map[string]any{"command": command, "by": by}
	if args != nil {
		body["args"] = args
	}
	return c.write(ctx, id, []string{"commands"}, body)
}

// Replan enqueues a replan_dag command (workflows.ReplanArgs without the
// plan: Requirement for a hybrid tool search in the tool graph of the
// workflow's scope and the bundled catalogue, or Tools by name). The API computes the plan into the command
// (answering 422 with the cycle when the merged DAG has one, 409 while
// another replan is pending); the DAG changes when a Checkpoint names the
// command (the result's EventID) processed.
func (c *Client) Replan(ctx context.Context, id string, args workflows.ReplanArgs, by string) (workflows.WriteResult, error) {
	return c.Enqueue(ctx, id, events.CommandReplanDAG, args, by)
}

// Interrupt requests a decision (events.DecisionHuman pauses the workflow
// until Answer; events.DecisionAgent asks the agent whether to continue or
// replan). The decision id is the result's event id.
func (c *Client) Interrupt(ctx context.Context, id, kind, question string, options ...string) (workflows.WriteResult, error) {
	return c.write(ctx, id, []string{"decisions"}, map[string]any{"kind": kind, "question": question, "options": options})
}

// Answer answers the pending decision decisionID; the workflow runs again
// once no human decision is pending. by "" leaves the member out: a
// service with tokens then records token:<name> of the client's token
// (and refuses any other name).
func (c *Client) Answer(ctx context.Context, id, decisionID, answer, by string) (workflows.WriteResult, error) {
	body := map[string]any{"answer": answer}
	if by != "" {
		body["by"] = by
	}
	return c.write(ctx, id, []string{"decisions", decisionID}, body)
}

// Resume returns the workflow to a checkpoint ("" = the one its state
// stands on: the last saved, or the one a resume went back to since), e.g.
// after the executor crashed during a layer: the state becomes the
// checkpoint's, and the executor runs res.NextLayer again (its tasks with
// side effects must be idempotent).
func (c *Client) Resume(ctx context.Context, id, checkpointID string) (workflows.WriteResult, error) {
	body := map[string]any{}
	if checkpointID != "" {
		body["checkpoint_id"] = checkpointID
	}
	return c.write(ctx, id, []string{"resume"}, body)
}

// Fork starts workflow newID from the checkpoint of workflow id with
// updates (channel → update) applied through the reducers; id is
// unchanged.
func (c *Client) Fork(ctx context.Context, id, checkpointID, newID string, updates map[string]any) (workflows.WriteResult, error) {
	return c.write(ctx, id, []string{"fork"}, map[string]any{"checkpoint_id": checkpointID, "workflow_id": newID, "updates": updates})
}

// Complete ends the workflow (outcome success, failure or aborted).
func (c *Client) Complete(ctx context.Context, id, outcome string, output any) (workflows.WriteResult, error) {
	body := map[string]any{"outcome": outcome}
	if output != nil { // nil: no output (it was sent as null, an output of null)
		body["output"] = output
	}
	return c.write(ctx, id, []string{"complete"}, body)
}

// State returns the workflow's current state.
func (c *Client) State(ctx context.Context, id string) (workflows.View, error) {
	var v workflows.View
	return v, c.do(ctx, http.MethodGet, c.url(id), nil, &v)
}

// History returns the workflow's checkpoints, oldest first.
func (c *Client) History(ctx context.Context, id string) ([]workflows.HistoryEntry, error) {
	var all []workflows.HistoryEntry
	cursor := ""
	for {
		// page by page: the route bounds a page's bytes (each checkpoint
		// holds its whole state), and one answer of every checkpoint was
		// 180 MB for a walkthrough's workflow
		u := c.url(id, "checkpoints")
		if cursor != "" {
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			u += sep + "cursor=" + url.QueryEscape(cursor)
		}
		var out struct {
			Checkpoints []workflows.HistoryEntry `json:"checkpoints"`
			NextCursor  string                   `json:"next_cursor"`
		}
		if err := c.do(ctx, http.MethodGet, u, nil, &out); err != nil {
			return all, err
		}
		all = append(all, out.Checkpoints...)
		if out.NextCursor == "" || out.NextCursor == cursor {
			return all, nil
		}
		cursor = out.NextCursor
	}
}

// List returns one page of the workflows the token reads (GET
// /v1/workflows; Client.Scope, when set, narrows it to that scope), in key
// order (scope, '/', id): limit per page (1 to 500; 0: the server's
// default, 50), starting after cursor (a NextCursor; "" for the first
// page). A bad limit or cursor is an *Error 400 naming it.
func (c *Client) List(ctx context.Context, limit int, cursor string) (workflows.ListPage, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if c.Scope != "" {
		q.Set("scope", c.Scope)
	}
	u := strings.TrimRight(c.Base, "/") + "/v1/workflows"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var page workflows.ListPage
	err := c.do(ctx, http.MethodGet, u, nil, &page)
	return page, err
}

// StateAt returns the checkpoint checkpointID with the workflow's state as
// of it (time travel).
func (c *Client) StateAt(ctx context.Context, id, checkpointID string) (workflows.HistoryEntry, error) {
	var h workflows.HistoryEntry
	return h, c.do(ctx, http.MethodGet, c.url(id, "checkpoints", checkpointID), nil, &h)
}
