package main

import (
	"strings"
	"testing"
)

func TestCheckAdvertise(t *testing.T) {
	for _, ok := range []string{"", "http://chronicle-1:8080", "https://chronicle.example.com", "http://chronicle-1:8080/"} {
		if err := checkAdvertise(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	// a path, a query or a fragment: the members add each request's path
	// to it (a path made them ask for /chronicle/v1/…: an SRE's walkthrough)
	for _, bad := range []string{"chronicle-1:8080", "ftp://x:1", "http://", "/v1", "http://127.0.0.1:18413/chronicle", "http://h:1/some/path?x=1", "http://h:1?x=1", "http://h:1/#f", "http://u:p@h:1"} {
		err := checkAdvertise(bad)
		if err == nil || !strings.Contains(err.Error(), "--advertise") {
			t.Errorf("%q: error %v, want one naming --advertise", bad, err)
		}
	}
}

func TestCheckStandbys(t *testing.T) {
	for _, c := range []struct {
		n       int
		brokers []string
		ok      bool
	}{{0, nil, true}, {1, []string{"k:9092"}, true}, {2, []string{"k:9092"}, true}, {1, nil, false}, {-1, []string{"k:9092"}, false}} {
		err := checkStandbys(c.n, c.brokers)
		if (err == nil) != c.ok {
			t.Errorf("checkStandbys(%d, %v) = %v, want ok %v", c.n, c.brokers, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--standby-replicas") {
			t.Errorf("checkStandbys(%d, %v): error %q does not name --standby-replicas", c.n, c.brokers, err)
		}
	}
}
