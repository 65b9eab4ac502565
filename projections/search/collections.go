package search

import (
	"fmt"
	"strings"

	"github.com/chronicle-dev/chronicle/projections"
)

// Collection names a searchable collection: a Weaviate class (with the
// store's class prefix), a MemStore of its own in the embedded default.
type Collection string

// The collections of the memory-search design.
const (
	// Memories are the memory bank's memories (processors/memories).
	Memories Collection = "Memory"
	// Patterns are coordination patterns: the tool sequences of evaluated
	// sessions with their success rates (sessions.Pattern).
	Patterns Collection = "CoordinationPattern"
	// Tools are the tools of the learned tool graph (toolgraph.Profile).
	Tools Collection = "Tool"
)

// Collections lists every collection, memories first.
func Collections() []Collection { return []Collection{Memories, Patterns, Tools} }

// ParseCollection checks a collection name (case-insensitive; "" is
// Memories). Errors wrap ErrInvalid.
func ParseCollection(s string) (Collection, error) {
	if s == "" {
		return Memories, nil
	}
	for _, c := range Collections() {
		if strings.EqualFold(s, string(c)) {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: collection: %q is not Memory, CoordinationPattern or Tool", ErrInvalid, s)
}

// MultiStore is a VectorStore whose own methods serve the Memories
// collection and which holds the other collections too (Weaviate's
// Store). An Index given a plain VectorStore keeps patterns and tools in a
// MemStore each.
type MultiStore interface {
	VectorStore
	// Collection is the store of collection c (itself for Memories).
	Collection(c Collection) VectorStore
}

// ToolScope is the scope of every Tool document: the Tool collection is
// the union of every scope's tool graph, so reading it needs access to all
// of them (the HTTP API's rule for the graph endpoints). It names no real
// scope: GET /v1/tools/search filters by scope through the per-scope
// graphs (Query.IDs), not by this.
const ToolScope = "org:*"

// Source is where one collection's documents come from: a projection
// whose commits mark the documents dirty. The processor that owns the
// projection provides it (memories.SearchSource, sessions.PatternSource,
// toolgraph.SearchSource), so this package depends on no processor.
type Source struct {
	// Collection is the collection the documents go to.
	Collection Collection
	// Projection is the name of the projection whose commits change them.
	Projection string
	// IDOfKey maps a row key committed to Projection to the id of the
	// document it changes ("" for none).
	IDOfKey func(key string) string
	// Docs returns the documents with ids, and the ids that are gone; nil
	// ids: every document.
	Docs func(store *projections.Store, ids []string) (found []Doc, gone []string, err error)
}

// EmbedText is the text the index embeds for a document of collection c:
// its title and description. For coordination patterns that is the tool
// chain and the goal; their content — every step with its argument names —
// is for BM25 (embedding it made each new pattern cost about 2.5 times as
// much: USE lite reads up to 128 tokens, and a step list fills them, which
// in the ingest benchmark took CPU from the processors). For memories it
// is the ReasoningBank item's title and one-sentence description ("Use
// when <goal>: …" for a distilled strategy) without the content (issue
// 11): a distilled strategy's content is its tool steps with argument
// names, alike for every strategy that used the same tools, while the
// description names its task. Measured on tuning sets only (processors/pair
// TestTuneRanking): with the same fusion (RRF K = 3, BM25 × 3), 25 of 32
// tau-bench sessions of tasks in neither half of pair_recall_at_3 found a
// same-task memory in the top 3 with these vectors, 22 with whole-text
// ones; the tuning half stayed at 27/28. Tools keep their whole text
// (DocText). Every document is BM25-indexed by DocText, content included.
func EmbedText(c Collection, d Doc) string {
	if c == Patterns || c == Memories || c == "" {
		return d.Title + "\n" + d.Description
	}
	return DocText(d)
}

// RowDocs is a Source's Docs for a projection with one row per document:
// every row through each (ids nil), else each id through get.
func RowDocs[T any](store *projections.Store, ids []string,
	each func(*projections.Store, func(T) bool) error,
	get func(*projections.Store, string) (T, bool, error),
	doc func(T) Doc,
) (found []Doc, gone []string, err error) {
	if ids == nil {
		err = each(store, func(r T) bool { found = append(found, doc(r)); return true })
		return found, nil, err
	}
	for _, id := range ids {
		r, ok, err := get(store, id)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			found = append(found, doc(r))
		} else {
			gone = append(gone, id)
		}
	}
	return found, gone, nil
}
