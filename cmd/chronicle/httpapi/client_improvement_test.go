package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Against chronicle inspect, which answers every write 405, pair_improvement
// reads the improvement (GET) instead of failing: before, only 403 and 404
// fell back, so the tool failed there while the GET answered (a new
// user's walkthrough, 2026-12-03).
func TestImprovementFallsBackOnReadOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET, HEAD")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			w.Write([]byte(`{"error":"read-only: this is a write"}`))
			return
		}
		if r.URL.Path != "/v1/sessions/s1/improvement" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"session_id":"s1","status":"NO_CONTEXT"}`))
	}))
	defer srv.Close()
	out, err := (&Client{Base: srv.URL}).Improvement(context.Background(), "s1", "")
	if err != nil || out["status"] != "NO_CONTEXT" {
		t.Fatalf("improvement %v, %v; want the GET's answer", out, err)
	}
}
