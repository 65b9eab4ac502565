package memories_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// gateEmbedder returns a constant unit vector, but first waits on gate
// while it is not nil.
type gateEmbedder struct {
	entered chan struct{}
	gate    chan struct{}
}

func (g *gateEmbedder) Model() string { return "gate-test" }
func (g *gateEmbedder) Dim() int      { return 4 }
func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.gate != nil {
		g.entered <- struct{}{}
		<-g.gate
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0, 0, 0}
	}
	return out, nil
}

// A processor's commit never waits for a sync that is embedding or
// writing to the vector store, and a memory changed during a sync stays
// pending until a later sync has pushed its new version.
func TestCommitDuringSync(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	emb := &gateEmbedder{}
	ix := search.NewIndex(store, emb, nil, memories.SearchSource())
	var off int64
	record := func(id, title string) error {
		env, err := events.New(events.MemoryRecorded, "test", fmt.Sprint("e", off), time.Unix(1700000000, 0),
			events.MemoryRecordedData{MemoryID: id, Title: title, Description: "d", Content: "c", Outcome: "success", Source: "explicit"})
		if err != nil {
			return err
		}
		env.Scope = "project:a"
		_, err = store.Apply(memories.Name, projections.Position{Topic: string(events.TopicMemories), Offset: off}, &env, memories.Processor{}.Apply)
		off++
		return err
	}
	if err := record("m1", "first"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	emb.entered, emb.gate = make(chan struct{}), make(chan struct{})
	if err := record("m2", "second"); err != nil { // pending; the next sync embeds it and blocks
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ix.Sync(ctx) }()
	<-emb.entered
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		// the same memory again (evidence + 1) and a new one, during the sync
		if err := errors.Join(record("m2", "second"), record("m3", "third")); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-applied:
	case <-time.After(5 * time.Second):
		t.Fatal("a commit waited for the sync's embedding")
	}
	if n := ix.PendingIn(search.Memories); n != 2 {
		t.Fatalf("pending during the sync: %d, want 2 (m2 changed again, m3 new)", n)
	}
	close(emb.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := ix.PendingIn(search.Memories); n != 2 {
		t.Fatalf("pending after the blocked sync: %d, want 2: the changes made during it are not in the store yet", n)
	}
	emb.gate = nil
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ix.Pending(); n != 0 {
		t.Fatalf("pending after the next sync: %d", n)
	}
	cands, err := ix.Store().Candidates(ctx, []float32{1, 0, 0, 0}, "", search.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	ev := map[string]int{}
	for _, c := range cands {
		ev[c.ID] = c.Evidence
	}
	if len(ev) != 3 || ev["project:a/m2"] != 2 {
		t.Fatalf("vector store holds %v (id → evidence), want m1, m2 with evidence 2, m3", ev)
	}
}

// flakyStore is a MemStore whose Upserts fail while down, and which
// records the ids of every successful Upsert.
type flakyStore struct {
	*search.MemStore
	down     bool
	upserted [][]string
	deleted  []string
}

func (f *flakyStore) Delete(ctx context.Context, ids []string) error {
	f.deleted = append(f.deleted, ids...)
	return f.MemStore.Delete(ctx, ids)
}

func (f *flakyStore) Upsert(ctx context.Context, docs []search.Doc) error {
	if f.down {
		return errors.New("store down")
	}
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.ID)
	}
	f.upserted = append(f.upserted, ids)
	return f.MemStore.Upsert(ctx, docs)
}

// After a failed sync the next one pushes every document and the one after
// rewrites every document (delete, then insert): the store may have lost
// acknowledged writes that an upsert would not repair.
func TestResyncAfterFailure(t *testing.T) {
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fs := &flakyStore{MemStore: search.NewMemStore()}
	ix := search.NewIndex(store, &gateEmbedder{}, fs, memories.SearchSource())
	var off int64
	record := func(id string) {
		t.Helper()
		env, err := events.New(events.MemoryRecorded, "test", fmt.Sprint("e", off), time.Unix(1700000000, 0),
			events.MemoryRecordedData{MemoryID: id, Title: id, Description: "d", Content: "c", Outcome: "success", Source: "explicit"})
		if err != nil {
			t.Fatal(err)
		}
		env.Scope = "project:a"
		if _, err := store.Apply(memories.Name, projections.Position{Topic: string(events.TopicMemories), Offset: off}, &env, memories.Processor{}.Apply); err != nil {
			t.Fatal(err)
		}
		off++
	}
	ctx := context.Background()
	record("m1")
	record("m2")
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	record("m3")
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fs.upserted[len(fs.upserted)-1]; len(got) != 1 || got[0] != "project:a/m3" || len(fs.deleted) != 0 {
		t.Fatalf("an ordinary sync pushed %v and deleted %v, want only the change [m3] and no delete", got, fs.deleted)
	}
	fs.down = true
	record("m4")
	if err := ix.Sync(ctx); err == nil {
		t.Fatal("sync with the store down succeeded")
	}
	if n := ix.PendingIn(search.Memories); n != 4 {
		t.Fatalf("pending while down: %d, want all 4 (the next sync pushes everything)", n)
	}
	fs.down = false
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fs.upserted[len(fs.upserted)-1]; len(got) != 4 || len(fs.deleted) != 0 {
		t.Fatalf("the first sync after the failure deleted %v and pushed %v, want all 4 memories pushed", fs.deleted, got)
	}
	if n := ix.PendingIn(search.Memories); n != 4 {
		t.Fatalf("pending before the rewrite: %d, want all 4", n)
	}
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fs.upserted[len(fs.upserted)-1]; len(got) != 4 || len(fs.deleted) != 4 {
		t.Fatalf("the second sync after the failure deleted %v and inserted %v, want all 4 memories rewritten", fs.deleted, got)
	}
	if n, _ := fs.Len(ctx); n != 4 {
		t.Fatalf("store holds %d memories after the rewrite", n)
	}
	record("m5")
	if err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fs.upserted[len(fs.upserted)-1]; len(got) != 1 || len(fs.deleted) != 4 {
		t.Fatalf("the sync after the rewrite pushed %v and deleted %v: only the rewrite deletes", got, fs.deleted)
	}
	if n := ix.Pending(); n != 0 {
		t.Fatalf("pending after recovery: %d", n)
	}
}
