package reflexion

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"os"
	"strings"
)

// The two bundled runs: the ReAct agent with reflections and without
// (the baseline), 100 HotPotQA questions, 5 trials each.
const (
	RunReflexion = "react-reflexion-gpt-100q-5trials"
	RunBase      = "react-base-100q-5trials"
)

// data holds the logs, gzip -9, and their MIT licence (Copyright 2023
// Noah Shinn), to ship with any copy.
//
//go:embed data/*.txt.gz data/LICENSE
var data embed.FS

// License is the MIT licence of the bundled logs.
func License() string {
	b, _ := data.ReadFile("data/LICENSE")
	return string(b)
}

// Bundled parses a bundled run (RunReflexion or RunBase).
func Bundled(name string) (*Run, error) {
	b, err := data.ReadFile("data/" + name + ".txt.gz")
	if err != nil {
		return nil, fmt.Errorf("reflexion: no bundled run %q (%s or %s)", name, RunReflexion, RunBase)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return Parse(zr)
}

// Open parses FILE: a bundled run's name, a path to a log, or to a
// gzipped log (.gz). It returns the run and its name (the file name
// without .txt/.gz), which becomes part of every task id.
func Open(file string) (*Run, string, error) {
	if file == RunReflexion || file == RunBase {
		r, err := Bundled(file)
		return r, file, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var rd io.Reader = f
	name := file[strings.LastIndexByte(file, '/')+1:]
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, "", fmt.Errorf("reflexion: %s: %w", file, err)
		}
		defer zr.Close()
		rd = zr
		name = strings.TrimSuffix(name, ".gz")
	}
	name = strings.TrimSuffix(name, ".txt")
	run, err := Parse(rd)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	return run, name, nil
}
