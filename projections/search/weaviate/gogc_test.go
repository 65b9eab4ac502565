package weaviate

import (
	"bytes"
	"os"
	"testing"

	"github.com/chronicle-dev/chronicle/projections/search/weaviate/weaviatetest"
)

// TestServerRunsWithDefaultGOGC checks that the server these tests and
// benchmarks start runs with weaviatetest.DefaultGOGC, whatever GOGC the
// test process has: the README's Weaviate latency figures since
// 2026-11-30 were measured with it.
func TestServerRunsWithDefaultGOGC(t *testing.T) {
	sharedServer(t)
	environ, err := os.ReadFile("/proc/" + serverPID(t) + "/environ")
	if err != nil {
		t.Skipf("no /proc environ: %v", err)
	}
	var got []string
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GOGC=")); ok {
			got = append(got, string(v))
		}
	}
	if len(got) != 1 || got[0] != weaviatetest.DefaultGOGC {
		t.Fatalf("weaviate-server's GOGC: %q, want [%q]", got, weaviatetest.DefaultGOGC)
	}
}
