package mcpserver

import "testing"

// The SDK's schema refusals read as the tools' own, without the
// validator's rationals, fixed-point numbers and reflect values (a
// walkthrough, 2026-11-30).
func TestReadableSchemaErrors(t *testing.T) {
	for in, want := range map[string]string{
		`validating "arguments": validating root: validating /properties/limit: minimum: 0/1 is less than 1.000000`:                                   `invalid argument: /limit: minimum: 0 is less than 1`,
		`validating "arguments": validating root: validating /properties/min_confidence: maximum: 3/2 is greater than 1.000000`:                       `invalid argument: /min_confidence: maximum: 1.5 is greater than 1`,
		`validating "arguments": validating root: validating /properties/limit: type: <invalid reflect.Value> has type "null", want "integer"`:        `invalid argument: /limit: type: got "null", want "integer"`,
		`validating "arguments": validating root: validating /properties/idempotency_key: pattern: "ké" does not match regular expression "^[ -~]+$"`: `invalid argument: /idempotency_key: pattern: not printable ASCII (0x20 to 0x7e only), at most 255 characters`,
		`memory_search failed: not found`: `memory_search failed: not found`,
		// an item, a member the schema does not name, one left out,
		// several left out, arguments that are no object (they came back
		// as the SDK wrote them: a walkthrough, 2026-11-30)
		`validating "arguments": validating root: validating /properties/tags: validating /properties/tags/items: minLength: "" contains 0 Unicode code points, fewer than 1`: `invalid argument: /tags: an item: minLength: "" contains 0 Unicode code points, fewer than 1`,
		// an item's numbers as a member's (an MCP walkthrough, 2026-12-03)
		`validating "arguments": validating root: validating /properties/failed: validating /properties/failed/items: minimum: -1/1 is less than 0.000000`: `invalid argument: /failed: an item: minimum: -1 is less than 0`,
		`validating "arguments": validating root: unexpected additional properties ["extra"]`:                                                              `invalid argument: /extra: additionalProperties: "extra" is not an argument of this tool`,
		`validating "arguments": validating root: required: missing properties: ["outcome"]`:                                                               `invalid argument: /outcome: required: missing`,
		`validating "arguments": validating root: required: missing properties: ["content", "outcome"]`:                                                    `invalid argument: /: required: missing content, outcome`,
		`validating "arguments": unmarshaling arguments: json: cannot unmarshal "\"refund\"" into Go value of type map[string]interface {}`:                `invalid argument: /: type: got string, want object (the tool's arguments are a JSON object)`,
		`validating "arguments": unmarshaling arguments: json: cannot unmarshal "[1]" into Go value of type map[string]interface {}`:                       `invalid argument: /: type: got array, want object (the tool's arguments are a JSON object)`,
	} {
		if got := readableSchemaErrorIn(in, nil); got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
	}
}
