package weaviate

// The candidate query path before issue 11 (three GraphQL queries:
// nearVector and bm25 over-fetching OverFetch × k objects with the
// properties Filter.Admits reads, then the chosen documents by id),
// kept as it was (functions renamed legacy*) so BenchmarkCandidates
// measures it side by side with Candidates on the same server and corpus,
// and TestSameCandidatesAsBefore checks that Candidates returns the same.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/graphql"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// legacyLightProp are the properties Filter.Admits reads.
func legacyLightProp(idProp string) []graphql.Field {
	var out []graphql.Field
	for _, p := range []string{idProp, "scope", "outcome", "source_sessions", "confidence", "pruned"} {
		out = append(out, graphql.Field{Name: p})
	}
	return out
}

// search runs one pass (nearVector when vec is set, else bm25 on text),
// over-fetching as the filter requires, and returns the best k admitted
// documents by score, ties by id. When it over-fetches it asks only for
// the properties Filter.Admits reads (partial is then true: the
// documents need fetchDocs); the server's work and the response grow
// with every property of every object.
func (s *Store) legacySearch(ctx context.Context, what string, vec []float32, text string, f search.Filter, k int) (res []scored, partial bool, err error) {
	w, exact := legacyWhere(f)
	limit, fields := k, s.queryProp
	if !exact {
		limit, fields, partial = k*s.cfg.OverFetch, legacyLightProp(s.idProp), true
	}
	limit = min(limit, s.cfg.MaxFetch)
	for {
		get := s.client.GraphQL().Get().WithClassName(s.class).WithWhere(w).WithLimit(limit)
		add := graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "distance"}}}
		if vec != nil {
			get = get.WithNearVector(s.client.GraphQL().NearVectorArgBuilder().WithVector(vec))
		} else {
			get = get.WithBM25(s.client.GraphQL().Bm25ArgBuilder().WithQuery(text).WithProperties(textProps...))
			add.Fields = []graphql.Field{{Name: "score"}}
		}
		get = get.WithFields(append(append([]graphql.Field{}, fields...), add)...)
		var out struct {
			Get map[string][]hit `json:"Get"`
		}
		if err := s.query(ctx, what, get.Do, &out); err != nil {
			return nil, partial, err
		}
		hits := out.Get[s.class]
		res = make([]scored, 0, min(len(hits), k))
		for i := range hits {
			h := &hits[i]
			d := h.doc()
			if !f.Admits(&d) {
				continue
			}
			var sc float64
			switch {
			case vec != nil && h.Additional.Distance != nil:
				sc = 1 - *h.Additional.Distance
			case vec == nil && h.Additional.Score != nil:
				sc = float64(*h.Additional.Score)
			default:
				return nil, partial, fmt.Errorf("weaviate: %s: object %q came without its distance or score", what, d.ID)
			}
			res = append(res, scored{d, sc})
		}
		if len(res) >= k || len(hits) < limit || limit >= s.cfg.MaxFetch {
			sort.SliceStable(res, func(i, j int) bool {
				if res[i].score != res[j].score {
					return res[i].score > res[j].score
				}
				return res[i].doc.ID < res[j].doc.ID
			})
			return res[:min(k, len(res))], partial, nil
		}
		limit = min(limit*max(2, s.cfg.OverFetch), s.cfg.MaxFetch)
	}
}

// fetchDocs returns the documents with ids (those still held), in
// chunks of cfg.MaxFetch.
func (s *Store) legacyFetchDocs(ctx context.Context, ids []string) (map[string]search.Doc, error) {
	out := make(map[string]search.Doc, len(ids))
	for start := 0; start < len(ids); start += s.cfg.MaxFetch {
		chunk := ids[start:min(start+s.cfg.MaxFetch, len(ids))]
		uuids := make([]string, len(chunk))
		for i, id := range chunk {
			uuids[i] = ObjectID(id)
		}
		get := s.client.GraphQL().Get().WithClassName(s.class).WithLimit(len(chunk)).
			WithWhere(filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(uuids...)).
			WithFields(s.queryProp...)
		var res struct {
			Get map[string][]hit `json:"Get"`
		}
		if err := s.query(ctx, "fetch documents", get.Do, &res); err != nil {
			return nil, err
		}
		for i := range res.Get[s.class] {
			d := res.Get[s.class][i].doc()
			out[d.ID] = d
		}
	}
	return out, nil
}

// Candidates implements search.VectorStore: up to k documents nearest to v
// (skipped when v is empty) and up to k best by BM25 on text (skipped when
// text has no word), among those f admits, merged by id. k ≤ 0 returns
// none.
func (s *Store) legacyCandidates(ctx context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	if k <= 0 {
		return nil, nil
	}
	// The two passes run concurrently: the server works on both at once.
	var byVec, byText []scored
	var partVec, partText bool
	var errVec, errText error
	var wg sync.WaitGroup
	if len(v) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			byVec, partVec, errVec = s.legacySearch(ctx, "nearVector", v, "", f, k)
		}()
	}
	if q := bm25Query(text); q != "" {
		byText, partText, errText = s.legacySearch(ctx, "bm25", nil, q, f, k)
	}
	wg.Wait()
	if err := errors.Join(errVec, errText); err != nil {
		return nil, err
	}
	if partVec || partText {
		// Over-fetched with the filter's properties only: fetch the chosen
		// documents whole. One changed or deleted meanwhile is judged
		// again (or dropped).
		var ids []string
		seen := map[string]bool{}
		for _, l := range [][]scored{byVec, byText} {
			for _, c := range l {
				if !seen[c.doc.ID] {
					seen[c.doc.ID] = true
					ids = append(ids, c.doc.ID)
				}
			}
		}
		docs, err := s.legacyFetchDocs(ctx, ids)
		if err != nil {
			return nil, err
		}
		full := func(l []scored) []scored {
			out := l[:0]
			for _, c := range l {
				if d, ok := docs[c.doc.ID]; ok && f.Admits(&d) {
					c.doc = d
					out = append(out, c)
				}
			}
			return out
		}
		byVec, byText = full(byVec), full(byText)
	}
	out := make([]search.Candidate, 0, len(byVec)+len(byText))
	at := make(map[string]int, len(byVec)+len(byText))
	for _, c := range byVec {
		at[c.doc.ID] = len(out)
		out = append(out, search.Candidate{Doc: c.doc, Cosine: c.score, HasCosine: true})
	}
	for _, c := range byText {
		if c.score <= 0 {
			continue
		}
		if i, ok := at[c.doc.ID]; ok {
			out[i].BM25, out[i].HasBM25 = c.score, true
			continue
		}
		at[c.doc.ID] = len(out)
		out = append(out, search.Candidate{Doc: c.doc, BM25: c.score, HasBM25: true})
	}
	return out, nil
}

// legacyWhere is the server-side part of f and whether it is all of f (then
// Filter.Admits rejects nothing the server returns).
func legacyWhere(f search.Filter) (*filters.WhereBuilder, bool) {
	exact := f.Readable == nil
	ops := []*filters.WhereBuilder{
		filters.Where().WithPath([]string{"pruned"}).WithOperator(filters.Equal).WithValueBoolean(false),
		filters.Where().WithPath([]string{"confidence"}).WithOperator(filters.GreaterThanEqual).WithValueNumber(f.MinConfidence),
	}
	if f.Outcome != "" && f.Outcome != "all" {
		if gqlSafe(f.Outcome) && strings.TrimSpace(f.Outcome) == f.Outcome {
			ops = append(ops, filters.Where().WithPath([]string{"outcome"}).WithOperator(filters.Equal).WithValueText(f.Outcome))
		} else {
			exact = false
		}
	}
	if f.ScopeKind != "" && f.ScopeKind != search.ScopeAll {
		if gqlSafe(f.ScopeKind) && !strings.Contains(f.ScopeKind, ":") && strings.TrimSpace(f.ScopeKind) == f.ScopeKind {
			ops = append(ops, filters.Where().WithPath([]string{"scope_kind"}).WithOperator(filters.Equal).WithValueText(f.ScopeKind))
		} else {
			exact = false
		}
	}
	if f.ExcludeSourceSession != "" {
		if gqlSafe(f.ExcludeSourceSession) && strings.TrimSpace(f.ExcludeSourceSession) == f.ExcludeSourceSession {
			ops = append(ops, filters.Where().WithOperator(filters.Not).WithOperands([]*filters.WhereBuilder{
				filters.Where().WithPath([]string{"source_sessions"}).WithOperator(filters.ContainsAny).WithValueText(f.ExcludeSourceSession),
			}))
		} else {
			exact = false
		}
	}
	return filters.Where().WithOperator(filters.And).WithOperands(ops), exact
}
