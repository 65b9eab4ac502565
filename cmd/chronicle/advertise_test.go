package main

import (
	"strings"
	"testing"
)

func TestCheckAdvertise(t *testing.T) {
	for _, ok := range []string{"", "http://chronicle-1:8080", "https://chronicle.example.com"} {
		if err := checkAdvertise(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"chronicle-1:8080", "ftp://x:1", "http://", "/v1"} {
		err := checkAdvertise(bad)
		if err == nil || !strings.Contains(err.Error(), "--advertise") {
			t.Errorf("%q: error %v, want one naming --advertise", bad, err)
		}
	}
}
