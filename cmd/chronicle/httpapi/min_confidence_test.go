package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// TestMinConfidenceOutOfRangeIsRefused: min_confidence is a 400 naming it
// and the range when it is not between 0 and 1, NaN included, on the
// memory and the pattern search alike. Before, NaN passed the range check
// (every comparison with it is false) and answered 200 with the filter
// silently off, while 2 and Inf were refused (found by a new user's
// walkthrough).
func TestMinConfidenceOutOfRangeIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	defer srv.Close()
	for _, route := range []string{"/v1/memories/search", "/v1/patterns/search"} {
		for _, mc := range []string{"NaN", "nan", "2", "Inf", "-0.1"} {
			resp, err := http.Get(srv.URL + route + "?query=x&min_confidence=" + mc)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error string `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, "min_confidence: ") || !strings.Contains(e.Error, "is not between 0 and 1") {
				t.Errorf("GET %s?min_confidence=%s: %d %q; want 400 naming min_confidence and the range", route, mc, resp.StatusCode, e.Error)
			}
		}
	}
}
