package treesearch

import (
	"encoding/json"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// Panel is the projected state of a panel: parallel branches of one task
// and the reducers' decisions over them (Flujo's consensus panel). Rows:
//
//	p/<key>                    Panel (JSON)
//	b/<key>\x00<branch id>     Branch (JSON)
type Panel struct {
	ID          string      `json:"id"`
	Scope       string      `json:"scope"`
	Branches    []string    `json:"branches"` // branch ids in log order
	Reductions  []Reduction `json:"reductions,omitempty"`
	Corrections int         `json:"corrections,omitempty"` // outputs corrected by a JSON Patch
}

// Branch is one branch of a panel.
type Branch struct {
	ID     string   `json:"id"`
	Output string   `json:"output"`
	Answer string   `json:"answer,omitempty"`
	Score  *float64 `json:"score,omitempty"`
	Report string   `json:"report,omitempty"`
	Time   string   `json:"time"`
	// A corrected output (search.candidate.corrected.v1): the output
	// before, the RFC 6902 patch and the schema it was corrected to.
	Original string          `json:"original,omitempty"`
	Patch    json.RawMessage `json:"patch,omitempty"`
	Schema   string          `json:"schema,omitempty"`
}

// Reduction is a reducer's decision, as the processor checked it.
type Reduction struct {
	Reducer  string `json:"reducer"`
	Winner   string `json:"winner"`
	Votes    int    `json:"votes"`
	Branches int    `json:"branches"`
	Time     string `json:"time"`
}

func panelRow(key string) string          { return "p/" + key }
func branchRow(key, branch string) string { return "b/" + key + "\x00" + branch }

// Reduce applies reducer to branches (in log order) and returns the
// winner's index and its votes: majority_vote groups by Answer (branches
// without one do not vote), code_consensus by the output without
// surrounding whitespace, judge_selection takes the highest Score
// (branches without one do not compete). Ties go to the group that
// appeared first. ok is false when no branch qualifies.
func Reduce(reducer string, branches []Branch) (winner, votes int, ok bool) {
	if reducer == events.ReducerJudgeSelection {
		best := -1
		for i, b := range branches {
			if b.Score != nil && (best < 0 || *b.Score > *branches[best].Score) {
				best = i
			}
		}
		if best < 0 {
			return 0, 0, false
		}
		for _, b := range branches {
			if b.Score != nil && *b.Score == *branches[best].Score {
				votes++
			}
		}
		return best, votes, true
	}
	group := func(b Branch) string {
		if reducer == events.ReducerMajorityVote {
			return b.Answer
		}
		return strings.TrimSpace(b.Output)
	}
	count, first := map[string]int{}, map[string]int{}
	for i, b := range branches {
		g := group(b)
		if reducer == events.ReducerMajorityVote && g == "" {
			continue
		}
		if _, seen := first[g]; !seen {
			first[g] = i
		}
		count[g]++
	}
	winner, votes = -1, 0
	for g, n := range count {
		if n > votes || n == votes && first[g] < winner {
			winner, votes = first[g], n
		}
	}
	return winner, votes, winner >= 0
}

// GetPanel returns the panel with key and its branches in log order.
func GetPanel(store *projections.Store, key string) (Panel, []Branch, bool, error) {
	var p Panel
	ok, err := store.GetJSON(Name, panelRow(key), &p)
	if err != nil || !ok {
		return p, nil, ok, err
	}
	bs := make([]Branch, 0, len(p.Branches))
	for _, id := range p.Branches {
		var b Branch
		if _, err := store.GetJSON(Name, branchRow(key, id), &b); err != nil {
			return p, nil, true, err
		}
		bs = append(bs, b)
	}
	return p, bs, true, nil
}

// applyPanel projects search.branch.completed.v1 and checks
// search.consensus.reduced.v1 against its own reduction of the branches.
func applyPanel(tx *projections.Tx, env *events.Envelope, key string) error {
	scope, id, _ := events.SplitEntityKey(key)
	var p Panel
	ok, err := tx.GetJSON(panelRow(key), &p)
	if err != nil {
		return err
	}
	if !ok {
		p = Panel{ID: id, Scope: scope}
		if env.Type != events.SearchCandidateCorrected {
			// the id index (Scopes): GET /v1/searches/{id}/panel finds the
			// panel's scope from its bare id, as a search's
			if err := tx.Set(idIndexRow(id, scope), nil); err != nil {
				return err
			}
		}
	}
	if env.Type == events.SearchCandidateCorrected {
		if !ok {
			return rejectf("/data/search_id", "panel %s has no branch", key)
		}
		return correct(tx, env, key, &p)
	}
	if env.Type == events.SearchBranchCompleted {
		var d events.SearchBranchData
		if err := env.Decode(&d); err != nil {
			return err
		}
		if _, exists, err := tx.Get(branchRow(key, d.BranchID)); err != nil {
			return err
		} else if exists {
			return rejectf("/data/branch_id", "branch %q of panel %s exists already", d.BranchID, key)
		}
		p.Branches = append(p.Branches, d.BranchID)
		if err := tx.SetJSON(branchRow(key, d.BranchID), Branch{ID: d.BranchID, Output: d.Output, Answer: d.Answer, Score: d.Score, Report: d.Report, Time: env.TimeUTC()}); err != nil {
			return err
		}
		return tx.SetJSON(panelRow(key), p)
	}
	var d events.SearchConsensusData
	if err := env.Decode(&d); err != nil {
		return err
	}
	if !ok {
		return rejectf("/data/search_id", "panel %s has no branch", key)
	}
	bs := make([]Branch, len(p.Branches))
	for i, bid := range p.Branches {
		if _, err := tx.GetJSON(branchRow(key, bid), &bs[i]); err != nil {
			return err
		}
	}
	w, votes, found := Reduce(d.Reducer, bs)
	switch {
	case !found:
		return rejectf("/data/reducer", "no branch of panel %s qualifies for %s", key, d.Reducer)
	case d.Branches != len(bs):
		return rejectf("/data/branches", "%d: the panel has %d branches", d.Branches, len(bs))
	case d.Winner != bs[w].ID || d.Votes != votes:
		return rejectf("/data/winner", "%s chose %q with %d votes; the branches give %q with %d", d.Reducer, d.Winner, d.Votes, bs[w].ID, votes)
	case d.Output != bs[w].Output:
		return rejectf("/data/output", "is not the output of branch %q", bs[w].ID)
	}
	p.Reductions = append(p.Reductions, Reduction{Reducer: d.Reducer, Winner: d.Winner, Votes: votes, Branches: len(bs), Time: env.TimeUTC()})
	return tx.SetJSON(panelRow(key), p)
}
