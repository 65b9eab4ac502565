package passes

import (
	"encoding/json"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
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

// HistoryPage returns a page of the task's passes in order: those after
// pass number after (0: from the first), at most limit of them (0: no
// count bound), ending before the pass that would take the page's stored
// JSON past maxBytes bytes (0: no bound; a page holds at least one pass).
// more is true when passes follow the page. A pass holds its output (up to
// an event's size, 960 KiB) and nothing bounds how many a task has, so a
// task's history is read in pages (GET /v1/reasoning/{id}/history answered
// 19 MB in one body for 20 passes: a walkthrough, 2026-12-01).
func HistoryPage(store *projections.Store, key string, after, limit, maxBytes int) (page []Pass, more bool, err error) {
	from := ""
	if after > 0 {
		from = passKey(key, after)
	}
	size := 0
	err = store.Scan(Name, passPrefix(key), from, func(_ string, val []byte) (bool, error) {
		if len(page) > 0 && (limit > 0 && len(page) >= limit || maxBytes > 0 && size+len(val) > maxBytes) {
			more = true
			return false, nil
		}
		var p Pass
		if err := json.Unmarshal(val, &p); err != nil {
			return false, err
		}
		size += len(val)
		page = append(page, p)
		return true, nil
	})
	return page, more, err
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

// Summary is a reasoning task as GET /v1/reasoning lists it: Task without
// its plan, output and verdict, which can be large (GET
// /v1/reasoning/{id} answers them).
type Summary struct {
	ID             string `json:"id"`
	Scope          string `json:"scope"`
	Task           string `json:"task,omitempty"`
	Passes         int    `json:"passes"`
	Recorded       int    `json:"passes_recorded"`
	Status         string `json:"status"`
	Converged      bool   `json:"converged"`
	ConvergedPass  int    `json:"converged_pass,omitempty"`
	ProfileChanges int    `json:"profile_changes"`
	Refinements    int    `json:"refinement_actions"`
	StartedAt      string `json:"started_at"`
	UpdatedAt      string `json:"updated_at"`
}

// Key is the task's events.EntityKey, the order of List and its cursor.
func (s Summary) Key() string { return events.EntityKey(s.Scope, s.ID) }

// ListPage is a page of List as GET /v1/reasoning answers it: the tasks
// in key order and the cursor of the next page (the key, <scope>/<task
// id>, of the page's last task; "" on the last page).
type ListPage struct {
	Tasks      []Summary `json:"tasks"`
	NextCursor string    `json:"next_cursor"`
}

// List returns the reasoning tasks of scopes in events.EntityKey order
// (scope, '/', id), at most limit (≥ 1) of them, starting after the key
// cursor ("" from the first); next is the key of the last one returned
// when more follow, else "". Only the given scopes' rows are read; with
// scopes nil every scope is listed, those allow refuses skipped (allow
// nil: all). Before, a task was found only by its id: one recorded
// without a session could not be listed (a walkthrough, 2026-12-01).
func List(store *projections.Store, scopes []string, allow func(scope string) bool, limit int, cursor string) (list []Summary, next string, err error) {
	return projections.ListScoped(store, Name, "t/", scopes, allow, limit, cursor, func(key string, val []byte) (Summary, bool, error) {
		var s Summary
		if err := json.Unmarshal(val, &s); err != nil {
			return s, false, fmt.Errorf("passes: task %s: %w", key, err)
		}
		return s, true, nil
	})
}
