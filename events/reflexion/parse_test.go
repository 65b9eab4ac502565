package reflexion

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"
)

// The parsed trials agree with each trial's own summary line, for both
// bundled logs.
func TestParseAgreesWithTrialSummaries(t *testing.T) {
	for _, name := range []string{RunReflexion, RunBase} {
		run, err := Bundled(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Trials) != 5 {
			t.Fatalf("%s: %d trials", name, len(run.Trials))
		}
		for _, tr := range run.Trials {
			var got Summary
			for _, a := range tr.Agents {
				switch a.Verdict {
				case Correct:
					got.Correct++
				case Incorrect:
					got.Incorrect++
				default:
					got.Halted++
				}
				if a.CorrectAnswer == "" || len(a.Steps) == 0 || a.Finished != (a.Answer != "" || a.Verdict != Halted) {
					t.Fatalf("%s trial %d: agent %+v", name, tr.N, a)
				}
			}
			// correct and incorrect agree exactly; halted may differ by one:
			// the reflexion log lists 99 questions in trials 2 and 5 (its
			// summaries too), the baseline's trial 3 lists 100 while its
			// summary counts 99
			d := got.Halted - tr.Summary.Halted
			if got.Correct != tr.Summary.Correct || got.Incorrect != tr.Summary.Incorrect || d < -1 || d > 1 {
				t.Errorf("%s trial %d: parsed %+v, summary %+v (%d agents, %d repeats)", name, tr.N, got, tr.Summary, len(tr.Agents), tr.Repeats)
			}
		}
	}
}

func TestParseRejectsOtherFiles(t *testing.T) {
	f, err := os.Open("parse.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Parse(f); err == nil {
		t.Fatal("a Go file parsed as a Reflexion log")
	}
}

// A log cut inside a question block is refused naming the block's line:
// the block has no "Correct answer:", and the import failed on an event's
// "/data/success_criteria/0/check: missing property 'text'" instead (a new
// user's walkthrough, 2026-11-30).
func TestParseNamesACutBlock(t *testing.T) {
	b, err := data.ReadFile("data/" + RunReflexion + ".txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	full, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cut := full[:20000]
	_, err = Parse(bytes.NewReader(cut))
	if err == nil || !strings.Contains(err.Error(), `has no "Correct answer:" line`) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("a log cut at 20,000 bytes: %v, want the block's line named", err)
	}
}
