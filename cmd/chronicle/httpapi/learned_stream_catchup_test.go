package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
)

// TestLearnedStreamCatchUpSendsPosition: a follow=false stream ends with
// an id-only block holding the position it reached, so a catch-up client
// whose filter matched nothing resumes after what was scanned (found by
// a new user's walkthrough: such a stream sent no id, and the client
// rescanned the topic from 0:0 on every poll). Resuming from it delivers
// only what was written since, still filtered by scope.
func TestLearnedStreamCatchUpSendsPosition(t *testing.T) {
	_, srv := setup(t) // 2 partitions
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 3 {
		recordIn(t, srv, "project:a", "Catch-up memory a"+string(rune('0'+i)))
	}
	// count reads a follow=false stream to its end: its events' scopes,
	// and the last event ID it set
	count := func(query, lastEventID string) ([]string, string) {
		resp, rd := openStream(t, ctx, srv.URL+"/v1/learned/stream?follow=false&types=memory.created.v1"+query, lastEventID)
		defer resp.Body.Close()
		var scopes []string
		for {
			ev, ok := rd.next()
			if !ok {
				return scopes, rd.lastID
			}
			env := ceOf(t, ev)
			scopes = append(scopes, env.EffectiveScope())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, _ := count("", ""); len(got) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 3 memory.created.v1 events did not arrive")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// project:b has nothing: the filtered catch-up sends no event, but
	// the position it reached (past project:a's memories)
	got, lastID := count("&scope=project:b", "")
	if len(got) != 0 {
		t.Fatalf("scope=project:b: %v, want no event", got)
	}
	if _, err := httpapi.ParseLearnedCursor(lastID); err != nil {
		t.Fatalf("the catch-up stream ended with id %q: %v, want the position it reached", lastID, err)
	}
	if again, _ := count("", lastID); len(again) != 0 {
		t.Fatalf("resumed from %s: %v, want nothing (the position is past what was scanned)", lastID, again)
	}
	recordIn(t, srv, "project:a", "Catch-up memory a9")
	recordIn(t, srv, "project:b", "Catch-up memory b0")
	// resumed: the 2 new memories only, not the 3 scanned before; with
	// scope=project:b, project:b's one
	var all []string
	for {
		if all, _ = count("", lastID); len(all) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(all) != 2 {
		t.Fatalf("resumed from %s: %v, want the 2 memories written since", lastID, all)
	}
	if b, final := count("&scope=project:b", lastID); len(b) != 1 || b[0] != "project:b" || final == lastID {
		t.Errorf("resumed from %s with scope=project:b: %v (last id %s), want project:b's one new memory and a later id", lastID, b, final)
	}
}
