package httpapi_test

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/util"
)

// TestOpenAPIGeneratesAGoClient runs oapi-codegen, the usual Go client
// generator, over openapi.json as a user would (`oapi-codegen -generate
// types,client`), and wants Go source back. The description is valid
// OpenAPI 3.1 either way, but the generator could not read it: two
// boolean schemas (a property that is never answered, false, and a JSON
// Patch value, true) failed its loader ("cannot unmarshal bool into field
// Schema.properties"), and type arrays of two or more types besides null
// (a CloudEvents extension attribute's string, boolean or integer; a
// JSON-RPC id; a criterion's JSON Schema) failed its type conversion
// ("unhandled Schema type"). Found by an API integrator's walkthrough;
// each is now said in a form the generator reads ({"not": {}}, {},
// anyOf), with the same meaning.
func TestOpenAPIGeneratesAGoClient(t *testing.T) {
	spec, err := util.LoadSwagger("openapi.json")
	if err != nil {
		t.Fatalf("oapi-codegen's loader: %v", err)
	}
	src, err := codegen.Generate(spec, codegen.Configuration{
		PackageName: "chronicleapi",
		Generate:    codegen.GenerateOptions{Models: true, Client: true},
	})
	if err != nil {
		t.Fatalf("oapi-codegen -generate types,client: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "client.go", src, 0)
	if err != nil {
		t.Fatalf("the generated client does not parse: %v", err)
	}
	// the client has a method per operation: spot-check two
	for _, name := range []string{"PostEvents", "SearchMemories"} {
		if !strings.Contains(src, ") "+name+"(") {
			t.Errorf("the generated client has no method %s", name)
		}
	}
	// What a client generated from it got wrong in use (an
	// OpenAPI-client walkthrough, 2026-12-03): every number without a
	// format became a float32, losing a score's digits; an enum without a
	// type became an interface{} the request builder dereferenced when
	// left out, a nil-pointer panic for GET /v1/sessions without outcome;
	// an inline oneOf request body became a named type without the
	// union's MarshalJSON, sent as {}.
	if strings.Contains(src, "float32") {
		t.Error("a number schema without format \"double\": the generated client holds it in a float32")
	}
	for _, want := range []string{
		"Outcome *ListSessionsParamsOutcome",
		"type PostEventsJSONRequestBody = CloudEventOrBatch",
		"type McpPostJSONRequestBody = JSONRPCMessageOrBatch",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("the generated client has no %q", want)
		}
	}
	if f.Name.Name != "chronicleapi" {
		t.Errorf("package %s", f.Name.Name)
	}
}
