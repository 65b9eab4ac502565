package mcpserver

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					tc.Text = readableSchemaError(tc.Text)
				}
			}
		}
		return res, err
	}
}

// patternReasons say in words what a member's pattern asks.
var patternReasons = map[string]string{
	"idempotency_key": "not printable ASCII (0x20 to 0x7e only), at most 255 characters",
	"scope":           "a kind (project, team, org, all) or one scope such as project:a",
}

var (
	schemaErrRe = regexp.MustCompile(`^validating "arguments": validating root: validating /properties/(\S+?): (\w+): (.*)$`)
	ratRe       = regexp.MustCompile(`\b(-?\d+)/(\d+)\b`)
	fixedRe     = regexp.MustCompile(`\b(-?\d+)\.000000\b`)
)

// readableSchemaError is readableSchemaErrors' rewrite of one message;
// any other message is returned as it is.
func readableSchemaError(msg string) string {
	m := schemaErrRe.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	path, keyword, detail := m[1], m[2], m[3]
	ptr := "/" + strings.ReplaceAll(strings.ReplaceAll(path, "/properties/", "/"), "/items/", "/")
	numeric := keyword == "minimum" || keyword == "maximum" || keyword == "exclusiveMinimum" || keyword == "exclusiveMaximum" || keyword == "multipleOf"
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
		if why, ok := patternReasons[strings.TrimPrefix(ptr, "/")]; ok {
			detail = why
		}
	}
	return fmt.Sprintf("invalid argument: %s: %s: %s", ptr, keyword, detail)
}
