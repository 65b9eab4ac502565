package treesearch

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/wI2L/jsondiff"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Diff is the DiffProcessor of the Flujo design: the RFC 6902 JSON Patch
// (wI2L/jsondiff) that turns the JSON document candidate into corrected.
func Diff(candidate, corrected []byte) (json.RawMessage, error) {
	p, err := jsondiff.CompareJSON(candidate, corrected)
	if err != nil {
		return nil, fmt.Errorf("treesearch: diff: %w", err)
	}
	return json.Marshal(p)
}

// ApplyPatch applies an RFC 6902 JSON Patch (evanphx/json-patch) to doc.
func ApplyPatch(doc, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// correct projects search.candidate.corrected.v1: the patch applied to
// the branch's output must give the corrected document; the branch's
// output and answer become the corrected ones and the patch is kept.
func correct(tx *projections.Tx, env *events.Envelope, key string, p *Panel) error {
	var d events.SearchCorrectionData
	if err := env.Decode(&d); err != nil {
		return err
	}
	var b Branch
	ok, err := tx.GetJSON(branchRow(key, d.BranchID), &b)
	if err != nil {
		return err
	}
	if !ok {
		return rejectf("/data/branch_id", "panel %s has no branch %q", key, d.BranchID)
	}
	got, err := ApplyPatch([]byte(b.Output), d.Patch)
	if err != nil {
		return rejectf("/data/patch", "does not apply to branch %q's output: %v", d.BranchID, err)
	}
	if !jsonpatch.Equal(got, d.Corrected) {
		// a JSON string holding the document (the branch's output is a
		// string) looked like a match in the reason: say which it is
		var inner string
		if json.Unmarshal(d.Corrected, &inner) == nil && json.Valid([]byte(inner)) && jsonpatch.Equal(got, []byte(inner)) {
			return rejectf("/data/corrected", "is a JSON string holding what the patch makes of branch %q's output (%s): send that document itself, not a string of it", d.BranchID, got)
		}
		return rejectf("/data/corrected", "is not what the patch makes of branch %q's output (%s)", d.BranchID, got)
	}
	b.Original = b.Output
	b.Output, b.Answer, b.Patch, b.Schema = string(d.Corrected), d.Answer, d.Patch, d.Schema
	p.Corrections++
	if err := tx.SetJSON(branchRow(key, d.BranchID), b); err != nil {
		return err
	}
	return tx.SetJSON(panelRow(key), p)
}
