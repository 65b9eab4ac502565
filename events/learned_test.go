package events_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/schemas"
)

// TestLearnedTypesDocumented: LearnedTypes is exactly the registered types
// of chronicle.learned, each has its schema file, and the README's event
// table has a row for each naming that schema (issue 11: the README listed
// two of them).
func TestLearnedTypesDocumented(t *testing.T) {
	var onTopic []events.Type
	for _, typ := range events.Types() {
		if ti, _ := events.Lookup(typ); ti.Topic == events.TopicLearned {
			onTopic = append(onTopic, typ)
		}
	}
	learned := slices.Clone(events.LearnedTypes)
	slices.Sort(learned)
	if !slices.Equal(onTopic, learned) {
		t.Fatalf("types on %s: %v; LearnedTypes: %v", events.TopicLearned, onTopic, learned)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range learned {
		file := string(typ) + ".json"
		if _, err := schemas.FS.Open(file); err != nil {
			t.Errorf("%s: no schema %s", typ, file)
		}
		row := ""
		for _, line := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(line, "| `"+string(typ)+"`") {
				row = line
			}
		}
		if row == "" || !strings.Contains(row, "schemas/"+file) || !strings.Contains(row, "chronicle.learned") {
			t.Errorf("README: no event-table row for %s naming schemas/%s on chronicle.learned", typ, file)
		}
		// every row of the type names the record key a subscriber sees:
		// the scope, '/', the entity (events.Key). Two rows of one type
		// used to disagree (graph.edge.learned.v1 keyed "scope/from tool"
		// and "from (tool)", graph.ranks.updated.v1 "scope/`toolgraph`"
		// and "graph").
		for _, line := range strings.Split(string(readme), "\n") {
			if !strings.HasPrefix(line, "| `"+string(typ)+"`") {
				continue
			}
			cols := strings.Split(strings.Trim(line, "| "), " | ")
			if key := cols[len(cols)-1]; !strings.HasPrefix(key, "scope/") {
				t.Errorf("README: the event-table row of %s names the key %q; the record key is scope/<entity> (events.Key)", typ, key)
			}
		}
	}
}
