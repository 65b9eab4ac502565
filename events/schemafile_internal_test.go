package events

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chronicle-dev/chronicle/schemas"
)

// A registered type without a schema file is named with the file to add;
// before, the error was the validator's `failing loading
// "urn:chronicle:schema:note.recorded.v1": invalid file url`, which says
// neither that a file is missing nor where it goes (a new contributor's
// walkthrough, adding note.recorded.v1 without its schema).
func TestMissingSchemaFileIsNamed(t *testing.T) {
	files := fstest.MapFS{}
	for _, name := range []string{"cloudevent.json", "memory.feedback.v1.json"} {
		b, err := schemas.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = &fstest.MapFile{Data: b}
	}
	types := map[Type]TypeInfo{
		MemoryFeedback:           registry[MemoryFeedback],
		Type("note.recorded.v1"): {Type: "note.recorded.v1", Topic: TopicSessions, KeyField: "note_id"},
	}
	_, err := compileSchemas(files, types)
	if err == nil || !strings.Contains(err.Error(), "schemas/note.recorded.v1.json") || !strings.Contains(err.Error(), "urn:chronicle:schema:note.recorded.v1") {
		t.Fatalf("a type without its schema file: %v; want an error naming schemas/note.recorded.v1.json and the $id", err)
	}
	delete(types, "note.recorded.v1")
	if _, err := compileSchemas(files, types); err != nil {
		t.Fatalf("every schema present: %v", err)
	}
}
