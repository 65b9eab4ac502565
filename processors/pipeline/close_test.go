package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// hungStore is a vector store whose every call blocks, whatever its
// context, until release is closed: a component that does not stop.
type hungStore struct {
	entered     chan struct{}
	enteredOnce sync.Once
	release     chan struct{}
}

func (h *hungStore) hang() {
	h.enteredOnce.Do(func() { close(h.entered) })
	<-h.release
}

func (h *hungStore) Upsert(context.Context, []search.Doc) error { h.hang(); return nil }
func (h *hungStore) Delete(context.Context, []string) error     { h.hang(); return nil }
func (h *hungStore) Candidates(context.Context, []float32, string, search.Filter, int) ([]search.Candidate, error) {
	h.hang()
	return nil, nil
}
func (h *hungStore) Len(context.Context) (int, error) { h.hang(); return 0, nil }

// Close returns within Config.CloseWait when a part does not stop (the
// search index's sync, hung in its vector store), with an error wrapping
// ErrCloseTimeout that names it; the projection store stays open under
// it and is closed once the part ends. Close used to wait for ever.
func TestCloseIsBoundedWithAHungPart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vs := &hungStore{entered: make(chan struct{}), release: make(chan struct{})}
	dir := t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0", VectorStore: vs, CloseWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(vs.release)
		}
		_ = p.Close()
	}()
	for _, envs := range sampleEvents(t, 2) {
		if err := p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-vs.entered:
	case <-ctx.Done():
		t.Fatal("the search index never called its vector store")
	}
	t0 := time.Now()
	err = p.Close()
	d := time.Since(t0)
	if !errors.Is(err, pipeline.ErrCloseTimeout) || !strings.Contains(err.Error(), "search index") {
		t.Fatalf("Close: %v; want ErrCloseTimeout naming the search index", err)
	}
	if strings.Contains(err.Error(), "outbox relay") || strings.Contains(err.Error(), "engine") {
		t.Errorf("Close names parts that stopped: %v", err)
	}
	if d > 3*time.Second {
		t.Fatalf("Close took %s with CloseWait 1 s", d)
	}
	t.Logf("Close after %s: %v", d.Round(time.Millisecond), err)
	// the store is still open under the hung part: its data directory is
	// locked
	if s, err := projections.Open(pipeline.ProjectionsDir(dir), projections.Options{}); err == nil {
		s.Close()
		t.Fatal("the projection store was closed under a part still running")
	}
	// once the part ends, the store is closed
	close(vs.release)
	released = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := projections.Open(pipeline.ProjectionsDir(dir), projections.Options{})
		if err == nil {
			s.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the projection store still open 20 s after the hung part was released: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
