package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/events"
)

// readableSchemaErrors rewrites the tool error the SDK answers for
// arguments its input schema refuses into the form of the tools' own
// refusals, "invalid argument: /<member>: <keyword>: <detail>", without
// the validator's internals: before, limit 0 said `validating
// "arguments": validating root: validating /properties/limit: minimum:
// 0/1 is less than 1.000000`, and limit null `type: <invalid
// reflect.Value> has type "null", want "integer"` (a walkthrough,
// 2026-11-30). The keyword stays: it names the rule the schema states.
// A pattern's detail is the member's patternReasons entry when it has one.
func readableSchemaErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r.IsError {
			var args json.RawMessage
			if c, ok := req.(*mcp.CallToolRequest); ok && c.Params != nil {
				args = c.Params.Arguments
			}
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					tc.Text = readableSchemaErrorIn(tc.Text, args)
				}
			}
		}
		return res, err
	}
}

// patternReasons say in words what a member's pattern asks.
var patternReasons = map[string]string{
	"idempotency_key": "not printable ASCII (0x20 to 0x7e only), at most 255 characters",
}

// scopePatternReasons say, for a scope argument's pattern, what is wrong
// with the value refused, as the HTTP routes and the tools' own checks
// say it (the form, and the character not allowed and its byte): a
// memory_search scope "project:東京" said only "a kind (project, team,
// org, all) or one scope such as project:a" (an MCP walkthrough,
// 2026-12-06).
var scopePatternReasons = map[string]func(string) string{
	scopePattern:       events.ScopeReason,
	scopeFilterPattern: events.ScopeFilterReason,
}

// patternDetailRe is the detail of the validator's pattern refusal.
var patternDetailRe = regexp.MustCompile(`^("(?:[^"\\]|\\.)*") does not match regular expression ("(?:[^"\\]|\\.)*")$`)

// scopePatternDetail is the detail of a pattern refusal of a scope
// argument: what is wrong with the value; ok false for any other pattern.
func scopePatternDetail(detail string) (string, bool) {
	m := patternDetailRe.FindStringSubmatch(detail)
	if m == nil {
		return "", false
	}
	v, err1 := strconv.Unquote(m[1])
	re, err2 := strconv.Unquote(m[2])
	reason, ok := scopePatternReasons[re]
	if err1 != nil || err2 != nil || !ok {
		return "", false
	}
	return reason(v), true
}

var (
	// a keyword's refusal at the end of the validator's chain of
	// "validating <schema path>: " (an array's items add a link:
	// /properties/tags: validating /properties/tags/items: minLength: …)
	schemaErrRe = regexp.MustCompile(`^validating "arguments": validating root: (?:validating (/properties/\S+?): )*(\w+): (.*)$`)
	// the arguments' own members: what the schema does not name, and what
	// it requires
	additionalRe = regexp.MustCompile(`^validating "arguments": validating root: unexpected additional properties \["((?:[^"\\]|\\.)*)"`)
	requiredRe   = regexp.MustCompile(`^validating "arguments": validating root: required: missing properties: \[(.*)\]$`)
	// arguments that are no JSON object
	notObjectRe = regexp.MustCompile(`^validating "arguments": unmarshaling arguments: json: cannot unmarshal (".*") into Go value of type map\[string\]interface \{\}$`)
	ratRe       = regexp.MustCompile(`\b(-?\d+)/(\d+)\b`)
	fixedRe     = regexp.MustCompile(`\b(-?\d+)\.000000\b`)
)

// readableSchemaErrorIn is readableSchemaErrors' rewrite of one message;
// any other message is returned as it is. Besides a member's keyword
// (limit's minimum), it rewrites an item's (tags' minLength: the validator
// names no index, so the pointer is the array's and the rule says "an
// item"), a member the schema does not name (additionalProperties), the
// required members left out, and arguments that are no JSON object — each
// came back in the SDK's own words (a walkthrough, 2026-11-30).
//
// With the call's arguments, args (nil: none known), an item of a
// top-level array refused with its string value quoted (minLength,
// maxLength, pattern) is named by its own pointer, /after/1, the first
// item holding that value (next_tool's empty tool
// name said "/after: an item: minLength", though the README promised
// /after/<i>: a subscriber's walkthrough, 2026-12-06).
func readableSchemaErrorIn(msg string, args json.RawMessage) string {
	if m := additionalRe.FindStringSubmatch(msg); m != nil {
		name, err := strconv.Unquote(`"` + m[1] + `"`)
		if err != nil {
			name = m[1]
		}
		return fmt.Sprintf("invalid argument: /%s: additionalProperties: %q is not an argument of this tool", events.PointerToken(name), name)
	}
	if m := requiredRe.FindStringSubmatch(msg); m != nil {
		var names []string
		for _, q := range strings.Split(m[1], ",") {
			if n, err := strconv.Unquote(strings.TrimSpace(q)); err == nil {
				names = append(names, n)
			}
		}
		if len(names) == 1 {
			return fmt.Sprintf("invalid argument: /%s: required: missing", events.PointerToken(names[0]))
		}
		return fmt.Sprintf("invalid argument: /: required: missing %s", strings.Join(names, ", "))
	}
	if m := notObjectRe.FindStringSubmatch(msg); m != nil {
		got := "a JSON value"
		if v, err := strconv.Unquote(m[1]); err == nil && v != "" {
			switch c := v[0]; {
			case c == '"':
				got = "string"
			case c == '[':
				got = "array"
			case c == 't' || c == 'f':
				got = "boolean"
			case c == 'n':
				got = "null"
			default:
				got = "number"
			}
		}
		return fmt.Sprintf("invalid argument: /: type: got %s, want object (the tool's arguments are a JSON object)", got)
	}
	m := schemaErrRe.FindStringSubmatch(msg)
	if m == nil || m[1] == "" {
		return msg
	}
	path, keyword, detail := m[1], m[2], m[3]
	// an item's numbers are rewritten as a member's (next_tool's failed
	// items said "minimum: -1/1 is less than 0.000000": an MCP walkthrough)
	numeric := keyword == "minimum" || keyword == "maximum" || keyword == "exclusiveMinimum" || keyword == "exclusiveMaximum" || keyword == "multipleOf"
	ptr := "/" + strings.ReplaceAll(strings.TrimPrefix(path, "/properties/"), "/properties/", "/")
	if items, ok := strings.CutSuffix(ptr, "/items"); ok {
		if i, found := itemIndex(args, strings.TrimPrefix(items, "/"), detail); found {
			ptr = items + "/" + strconv.Itoa(i)
		} else {
			ptr, keyword = items, "an item: "+keyword
		}
	}
	ptr = strings.ReplaceAll(ptr, "/items/", "/")
	detail = ratRe.ReplaceAllStringFunc(detail, func(s string) string {
		if !numeric {
			return s // a quoted value such as "1/2" stays as sent
		}
		p := ratRe.FindStringSubmatch(s)
		n, _ := strconv.ParseFloat(p[1], 64)
		d, _ := strconv.ParseFloat(p[2], 64)
		if d == 0 {
			return s
		}
		return strconv.FormatFloat(n/d, 'g', -1, 64)
	})
	if numeric {
		detail = fixedRe.ReplaceAllString(detail, "$1")
	}
	detail = strings.Replace(detail, "<invalid reflect.Value> has type", "got", 1)
	if keyword == "pattern" {
		if why, ok := scopePatternDetail(detail); ok {
			detail = why
		} else if why, ok := patternReasons[strings.TrimPrefix(ptr, "/")]; ok {
			detail = why
		}
	}
	detail = quotedRe.ReplaceAllStringFunc(detail, clipQuoted)
	return fmt.Sprintf("invalid argument: %s: %s: %s", ptr, keyword, detail)
}

// quotedRe is a quoted value of a validator's message (Go's %q).
var quotedRe = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// maxQuoted is the most characters of a refused value a tool error
// repeats: a maxLength refusal of next_tool's text quoted all 8,193
// characters back (a walkthrough's finding).
const maxQuoted = 80

// clipQuoted cuts the quoted value q to maxQuoted characters and an
// ellipsis (a length refusal says the length itself).
func clipQuoted(q string) string {
	v, err := strconv.Unquote(q)
	if err != nil || utf8.RuneCountInString(v) <= maxQuoted {
		return q
	}
	return strconv.Quote(string([]rune(v)[:maxQuoted])) + "…"
}

// itemIndex finds, in the arguments args, the first item of the array
// argument member whose string value is the one detail starts with
// (quoted, as the validator quotes it): the item a refusal names. false
// when member is not a top-level array, or detail quotes no value.
func itemIndex(args json.RawMessage, member, detail string) (int, bool) {
	if len(args) == 0 || strings.Contains(member, "/") || !strings.HasPrefix(detail, `"`) {
		return 0, false
	}
	q, err := strconv.QuotedPrefix(detail)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Unquote(q)
	if err != nil {
		return 0, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return 0, false
	}
	var items []json.RawMessage
	if json.Unmarshal(m[member], &items) != nil {
		return 0, false
	}
	for i, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil && s == v {
			return i, true
		}
	}
	return 0, false
}
