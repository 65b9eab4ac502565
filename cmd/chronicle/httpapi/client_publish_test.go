package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/sessions"
)

// Client.Publish writes events through POST /v1/events as one batch and
// answers their ids; a refused event is the *events.ValidationError
// Producer.Publish gives (index, pointer, reason), nothing of the batch
// written; a scope the token may not write is a *StatusError 403. Before,
// the Client had no method for it (a Go-package walkthrough).
func TestClientPublish(t *testing.T) {
	p, _, base := scopedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &httpapi.Client{Base: base, Token: "tok-a"}
	ev := func(id, session string, data any) events.Envelope {
		t.Helper()
		env, err := events.New(events.SessionStarted, "test/runtime", id, time.Now(), data)
		if err != nil {
			t.Fatal(err)
		}
		env.SessionID, env.Scope = session, "project:a"
		return env
	}
	good := ev("pub-1", "pub-s1", events.SessionStartedData{OriginalTask: "refund an order", SuccessCriteria: []events.Criterion{}})
	ids, err := c.Publish(ctx, good)
	if err != nil || len(ids) != 1 || ids[0] != "pub-1" {
		t.Fatalf("Publish: %v %v", ids, err)
	}
	waitCaughtUp(t, p)
	if _, ok, err := sessions.Get(p.Store, events.EntityKey("project:a", "pub-s1")); err != nil || !ok {
		t.Fatalf("the published session: %v %v", ok, err)
	}
	// the second event lacks original_task: refused at index 1, the first not written
	next := ev("pub-2", "pub-s2", events.SessionStartedData{OriginalTask: "x", SuccessCriteria: []events.Criterion{}})
	bad := ev("pub-3", "pub-s3", map[string]any{"success_criteria": []any{}})
	_, err = c.Publish(ctx, next, bad)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Index != 1 || ve.Pointer == "" || ve.Reason == "" {
		t.Fatalf("a batch with an invalid event: %v; want an *events.ValidationError at index 1", err)
	}
	waitCaughtUp(t, p)
	if _, ok, _ := sessions.Get(p.Store, events.EntityKey("project:a", "pub-s2")); ok {
		t.Fatal("the refused batch's valid event was written")
	}
	// a scope the token may not write
	other := ev("pub-4", "pub-s4", events.SessionStartedData{OriginalTask: "x", SuccessCriteria: []events.Criterion{}})
	other.Scope = "project:b"
	_, err = c.Publish(ctx, other)
	var se *httpapi.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusForbidden || se.Pointer != "/scope" {
		t.Fatalf("another scope: %v; want a *StatusError 403 naming /scope", err)
	}
	if ids, err := c.Publish(ctx); ids != nil || err != nil {
		t.Fatalf("no events: %v %v; want nil, nothing sent", ids, err)
	}
}
