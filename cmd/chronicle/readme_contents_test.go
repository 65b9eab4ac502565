package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// githubAnchor is the fragment GitHub gives a heading: lower case, every
// character but letters, digits, '_', '-' and spaces dropped, spaces
// made '-'. It keeps ASCII letters only, which is GitHub's rule for the
// README's headings (the en dash of "items 6–7" is dropped); a heading
// with a letter such as 'é' would need unicode.IsLetter.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestReadmeContentsNamesEverySection: the README's contents list links
// every second-level section, and every link of it lands on a heading (a
// renamed section fails here instead of leaving a dead link).
func TestReadmeContentsNamesEverySection(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	anchors := map[string]bool{}
	var sections []string
	start, end := -1, -1
	for i, l := range lines {
		if !strings.HasPrefix(l, "## ") {
			continue
		}
		h := strings.TrimPrefix(l, "## ")
		if h == "Contents" {
			start = i
			continue
		}
		if start >= 0 && end < 0 {
			end = i
		}
		anchors[githubAnchor(h)] = true
		sections = append(sections, githubAnchor(h))
	}
	if start < 0 || end < 0 {
		t.Fatal("README.md has no \"## Contents\" section followed by another section")
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(strings.Join(lines[start:end], "\n"), -1) {
		if !anchors[m[1]] {
			t.Errorf("contents link #%s names no section heading", m[1])
		}
		linked[m[1]] = true
	}
	for _, a := range sections {
		if !linked[a] {
			t.Errorf("section #%s is not in the contents", a)
		}
	}
}
