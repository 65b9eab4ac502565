package weaviate

import (
	"context"
	"sync"
)

// ref is what CandidateRefs returns of a document besides its scores.
type ref struct{ id, scope string }

// refCache maps the object UUIDs of a collection to the id and scope of
// the documents they hold, so that CandidateRefs over gRPC can ask the
// server for object UUIDs alone: an object's properties are what a
// candidate list costs the server (a bm25 list of 200 objects: 3.6 ms of
// server CPU with the UUID alone, 6.3 ms with the id property, 8.0 ms with
// docProp; nearVector 4.6, 4.8 and 5.9 ms; README, "Weaviate candidate
// queries").
//
// Both are fixed for a UUID: it is UUID v5 of the id (ObjectID), and a
// document's id is made from its scope (a memory's is events.EntityKey,
// a coordination pattern's a hash of scope and steps) or, for tools, the
// scope is always search.ToolScope. The cache is filled by every Upsert and Docs of
// this process and, for UUIDs it does not know (objects another process
// wrote, or written before this process started), by one query for their
// id and scope (lookup); Delete removes entries. The hits of a search are
// always read whole by Docs, which checks Filter.Admits on them, so even
// a scope that did change under one id could never leak a document.
// It holds one entry per object seen (its UUID, id and scope strings)
// until the object is deleted.
type refCache struct {
	mu     sync.RWMutex
	byUUID map[string]ref
}

func (c *refCache) put(uuid string, r ref) {
	c.mu.Lock()
	c.byUUID[uuid] = r
	c.mu.Unlock()
}

func (c *refCache) drop(uuids []string) {
	c.mu.Lock()
	for _, u := range uuids {
		delete(c.byUUID, u)
	}
	c.mu.Unlock()
}

// get returns the refs of uuids (ok false for each unknown one).
func (c *refCache) get(uuids []string) (refs []ref, unknown []string) {
	refs = make([]ref, len(uuids))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, u := range uuids {
		r, ok := c.byUUID[u]
		if !ok {
			unknown = append(unknown, u)
			continue
		}
		refs[i] = r
	}
	return refs, unknown
}

// resolveRefs fills the id and scope of hits (gRPC results carrying only
// their UUID) from the cache, looking up the unknown UUIDs in one query
// per cfg.MaxFetch of them. A hit whose object is gone by then keeps an
// empty id.
func (s *Store) resolveRefs(ctx context.Context, hits []hit) error {
	cache := s.refs[s.class]
	uuids := make([]string, len(hits))
	for i := range hits {
		uuids[i] = hits[i].UUID
	}
	_, unknown := cache.get(uuids)
	for start := 0; start < len(unknown); start += s.cfg.MaxFetch {
		chunk := unknown[start:min(start+s.cfg.MaxFetch, len(unknown))]
		var found []hit
		err := s.retry(ctx, "look up candidates", func(ctx context.Context) error {
			var err error
			found, err = s.grpc.search(ctx, s.class, "", s.idProp, nil, "", pbTexts("_id", chunk), len(chunk), []string{s.idProp, "scope"}, true)
			return err
		})
		if err != nil {
			return err
		}
		for i := range found {
			cache.put(found[i].UUID, ref{found[i].MemoryID + found[i].PatternID + found[i].ToolID, found[i].Scope})
		}
	}
	refs, _ := cache.get(uuids)
	for i := range hits {
		hits[i].MemoryID, hits[i].PatternID, hits[i].ToolID, hits[i].Scope = refs[i].id, "", "", refs[i].scope
	}
	return nil
}
