package httpapi_test

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/zonetest"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// GET /v1/cluster's restore.assigned_at is in UTC ("…Z"), as every other
// time the API answers, whatever the host's time zone. Before, it was
// the host's local time: under TZ=America/New_York,
// "2026-12-04T15:00:06.15625422-05:00" beside UTC times everywhere else,
// and members in different zones answered in different offsets (a time
// walkthrough, 2026-12-04).
func TestClusterViewTimesAreUTC(t *testing.T) {
	if !zonetest.Run(t, "America/New_York", 2*time.Minute) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	t.Cleanup(srv.Close)
	assigned := regexp.MustCompile(`"assigned_at":"([^"]*)"`)
	for {
		resp, err := srv.Client().Get(srv.URL + "/v1/cluster")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ms := assigned.FindAllStringSubmatch(string(body), -1); len(ms) > 0 {
			for _, m := range ms {
				if !strings.HasSuffix(m[1], "Z") {
					t.Errorf("assigned_at %q: want UTC (…Z) under a local zone of America/New_York", m[1])
				}
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no assigned_at within 25 s: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
