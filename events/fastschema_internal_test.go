package events

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/valyala/fastjson"
)

// fastDataSeeds are, per type, the data of its testdata instances (valid
// and invalid) and mutations of the valid one: every member removed, every
// member replaced by values of each JSON type and at the edges of the
// schemas' bounds, an unknown member added.
func fastDataSeeds(t *testing.T) map[Type][]string {
	t.Helper()
	files, _ := filepath.Glob("testdata/types/*.json")
	out := map[Type][]string{}
	replacements := []string{`""`, `"x"`, `"é"`, `"regex"`, `"distilled"`, `"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"`,
		`0`, `1`, `-1`, `0.5`, `1.0`, `1e0`, `2`, `100`, `1e400`, `0.30000000000000004`, `true`, `false`, `null`, `[]`, `["a"]`, `[1,2]`, `{}`, `{"k":"v"}`}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Valid   map[string]json.RawMessage `json:"valid"`
			Invalid []struct {
				Event map[string]json.RawMessage `json:"event"`
			} `json:"invalid"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(file, err)
		}
		var typ Type
		if err := json.Unmarshal(doc.Valid["type"], &typ); err != nil {
			t.Fatal(file, err)
		}
		data := doc.Valid["data"]
		out[typ] = append(out[typ], string(data))
		for _, iv := range doc.Invalid {
			if d, ok := iv.Event["data"]; ok {
				out[typ] = append(out[typ], string(d))
			}
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(data, &members) != nil {
			continue
		}
		names := make([]string, 0, len(members))
		for k := range members {
			names = append(names, k)
		}
		sort.Strings(names)
		encode := func(m map[string]json.RawMessage) string {
			b, _ := json.Marshal(m)
			return string(b)
		}
		for _, name := range names {
			without := map[string]json.RawMessage{}
			for k, v := range members {
				if k != name {
					without[k] = v
				}
			}
			out[typ] = append(out[typ], encode(without))
			for _, r := range replacements {
				without[name] = json.RawMessage(r)
				out[typ] = append(out[typ], encode(without))
			}
		}
		for _, r := range replacements {
			with := map[string]json.RawMessage{"unknown_member": json.RawMessage(r)}
			for k, v := range members {
				with[k] = v
			}
			out[typ] = append(out[typ], encode(with))
		}
	}
	return out
}

// A fastSchema says yes only where the validator accepts and no only where
// it rejects, and it decides the testdata's valid instances itself (so
// parseFast runs no validator on them).
func TestFastSchemaAgrees(t *testing.T) {
	set, err := loadSchemas()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[verdict]int{}
	for typ, docs := range fastDataSeeds(t) {
		for i, d := range docs {
			v, err := fastjson.Parse(d)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			got := set.fast[typ].check(v)
			counts[got]++
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(d))
			if err != nil {
				t.Fatal(err)
			}
			verr := set.data[typ].Validate(inst)
			switch {
			case got == yes && verr != nil:
				t.Errorf("%s: fastSchema accepts what the validator rejects (%v):\n%s", typ, verr, d)
			case got == no && verr == nil:
				t.Errorf("%s: fastSchema rejects what the validator accepts:\n%s", typ, d)
			case i == 0 && got != yes && typ != SessionStarted:
				t.Errorf("%s: fastSchema is %v on the valid instance, want yes:\n%s", typ, got, d)
			}
		}
	}
	t.Logf("verdicts: yes %d, no %d, unsure %d", counts[yes], counts[no], counts[unsure])
	if counts[yes] == 0 || counts[no] == 0 {
		t.Fatalf("verdicts %v: the seeds do not exercise both answers", counts)
	}
}

// dupFree finds a repeated member name at any depth but inside a skipped
// (opaque) top-level member, with few and with many members.
func TestDupFree(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&b, `"m%d":1,`, i)
		}
		b.WriteString(extra + `"last":1}`)
		return b.String()
	}
	for _, c := range []struct {
		doc  string
		skip map[string]fastjson.Type
		want bool
	}{
		{`{"a":1,"b":{"c":[{"d":1,"e":2}]}}`, nil, true},
		{`{"a":1,"a":2}`, nil, false},
		{`{"a":1,"b":{"c":[{"d":1,"d":2}]}}`, nil, false},
		{`{"a":1,"b":{"c":1,"c":2}}`, map[string]fastjson.Type{"b": fastjson.TypeObject}, true},
		{`{"a":1,"b":[{"c":1,"c":2}]}`, map[string]fastjson.Type{"b": fastjson.TypeObject}, false},
		{many(""), nil, true},
		{many(`"m2":2,`), nil, false},
		{many(`"last":2,`), nil, false},
	} {
		v := fastjson.MustParse(c.doc)
		if got := dupFree(v, c.skip); got != c.want {
			t.Errorf("dupFree(%s, %v) = %v, want %v", c.doc, c.skip, got, c.want)
		}
	}
}
