package weaviate

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/weaviate/weaviate/entities/models"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// TestCollections: New creates the three collections with vectorizer
// none, cosine HNSW and every property; a second New on them changes
// nothing; New adds the properties an older collection lacks, keeping its
// objects.
func TestCollections(t *testing.T) {
	srv := sharedServer(t)
	cfg := testConfig(srv)
	s := newTestStore(t, srv, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem, pat, tool := s.Collections()
	if mem != cfg.ClassPrefix+"Memory" || pat != cfg.ClassPrefix+"CoordinationPattern" || tool != cfg.ClassPrefix+"Tool" {
		t.Fatalf("Collections = %s, %s, %s", mem, pat, tool)
	}
	want := classes(cfg.ClassPrefix)
	for _, w := range want {
		c, err := s.client.Schema().ClassGetter().WithClassName(w.Class).Do(ctx)
		if err != nil {
			t.Fatalf("%s: %v", w.Class, err)
		}
		if c.Vectorizer != "none" {
			t.Errorf("%s: vectorizer %q, want none", w.Class, c.Vectorizer)
		}
		if vc, _ := c.VectorIndexConfig.(map[string]any); vc["distance"] != "cosine" {
			t.Errorf("%s: vector index config %v, want cosine distance", w.Class, c.VectorIndexConfig)
		}
		if c.InvertedIndexConfig == nil || c.InvertedIndexConfig.Stopwords == nil || c.InvertedIndexConfig.Stopwords.Preset != "none" {
			t.Errorf("%s: stopwords %+v, want preset none", w.Class, c.InvertedIndexConfig)
		}
		have := map[string]*models.Property{}
		for _, p := range c.Properties {
			have[p.Name] = p
		}
		for _, p := range w.Properties {
			h, ok := have[p.Name]
			if !ok {
				t.Errorf("%s: property %s missing", w.Class, p.Name)
				continue
			}
			if !slices.Equal(h.DataType, p.DataType) || (p.Tokenization != "" && h.Tokenization != p.Tokenization) {
				t.Errorf("%s.%s: %v/%s, want %v/%s", w.Class, p.Name, h.DataType, h.Tokenization, p.DataType, p.Tokenization)
			}
		}
	}

	// Idempotent start.
	if s2, err := New(ctx, cfg); err != nil {
		t.Fatalf("second New: %v", err)
	} else {
		s2.Close()
	}

	// An older Memory collection without evidence, usage_count, model and
	// doc gets them, and keeps its objects (read property by property).
	old := testConfig(srv)
	oldMem := classes(old.ClassPrefix)[0]
	oldMem.Properties = slices.DeleteFunc(slices.Clone(oldMem.Properties), func(p *models.Property) bool {
		return p.Name == "evidence" || p.Name == "usage_count" || p.Name == "model" || p.Name == docProp
	})
	if err := s.client.Schema().ClassCreator().WithClass(oldMem).Do(ctx); err != nil {
		t.Fatalf("create the old collection: %v", err)
	}
	resp, err := s.client.Batch().ObjectsBatcher().WithObjects(&models.Object{Class: oldMem.Class, ID: "6f1c1a53-5e0a-5a8e-9c3d-0a1b2c3d4e5f",
		Properties: map[string]any{"memory_id": "legacy", "title": "legacy memory", "confidence": 0.9, "pruned": false, "outcome": "success"},
		Vector:     []float32{1, 0, 0}}).Do(ctx)
	if err != nil || batchErrors(resp) != nil {
		t.Fatalf("write the old object: %v %v", err, batchErrors(resp))
	}
	s3 := newTestStore(t, srv, old)
	n, err := s3.Len(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Len of the upgraded collection = %d, %v; want 1", n, err)
	}
	c, err := s3.client.Schema().ClassGetter().WithClassName(oldMem.Class).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range c.Properties {
		names = append(names, p.Name)
	}
	for _, p := range []string{"evidence", "usage_count", "model", docProp} {
		if !slices.Contains(names, p) {
			t.Errorf("property %s not added: %v", p, names)
		}
	}
	// The upgraded collection works as a store.
	d := search.Doc{ID: "new", Title: "new memory", Outcome: "success", Confidence: 0.9, Vector: []float32{0, 1, 0}, Model: "m", UsageCount: 3}
	if err := s3.Upsert(ctx, []search.Doc{d}); err != nil {
		t.Fatal(err)
	}
	cs, err := s3.Candidates(ctx, []float32{0, 1, 0}, "memory", search.Filter{}, 5)
	if err != nil || len(cs) != 2 || cs[0].ID != "new" || cs[0].UsageCount != 3 || cs[1].ID != "legacy" || cs[1].Title != "legacy memory" {
		t.Fatalf("candidates on the upgraded collection: %+v, %v", cs, err)
	}
}
