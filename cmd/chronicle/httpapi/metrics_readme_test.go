package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// README's GET /metrics row names every chronicle_* family serve exposes,
// and every family it names is exposed, but those that appear only under
// a condition: a standby replica (--standby-replicas), a worker's first
// message (Watermill's router metrics, chronicle_router_*). Before, the
// row lacked chronicle_standby_lag_records, and an undocumented family
// could be added unnoticed (an observability walkthrough, 2026-12-06).
func TestMetricsReadmeNamesEveryFamily(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "| `GET /metrics` |") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("README.md: no `GET /metrics` row")
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(chronicle_[a-z_]+)[`{]").FindAllStringSubmatch(row, -1) {
		documented[m[1]] = true
	}
	conditional := map[string]bool{"chronicle_standby_lag_records": true}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", PAIR: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := (&Server{P: p}).Handler()
	for range 2 { // the second scrape gathers the first's HTTP series
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /metrics: %d", rec.Code)
		}
	}
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		if !strings.HasPrefix(n, "chronicle_") {
			continue
		}
		exposed[n] = true
		if !documented[n] && !strings.HasPrefix(n, "chronicle_router_") {
			t.Errorf("%s is exposed but README's GET /metrics row does not name it", n)
		}
	}
	for n := range documented {
		if !exposed[n] && !conditional[n] && !strings.HasPrefix(n, "chronicle_router_") {
			t.Errorf("README's GET /metrics row names %s, which serve does not expose", n)
		}
	}
	for n := range conditional {
		if !documented[n] {
			t.Errorf("README's GET /metrics row does not name %s", n)
		}
	}
	t.Logf("%d chronicle_* families exposed, %d named in README", len(exposed), len(documented))
}
