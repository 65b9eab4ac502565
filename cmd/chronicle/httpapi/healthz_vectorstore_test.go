package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// switchStore is an embedded vector store that refuses every call while
// down is set (Weaviate stopped or killed).
type switchStore struct {
	*search.MemStore
	down atomic.Bool
}

var errStoreDown = errors.New("weaviate: server unavailable after 2 attempts: connection refused")

func (s *switchStore) Upsert(ctx context.Context, docs []search.Doc) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.MemStore.Upsert(ctx, docs)
}

func (s *switchStore) Delete(ctx context.Context, ids []string) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.MemStore.Delete(ctx, ids)
}

// TestHealthzNamesAFailingVectorStore: while the search index cannot sync
// to its vector store, /healthz stays 200 with its status (writes and the
// other reads go on) and says so under warnings and vector_store, with the
// error and the documents pending; once the store is back and the sync
// caught up, neither is there. Before, /healthz said nothing while every
// memory search answered 503 after 20 s (an SRE drill with Weaviate
// SIGSTOPped).
func TestHealthzNamesAFailingVectorStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vs := &switchStore{MemStore: search.NewMemStore()}
	vs.down.Store(true)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", VectorStore: vs})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(conforming(t, (&httpapi.Server{P: p}).Handler()))
	t.Cleanup(func() { srv.Close(); _ = p.Close() })
	body, _ := sessionJSON(t, 0)
	if code, m := post(t, srv, body); code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, m)
	}
	var h map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for {
		code := get(t, srv, "/healthz", &h)
		vsh, _ := h["vector_store"].(map[string]any)
		if code == 200 && vsh != nil {
			if !strings.Contains(fmt.Sprint(vsh["error"]), "connection refused") || vsh["pending"].(float64) < 1 ||
				!strings.Contains(fmt.Sprint(h["warnings"]), "vector store") {
				t.Fatalf("/healthz with the vector store down: %v", h)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz 20 s into the vector store's outage: %d %v", code, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// a search meanwhile is a 503 saying when to come back (it had no
	// Retry-After: a walkthrough, 2026-11-30)
	resp, err := http.Get(srv.URL + "/v1/memories/search?query=refund")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a memory search with the vector store down: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	vs.down.Store(false)
	deadline = time.Now().Add(20 * time.Second)
	for {
		h = nil
		code := get(t, srv, "/healthz", &h)
		if code == 200 && h["vector_store"] == nil && !strings.Contains(fmt.Sprint(h["warnings"]), "vector store") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz 20 s after the vector store came back: %d %v", code, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
