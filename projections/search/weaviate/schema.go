package weaviate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"
)

// The collections (Weaviate classes) the store creates at start when they
// are missing, each with vectorizer "none" (vectors come from the caller,
// with the embedding model's name in the model property), an HNSW index on
// cosine distance, BM25 (k1 1.2, b 0.75, no stopword list: the embedded
// MemStore has none) on the word-tokenised text properties, and exact
// ("field"-tokenised) filterable properties for everything a filter needs.
const (
	// MemoryClass holds the memory bank's memories (search.Memories): the
	// collection the Store's own VectorStore methods work on.
	MemoryClass = "Memory"
	// PatternClass holds coordination patterns (search.Patterns).
	PatternClass = "CoordinationPattern"
	// ToolClass holds the tools of the tool graph (search.Tools).
	ToolClass = "Tool"
)

// idProps name each collection's id property. Besides it, every
// collection has the same properties: scope, scope_kind (project, team or
// org: the part of scope before ':'), title, description, content (BM25),
// outcome, tags, source_sessions, confidence, pruned, evidence,
// usage_count, model, dim and doc (the whole document as JSON, what a
// candidate query reads back: see docProp). (Versions before the Tool and CoordinationPattern
// collections were written created them with other properties — name,
// roles, usage, success_rate; New adds the missing ones and leaves those
// unused.)
var idProps = map[string]string{MemoryClass: "memory_id", PatternClass: "pattern_id", ToolClass: "tool_id"}

// docProp is the property holding the whole document as JSON (search.Doc
// without its vector; neither filterable nor searchable). A candidate
// query asks for it and the id only: Weaviate's cost of returning an
// object grows with the number of properties asked for (at 10k objects
// and k = 200, on a 2-core machine: ~5 ms per query for the id alone or
// the id and content, ~12–20 ms for the fourteen properties of a Doc;
// measured over gRPC, see the README's Weaviate benchmark). The other
// properties stay for the filters, BM25 and inspection. Objects written
// before the property existed (a collection of an older version, to which
// New adds it) have none: Candidates reads those property by property
// until the index's first sync, which pushes every document, rewrites
// them.
const docProp = "doc"

func boolp(b bool) *bool { return &b }

// keyword is an exact, filterable text (or text[]) property.
func keyword(name, dataType, desc string) *models.Property {
	return &models.Property{Name: name, DataType: []string{dataType}, Description: desc, Tokenization: "field",
		IndexFilterable: boolp(true), IndexSearchable: boolp(false)}
}

// prose is a word-tokenised property BM25 searches.
func prose(name, desc string) *models.Property {
	return &models.Property{Name: name, DataType: []string{"text"}, Description: desc, Tokenization: "word",
		IndexFilterable: boolp(false), IndexSearchable: boolp(true)}
}

func number(name, dataType, desc string, rangeable bool) *models.Property {
	p := &models.Property{Name: name, DataType: []string{dataType}, Description: desc, IndexFilterable: boolp(true)}
	if rangeable {
		p.IndexRangeFilters = boolp(true)
	}
	return p
}

func class(name, desc string, props ...*models.Property) *models.Class {
	return &models.Class{
		Class:               name,
		Description:         desc,
		Vectorizer:          "none",
		VectorIndexType:     "hnsw",
		VectorIndexConfig:   map[string]any{"distance": "cosine"},
		InvertedIndexConfig: &models.InvertedIndexConfig{Bm25: &models.BM25Config{K1: 1.2, B: 0.75}, Stopwords: &models.StopwordConfig{Preset: "none"}},
		Properties:          props,
	}
}

// textProps are the properties BM25 searches, in every collection.
var textProps = []string{"title", "description", "content"}

// classes are the definitions of the three collections, named with
// prefix.
func classes(prefix string) []*models.Class {
	scope := func() []*models.Property {
		return []*models.Property{
			keyword("scope", "text", "project:<id>, team:<id> or org:<id>"),
			keyword("scope_kind", "text", "project, team or org: the scope before ':'"),
		}
	}
	// Every collection has the same properties but its id's name, so one
	// Store code path serves all three.
	props := func(idProp, what string) []*models.Property {
		return append([]*models.Property{
			keyword(idProp, "text", "the "+what+"'s id (the object UUID is UUID v5 of it)"),
			prose("title", "short title"),
			prose("description", "one-sentence description"),
			prose("content", "the "+what+" itself"),
			keyword("outcome", "text", "success or failure of the sessions it came from"),
			keyword("tags", "text[]", "tags"),
			keyword("source_sessions", "text[]", "sessions it was learned from"),
			number("confidence", "number", "confidence 0..1", true),
			{Name: "pruned", DataType: []string{"boolean"}, Description: "pruned objects are kept, never returned", IndexFilterable: boolp(true)},
			number("evidence", "int", "observations supporting it", false),
			number("usage_count", "int", "times retrieved", false),
			keyword("model", "text", "embedding model of the vector"),
			number("dim", "int", "dimension of the vector", false),
			{Name: docProp, DataType: []string{"text"}, Tokenization: "field", IndexFilterable: boolp(false), IndexSearchable: boolp(false),
				Description: "the whole document as JSON (search.Doc without its vector): what a candidate query reads back"},
		}, scope()...)
	}
	out := []*models.Class{
		class(prefix+MemoryClass, "Chronicle memories", props(idProps[MemoryClass], "memory")...),
		class(prefix+PatternClass, "Chronicle coordination patterns", props(idProps[PatternClass], "pattern")...),
		class(prefix+ToolClass, "Chronicle tools", props(idProps[ToolClass], "tool")...),
	}
	for _, c := range out[:3] {
		out = append(out, scopedClass(c))
	}
	return out
}

// scopedClass is the scoped class of collection c (ScopedSuffix): its
// properties, multi-tenancy on (a tenant per scope, created by the first
// write into it), and no vector index (its objects have no vector).
func scopedClass(c *models.Class) *models.Class {
	sc := class(c.Class+ScopedSuffix, c.Description+", one tenant per scope, for BM25 statistics per scope", c.Properties...)
	sc.VectorIndexConfig = map[string]any{"distance": "cosine", "skip": true}
	sc.MultiTenancyConfig = &models.MultiTenancyConfig{Enabled: true, AutoTenantCreation: true, AutoTenantActivation: true}
	return sc
}

func statusOf(err error) int {
	var we *fault.WeaviateClientError
	if errors.As(err, &we) {
		return we.StatusCode
	}
	return 0
}

// ensureSchema creates every missing collection (and scoped class) and
// adds the properties an existing one lacks (a collection created by an
// older version). A store written by a version without scoped classes
// keeps its collections as they are and gets empty scoped classes: the
// index's first sync after start (search.Index.Sync), which pushes every
// document, fills them; until an upsert of a document, its collection's
// bm25 pass does not find it.
func (s *Store) ensureSchema(ctx context.Context) error {
	for _, want := range classes(s.cfg.ClassPrefix) {
		var have *models.Class
		err := s.retry(ctx, "get collection "+want.Class, func(ctx context.Context) error {
			c, err := s.client.Schema().ClassGetter().WithClassName(want.Class).Do(ctx)
			if statusOf(err) == http.StatusNotFound {
				return nil
			}
			have = c
			return err
		})
		if err != nil {
			return err
		}
		if have == nil {
			err := s.retry(ctx, "create collection "+want.Class, func(ctx context.Context) error {
				return s.client.Schema().ClassCreator().WithClass(want).Do(ctx)
			})
			if err == nil {
				continue
			}
			if !strings.Contains(strings.ToLower(err.Error()), "already exists") {
				return err
			}
			// Created concurrently by another store: check its properties.
			if err := s.retry(ctx, "get collection "+want.Class, func(ctx context.Context) error {
				c, err := s.client.Schema().ClassGetter().WithClassName(want.Class).Do(ctx)
				have = c
				return err
			}); err != nil {
				return err
			}
		}
		if mt := want.MultiTenancyConfig; mt != nil && mt.Enabled && (have.MultiTenancyConfig == nil || !have.MultiTenancyConfig.Enabled) {
			// Weaviate's auto-schema makes it so when a write reaches a
			// server that lost the schema: every tenant's write and
			// search then fails (lost.go)
			return fmt.Errorf("weaviate: collection %s exists without multi-tenancy, which Chronicle's scoped classes need (a server's auto-schema creates it so when a write reaches it before Chronicle's schema): delete it (curl -X DELETE %s://%s/v1/schema/%s) and start again; serve pushes every document again", want.Class, s.cfg.Scheme, s.cfg.Host, want.Class)
		}
		got := map[string]bool{}
		for _, p := range have.Properties {
			got[p.Name] = true
		}
		for _, p := range want.Properties {
			if got[p.Name] {
				continue
			}
			if err := s.retry(ctx, fmt.Sprintf("add property %s.%s", want.Class, p.Name), func(ctx context.Context) error {
				return s.client.Schema().PropertyCreator().WithClassName(want.Class).WithProperty(p).Do(ctx)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
