package weaviate

import (
	"context"
	"net/http"
	"sync"

	"github.com/weaviate/weaviate/entities/models"
)

// unsureSet holds the object UUIDs of a collection whose last batch
// request ended without a response (a connection error, a timeout, HTTP
// 502/503/504, or the context's end): the server may have crashed while
// applying it and kept the object without its inverted-index entries.
// Upsert deletes such objects one by one before writing them again
// (redo); a successful write drops them.
//
// Where this comes from (Weaviate v1.35.2, adapters/repos/db and its
// lsmkv package): each LSM bucket — the objects bucket, and one per
// inverted index, e.g. property_content_searchable, which BM25 reads, and
// property__id, which a filter on the id reads — has a write-ahead log of
// its own behind a 4 KiB bufio.Writer. A batch writes each object to the
// objects bucket and then its inverted entries; the logs are flushed
// together (Store.WriteWALs) only at the end of the batch, after the
// vector index inserts. An object of this package (a 512-dimension
// vector: over 2 KB) fills the objects bucket's buffer, so it reaches the
// file at once, while its few small inverted entries may still wait in
// their buffers: a SIGKILL (a crash) there leaves, after the restart, an
// object that Len counts but BM25 and filters do not find
// (TestUpsertRetriedAfterCrash sees it in most rounds). Writing the same
// object again does not repair it: the server compares it with the
// stored one and, finding properties and vector unchanged, skips the
// inverted index (shard_write_put.go, determineInsertStatus: skipUpsert;
// with only other properties changed it updates their entries alone).
// Deleting it by UUID (DELETE /v1/objects/{class}/{id}, which reads the
// objects bucket) removes it whatever its inverted entries, and the write
// after it indexes the object anew. A batch delete would not do: its
// filter on the id reads the inverted index the crash may have cut.
//
// The set lives in this process only: after a restart of this process,
// an object cut by a crash stays as it is until it is written with
// another vector or deleted.
type unsureSet struct {
	mu    sync.Mutex
	uuids map[string]bool
}

// add marks the objects of batch as unsure.
func (u *unsureSet) add(batch []*models.Object) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, o := range batch {
		u.uuids[string(o.ID)] = true
	}
}

// of returns the objects of batch that are unsure (none, at the cost of
// one lock, when nothing is).
func (u *unsureSet) of(batch []*models.Object) []*models.Object {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.uuids) == 0 {
		return nil
	}
	var out []*models.Object
	for _, o := range batch {
		if u.uuids[string(o.ID)] {
			out = append(out, o)
		}
	}
	return out
}

// drop marks the objects of batch as written whole.
func (u *unsureSet) drop(batch []*models.Object) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, o := range batch {
		delete(u.uuids, string(o.ID))
	}
}

// unsureOutcome reports whether a batch request that failed with err may
// have been applied in part: no response came (see unsureSet).
func unsureOutcome(ctx context.Context, err error) bool {
	return retryable(err) || ctx.Err() != nil
}

// redo deletes objs from class one by one, by UUID (and tenant, in a
// scoped class; see unsureSet; one request each, made only after a
// failed batch). A missing object or tenant is no error.
func (s *Store) redo(ctx context.Context, class string, objs []*models.Object) error {
	for _, o := range objs {
		del := s.client.Data().Deleter().WithClassName(class).WithID(string(o.ID))
		if o.Tenant != "" {
			del = del.WithTenant(o.Tenant)
		}
		err := del.Do(ctx)
		if err != nil && statusOf(err) != http.StatusNotFound && !isTenantMissing(err) {
			return err
		}
	}
	return nil
}
