package weaviate

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// BenchmarkCandidateCost measures where a search's time goes on Weaviate
// in CPU, which the shared machine's load moves less than latency: on the
// 10,000 bench documents of BenchmarkCandidates (the same loaded
// collection when both run) with the default filter (benchFilter) over
// gRPC, it runs Candidates, the two-phase path (twoPhaseStore, warm
// refCache), the same with the refCache emptied before each query (every
// UUID looked up: a process's first searches before its first sync), and
// single lists — nearVector or bm25, k = 200 — asking
// for docProp, for the id property alone, or for no property (object
// UUIDs alone). Each reports latency p50/p99 and, per query, the server's
// CPU (utime + stime of the weaviate-server process from /proc, Linux
// only; 10 ms ticks, so use -benchtime of a few hundred queries) and this
// process's.
// Run: go test -run '^$' -bench CandidateCost -benchtime 300x ./projections/search/weaviate/
func BenchmarkCandidateCost(b *testing.B) {
	srv := sharedServer(b)
	cfg := testConfig(srv)
	cfg.ClassPrefix, cfg.BatchSize, cfg.Timeout, cfg.GRPCHost = "Bench10000_", 500, time.Minute, srv.GRPCHost
	vs, load := loadStore(b, "Weaviate", 10000, weaviateSettle, func() search.VectorStore {
		return freshBenchStore(b, cfg)
	})
	st := vs.(*Store)
	ctx := context.Background()
	ss, err := st.scopeSet(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f := benchFilter
	w := grpcWhere(f, ss.refused(f.Readable))
	list := func(vec bool, props []string) func(q benchQuery) error {
		return func(q benchQuery) error {
			var v []float32
			text := ""
			if vec {
				v = q.v
			} else {
				text = bm25Query(q.text)
			}
			hits, err := st.grpc.search(ctx, st.class, "", st.idProp, v, text, w, search.CandidatesPerQuery, props, len(props) == 0)
			if err == nil && len(hits) == 0 {
				err = fmt.Errorf("no results")
			}
			return err
		}
	}
	pid := serverPID(b)
	for _, way := range []struct {
		name string
		run  func(q benchQuery) error
	}{
		{"Candidates", func(q benchQuery) error {
			_, err := st.Candidates(ctx, q.v, q.text, f, search.CandidatesPerQuery)
			return err
		}},
		{"two-phase", func(q benchQuery) error {
			_, err := twoPhaseStore{st}.Candidates(ctx, q.v, q.text, f, search.CandidatesPerQuery)
			return err
		}},
		{"two-phase-cold", func(q benchQuery) error {
			c := st.refs[st.class] // emptied before each query: every UUID unknown
			c.mu.Lock()
			clear(c.byUUID)
			c.mu.Unlock()
			_, err := twoPhaseStore{st}.Candidates(ctx, q.v, q.text, f, search.CandidatesPerQuery)
			return err
		}},
		{"nearVector-doc", list(true, []string{st.idProp, docProp})},
		{"nearVector-id", list(true, []string{st.idProp})},
		{"nearVector-uuid", list(true, []string{})},
		{"bm25-doc", list(false, []string{st.idProp, docProp})},
		{"bm25-id", list(false, []string{st.idProp})},
		{"bm25-uuid", list(false, []string{})},
	} {
		b.Run(way.name, func(b *testing.B) {
			qs := benchQueries()
			lat := make([]time.Duration, 0, b.N)
			s0, c0 := procCPU(b, pid), ownCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := way.run(qs[i%len(qs)]); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			srvCPU, selfCPU := procCPU(b, pid)-s0, ownCPU()-c0
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
			b.ReportMetric(ms(srvCPU)/float64(b.N), "server-cpu-ms/op")
			b.ReportMetric(ms(selfCPU)/float64(b.N), "client-cpu-ms/op")
			b.ReportMetric(load.Seconds(), "load-s")
		})
	}
}

// serverPID is the pid of the weaviate-server child of this process.
func serverPID(t testing.TB) string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fs := strings.Fields(string(b))
		if len(fs) > 4 && fs[1] == "(weaviate-server)" && fs[3] == strconv.Itoa(os.Getpid()) {
			return e.Name()
		}
	}
	t.Skip("the weaviate-server process was not found in /proc")
	return ""
}

// procCPU is the user + system CPU time of process pid (clock ticks of
// 10 ms, USER_HZ 100).
func procCPU(t testing.TB, pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fs := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:]) // fields from state on
	u, _ := strconv.Atoi(fs[11])
	s, _ := strconv.Atoi(fs[12])
	return time.Duration(u+s) * 10 * time.Millisecond
}

// ownCPU is this process's user + system CPU time.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// freshBenchStore is a store of cfg's classes emptied of an earlier run's
// leftovers, dropped when the benchmark ends.
func freshBenchStore(b *testing.B, cfg Config) *Store {
	st, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	_ = st.Drop(context.Background())
	if st, err = New(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Drop(context.Background()); st.Close() })
	return st
}
