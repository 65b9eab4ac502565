package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Member names are case-sensitive in route bodies: encoding/json matches
// them to fields ignoring case, so "title" and "Title" in one object were
// one member to it, the last kept silently (the ambiguity the repeat check
// closes for exact repeats), and a lone "Title" was taken for "title"
// where the README says an unknown field is a 400 naming it (found by a
// review). Each is a 400 naming the member's pointer now, and nothing is
// written; POST /v1/dags answers a declared tool's case variant the same.
func TestRouteBodiesRefuseCaseVariantMembers(t *testing.T) {
	_, post, _ := workflowAPI(t)
	for _, c := range []struct{ path, body, pointer string }{
		{"/v1/memories", `{"title":"x","Title":"y","description":"d","content":"c","outcome":"success"}`, "/Title"},
		{"/v1/memories", `{"Title":"y","description":"d","content":"c","outcome":"success"}`, "/Title"},
		{"/v1/memories/m1/feedback", `{"helpful":true,"HELPFUL":false}`, "/HELPFUL"},
		// a declared tool of POST /v1/dags too: it said `tools[0]: unknown
		// member "Name"`, without the pointer (the last closing note's gap)
		{"/v1/dags", `{"Tools":["think"]}`, "/Tools"},
		{"/v1/dags", `{"tools":[{"Name":"a"}]}`, "/tools/0/Name"},
		{"/v1/dags", `{"tools":["think",{"name":"a","NAME":"b"}]}`, "/tools/1/NAME"},
		{"/v1/dags", `{"tools":[{"name":"a","Parameters":{"type":"object"}}]}`, "/tools/0/Parameters"},
		// a JSON Schema keyword in a declared tool's schemas: the schema
		// decoder took "Type" for "type"
		{"/v1/dags", `{"tools":[{"name":"a","parameters":{"Type":"object"}}]}`, "/tools/0/parameters/Type"},
		{"/v1/dags", `{"tools":[{"name":"a","output":{"type":"object","properties":{"x":{"type":"object","Properties":{"y":{"type":"string"}}}}}}]}`, "/tools/0/output/properties/x/Properties"},
		{"/v1/dags", `{"tools":[{"name":"a","parameters":{"type":"array","items":[{"TYPE":"string"}]}}]}`, "/tools/0/parameters/items/0/TYPE"},
	} {
		code, m := post(c.path, c.body)
		if msg := fmt.Sprint(m["error"]); code != http.StatusBadRequest || !strings.Contains(msg, c.pointer) || !strings.Contains(msg, "case-sensitive") {
			t.Errorf("POST %s %s: %d %v; want 400 naming %s, case-sensitive", c.path, c.body, code, m, c.pointer)
		}
	}
	// an unknown member that is no case variant is still named so
	if code, m := post("/v1/dags", `{"tools":[{"name":"a","outputs":{}}]}`); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m["error"]), `tools[0]: unknown member "outputs"`) {
		t.Errorf("POST /v1/dags with outputs: %d %v, want 400 naming the unknown member", code, m)
	}
	// property names are data, and an unknown keyword not named like a
	// known one is allowed (JSON Schema ignores it)
	if code, m := post("/v1/dags", `{"tools":[{"name":"a","description":"d","parameters":{"type":"object","x-note":"n","properties":{"Type":{"type":"string"},"Properties":{"type":"object"}}}}]}`); code != http.StatusOK {
		t.Errorf("POST /v1/dags with exact names: %d %v, want 200", code, m)
	}
	// the exact names still work
	if code, m := post("/v1/memories", `{"title":"y","description":"d","content":"c","outcome":"success"}`); code != http.StatusAccepted {
		t.Errorf("POST /v1/memories with exact names: %d %v, want 202", code, m)
	}
}
