package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// What a Go embedder of httpapi.Client found (a walkthrough, 2026-12-03),
// against a stub service: an answer above 8 MiB was cut and failed as
// "unexpected end of JSON input"; Search dropped Query.SessionID; a
// status other than 400 and 404 was an unexported error whose status
// only an undocumented method gave; a feedback without a memory id was
// sent as POST /v1/memories//feedback.
func TestClientAnswersAndErrors(t *testing.T) {
	var gotQuery string
	big := strings.Repeat("x", 9<<20) // a legal answer above the old 8 MiB cut
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/memories/search":
			gotQuery = r.URL.RawQuery
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"memories":[{"id":"m1","scope":"project:a","title":"t","content":%q}]}`, big)
		case r.URL.Path == "/v1/memories" && r.Method == "POST":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			fmt.Fprint(w, `{"error":"invalid argument: /content: too large","pointer":"/content","reason":"too large"}`)
		default:
			w.Header().Set("Retry-After", "5")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"the broker did not answer"}`)
		}
	}))
	defer srv.Close()
	c := &httpapi.Client{Base: srv.URL}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := c.Search(ctx, search.Query{Text: "q", Scope: "project:a", SessionID: "s-1"})
	if err != nil || len(res.Memories) != 1 || len(res.Memories[0].Content) != len(big) {
		t.Fatalf("a 9 MiB answer: %v (%d memories)", err, len(res.Memories))
	}
	if !strings.Contains(gotQuery, "session_id=s-1") {
		t.Errorf("the search's query %q has no session_id", gotQuery)
	}

	_, err = c.Record(ctx, search.Record{Title: "t", Description: "d", Content: "c", Outcome: "success"})
	var se *httpapi.StatusError
	if !errors.As(err, &se) || se.Status != 413 || se.Pointer != "/content" || !errors.Is(err, search.ErrInvalid) || err.Error() != "invalid argument: /content: too large" {
		t.Errorf("a 413: %v (%+v), want a StatusError 413 naming /content that is search.ErrInvalid", err, se)
	}
	_, err = c.Feedback(ctx, search.Feedback{MemoryID: "m1", Helpful: true})
	if !errors.As(err, &se) || se.Status != 503 || se.RetryAfter != 5*time.Second || errors.Is(err, search.ErrInvalid) {
		t.Errorf("a 503: %v (%+v), want a StatusError 503 with RetryAfter 5s, not ErrInvalid", err, se)
	}
	if _, err = c.Feedback(ctx, search.Feedback{Helpful: true}); !errors.Is(err, search.ErrInvalid) || !strings.Contains(err.Error(), "memory_id") {
		t.Errorf("a feedback without a memory id: %v, want search.ErrInvalid naming memory_id", err)
	}
	// an idempotency key the header cannot carry is refused before it is
	// sent, naming the byte (it was quoted and refused for "\\")
	if _, err = c.Record(ctx, search.Record{Title: "t", Description: "d", Content: "c", Outcome: "success", IdempotencyKey: "a\nb"}); !errors.Is(err, search.ErrInvalid) || !strings.Contains(err.Error(), "byte 1 (0x0a)") {
		t.Errorf("a key holding a newline: %v, want search.ErrInvalid naming byte 1", err)
	}
}

// An id that is no entity id ("." or "..", which url.PathEscape keeps) is
// refused by the client before any request; sent, the router's 307 to
// the cleaned path made search_get "." answer the list of searches and
// memory_feedback ".." another route's refusal (a security review,
// 2026-12-03). The client follows no redirect either.
func TestClientRefusesDotIDs(t *testing.T) {
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent++
		http.Redirect(w, r, "/v1/searches/", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := &httpapi.Client{Base: srv.URL}
	ctx := context.Background()
	for _, id := range []string{".", ".."} {
		if _, err := c.SearchGet(ctx, id, ""); !errors.Is(err, search.ErrInvalid) {
			t.Errorf("search_get %q: %v, want search.ErrInvalid", id, err)
		}
		if _, err := c.SearchResume(ctx, id, "", "approve", "", ""); !errors.Is(err, search.ErrInvalid) {
			t.Errorf("search_resume %q: %v, want search.ErrInvalid", id, err)
		}
		if _, err := c.Improvement(ctx, id, ""); !errors.Is(err, search.ErrInvalid) {
			t.Errorf("pair_improvement %q: %v, want search.ErrInvalid", id, err)
		}
		if _, err := c.Feedback(ctx, search.Feedback{MemoryID: id, Helpful: true}); !errors.Is(err, search.ErrInvalid) {
			t.Errorf("memory_feedback %q: %v, want search.ErrInvalid", id, err)
		}
		if _, err := c.PatternGet(ctx, id); !errors.Is(err, search.ErrInvalid) || !strings.Contains(err.Error(), "/pattern_id") {
			t.Errorf("pattern_get %q: %v, want search.ErrInvalid naming /pattern_id", id, err)
		}
		if _, err := c.PatternHistory(ctx, id, 0, ""); !errors.Is(err, search.ErrInvalid) || !strings.Contains(err.Error(), "/pattern_id") {
			t.Errorf("pattern_history %q: %v, want search.ErrInvalid naming /pattern_id", id, err)
		}
	}
	if sent != 0 {
		t.Errorf("%d requests sent", sent)
	}
	// a valid id answered with a redirect is not followed
	_, err := c.SearchGet(ctx, "s-1", "")
	var se *httpapi.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTemporaryRedirect || sent != 1 {
		t.Errorf("a redirect: %v (%d requests), want the 307 itself, not followed", err, sent)
	}
}

// A 400 naming a body member or a query parameter is the
// *search.FieldError or *search.ArgError the in-process memory service
// returns, and a 413 naming a member a *search.FieldError wrapping
// events.ErrEventTooLarge: before, each was a plain search.ErrInvalid
// whose member only the text named (a Go-package walkthrough, 2026-12-04).
// A Client without a usable Base fails naming Base (it was net/http's
// `unsupported protocol scheme ""`), and a token ending in a newline is
// sent without it (it failed every call with "invalid header field value").
func TestClientErrorsNameTheMember(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/memories/search" && r.URL.Query().Get("query") == "":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid argument: query: required"}`)
		case r.URL.Path == "/v1/memories/search":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid argument: limit: \"1000\" is not an integer from 1 to 20 (absent: 5)","parameter":"limit","reason":"\"1000\" is not an integer from 1 to 20 (absent: 5)"}`)
		case r.URL.Path == "/v1/memories" && r.Method == "POST":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid argument: /description: required, at most 200 characters","pointer":"/description","reason":"required, at most 200 characters"}`)
		default:
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			fmt.Fprint(w, `{"error":"comment: 1000000 bytes encoded","pointer":"/comment","reason":"1000000 bytes encoded"}`)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := &httpapi.Client{Base: srv.URL + "/", Token: "tok\n"}

	_, err := c.Record(ctx, search.Record{Title: "t", Content: "c", Outcome: "success"})
	var fe *search.FieldError
	if !errors.As(err, &fe) || fe.Pointer != "/description" || fe.Reason != "required, at most 200 characters" ||
		!errors.Is(err, search.ErrInvalid) || err.Error() != "invalid argument: /description: required, at most 200 characters" {
		t.Errorf("a 400 naming /description: %v (%+v), want a search.FieldError naming it", err, fe)
	}
	if auth != "Bearer tok" {
		t.Errorf("Authorization %q, want the token without its newline", auth)
	}
	_, err = c.Search(ctx, search.Query{Text: "q", Limit: 1000})
	var ae *search.ArgError
	if !errors.As(err, &ae) || ae.Arg != "limit" || !errors.Is(err, search.ErrInvalid) || errors.As(err, &fe) ||
		err.Error() != `invalid argument: limit: "1000" is not an integer from 1 to 20 (absent: 5)` {
		t.Errorf("a 400 naming limit: %v (%+v), want a search.ArgError naming it", err, ae)
	}
	ae = nil
	if _, err = c.Search(ctx, search.Query{}); !errors.Is(err, search.ErrInvalid) || errors.As(err, &ae) || err.Error() != "invalid argument: query: required" {
		t.Errorf("a 400 naming nothing: %v, want search.ErrInvalid alone", err)
	}
	fe = nil
	_, err = c.Feedback(ctx, search.Feedback{MemoryID: "m1", Comment: "long"})
	var se *httpapi.StatusError
	if !errors.As(err, &se) || se.Status != 413 || !errors.As(err, &fe) || fe.Pointer != "/comment" ||
		!errors.Is(err, search.ErrInvalid) || !errors.Is(err, events.ErrEventTooLarge) {
		t.Errorf("a 413 naming /comment: %v (%+v), want a StatusError and a search.FieldError naming it, events.ErrEventTooLarge", err, fe)
	}

	for _, base := range []string{"", "127.0.0.1:8080", "ftp://h"} {
		_, err := (&httpapi.Client{Base: base}).WhoAmI(ctx)
		if err == nil || !strings.Contains(err.Error(), "httpapi.Client.Base") {
			t.Errorf("Base %q: %v, want an error naming httpapi.Client.Base", base, err)
		}
	}
}

// Client.Search searches the Query's Collection, as the in-process memory
// service does: before, a Query for coordination patterns or tools was
// sent to GET /v1/memories/search and answered memories, and a filter the
// HTTP API has no parameter for (ExcludeSourceSession, IDs) was dropped
// without a word (a Go-package walkthrough, 2026-12-04).
func TestClientSearchesTheQuerysCollection(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/patterns/search":
			fmt.Fprint(w, `{"patterns":[{"id":"pat-1","title":"get_order → refund","scope":"org:default","confidence":0.9,"tags":["refunds"],"source_sessions":["s1"]}],"total_found":1,"tokens_used":7}`)
		case "/v1/tools/search":
			fmt.Fprint(w, `{"tools":[{"id":"refund","title":"refund","scope":"org:*"}],"total_found":1,"tokens_used":2}`)
		default:
			fmt.Fprint(w, `{"memories":[{"id":"m1","title":"t","scope":"org:default"}],"total_found":1,"tokens_used":3}`)
		}
	}))
	defer srv.Close()
	c := &httpapi.Client{Base: srv.URL}
	ctx := context.Background()

	res, err := c.Search(ctx, search.Query{Text: "refund", Collection: search.Patterns})
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != "pat-1" || res.Memories[0].Collection != search.Patterns ||
		len(res.Memories[0].Tags) != 1 || len(res.Memories[0].SourceSessions) != 1 || res.TotalFound != 1 || res.TokensUsed != 7 {
		t.Errorf("patterns: %+v, %v; want pat-1 with its tag and source session", res, err)
	}
	res, err = c.Search(ctx, search.Query{Text: "refund", Collection: search.Tools})
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != "refund" || res.Memories[0].Collection != search.Tools {
		t.Errorf("tools: %+v, %v; want the tool refund", res, err)
	}
	res, err = c.Search(ctx, search.Query{Text: "refund"})
	if err != nil || len(res.Memories) != 1 || res.Memories[0].ID != "m1" || res.Memories[0].Collection != search.Memories {
		t.Errorf("memories: %+v, %v; want m1", res, err)
	}
	if want := []string{"/v1/patterns/search", "/v1/tools/search", "/v1/memories/search"}; strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("requests %v, want %v", paths, want)
	}

	n := len(paths)
	for _, q := range []search.Query{
		{Text: "x", Collection: "Nope"},
		{Text: "x", ExcludeSourceSession: "s1"},
		{Text: "x", IDs: func(string) bool { return true }},
	} {
		if _, err := c.Search(ctx, q); !errors.Is(err, search.ErrInvalid) {
			t.Errorf("%+v: %v, want search.ErrInvalid", q, err)
		}
	}
	if len(paths) != n {
		t.Errorf("%d requests sent for queries the API cannot answer", len(paths)-n)
	}
}
