package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// Client is a search.Backend over a running service's HTTP API, for
// `chronicle mcp` on stdio: the memory tools of an agent runtime reach the
// service (and its single writer of the data directory) through it.
//
// Errors: a 400 whose answer names a body member is a *search.FieldError
// (Pointer, Reason), one that names a query parameter a *search.ArgError
// (Arg, Reason), as the in-process memory service returns them; every 400
// is search.ErrInvalid and every 404 search.ErrNotFound; other statuses
// are a *StatusError. A service that does not answer fails at HTTP's
// timeout or ctx's deadline, whichever comes first; one that refuses the
// connection fails at once. A Client is safe for concurrent use once its
// fields are set.
type Client struct {
	// Base is the service URL, e.g. http://127.0.0.1:8080 (http or https,
	// with a host; a trailing slash is ignored). Required: every call
	// fails naming Base without it.
	Base string
	// Token is sent as a bearer token when set, without the white space
	// around it (a token read from a file often ends in a newline).
	Token string
	// HTTP is the client (default: 30 s timeout, redirects not followed).
	HTTP *http.Client
}

var _ search.Backend = (*Client)(nil)

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	return c.doHeader(ctx, method, path, nil, body, out)
}

// doHeader is do with the request headers hdr added.
func (c *Client) doHeader(ctx context.Context, method, path string, hdr http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	// a Client without a usable Base failed with net/http's
	// `unsupported protocol scheme ""`, which names no field (a Go-package
	// walkthrough)
	if u, err := url.Parse(c.Base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("httpapi.Client.Base %q: not the http:// or https:// URL of a running chronicle serve (e.g. http://127.0.0.1:8080)", c.Base)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return err
	}
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	// trimmed: "tok\n" failed every call with net/http's "invalid header
	// field value" (the CLI trimmed it, the Client did not)
	if tok := strings.TrimSpace(c.Token); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := c.HTTP
	if hc == nil {
		// redirects are not followed: every route answers where it is
		// asked, and the router's 307 to a cleaned path (an id "." or
		// "..") re-sent the token and body to another route (a security
		// review; ids are checked before now, idPath)
		hc = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// an answer is read whole up to ClientMaxAnswerBytes; a larger one is
	// an error that says so (it was cut at 8 MiB and failed as
	// "unexpected end of JSON input": twenty memories of about 800 KB
	// make a legal 9.6 MB search answer — a Go embedder's walkthrough)
	b, err := io.ReadAll(io.LimitReader(resp.Body, ClientMaxAnswerBytes+1))
	if err != nil {
		return fmt.Errorf("chronicle %s %s: reading the answer: %w", method, path, err)
	}
	if len(b) > ClientMaxAnswerBytes {
		return fmt.Errorf("chronicle %s %s: the answer is larger than %d bytes (httpapi.ClientMaxAnswerBytes): ask for fewer results", method, path, ClientMaxAnswerBytes)
	}
	if resp.StatusCode >= 300 {
		var e errorBody
		_ = json.Unmarshal(b, &e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		// The memory routes answer 404 for a memory the token may not see
		// (as for a missing one) and 403 only for a scope it may not write,
		// which is not a missing memory.
		switch resp.StatusCode {
		case http.StatusBadRequest:
			// the member or parameter the service named, as the
			// in-process service's error (it was a plain ErrInvalid,
			// which errors.As found no field in: a Go-package
			// walkthrough)
			msg := wrapAs(search.ErrInvalid, e.Error).Error()
			switch {
			case e.Index != nil && e.Pointer != "" && e.Reason != "":
				// an event of POST /v1/events (Publish): as
				// events.Producer.Publish refuses it
				return &refusal{msg: e.Error, err: &events.ValidationError{Index: *e.Index, Pointer: e.Pointer, Reason: e.Reason}}
			case e.Pointer != "" && e.Reason != "":
				return &refusal{msg: msg, err: &search.FieldError{Pointer: e.Pointer, Reason: e.Reason}}
			case e.Parameter != "" && e.Reason != "":
				return &refusal{msg: msg, err: &search.ArgError{Arg: e.Parameter, Reason: e.Reason}}
			}
			return wrapAs(search.ErrInvalid, e.Error)
		case http.StatusNotFound:
			return wrapAs(search.ErrNotFound, e.Error)
		}
		se := &StatusError{Status: resp.StatusCode, Message: e.Error, Pointer: e.Pointer, Parameter: e.Parameter, Reason: e.Reason,
			msg: fmt.Sprintf("chronicle %s %s: %s: %s", method, path, resp.Status, e.Error)}
		if resp.StatusCode == http.StatusRequestEntityTooLarge && e.Pointer != "" && e.Reason != "" {
			// said as the memory tools' refusal of an argument, which
			// it is (search.FieldError's form): over MCP a feedback's
			// comment too large read "event 0: /: … bytes encoded" (an
			// MCP walkthrough)
			se.msg = fmt.Sprintf("%s: %s: %s", search.ErrInvalid, e.Pointer, e.Reason)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra >= 0 {
			se.RetryAfter = time.Duration(ra) * time.Second
		}
		return se
	}
	return json.Unmarshal(b, out)
}

// Publish sends envs to POST /v1/events as one CloudEvents JSON batch,
// all or nothing, and returns their ids once the service's broker
// acknowledged every one (202); no events is nil at once, nothing sent.
// The service checks them as events.Producer.Publish does: a refused
// event is a *events.ValidationError (errors.As) with the event's Index,
// Pointer and Reason, and nothing was written; a 403 (a scope the token
// may not write, a reserved source) or a 413 is a *StatusError naming
// the pointer; a 429 (the service busy with other bodies) or a 408 is a
// *StatusError of a request that wrote nothing: send it again, a 429
// after its RetryAfter; a 503 means the outcome is unknown, as Publish's
// events.ErrNotAcknowledged does: send the same events again (same
// scope, source and id, same content), which the processors drop as
// duplicates if they were written (StatusError.RetryAfter is the wait the
// service asked for). Bounded by the Client's HTTP timeout (30 s by
// default), on top of the service's own 15 s publish wait. Before, the
// Client had no method for it, and a Go program on the HTTP API wrote
// its own request (a Go-package walkthrough).
func (c *Client) Publish(ctx context.Context, envs ...events.Envelope) ([]string, error) {
	if len(envs) == 0 {
		return nil, nil
	}
	var out struct {
		IDs []string `json:"ids"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/events", envs, &out); err != nil {
		return nil, err
	}
	return out.IDs, nil
}

// idPath is id as one URL path segment, or search.ErrInvalid naming field
// when it is no entity id (events.CheckID): "." and "..", which
// url.PathEscape keeps, made the router answer another route (a security
// review, 2026-12-03: search_get "." listed the searches).
func idPath(field, id string) (string, error) {
	if err := events.CheckID(id); err != nil {
		// the argument by its pointer, as the MCP tools' schema refusals
		// name theirs ("search_id: …" read unlike "/after/0: …" over
		// stdio: a subscriber's walkthrough, 2026-12-06)
		return "", fmt.Errorf("%w: /%s: %q: %v", search.ErrInvalid, events.PointerToken(field), id, err)
	}
	return url.PathEscape(id), nil
}

// ClientMaxAnswerBytes is the largest answer Client reads (64 MiB): a
// memory search of MaxLimit (20) memories of up to one event each (960
// KiB) is about 20 MB. A larger answer is an error saying so.
const ClientMaxAnswerBytes = 64 << 20

// StatusError is an answer of the service with an HTTP status other than
// 400 and 404 (those are search.ErrInvalid and search.ErrNotFound, as the
// memory tools' own refusals): its text names the request, the status and
// the service's error; the fields let a caller act on it without reading
// the text (before, an unexported type: a Go embedder's walkthrough).
//
//   - 413 (a member too large for one event; Pointer names it): permanent,
//     errors.Is(err, search.ErrInvalid) holds;
//   - 401, 403: the token;
//   - 409, 422: the request conflicts with what was written (Record's
//     422, an Idempotency-Key reused with other fields, is no StatusError
//     but search.ErrKeyReused and search.ErrInvalid);
//   - 408 (POST /v1/events: the body did not arrive within the
//     service's ReadTimeout) and 429 (any request with a body: Publish,
//     Record, a feedback, a workflow write, a resume, an improvement;
//     the service's ingest budget stayed full, IngestBudget): nothing was
//     written, send it again (after RetryAfter for a 429);
//   - 503, 504: the service or its broker did not answer in time; the
//     outcome of a write is unknown, so retry it as it was sent (a
//     recording with the same Idempotency-Key, which the service answers
//     as the first); RetryAfter is the service's Retry-After, 0 when it
//     sent none.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the service's error text ("error"), without the request.
	Message string
	// Pointer is the JSON pointer of the request body's member the error
	// is about, Parameter the query parameter's name, Reason why: each
	// "" when the service named none.
	Pointer, Parameter, Reason string
	// RetryAfter is the wait the service asked for (Retry-After).
	RetryAfter time.Duration

	msg string
}

func (e *StatusError) Error() string { return e.msg }

// Unwrap is search.ErrInvalid for a 413 (a member too large, which only
// a shorter one fixes): a *search.FieldError naming the member and
// wrapping events.ErrEventTooLarge when the service named one, as the
// in-process service's error; nil for other statuses.
func (e *StatusError) Unwrap() error {
	if e.Status == http.StatusRequestEntityTooLarge {
		if e.Pointer != "" && e.Reason != "" {
			return &search.FieldError{Pointer: e.Pointer, Reason: e.Reason, Err: events.ErrEventTooLarge}
		}
		return search.ErrInvalid
	}
	return nil
}

// refusal is a 400 in the service's words whose member or parameter
// errors.As finds: err is a *search.FieldError or *search.ArgError (both
// search.ErrInvalid).
type refusal struct {
	msg string
	err error
}

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return e.err }

// Refusal is the service's HTTP status and its own error text, without
// the request (the MCP tools answer a 4xx in the service's words, as the
// /mcp endpoint does; `chronicle mcp` tells a missing token by the 401).
func (e *StatusError) Refusal() (status int, detail string) { return e.Status, e.Message }

// hasStatus tells whether err is the service's answer with HTTP status code.
func hasStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == code
}

// wrapAs wraps the service's error message in sentinel, whose text the
// service's message already starts with when it comes from the same
// sentinel ("memory not found: m1"), so it is not said twice.
// A 404 the service words about something other than a memory
// (`session "x" not found`) keeps the service's words alone: "memory not found" would misname it;
// it still matches search.ErrNotFound.
func wrapAs(sentinel error, msg string) error {
	if sentinel == search.ErrNotFound && strings.Contains(msg, "not found") && !strings.HasPrefix(msg, sentinel.Error()) {
		return notFoundError(msg)
	}
	return fmt.Errorf("%w: %s", sentinel, strings.TrimPrefix(msg, sentinel.Error()+": "))
}

// notFoundError is the service's 404 message; errors.Is(err,
// search.ErrNotFound) holds.
type notFoundError string

func (e notFoundError) Error() string { return string(e) }
func (e notFoundError) Unwrap() error { return search.ErrNotFound }

// Search implements search.Backend: GET /v1/memories/search, or for
// q.Collection search.Patterns GET /v1/patterns/search and search.Tools GET
// /v1/tools/search, whose hits carry their Tags and SourceSessions (before,
// every collection was searched as memories: a Go-package walkthrough).
// Sent: Text, Scope, Outcome, Limit, MinConfidence and SessionID; the
// service takes the source, read and write scopes from the token, and
// Readable filters the answer. ExcludeSourceSession and IDs have no
// parameter: a Query setting them is a *search.ArgError naming the field,
// not a search without the filter.
func (c *Client) Search(ctx context.Context, q search.Query) (search.Result, error) {
	coll, err := search.ParseCollection(string(q.Collection)) // as the in-process service
	if err != nil {
		return search.Result{}, err
	}
	path, key := "/v1/memories/search", ""
	switch coll {
	case search.Patterns:
		path, key = "/v1/patterns/search", "patterns"
	case search.Tools:
		path, key = "/v1/tools/search", "tools"
	}
	switch {
	case q.ExcludeSourceSession != "":
		return search.Result{}, &search.ArgError{Arg: "exclude_source_session", Reason: "the HTTP API has no such parameter: leave it empty"}
	case q.IDs != nil:
		return search.Result{}, &search.ArgError{Arg: "ids", Reason: "the HTTP API has no such parameter: leave it nil"}
	}
	v := url.Values{"query": {q.Text}, "scope": {q.Scope}, "outcome": {q.Outcome}}
	if q.SessionID != "" {
		// the session the retrievals are recorded for (it was dropped: a
		// Go embedder's walkthrough)
		v.Set("session_id", q.SessionID)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.MinConfidence != nil {
		v.Set("min_confidence", strconv.FormatFloat(*q.MinConfidence, 'f', -1, 64))
	}
	var res search.Result
	if key == "" {
		err = c.do(ctx, http.MethodGet, path+"?"+v.Encode(), nil, &res)
	} else {
		// {<key>: [CollectionHit], total_found, tokens_used}
		var page map[string]json.RawMessage
		if err = c.do(ctx, http.MethodGet, path+"?"+v.Encode(), nil, &page); err == nil {
			var hits []CollectionHit
			if err = json.Unmarshal(page[key], &hits); err == nil {
				_ = json.Unmarshal(page["total_found"], &res.TotalFound)
				_ = json.Unmarshal(page["tokens_used"], &res.TokensUsed)
				res.Memories = make([]search.Hit, len(hits))
				for i, h := range hits {
					res.Memories[i] = h.Hit
					res.Memories[i].Tags, res.Memories[i].SourceSessions = h.Tags, h.SourceSessions
				}
			}
		}
	}
	for i := range res.Memories {
		res.Memories[i].Collection = coll // as the in-process service
	}
	if err == nil && q.Readable != nil {
		kept := res.Memories[:0]
		for _, h := range res.Memories {
			if q.Readable(h.Scope) {
				kept = append(kept, h)
			}
		}
		res.Memories = kept
	}
	return res, err
}

// Record implements search.Backend (POST /v1/memories); r's
// IdempotencyKey is sent as the Idempotency-Key header, and the service's
// 422 for a key reused with other fields matches search.ErrKeyReused.
// Sent: Title, Description, Content, Outcome, Tags and Scope (empty: the
// token's default write scope, WhoAmI's DefaultWriteScope); Source and
// Readable are the service's, from the token. It answers once the memory
// bank applied the recording, or after at most 5 s
// (memories.DefaultRecordWait) with the memory as it was and a Message
// saying so; a 503 (the broker did not acknowledge) or a 504 is a
// *StatusError whose outcome is unknown: resend with the same
// IdempotencyKey.
func (c *Client) Record(ctx context.Context, r search.Record) (search.Recorded, error) {
	body := map[string]any{"title": r.Title, "description": r.Description, "content": r.Content, "outcome": r.Outcome, "tags": r.Tags, "scope": r.Scope}
	var hdr http.Header
	if r.IdempotencyKey != "" {
		// checked before it is sent: quoted, a key holding a newline
		// reached the service as `"a\nb"` and was refused for an escape
		// the caller never wrote (a Go embedder's walkthrough)
		if err := search.CheckIdempotencyKey(r.IdempotencyKey); err != nil {
			return search.Recorded{}, fmt.Errorf("%w: idempotency_key: %v", search.ErrInvalid, err)
		}
		hdr = http.Header{IdempotencyKeyHeader: {strconv.Quote(r.IdempotencyKey)}}
	}
	var out search.Recorded
	err := c.doHeader(ctx, http.MethodPost, "/v1/memories", hdr, body, &out)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusUnprocessableEntity {
		// the key reused for another recording: search.ErrKeyReused, and
		// the caller's invalid argument, said as the tools' own refusals
		// (over MCP it read "memory_record failed: … chronicle POST
		// /v1/memories: 422 Unprocessable Entity: …": a walkthrough)
		err = fmt.Errorf("%w: idempotency_key (the %s header): %w", search.ErrInvalid, IdempotencyKeyHeader,
			keyReused(strings.TrimPrefix(se.Message, IdempotencyKeyHeader+": ")))
	}
	// the route leaves the evidence out for a caller that may not read
	// the scope (search.WithheldRecorded)
	out.Withheld = err == nil && out.Evidence == nil
	return out, err
}

// keyReused is the service's text of a reused idempotency key; errors.Is
// finds search.ErrKeyReused in it.
type keyReused string

func (e keyReused) Error() string { return string(e) }
func (e keyReused) Unwrap() error { return search.ErrKeyReused }

// Feedback implements search.Backend (POST /v1/memories/{id}/feedback).
// Sent: MemoryID (an empty or malformed one is search.ErrInvalid before
// any request), Helpful, Comment and Scope; Source, Writable, Readable,
// SharedSource and DefaultScope are the service's, from the token. A
// memory the token cannot see is search.ErrNotFound.
func (c *Client) Feedback(ctx context.Context, f search.Feedback) (search.FeedbackResult, error) {
	var out search.FeedbackResult
	// an empty or malformed id is named before any request (an empty one
	// was POST /v1/memories//feedback, a 405 listing routes: a Go
	// embedder's walkthrough)
	seg, err := idPath("memory_id", f.MemoryID)
	if err != nil {
		return out, err
	}
	path := "/v1/memories/" + seg + "/feedback"
	if f.Scope != "" { // the memory's scope, when the id is in several the caller may write
		path += "?scope=" + url.QueryEscape(f.Scope)
	}
	err = c.do(ctx, http.MethodPost, path, map[string]any{"helpful": f.Helpful, "comment": f.Comment}, &out)
	// the route leaves new_confidence out for a caller that may not read
	// the memory's scope (search.WithheldFeedback)
	out.Withheld = err == nil && out.NewConfidence == nil
	return out, err
}

// WhoAmI asks the service who the client's token is (GET /v1/whoami).
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	var out WhoAmI
	return out, c.do(ctx, http.MethodGet, "/v1/whoami", nil, &out)
}
