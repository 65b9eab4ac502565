package passes

import (
	"encoding/json"

	"github.com/chronicle-dev/chronicle/projections"
)

// Get returns the reasoning task whose events.EntityKey is key; ok is
// false when the projection has none.
func Get(store *projections.Store, key string) (Task, bool, error) {
	var t Task
	ok, err := store.GetJSON(Name, taskKey(key), &t)
	return t, ok, err
}

// History returns the task's passes in order.
func History(store *projections.Store, key string) ([]Pass, error) {
	var out []Pass
	err := store.Scan(Name, passPrefix(key), "", func(_ string, val []byte) (bool, error) {
		var p Pass
		if err := json.Unmarshal(val, &p); err != nil {
			return false, err
		}
		out = append(out, p)
		return true, nil
	})
	return out, err
}

// Scopes lists the scopes that hold a reasoning task with the bare id.
func Scopes(store *projections.Store, id string) ([]string, error) { return store.ScopesOf(Name, id) }

// Each calls fn for every task in key order (scope, then id).
func Each(store *projections.Store, fn func(t Task) error) error {
	return store.Scan(Name, "t/", "", func(_ string, val []byte) (bool, error) {
		var t Task
		if err := json.Unmarshal(val, &t); err != nil {
			return false, err
		}
		return true, fn(t)
	})
}
