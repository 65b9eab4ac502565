// Package zonetest runs a test under a host time zone other than the
// machine's, in a child process of the test binary, so that the test never
// assigns time.Local: every goroutine that calls time.Now reads it, and
// goroutines a package's earlier tests left behind (a client's metrics
// loop, a pipeline closing) made such an assignment a data race under
// -race (TestClusterViewTimesAreUTC, 2026-12-07).
package zonetest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// childEnv marks the child process of Run; its value is the zone.
const childEnv = "CHRONICLE_ZONETEST_CHILD"

// Child reports whether this process is Run's child. A TestMain that does
// costly set-up the zone's test does not need (building a binary) may
// skip it when Child is true.
func Child() bool { return os.Getenv(childEnv) != "" }

// Run runs the calling test under TZ=zone (an IANA name, e.g.
// "America/New_York"). In the test binary started by go test it starts a
// child process of the same binary that runs only t's test, with TZ=zone,
// fails t with the child's output if the child fails, and returns false:
// the caller returns. In that child it returns true and the caller goes
// on with its test, under the zone. The child is bounded by timeout
// (-test.timeout). It skips t when the machine has no time zone database
// entry for zone, and fails the child when time.Local is not zone there.
func Run(t *testing.T, zone string, timeout time.Duration) bool {
	t.Helper()
	if z := os.Getenv(childEnv); z != "" {
		if time.Local.String() != z {
			t.Fatalf("zonetest: the child's local zone is %q, want %q", time.Local, z)
		}
		return true
	}
	if _, err := time.LoadLocation(zone); err != nil {
		t.Skipf("zonetest: no time zone database entry for %s: %v", zone, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), "TZ="+zone, childEnv+"="+zone)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s under TZ=%s (a child process): %v\n%s", t.Name(), zone, err, out)
	}
	return false
}
