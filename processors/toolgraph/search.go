package toolgraph

import (
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// SearchSource is the search.Source of the Tool collection: one document
// per tool of the learned graph (its profile, ToolNeighbours each way).
func SearchSource() search.Source {
	return search.Source{Collection: search.Tools, Projection: Name, IDOfKey: ToolOfKey, Docs: toolDocs}
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
func ToolDoc(p Profile) search.Doc {
	var tags []string
	for _, t := range p.Before {
		tags = append(tags, "follows:"+t)
	}
	for _, t := range p.After {
		tags = append(tags, "precedes:"+t)
	}
	words := strings.Join(strings.FieldsFunc(p.Tool, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == '/' }), " ")
	return search.Doc{ID: p.Tool, Scope: search.ToolScope, Title: p.Tool, Description: "Tool: " + words + ".", Tags: tags,
		Outcome: events.OutcomeSuccess, Confidence: 1, Evidence: p.Calls}
}

func toolDocs(store *projections.Store, ids []string) (found []search.Doc, gone []string, err error) {
	g, err := Load(store)
	if err != nil {
		return nil, nil, err
	}
	byTool := map[string]Profile{}
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
