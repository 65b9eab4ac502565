package search

import "context"

// Doc is a memory as a vector store holds it: its searchable text, the
// properties every filter needs, and its vector with the model that made
// it.
type Doc struct {
	ID             string    `json:"id"`
	Scope          string    `json:"scope"`
	Title          string    `json:"title"`
	Description    string    `json:"description"`
	Content        string    `json:"content"`
	Outcome        string    `json:"outcome"`
	Tags           []string  `json:"tags,omitempty"`
	SourceSessions []string  `json:"source_sessions,omitempty"`
	Confidence     float64   `json:"confidence"`
	Pruned         bool      `json:"pruned"`
	Evidence       int       `json:"evidence"`
	UsageCount     int       `json:"usage_count"`
	Vector         []float32 `json:"-"`
	// Model and Dim are the embedding model that made Vector and its
	// dimension (len(Vector)), recorded with every vector so that vectors
	// of two models are never compared.
	Model string `json:"model"`
	Dim   int    `json:"dim"`
}

// Filter restricts candidates. Zero fields filter nothing except Pruned:
// pruned documents are never candidates.
type Filter struct {
	MinConfidence float64
	// Outcome: success or failure ("" or "all": both).
	Outcome string
	// ScopeKind: project, team or org ("" or "all": every kind).
	ScopeKind string
	// Readable, when set, admits only the scopes it accepts.
	Readable func(scope string) bool
	// ExcludeSourceSession leaves out documents distilled from that
	// session (PAIR: retrieval never sees memories of the session being
	// evaluated).
	ExcludeSourceSession string
	// EveryScope says the searcher reads every scope (Index.Search sets
	// it when Query.ReadScopes holds "*", or when the query has neither
	// ReadScopes nor Readable). It filters nothing: Readable still
	// applies. With ScopeKind "" or "all" it lets a store take BM25's
	// statistics over all its documents at once — every one of them is
	// readable to this searcher, so no scope can influence another's
	// scores through it (the Weaviate store then asks the collection's
	// class once instead of each scope's tenant).
	EveryScope bool
}

// AllScopes reports whether f admits every scope a store holds: a
// searcher of every scope (EveryScope) with no scope kind. A store may
// then compute BM25's statistics over all its documents at once.
func (f Filter) AllScopes() bool {
	return f.EveryScope && (f.ScopeKind == "" || f.ScopeKind == "all")
}

// Candidate is a document with its similarity to the query: Cosine
// (vector, −1..1) when it was among the nearest vectors, BM25 when it was
// among the best lexical matches.
type Candidate struct {
	Doc
	Cosine, BM25       float64
	HasCosine, HasBM25 bool
}

// VectorStore holds memory documents and answers candidate queries; the
// ranking (fusion, scope weights, duplicate collapsing) is Index's, the same for every
// store. Implementations: the embedded MemStore and Weaviate. Upserts are
// idempotent by Doc.ID.
type VectorStore interface {
	Upsert(ctx context.Context, docs []Doc) error
	Delete(ctx context.Context, ids []string) error
	// Candidates returns up to k documents nearest to v by cosine and up
	// to k best by BM25 on text, among those passing f, merged by id.
	Candidates(ctx context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error)
	// Len is the number of documents held.
	Len(ctx context.Context) (int, error)
}

// DocStore is a VectorStore that also answers a candidate query in two
// phases, so that a search reads whole documents only for the candidates
// it returns: the ranking (fusion, scope weight, ties) needs of each
// candidate only its scores, id and scope — but FusionAlpha, which also
// reads evidence and usage — and Index reads the rest (text for duplicate
// collapsing and the hit) only for the best few after ranking (2 × Limit,
// and more only while near-duplicates are collapsed). A store for which
// documents are costly to send (Weaviate: an object's properties are most
// of what a candidate list costs the server) implements it; Index uses it
// when present, except under FusionAlpha, and Candidates otherwise.
// CandidateRefs followed by Docs of every id must give what Candidates
// gives (searchtest.TwoPhase checks it).
type DocStore interface {
	VectorStore
	// CandidateRefs is Candidates with each Candidate's Doc holding only
	// ID and Scope (the other fields zero); the candidates, their scores
	// and order are those of Candidates.
	CandidateRefs(ctx context.Context, v []float32, text string, f Filter, k int) ([]Candidate, error)
	// Docs are the whole documents (no vector) with ids that f admits,
	// by id: an id missing from the map was deleted, or changed so f no
	// longer admits it, since the query that returned it.
	Docs(ctx context.Context, ids []string, f Filter) (map[string]Doc, error)
}

// admits reports whether d passes f.
func (f Filter) admits(d *Doc) bool {
	if d.Pruned || d.Confidence < f.MinConfidence {
		return false
	}
	if f.Outcome != "" && f.Outcome != "all" && d.Outcome != f.Outcome {
		return false
	}
	if !f.AdmitsScope(d.Scope) {
		return false
	}
	if f.ExcludeSourceSession != "" {
		for _, s := range d.SourceSessions {
			if s == f.ExcludeSourceSession {
				return false
			}
		}
	}
	return true
}

// Admits is Filter's test, exported for stores that filter after fetching.
func (f Filter) Admits(d *Doc) bool { return f.admits(d) }

// AdmitsScope reports whether f admits documents of scope at all: the
// scope is of f.ScopeKind (any kind when "" or ScopeAll) and f.Readable
// (when set) accepts it. It is the scope part of Admits; the embedded
// store counts its BM25 statistics over the documents of the scopes it
// admits (MemStore).
func (f Filter) AdmitsScope(scope string) bool {
	if f.ScopeKind != "" && f.ScopeKind != ScopeAll && !hasPrefix(scope, f.ScopeKind+":") {
		return false
	}
	return f.Readable == nil || f.Readable(scope)
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
