package flux

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// checkToolCall: "some successful call of that tool whose inputs contain
// the expected arguments → 100 else 0".
func checkToolCall(ch events.Check, calls []events.TaskCompletedData) (float64, string) {
	want, err := decodeArgs(ch.Arguments)
	if err != nil {
		return 0, "criterion arguments are not valid JSON: " + err.Error()
	}
	var (
		nOK, nFailed int
		best         []mismatch
		bestID       string
		failedMatch  *events.TaskCompletedData
	)
	for i := range calls {
		c := &calls[i]
		if c.ToolID != ch.Name {
			continue
		}
		diffs := callDiff(want, c.Inputs)
		if !c.Success {
			nFailed++
			if len(diffs) == 0 && failedMatch == nil {
				failedMatch = c
			}
			continue
		}
		nOK++
		if len(diffs) == 0 {
			return 100, fmt.Sprintf("matched successful call %s of %s", c.TaskID, ch.Name)
		}
		if best == nil || len(diffs) < len(best) {
			best, bestID = diffs, c.TaskID
		}
	}
	switch {
	case nOK == 0 && nFailed == 0:
		return 0, fmt.Sprintf("%s was never called", ch.Name)
	case nOK == 0 && failedMatch != nil:
		return 0, fmt.Sprintf("no successful call of %s; call %s had the expected arguments but failed: %s",
			ch.Name, failedMatch.TaskID, resultText(failedMatch.Result))
	case nOK == 0:
		return 0, fmt.Sprintf("no successful call of %s (%d failed, none with the expected arguments)", ch.Name, nFailed)
	}
	detail := fmt.Sprintf("none of %d successful %s calls has the expected arguments; closest %s: %s",
		nOK, ch.Name, bestID, best[0])
	if len(best) > 1 {
		detail += fmt.Sprintf(" (+%d more differences)", len(best)-1)
	}
	if failedMatch != nil {
		detail += fmt.Sprintf("; call %s had the expected arguments but failed: %s", failedMatch.TaskID, resultText(failedMatch.Result))
	}
	return 0, detail
}

// callDiff subset-compares expected arguments (nil: anything) with a
// call's inputs.
func callDiff(want any, inputs json.RawMessage) []mismatch {
	if want == nil {
		return nil
	}
	got, err := decodeArgs(inputs)
	if err != nil {
		return []mismatch{{ptr: "", reason: "inputs are not valid JSON"}}
	}
	var out []mismatch
	subsetDiff(want, got, "", &out)
	return out
}

// resultText renders a call result for a detail: the string itself, or
// its JSON.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return truncate(s, 80)
	}
	if len(raw) == 0 {
		return "no result"
	}
	return truncate(string(raw), 80)
}

// checkOutputContains: "text found, case-insensitively, with commas
// removed from the searched text (tau-bench's own rule), in Output or any
// minute with actor "assistant" (its data.content) → 100 else 0".
// Commas are removed from the text too, so a criterion written "1,000"
// still matches (tau-bench's outputs contain none).
func checkOutputContains(ch events.Check, in Input) (float64, string) {
	needle := normalizeText(ch.Text)
	if needle == "" {
		return 0, "criterion text is empty"
	}
	if strings.Contains(normalizeText(in.Output), needle) {
		return 100, fmt.Sprintf("%q found in the output", ch.Text)
	}
	for i, m := range in.Minutes {
		if m.Actor != "assistant" {
			continue
		}
		var d struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(m.Data, &d) != nil {
			continue
		}
		if strings.Contains(normalizeText(d.Content), needle) {
			return 100, fmt.Sprintf("%q found in assistant minute %d", ch.Text, i)
		}
	}
	return 0, fmt.Sprintf("%q is in neither the output nor any assistant message", ch.Text)
}

func normalizeText(s string) string { return strings.ToLower(strings.ReplaceAll(s, ",", "")) }

// refuseLoader keeps schema compilation free of I/O: references to
// anything but the standard metaschemas (built in) fail.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("flux loads no external schemas")
}

// checkJSONSchema: "Output parses as JSON and validates against the schema".
func checkJSONSchema(ch events.Check, output string) (float64, string, bool) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ch.Schema))
	if err != nil {
		return 0, "criterion schema is not valid JSON: " + err.Error(), false
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	const loc = "urn:chronicle:flux:criterion-schema"
	if err := c.AddResource(loc, doc); err != nil {
		return 0, "criterion schema is invalid: " + truncate(err.Error(), 160), false
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return 0, "criterion schema is invalid: " + truncate(err.Error(), 160), false
	}
	val, err := jsonschema.UnmarshalJSON(strings.NewReader(output))
	if err != nil {
		return 0, "output is not JSON: " + truncate(err.Error(), 120), true
	}
	if err := sch.Validate(val); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			// a schema whose $ref resolves back to where it is ("$ref":
			// "#") cannot judge any output: unevaluated, as a schema that
			// does not compile (it was scored 0 and the session a
			// total_failure: a walkthrough)
			if cycle := refCycle(ve); cycle != nil {
				return 0, "criterion schema is invalid: " + truncate(cycle.Error(), 160), false
			}
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			return 0, "output breaks the schema " + truncate(ve.Error(), 160), true
		}
		return 0, "output breaks the schema: " + truncate(err.Error(), 160), true
	}
	return 100, "output is valid against the schema", true
}

// refCycle returns the error in ve's tree that is a reference cycle of
// the schema (kind.RefCycle), nil if there is none.
func refCycle(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	if _, ok := ve.ErrorKind.(*kind.RefCycle); ok {
		return ve
	}
	for _, c := range ve.Causes {
		if r := refCycle(c); r != nil {
			return r
		}
	}
	return nil
}

// checkRegex: "Go regexp matches Output".
func checkRegex(ch events.Check, output string) (float64, string, bool) {
	re, err := regexp.Compile(ch.Pattern)
	if err != nil {
		return 0, "criterion pattern is not a valid RE2 regexp: " + err.Error(), false
	}
	if loc := re.FindStringIndex(output); loc != nil {
		return 100, fmt.Sprintf("pattern matches the output at %q", truncate(output[loc[0]:loc[1]], 60)), true
	}
	return 0, "pattern does not match the output", true
}

// checkNoOtherCalls: "100 × (successful calls of the listed tools that
// match an allowed entry by subset) / (all successful calls of the listed
// tools), 100 when there are none".
func checkNoOtherCalls(ch events.Check, calls []events.TaskCompletedData) (float64, string) {
	type allowedCall struct {
		name string
		args any
	}
	allowed := make([]allowedCall, 0, len(ch.Allowed))
	for i, a := range ch.Allowed {
		v, err := decodeArgs(a.Arguments)
		if err != nil {
			return 0, fmt.Sprintf("allowed entry %d has invalid arguments: %v", i, err)
		}
		allowed = append(allowed, allowedCall{a.Name, v})
	}
	var total, ok int
	var extra []string
	for _, c := range calls {
		if !c.Success || !slices.Contains(ch.Tools, c.ToolID) {
			continue
		}
		total++
		match := false
		for _, a := range allowed {
			if a.name == c.ToolID && len(callDiff(a.args, c.Inputs)) == 0 {
				match = true
				break
			}
		}
		if match {
			ok++
		} else {
			extra = append(extra, fmt.Sprintf("%s %s", c.ToolID, c.TaskID))
		}
	}
	if total == 0 {
		return 100, "no successful call of the listed tools"
	}
	if len(extra) == 0 {
		return 100, fmt.Sprintf("all %d successful calls of the listed tools were allowed", total)
	}
	const show = 3
	list := strings.Join(extra[:min(show, len(extra))], ", ")
	if len(extra) > show {
		list += fmt.Sprintf(", +%d more", len(extra)-show)
	}
	return 100 * float64(ok) / float64(total),
		fmt.Sprintf("%d of %d successful calls of the listed tools were not allowed: %s", len(extra), total, list)
}
