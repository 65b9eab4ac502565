package events_test

import (
	"encoding/json"
	"os"
	"regexp"
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

// The event table's row of every learned type names each member of its
// data the type's schema has, and each member of an array's objects one
// level down (gaps[].description): a subscriber reads the row to know
// what a record holds. The row of pair.context.retrieved.v1 named neither
// next_iteration nor a gap's description, which every record of the
// demo's has (a downstream consumer's walkthrough, 2026-12-07).
func TestReadmeLearnedRowsNameEverySchemaMember(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Properties map[string]struct {
			Type  any `json:"type"`
			Items *struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	for _, typ := range events.LearnedTypes {
		var row string
		for _, line := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(line, "| `"+string(typ)+"` ") {
				row = line
				break
			}
		}
		cols := strings.Split(row, " | ")
		if len(cols) < 3 {
			t.Errorf("the README's event table has no row for %s", typ)
			continue
		}
		members := cols[1]
		named := func(name string) bool {
			return regexp.MustCompile(`(^|[^a-z_])` + regexp.QuoteMeta(name) + `($|[^a-z_])`).MatchString(members)
		}
		raw, err := schemas.FS.ReadFile(string(typ) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var s schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Properties) == 0 {
			t.Fatalf("%s: no properties read from its schema", typ)
		}
		for name, p := range s.Properties {
			if !named(name) {
				t.Errorf("the README's row of %s does not name its data member %s", typ, name)
			}
			if p.Items == nil {
				continue
			}
			for sub := range p.Items.Properties {
				if !named(sub) {
					t.Errorf("the README's row of %s does not name %s[].%s", typ, name, sub)
				}
			}
		}
	}
}
