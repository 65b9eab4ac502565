package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// downStore is a vector store that never answers a write.
type downStore struct{}

var errDown = errors.New("vector store down")

func (downStore) Upsert(context.Context, []search.Doc) error { return errDown }
func (downStore) Delete(context.Context, []string) error     { return errDown }
func (downStore) Candidates(context.Context, []float32, string, search.Filter, int) ([]search.Candidate, error) {
	return nil, errDown
}
func (downStore) Len(context.Context) (int, error) { return 0, nil }

// A failing background sync of the search index is told to OnSearchError,
// not to OnRelayError: serve logged a Weaviate outage as an "outbox relay"
// failure (found by a walkthrough that killed Weaviate).
func TestSearchSyncErrorsGoToOnSearchError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	searchErrs, relayErrs := make(chan error, 16), make(chan error, 16)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", VectorStore: downStore{},
		OnSearchError: func(err error) { searchErrs <- err }, OnRelayError: func(err error) { relayErrs <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, envs := range sampleEvents(t, 2) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-searchErrs:
		if !errors.Is(err, errDown) {
			t.Fatalf("OnSearchError got %v, want the store's error", err)
		}
	case err := <-relayErrs:
		t.Fatalf("OnRelayError got %v", err)
	case <-ctx.Done():
		t.Fatal("no search sync error reported within a minute")
	}
	select {
	case err := <-relayErrs:
		t.Fatalf("OnRelayError got %v", err)
	default:
	}
}
