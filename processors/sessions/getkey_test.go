package sessions

import (
	"errors"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Get with a bare session id (no scope) is an error naming the key, not
// "not found": every session row is keyed by scope, so a Go caller passing
// the id it sent was told the session does not exist (a Go-package
// walkthrough). An entity key of a session not projected is still ok ==
// false without an error.
func TestGetRefusesABareID(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, key := range []string{"s1", "/s1", "org:default/", ""} {
		if _, ok, err := Get(store, key); !errors.Is(err, ErrNotEntityKey) || ok {
			t.Errorf("Get(%q) = ok %v, err %v; want ErrNotEntityKey", key, ok, err)
		}
	}
	if _, ok, err := Get(store, events.EntityKey("", "s1")); err != nil || ok {
		t.Errorf("Get of an absent session's entity key = ok %v, err %v; want not found, no error", ok, err)
	}
}
