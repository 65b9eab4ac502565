package main

import (
	"os"
	"regexp"
	"testing"
)

// The digest the README shows in the demo's summary, and the one its
// "Today's digest" paragraph names, are what a clean `chronicle demo`
// prints on today's code. A session once published a digest measured on
// an earlier form of a change (41be2985… for dfb35cd2…), and nothing
// failed.
func TestReadmeShowsTheDemosDigest(t *testing.T) {
	clean, _ := cleanDemo(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := digestIn(readme, `projection digest +([0-9a-f]{64})`); got != clean.Digest {
		t.Errorf("README's demo summary shows digest %q, chronicle demo prints %s", got, clean.Digest)
	}
	if got := digestIn(readme, "Today's digest, `([0-9a-f]{8})…`"); got != clean.Digest[:8] {
		t.Errorf("README's \"Today's digest\" names %q, chronicle demo prints %s", got, clean.Digest)
	}
}

// digestIn is the first submatch of pattern in text, "" when none.
func digestIn(text []byte, pattern string) string {
	m := regexp.MustCompile(pattern).FindSubmatch(text)
	if m == nil {
		return ""
	}
	return string(m[1])
}
