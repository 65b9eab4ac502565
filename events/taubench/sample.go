package taubench

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
)

// sampleGz is tau-bench's historical_trajectories/gpt-4o-airline.json
// (MIT licence, see sample/LICENSE), gzip -9.
//
//go:embed sample/gpt-4o-airline.json.gz
var sampleGz []byte

// SampleLicense is the MIT licence of the sample data (copyright 2024
// Sierra), to ship alongside any copy of it.
//
//go:embed sample/LICENSE
var SampleLicense string

// Sample returns the decompressed JSON of the embedded sample: 200 GPT-4o
// sessions of the tau-bench airline domain (50 tasks x 4 trials, 84 with
// reward 1). The caller closes it.
func Sample() (io.ReadCloser, error) {
	zr, err := gzip.NewReader(bytes.NewReader(sampleGz))
	if err != nil {
		return nil, fmt.Errorf("taubench: sample: %w", err)
	}
	return zr, nil
}

// SampleRecords reads every record of the embedded sample.
func SampleRecords() ([]Record, error) {
	rc, err := Sample()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ReadRecords(rc)
}
