package search

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
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

// ToolScope is the scope of every Tool document: the tool graph is learned
// from the sessions of every scope, so reading it needs access to all of
// them (the HTTP API's rule for the graph endpoints).
const ToolScope = "org:*"

// source is where one collection's documents come from: a projection,
// whose commits mark the documents dirty.
type source struct {
	coll Collection
	proj string
	// idOfKey maps a row key committed to proj to the id of the document
	// it changes ("" for none).
	idOfKey func(key string) string
	// docs returns the documents with ids, and the ids that are gone; nil
	// ids: every document.
	docs func(store *projections.Store, ids []string) (found []Doc, gone []string, err error)
}

// EmbedText is the text the index embeds for a document of collection c:
// DocText, except for coordination patterns, whose vector is made from
// their title (the tool chain) and description (the goal) only. Their
// content — every step with its argument names — is for BM25; embedding
// it made each new pattern cost about 2.5 times as much (USE lite reads up
// to 128 tokens, and a step list fills them), which in the ingest benchmark
// took CPU from the processors.
func EmbedText(c Collection, d Doc) string {
	if c == Patterns {
		return d.Title + "\n" + d.Description
	}
	return DocText(d)
}

func sources() []source {
	return []source{
		{coll: Memories, proj: memories.Name, idOfKey: memoryIDOfKey, docs: memoryDocs},
		{coll: Patterns, proj: sessions.Name, idOfKey: sessions.PatternIDOfKey, docs: patternDocs},
		{coll: Tools, proj: toolgraph.Name, idOfKey: toolgraph.ToolOfKey, docs: toolDocs},
	}
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
func DocOf(m memories.Memory) Doc {
	return Doc{ID: m.Key(), Scope: m.Scope, Title: m.Title, Description: m.Description, Content: m.Content, Outcome: m.Outcome,
		Tags: m.Tags, SourceSessions: m.SourceSessions, Confidence: m.Confidence, Pruned: m.Pruned, Evidence: m.Evidence, UsageCount: m.UsageCount}
}

func memoryDocs(store *projections.Store, ids []string) ([]Doc, []string, error) {
	return rowDocs(store, ids, memories.Each, memories.Get, DocOf)
}

// rowDocs is a source's docs for a projection with one row per document:
// every row through each (ids nil), else each id through get.
func rowDocs[T any](store *projections.Store, ids []string,
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

// PatternDoc is the document of coordination pattern p: title its tool
// chain, description the goal it served, content its numbered steps; tags
// its category first, then its other writing tools; confidence its
// success rate (Laplace); evidence its number of sessions; outcome success
// once a session met its criteria with it. Its source sessions are its
// last sessions (sessions.MaxPatternSessions), so PAIR's
// ExcludeSourceSession hides a pattern from a session that just followed
// it.
func PatternDoc(p sessions.Pattern) Doc {
	var b strings.Builder
	fmt.Fprintf(&b, "Tool sequence (%s):\n", p.Category)
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	tags := []string{p.Category}
	for _, t := range p.Tools {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return Doc{ID: p.ID, Scope: p.Scope, Title: p.Title(), Description: "Used when " + p.Task + ".", Content: strings.TrimSpace(b.String()),
		Outcome: p.Outcome(), Tags: tags, SourceSessions: p.Sessions, Confidence: p.Confidence(), Evidence: p.SessionCount}
}

func patternDocs(store *projections.Store, ids []string) ([]Doc, []string, error) {
	return rowDocs(store, ids, sessions.EachPattern, sessions.GetPattern, PatternDoc)
}

// ToolNeighbours is how many neighbours each way a Tool document names.
const ToolNeighbours = 3

// ToolDoc is the document of a tool: title its id, description its id in
// words ("Tool: search direct flight."), no content. Its most frequent
// neighbours (ToolNeighbours each way) are tags, "follows:<tool>" and
// "precedes:<tool>": filterable and returned, but neither embedded nor
// BM25-indexed — in the text, a tool's neighbours' names made it match
// queries for them (get_reservation_details outranked
// search_direct_flight for "search direct flight"). Counts stay out of the
// document's text (they would change it, and its vector, on every call);
// Evidence is the number of calls, so hybrid ranking gives established
// tools' exact names their BM25 share. Confidence 1 and outcome success: a
// tool is an observed fact, not a belief that feedback moves. Scope
// ToolScope.
func ToolDoc(p toolgraph.Profile) Doc {
	var tags []string
	for _, t := range p.Before {
		tags = append(tags, "follows:"+t)
	}
	for _, t := range p.After {
		tags = append(tags, "precedes:"+t)
	}
	words := strings.Join(strings.FieldsFunc(p.Tool, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == '/' }), " ")
	return Doc{ID: p.Tool, Scope: ToolScope, Title: p.Tool, Description: "Tool: " + words + ".", Tags: tags,
		Outcome: events.OutcomeSuccess, Confidence: 1, Evidence: p.Calls}
}

func toolDocs(store *projections.Store, ids []string) (found []Doc, gone []string, err error) {
	g, err := toolgraph.Load(store)
	if err != nil {
		return nil, nil, err
	}
	byTool := map[string]toolgraph.Profile{}
	for _, p := range g.Profiles(ToolNeighbours) {
		if ids == nil {
			found = append(found, ToolDoc(p))
		} else {
			byTool[p.Tool] = p
		}
	}
	for _, id := range ids {
		if p, ok := byTool[id]; ok {
			found = append(found, ToolDoc(p))
		} else {
			gone = append(gone, id)
		}
	}
	return found, gone, nil
}
