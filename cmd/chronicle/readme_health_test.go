package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors"
)

// The README's /healthz status table names every status the code answers,
// with its HTTP code: it omitted "broker unreachable" (503) and "failed"
// (503), which an operator's walkthrough met and could not look up.
func TestReadmeHealthTableNamesEveryStatus(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "### Health\n")
	if !ok {
		t.Fatal(`the README has no "### Health" section`)
	}
	table, _, _ = strings.Cut(table, "\n\n\n")
	rows := map[string]string{} // status -> HTTP column
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.*\\| ([^|]+) \\|$").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	want := map[string]string{ // status -> code, "" when the test does not know it
		processors.HealthOK: "200", processors.HealthRestoring: "200", processors.HealthRebalancing: "200", processors.HealthStalled: "503",
	}
	codes := map[string]string{"StatusOK": "200", "StatusServiceUnavailable": "503"}
	files, _ := filepath.Glob("httpapi/*.go")
	files = append(files, "serve.go")
	written := regexp.MustCompile(`writeJSON\(w, http\.(\w+), map\[string\]any\{"status": "([^"]+)"`)
	named := regexp.MustCompile(`"status": ?"([a-z][a-z -]*)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			if _, ok := want[m[1]]; !ok {
				want[m[1]] = ""
			}
		}
		for _, m := range written.FindAllStringSubmatch(string(src), -1) {
			want[m[2]] = codes[m[1]]
		}
	}
	if len(want) < 8 {
		t.Fatalf("found only the statuses %v in the code", want)
	}
	for status, code := range want {
		got, ok := rows[status]
		switch {
		case !ok:
			t.Errorf("the README's /healthz table has no row for %q (HTTP %s)", status, code)
		case code != "" && !strings.HasPrefix(got, code):
			t.Errorf("the README's /healthz row for %q says HTTP %q, the code answers %s", status, got, code)
		}
	}
}
