package game24

import (
	"context"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

func root(puzzle string) []treesearch.Step {
	return []treesearch.Step{{NodeID: treesearch.RootID, State: puzzle}}
}

func TestExactChecks(t *testing.T) {
	p := root("4 5 6 10")
	for _, c := range []struct{ line, reason, state string }{
		{"4 + 5 = 9 (left: 6 9 10)\n", "", "6 9 10"},
		{"10 - 4 = 6 (left: 5 6 6)\n", "", "5 6 6"},
		{"6 / 4 = 1.5 (left: 1.5 5 10)\n", "", "3/2 5 10"},
		{"4 - 5 = -1 (left: -1 6 10)\n", "", "-1 6 10"},
		{"4 + 4 = 8 (left: 5 6 8 10)\n", events.PrunedHardCheck, ""}, // 4 used twice
		{"4 + 5 = 10 (left: 6 10 10)\n", events.PrunedHardCheck, ""}, // wrong sum
		{"4 + 5 = 9 (left: 6 10)\n", events.PrunedHardCheck, ""},     // wrong numbers left
		{"10 / 1.5 ≈ 6.67 (left: 6.67)\n", events.PrunedPrefilter, ""},
		{"", events.PrunedPrefilter, ""},
		{"Answer: (4 * 5) + (10 - 6) = 24\n", "", "answer: (4 * 5) + (10 - 6)"},
		{"Answer: (4 * 5) - 6 + 10 = 24\n", "", "answer: (4 * 5) - 6 + 10"},
		{"Answer: 4 * 6 = 24\n", events.PrunedHardCheck, ""},            // not every number
		{"Answer: (4 + 5) * 6 - 10 = 24\n", events.PrunedHardCheck, ""}, // 44
	} {
		state, reason, report := Next(p, c.line)
		if reason != c.reason || c.state != "" && state != c.state {
			t.Errorf("%q: state %q reason %q (%s), want %q %q", c.line, state, reason, report, c.state, c.reason)
		}
	}
	// a third of 2 is exact: 6 / 9 = 2/3, and 0.666 is not
	p2 := append(root("4 5 6 10"), treesearch.Step{NodeID: "r.0", Depth: 1, Candidate: "4 + 5 = 9 (left: 6 9 10)\n", State: "6 9 10"})
	if _, reason, _ := Next(p2, "6 / 9 = 2/3 (left: 2/3 10)\n"); reason != "" {
		t.Errorf("6 / 9 = 2/3 rejected: %s", reason)
	}
	if _, reason, _ := Next(p2, "6 / 9 = 0.666 (left: 0.666 10)\n"); reason != events.PrunedHardCheck {
		t.Errorf("6 / 9 = 0.666 not a hard failure: %q", reason)
	}
}

// 24 is reachable from every puzzle of 901–1000 (an exhaustive search over
// exact rationals).
func TestSolvable(t *testing.T) {
	ps, err := Puzzles(901, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 100 || ps[0].Numbers != "4 5 6 10" {
		t.Fatalf("%d puzzles, first %+v", len(ps), ps[0])
	}
	n := 0
	for _, p := range ps {
		nums, _ := ParseState(p.Numbers)
		if Solvable(nums) {
			n++
		}
	}
	if n != 100 {
		t.Fatalf("only %d solvable", n)
	}
}

func TestArithmeticProposesEveryMoveAndTheAnswer(t *testing.T) {
	ctx := context.Background()
	prop, err := Arithmetic{}.Propose(ctx, treesearch.ProposeRequest{Path: root("4 5 6 10"), K: 48})
	if err != nil {
		t.Fatal(err)
	}
	if len(prop.Candidates) != 36 {
		t.Fatalf("%d candidates from 4 numbers, want 6 pairs × 6 = 36", len(prop.Candidates))
	}
	for _, c := range prop.Candidates {
		if _, reason, report := Next(root("4 5 6 10"), c.Text); reason != "" {
			t.Errorf("own proposal %q fails its check: %s", c.Text, report)
		}
	}
	path := root("4 5 6 10")
	for _, line := range []string{"4 * 5 = 20 (left: 6 10 20)\n", "10 - 6 = 4 (left: 4 20)\n", "4 + 20 = 24 (left: 24)\n"} {
		state, _, _ := Next(path, line)
		path = append(path, treesearch.Step{Candidate: line, State: state, Depth: len(path)})
	}
	prop, err = Arithmetic{}.Propose(ctx, treesearch.ProposeRequest{Path: path, K: 48})
	if err != nil || len(prop.Candidates) != 1 || !strings.HasPrefix(prop.Candidates[0].Text, "Answer: ") {
		t.Fatalf("answer proposal %+v, %v", prop, err)
	}
	if _, reason, report := Next(path, prop.Candidates[0].Text); reason != "" {
		t.Fatalf("answer %q fails: %s", prop.Candidates[0].Text, report)
	}
}

func TestRecordedTree(t *testing.T) {
	r := &Recorded{}
	lines, ok, err := r.Proposals(root("4 5 6 10"))
	if err != nil || !ok || len(lines) != 12 || lines[0] != "4 + 5 = 9 (left: 6 9 10)\n" {
		t.Fatalf("root proposals %q %v %v", lines, ok, err)
	}
	v, ok, err := r.Value(root("4 5 6 10"), "5 * 6 = 30 (left: 4 10 30)\n")
	if err != nil || !ok || v != 1.002 {
		t.Fatalf("value %v %v %v", v, ok, err)
	}
	state, _, _ := Next(root("4 5 6 10"), "5 * 6 = 30 (left: 4 10 30)\n")
	path := append(root("4 5 6 10"), treesearch.Step{Candidate: "5 * 6 = 30 (left: 4 10 30)\n", State: state, Depth: 1})
	if _, ok, _ := r.Proposals(path); ok {
		t.Fatal("5 * 6 was not selected by the ToT run, so it has no recorded proposals")
	}
}

// ParseState reads at most four numbers, each an integer, a decimal or a
// fraction of at most MaxDigits digits a part: a forged state of eight
// numbers kept the resume worker's exhaustive evaluator busy for minutes,
// and big.Rat reads "1e99999999" as a number it takes as long to build
// (a walkthrough's finding).
func TestParseStateIsBounded(t *testing.T) {
	for state, ok := range map[string]bool{
		"4 5 6 10": true, "1/3 2.5 -1 (7)": true, "24": true, "12345678901234567890 1": true,
		"1 2 3 4 5":               false,
		"1e99999999":              false,
		"0x10 1":                  false,
		"123456789012345678901":   false,
		"1/123456789012345678901": false,
		"x y":                     false,
	} {
		if _, err := ParseState(state); (err == nil) != ok {
			t.Errorf("ParseState(%q): %v, want ok %v", state, err, ok)
		}
	}
	if err := CheckState("24 = (4 * 6)"); err != nil {
		t.Errorf("CheckState of a reached state: %v", err)
	}
}

// TestToTLogErrorsNameTheRunByIdx: a malformed run is named by its "idx"
// field, as the log spells it, and the member at fault; before, "run 900
// has no steps" beside the import's "search tot-901" read as two runs.
func TestToTLogErrorsNameTheRunByIdx(t *testing.T) {
	for _, c := range []struct {
		run  ToTRun
		want []string
	}{
		{ToTRun{Idx: 900}, []string{"run with idx 900", `"steps" is empty or missing`}},
		{ToTRun{Idx: 7, Steps: []ToTStep{{X: "4 5 x"}}}, []string{"run with idx 7", "steps[0].x"}},
	} {
		_, err := NewToTLog(c.run)
		if err == nil {
			t.Fatalf("%+v: accepted", c.run)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v\nwant it to say %q", c.run, err, w)
			}
		}
	}
}
