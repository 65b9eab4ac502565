package sessions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// PatternSource is the search.Source of the CoordinationPattern collection:
// one document per pattern row (pt/<id>) of the patterns projection.
func PatternSource() search.Source {
	return search.Source{Collection: search.Patterns, Projection: PatternsName, IDOfKey: PatternIDOfKey,
		Docs: func(store *projections.Store, ids []string) ([]search.Doc, []string, error) {
			return search.RowDocs(store, ids, EachPattern, GetPattern, PatternDoc)
		}}
}

// PatternDoc is the document of coordination pattern p: title its tool
// chain, description the goal it served, content its numbered steps; tags
// its category first, then its other writing tools; confidence its
// success rate (Laplace); evidence its number of sessions; outcome success
// once a session met its criteria with it. Its source sessions are its
// last sessions (sessions.MaxPatternSessions), so PAIR's
// ExcludeSourceSession hides a pattern from a session that just followed
// it.
func PatternDoc(p Pattern) search.Doc {
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
	return search.Doc{ID: p.ID, Scope: p.Scope, Title: p.Title(), Description: "Used when " + p.Task + ".", Content: strings.TrimSpace(b.String()),
		Outcome: p.Outcome(), Tags: tags, SourceSessions: p.Sessions, Confidence: p.Confidence(), Evidence: p.SessionCount}
}
