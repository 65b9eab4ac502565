package distill

import (
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/flux"
)

var prefilterSeeds = []string{
	"I am flying", "at 11am est", "11 a.m. sharp", "Meet at 3 p.m.", "Today is Monday", "on May 20 (one way)",
	"Your user id is mia_li_3668", "You want to fly", "You'd like a refund", "trying to cancel", "Your goal",
	"the aim is", "He needs it", "No date here", "x_11:30", "2024-05-01", "at 10:30", "1/2/2024", "jan. 5",
	"AMOUNT due", "established", "PST time", "UTC", "GMT+1", "ſunday", "Kelvin K", "résumé on tuesday",
	"wishes", "WANTED", "'d like", "I'D LIKE", "dec 31", "Sept 3", "estimate", "pdt", "edt", "",
}

// taubenchSentences are the sentences of the bundled sessions' tasks.
func taubenchSentences(t testing.TB) []string {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		envs, _ := taubench.Events(r)
		in, _ := flux.InputFromEvents(envs)
		for _, s := range splitSentences(in.Task) {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// TestPrefiltersNeverMiss: wherever goalWords or dateTime matches, its
// prefilter says it may (on hand-picked edge cases and every sentence of
// the bundled tasks), and the date prefilter does spare the regexp most
// of those sentences.
func TestPrefiltersNeverMiss(t *testing.T) {
	sents := taubenchSentences(t)
	for _, s := range append(prefilterSeeds, sents...) {
		checkPrefilters(t, s)
	}
	spared := 0
	for _, s := range sents {
		if !mayStateDate(s) {
			spared++
		}
	}
	if spared < len(sents)/2 {
		t.Fatalf("the date prefilter spared the regexp %d of %d task sentences only", spared, len(sents))
	}
}

func FuzzPrefiltersNeverMiss(f *testing.F) {
	for _, s := range prefilterSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPrefilters(t, s) })
}

func checkPrefilters(t *testing.T, s string) {
	t.Helper()
	if goalWords.MatchString(s) && !mayStateGoal(s) {
		t.Fatalf("goalWords matches %q, its prefilter says it cannot", s)
	}
	if dateTime.MatchString(s) && !mayStateDate(s) {
		t.Fatalf("dateTime matches %q, its prefilter says it cannot", s)
	}
}
