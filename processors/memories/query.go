package memories

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/projections"
)

// Get returns the memory with key (events.EntityKey: scope "/" memory id);
// ok is false when that scope never recorded it.
func Get(store *projections.Store, key string) (Memory, bool, error) {
	var m Memory
	ok, err := store.GetJSON(Name, memKey(key), &m)
	return m, ok, err
}

// storeScan scans the memory bank's rows in store as they are now, as
// Tx.Scan scans them in an Apply.
func storeScan(store *projections.Store) func(prefix string, fn func(k string, v []byte) (bool, error)) error {
	return func(prefix string, fn func(k string, v []byte) (bool, error)) error {
		return store.Scan(Name, prefix, "", fn)
	}
}

// Scopes returns, sorted, the scopes that hold a memory with the bare id
// (usually one: memory ids are content addresses of scope and content).
func Scopes(store *projections.Store, id string) ([]string, error) { return store.ScopesOf(Name, id) }

// History returns every change of the memory with key (events.EntityKey) in
// order, and its stored signals (applied or waiting for consensus).
func History(store *projections.Store, key string) ([]Change, []Pending, error) {
	id := key
	var changes []Change
	hp, sp := "h/"+id+"/", "s/"+id+"/"
	if err := store.Scan(Name, hp, "", func(k string, v []byte) (bool, error) {
		if !projections.OwnRow(hp, k) {
			return true, nil // a change of a memory whose id extends this one's
		}
		var c Change
		if err := json.Unmarshal(v, &c); err != nil {
			return false, err
		}
		changes = append(changes, c)
		return true, nil
	}); err != nil {
		return nil, nil, err
	}
	var signals []Pending
	err := store.Scan(Name, sp, "", func(k string, v []byte) (bool, error) {
		if !projections.OwnRow(sp, k) {
			return true, nil
		}
		var p Pending
		if err := json.Unmarshal(v, &p); err != nil {
			return false, err
		}
		signals = append(signals, p)
		return true, nil
	})
	return changes, signals, err
}

// Retrievals returns the memory.retrieved.v1 events applied to the memory
// with key (events.EntityKey), in log order: who retrieved it, when, with
// which query, at which log position. RetrievalsPage reads them a page at
// a time.
func Retrievals(store *projections.Store, key string) ([]Retrieval, error) {
	out, _, err := RetrievalsPage(store, key, 0, 0, 0)
	return out, err
}

// RetrievalsPage returns a page of the retrievals of the memory with key
// in log order, starting with the one numbered from (0 is the first; a
// memory's retrievals are numbered 0, 1, … as the memory bank applies
// them): at most limit of them (0: no limit), ending before the one that
// would take the page's stored JSON past maxBytes (0: no bound), and
// holding at least one when any is left. next is the number of the first
// retrieval after the page, or 0 when the page is the last. Errors: the
// store's, or a row that does not decode.
func RetrievalsPage(store *projections.Store, key string, from, limit, maxBytes int) (page []Retrieval, next int, err error) {
	page = []Retrieval{}
	prefix := "r/" + key + "/"
	start := ""
	if from > 0 {
		start = retrievalKey(key, from-1) // Scan starts after it
	}
	size := 0
	err = store.Scan(Name, prefix, start, func(k string, v []byte) (bool, error) {
		if !projections.OwnRow(prefix, k) {
			return true, nil // a row of a memory whose id extends this one's
		}
		n, err := projections.ParseSeqKey(k[strings.LastIndexByte(k, '/')+1:])
		if err != nil {
			return false, fmt.Errorf("memories: retrieval row %q: %w", k, err)
		}
		if len(page) > 0 && (limit > 0 && len(page) >= limit || maxBytes > 0 && size+len(v) > maxBytes) {
			next = n
			return false, nil
		}
		var r Retrieval
		if err := json.Unmarshal(v, &r); err != nil {
			return false, err
		}
		size += len(v)
		page = append(page, r)
		return true, nil
	})
	return page, next, err
}

// Each calls fn for every memory in key order (scope, then id) until fn
// returns false.
func Each(store *projections.Store, fn func(Memory) bool) error {
	return store.Scan(Name, "m/", "", func(_ string, v []byte) (bool, error) {
		var m Memory
		if err := json.Unmarshal(v, &m); err != nil {
			return false, err
		}
		return fn(m), nil
	})
}

// Stats summarise distillation over the projection.
type Stats struct {
	// Memories is the number of distinct memories.
	Memories int `json:"memories"`
	// Distilled counts distinct distilled memories; Explicit the others.
	Distilled int `json:"distilled"`
	Explicit  int `json:"explicit"`
	// Recordings is the number of memory.recorded events applied, merged
	// or not; DuplicatesMerged = Recordings − Memories.
	Recordings       int `json:"recordings"`
	DuplicatesMerged int `json:"duplicates_merged"`
	// SessionsWithMemory is the number of distinct source sessions.
	SessionsWithMemory int `json:"sessions_with_memory_count"`
	Pruned             int `json:"pruned"`
}

// ComputeStats scans every memory.
func ComputeStats(store *projections.Store) (Stats, error) {
	var st Stats
	sessions := map[string]bool{}
	err := Each(store, func(m Memory) bool {
		st.Memories++
		if m.Source == "distilled" {
			st.Distilled++
		} else {
			st.Explicit++
		}
		st.Recordings += m.Evidence
		if m.Pruned {
			st.Pruned++
		}
		return true
	})
	if err == nil { // every source session, not only the last ones a memory names
		err = store.Scan(Name, "ms/", "", func(key string, _ []byte) (bool, error) {
			if i := strings.IndexByte(key, 0); i >= 0 {
				sessions[key[i+1:]] = true
			}
			return true, nil
		})
	}
	st.DuplicatesMerged = st.Recordings - st.Memories
	st.SessionsWithMemory = len(sessions)
	return st, err
}

// Find returns the memory of scope that a recording of title and content
// enters: the one whose normalised title and content are equal
// (distill.MemoryID's address). A recording creates it when none exists
// and merges into it otherwise, whatever id the existing memory has (a
// memory.recorded.v1 written straight to the log may name any id); ok is
// false when scope holds none.
func Find(store *projections.Store, scope, title, content string) (Memory, bool, error) {
	id, ok, err := store.Get(Name, digestKey(scope, distill.MemoryID(scope, title, content)))
	if err != nil || !ok {
		return Memory{}, false, err
	}
	return Get(store, events.EntityKey(scope, string(id)))
}

// FirstChange returns the first entry of the history of the memory with
// key (events.EntityKey): the recording that created it, whose New is the
// confidence the memory started at; ok is false for an unknown memory.
func FirstChange(store *projections.Store, key string) (Change, bool, error) {
	var c Change
	ok, err := store.GetJSON(Name, changeKey(key, 0), &c)
	return c, ok, err
}

// ListPage is a page of memories in events.EntityKey order (scope, '/',
// id) and the cursor of the next page (the key of the page's last memory;
// "" on the last page).
type ListPage struct {
	Memories   []Memory `json:"memories"`
	NextCursor string   `json:"next_cursor"`
}

// List returns the memories of scopes in events.EntityKey order (scope,
// '/', id), pruned ones included (a memory is never deleted: an audit
// lists every one), at most limit (≥ 1) of them, starting after the key
// cursor ("" from the first), and ending before the memory that would take
// the page's stored JSON past maxBytes (0: no bound; the page holds at
// least one): a memory's content may be close to the event limit, so a
// page of 500 could otherwise be hundreds of MB. next is the key of the
// last one returned when more follow, else "". Only the given scopes' rows
// are read; with scopes nil every scope is listed, those allow refuses
// skipped (allow nil: all). Before, a search (at most 20 hits) was the
// only way to find memories, so the bank could not be enumerated (an
// analyst's walkthrough, 2026-12-07).
func List(store *projections.Store, scopes []string, allow func(scope string) bool, limit, maxBytes int, cursor string) (list []Memory, next string, err error) {
	size := 0
	list, next, err = projections.ListScoped(store, Name, "m/", scopes, allow, limit, cursor, func(key string, val []byte) (Memory, bool, error) {
		var m Memory
		if maxBytes > 0 && size > 0 && size+len(val) > maxBytes {
			return m, false, errPageFull
		}
		if err := json.Unmarshal(val, &m); err != nil {
			return m, false, fmt.Errorf("memories: memory %s: %w", key, err)
		}
		size += len(val)
		return m, true, nil
	})
	if errors.Is(err, errPageFull) {
		return list, list[len(list)-1].Key(), nil
	}
	return list, next, err
}

// errPageFull stops List's scan at the memory that does not fit the page.
var errPageFull = errors.New("memories: page full")
