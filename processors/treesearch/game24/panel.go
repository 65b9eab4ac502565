package game24

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/projections"
)

// AnswerSchemaName names AnswerSchema in search.candidate.corrected.v1.
const AnswerSchemaName = "game24.answer.v1"

// AnswerSchema is the JSON Schema of an agent's structured answer: the
// expression alone, in numbers, + - * / and parentheses.
const AnswerSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["answer"],
  "properties": {"answer": {"type": "string", "pattern": "^[0-9+*/() .\\-]+$"}},
  "additionalProperties": false
}`

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// ValidAnswer reports whether doc passes AnswerSchema.
func ValidAnswer(doc []byte) (bool, error) {
	schemaOnce.Do(func() {
		d, err := jsonschema.UnmarshalJSON(strings.NewReader(AnswerSchema))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if schemaErr = c.AddResource("urn:chronicle:schema:"+AnswerSchemaName, d); schemaErr == nil {
			schema, schemaErr = c.Compile("urn:chronicle:schema:" + AnswerSchemaName)
		}
	})
	if schemaErr != nil {
		return false, schemaErr
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(doc)))
	if err != nil {
		return false, nil
	}
	return schema.Validate(v) == nil, nil
}

// Structured is an agent's output as the JSON document AnswerSchema
// describes: {"answer": the text after its last "Answer:"}.
func Structured(output string) []byte {
	a := ""
	if i := strings.LastIndex(output, "Answer:"); i >= 0 {
		a = strings.TrimSpace(strings.SplitN(output[i+len("Answer:"):], "\n", 2)[0])
	}
	b, _ := json.Marshal(map[string]string{"answer": a})
	return b
}

// Correct is the auto-correction of a structured answer that fails
// AnswerSchema: an answer written as an equation "<expression> = 24" is
// cut to its expression. ok is false when the document is valid already
// or no correction makes it valid.
func Correct(doc []byte) (corrected []byte, ok bool, err error) {
	if valid, err := ValidAnswer(doc); err != nil || valid {
		return nil, false, err
	}
	var d map[string]string
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, false, nil
	}
	a, cut := strings.CutSuffix(strings.TrimSpace(d["answer"]), "= 24")
	if !cut {
		return nil, false, nil
	}
	fixed, _ := json.Marshal(map[string]string{"answer": strings.TrimSpace(a)})
	valid, err := ValidAnswer(fixed)
	return fixed, valid, err
}

func answerOf(doc []byte) string {
	var d map[string]string
	_ = json.Unmarshal(doc, &d)
	return strings.Join(strings.Fields(d["answer"]), "")
}

// PanelResult is what a panel of agents achieves on a sampling log.
type PanelResult struct {
	Dataset string `json:"dataset"`
	Agents  int    `json:"agents"`
	Puzzles int    `json:"puzzles"`
	// Schema-invalid outputs and those the DiffProcessor corrected.
	SchemaInvalid int `json:"schema_invalid"`
	Corrected     int `json:"corrected"`
	// Puzzles whose majority vote over the schema-valid answers is a
	// correct sample (the log's judgement), without and with correction.
	SolvedWithoutCorrection int `json:"solved_without_correction"`
	SolvedWithCorrection    int `json:"solved_with_correction"`
}

// MeasurePanel is the Flujo milestone on recorded outputs: per puzzle,
// agents agents (the first samples of the log) run; their outputs become
// structured answers; a schema-invalid one is auto-corrected when a patch
// exists (the DiffProcessor's RFC 6902 patch, search.candidate.corrected.v1);
// the valid answers vote (majority_vote, search.consensus.reduced.v1). All
// of it goes through the treesearch processor into store; the projection
// is read back for the result.
func MeasurePanel(store *projections.Store, file, name string, agents, limit int) (PanelResult, error) {
	runs, err := LoadSamples(file)
	if err != nil {
		return PanelResult{}, err
	}
	if limit > 0 && limit < len(runs) {
		runs = runs[:limit]
	}
	res := PanelResult{Dataset: name, Agents: agents}
	off, _ := store.NextOffset(treesearch.Name, string(events.TopicSearches), 0)
	at := time.Date(2023, 5, 17, 0, 0, 0, 0, time.UTC) // the log has no times
	apply := func(t events.Type, id string, payload any) error {
		env, err := events.New(t, "chronicle/eval/"+name, id, at, payload)
		if err != nil {
			return err
		}
		env.Scope = "org:eval"
		_, err = store.Apply(treesearch.Name, projections.Position{Topic: string(events.TopicSearches), Offset: off}, &env, treesearch.Processor{}.Apply)
		off++
		return err
	}
	for _, run := range runs {
		res.Puzzles++
		panel := fmt.Sprintf("%s-panel%d-%d", name, agents, run.Rank)
		key := events.EntityKey("org:eval", panel)
		var before []treesearch.Branch
		n := min(agents, len(run.Outputs))
		for i := 0; i < n; i++ {
			doc := Structured(run.Outputs[i])
			valid, err := ValidAnswer(doc)
			if err != nil {
				return res, err
			}
			ans := ""
			if valid {
				ans = answerOf(doc)
			} else {
				res.SchemaInvalid++
			}
			b := events.SearchBranchData{SearchID: panel, BranchID: fmt.Sprintf("agent%d", i+1), Output: string(doc), Answer: ans}
			if err := apply(events.SearchBranchCompleted, panel+"/"+b.BranchID, b); err != nil {
				return res, err
			}
			before = append(before, treesearch.Branch{ID: b.BranchID, Output: b.Output, Answer: ans})
			if fixed, ok, err := Correct(doc); err != nil {
				return res, err
			} else if ok {
				patch, err := Diff(doc, fixed)
				if err != nil {
					return res, err
				}
				if err := apply(events.SearchCandidateCorrected, panel+"/"+b.BranchID+"/corrected", events.SearchCorrectionData{
					SearchID: panel, BranchID: b.BranchID, Schema: AnswerSchemaName, Patch: patch, Corrected: fixed, Answer: answerOf(fixed)}); err != nil {
					return res, err
				}
			}
		}
		if w, _, ok := treesearch.Reduce(events.ReducerMajorityVote, before); ok && run.Correct[w] {
			res.SolvedWithoutCorrection++
		}
		p, bs, _, err := treesearch.GetPanel(store, key)
		if err != nil {
			return res, err
		}
		res.Corrected += p.Corrections
		w, votes, ok := treesearch.Reduce(events.ReducerMajorityVote, bs)
		if !ok {
			continue
		}
		if err := apply(events.SearchConsensusReduced, panel+"/vote", events.SearchConsensusData{SearchID: panel, Reducer: events.ReducerMajorityVote, Winner: bs[w].ID, Output: bs[w].Output, Votes: votes, Branches: len(bs)}); err != nil {
			return res, err
		}
		if run.Correct[w] {
			res.SolvedWithCorrection++
		}
	}
	return res, nil
}

// Diff is treesearch.Diff, the DiffProcessor.
func Diff(candidate, corrected []byte) (json.RawMessage, error) {
	return treesearch.Diff(candidate, corrected)
}
