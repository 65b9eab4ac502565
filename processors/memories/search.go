package memories

import (
	"strings"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// SearchSource is the search.Source of the Memory collection: one document
// per memory row (m/<key>) of this projection.
func SearchSource() search.Source {
	return search.Source{Collection: search.Memories, Projection: Name, IDOfKey: memoryIDOfKey,
		Docs: func(store *projections.Store, ids []string) ([]search.Doc, []string, error) {
			return search.RowDocs(store, ids, Each, Get, DocOf)
		}}
}

// memoryIDOfKey is the document id of a memories row key ("m/<key>"): the
// memory's events.EntityKey, scope "/" memory id, so equal ids in two scopes
// are two documents. "" for the projection's other rows (history,
// signals).
func memoryIDOfKey(k string) string {
	id, ok := strings.CutPrefix(k, "m/")
	if !ok {
		return ""
	}
	return id
}

// DocOf is the vector-store document of memory m (without its vector); its
// id is the memory's events.EntityKey (search hits name the bare memory id).
func DocOf(m Memory) search.Doc {
	return search.Doc{ID: m.Key(), Scope: m.Scope, Title: m.Title, Description: m.Description, Content: m.Content, Outcome: m.Outcome,
		Tags: m.Tags, SourceSessions: m.SourceSessions, Confidence: m.Confidence, Pruned: m.Pruned, Evidence: m.Evidence, UsageCount: m.UsageCount}
}
