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
	}
}
