package weaviate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search/weaviate/weaviatetest"
)

// shared is the server most tests and the benchmarks use: one process for
// the package's run, each test in collections of its own (ClassPrefix).
// The failure test starts a server of its own.
var shared struct {
	once sync.Once
	dir  string
	srv  *weaviatetest.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedServer is the package's server, started on first use; a missing
// binary skips tb (fails it with CHRONICLE_REQUIRE_WEAVIATE=1).
func sharedServer(tb testing.TB) *weaviatetest.Server {
	tb.Helper()
	bin := weaviatetest.Require(tb)
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "chronicle-weaviate-")
		if shared.err != nil {
			return
		}
		shared.srv, shared.err = weaviatetest.Launch(bin, filepath.Join(shared.dir, "data"), filepath.Join(shared.dir, "weaviate.log"))
	})
	if shared.err != nil {
		tb.Fatalf("start the shared weaviate-server: %v", shared.err)
	}
	if !shared.srv.Running() {
		tb.Fatalf("the shared weaviate-server is not running; log:\n%s", shared.srv.LogTail(30))
	}
	return shared.srv
}

var prefixes atomic.Int64

// testConfig is a config for srv with collections of their own, short
// retries and a 30 s bound on one request: the tests that use it check
// behaviour, not latency, and under the whole race-enabled suite on two
// cores a schema create or drop took over the default 10 s (a CI run,
// 2026-12-06: "context deadline exceeded" on DELETE /v1/schema; the
// package passed alone in the same clone). The failure tests set their
// own short timeouts.
func testConfig(srv *weaviatetest.Server) Config {
	return Config{Host: srv.Host, ClassPrefix: fmt.Sprintf("T%d_%d_", os.Getpid(), prefixes.Add(1)), Timeout: 30 * time.Second,
		RetryMaxElapsed: 3 * time.Second, RetryInitialInterval: 50 * time.Millisecond, RetryMaxInterval: 500 * time.Millisecond}
}

// newTestStore opens a store on srv in fresh collections, dropped when tb
// ends.
func newTestStore(tb testing.TB, srv *weaviatetest.Server, cfg Config) *Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if srv.Running() {
			if err := s.Drop(ctx); err != nil {
				tb.Errorf("Drop: %v", err)
			}
		}
		s.Close()
	})
	return s
}
