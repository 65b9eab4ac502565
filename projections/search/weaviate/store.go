// Package weaviate is a search.MultiStore on a Weaviate server (1.35;
// client github.com/weaviate/weaviate-go-client/v4).
//
// At start New creates the collections MemoryClass (memories),
// PatternClass (coordination patterns) and ToolClass (tools) when they are
// missing, each with its scoped class (ScopedSuffix; a tenant per scope,
// for BM25), all with vectorizer "none": vectors come from the caller
// (search.Doc.Vector), and every object records the embedding model that
// made its vector (property model). The Store serves MemoryClass;
// Collection gives a Store on another; everything below holds for each.
//
// Object UUIDs are UUID v5 of the document id in the fixed Namespace
// (ObjectID), so Upsert is an idempotent batch upsert: writing a document
// again replaces the object, and its latest properties win. Pruned
// memories are kept with pruned=true (Len counts them) and are filtered
// out of every candidate query.
//
// Candidates runs two queries concurrently — over gRPC's Search API when
// Config.GRPCHost is set, else over GraphQL — each with the whole filter
// in the query: pruned=false, the minimum confidence, the outcome, the
// scope kind (property scope_kind, the part of scope before ':'),
// Filter.Readable as Not(scope ContainsAny [the known scopes it refuses])
// (see scopeSet) and, for ExcludeSourceSession,
// Not(source_sessions ContainsAny [session]):
//
//   - nearVector, limited to k, on cosine distance. Weaviate reports the
//     cosine distance d = 1 − cos(a, b) (0 for the same direction, 2 for
//     opposite ones); Candidate.Cosine is the similarity 1 − d, in −1..1,
//     the dot product for unit vectors as in the MemStore. (Weaviate's
//     certainty is (2 − d)/2 = (1 + cos)/2, i.e. cos = 2·certainty − 1.)
//   - bm25 on title, description and content, limited to k, in the
//     collection's scoped class (ScopedSuffix: multi-tenancy, one tenant
//     per scope, no vectors): one query in each tenant whose scope the
//     filter admits (Filter.AdmitsScope), the lists merged by score and
//     trimmed to k. Weaviate counts BM25's statistics per shard, and a
//     tenant is a shard, so a document's score depends on the documents
//     of its own scope only (in one class holding every scope, another
//     tenant's documents moved it). Its scores are Weaviate's (summed over
//     the properties), not the MemStore's numbers, and each scope's are
//     counted over that scope alone where the MemStore sums the admitted
//     scopes' statistics; Index only uses them relative to the largest
//     candidate. For one scope (a one-scope search, or a collection with
//     one scope) they are those of the class before.
//
// Each asks for k objects and only two properties — the id and doc, the
// whole document as JSON (docProp) — never the vector. Every result still
// goes through Filter.Admits: a refused object means the known scopes
// were stale (another process wrote a new scope: it is learned and the
// query asked again) or a value could not be sent (unprintable characters
// in a GraphQL string: the query then over-fetches OverFetch × k objects,
// and OverFetch times as many while fewer than k pass and the server had
// more, up to MaxFetch); so the candidates are those of the filter
// evaluated in Go. Each list is trimmed to k and the two are merged by id
// as the MemStore does: cosine order first, then BM25-only candidates;
// HasCosine/HasBM25 tell which list a candidate came from, and the absent
// score is zero. Ties are broken by id. Under Weaviate's flatSearchCutoff
// (40,000 objects passing the filter; the filter always holds pruned and
// confidence) the nearVector search is exact; above it, with HNSW
// (approximate) and exact ties at the k-th place, Weaviate may keep a
// different document than the MemStore.
//
// CandidateRefs and Docs (search.DocStore, what Index uses) split a
// search in two: the same two passes with the same filter, but over gRPC
// asking for no property at all — the server then sends object UUIDs
// without loading the objects, which is most of a candidate list's cost —
// their ids and scopes coming from a cache of this process's writes and
// reads (refCache; unknown UUIDs are looked up in one query), and over
// GraphQL asking for the id and scope; then Docs reads the whole
// documents of the few candidates Index returns (2 × the limit first),
// checking Filter.Admits on each.
//
// All vectors of the collection must have one dimension: a model change
// to another dimension needs Drop (or another ClassPrefix) and a full
// re-sync.
//
// Connection errors (refused, reset, timed out, HTTP 502/503/504) and the
// refusals of a server that reports ready while it is still loading its
// collections after a restart ("could not find index for class", "shard
// is not ready") are retried with exponential backoff
// (github.com/cenkalti/backoff/v4) for up to Config.RetryMaxElapsed, then
// returned wrapping ErrUnavailable. A batch is retried whole: writes are
// idempotent, except that the objects of a batch request that got no
// response are deleted before they are written again, in this Upsert
// call or the next that writes them: a server that crashed while
// applying the batch may have kept them without their BM25 and filter
// entries, and does not re-index an unchanged object (unsureSet).
package weaviate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-openapi/strfmt"
	gojson "github.com/goccy/go-json"
	"github.com/google/uuid"
	wv "github.com/weaviate/weaviate-go-client/v4/weaviate"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/graphql"
	wvgrpc "github.com/weaviate/weaviate-go-client/v4/weaviate/grpc"
	"github.com/weaviate/weaviate/entities/models"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// Namespace is the UUID namespace of ObjectID (fixed: changing it would
// orphan every stored object).
const Namespace = "5b0c8a2e-6f5e-4c1b-9d8e-2f6a1c3b7d40"

var namespace = uuid.MustParse(Namespace)

// ObjectID is the Weaviate object UUID of the document with id: UUID v5 of
// id in Namespace.
func ObjectID(id string) string { return uuid.NewSHA1(namespace, []byte(id)).String() }

// ErrUnavailable is wrapped by the error of an operation that still met
// connection errors (or a server still loading its collections) when its
// retry budget (Config.RetryMaxElapsed) ran out.
var ErrUnavailable = errors.New("weaviate server unavailable")

// Store is a search.MultiStore on a Weaviate server: its VectorStore
// methods serve the MemoryClass collection, and Collection gives a Store
// on the others. It is safe for concurrent use.
type Store struct {
	cfg       Config
	client    *wv.Client
	http      *http.Client
	memory    string
	patterns  string
	tools     string
	class     string          // the collection this value serves
	text      string          // its scoped class (ScopedSuffix): BM25 per scope
	tenant    string          // set: candidate queries go to this tenant of text
	idProp    string          // its id property
	queryProp []graphql.Field // every property of a Doc
	// scopes are the scopes each collection (by class name) is known to
	// hold; shared by the Stores Collection makes.
	scopes map[string]*scopeSet
	// refs are the id and scope of each object UUID of each collection
	// (by class name), for CandidateRefs over gRPC; shared like scopes.
	refs map[string]*refCache
	// unsure are the objects of each collection (by class name) whose
	// last batch request got no response (unsureSet); shared like scopes.
	unsure map[string]*unsureSet
	// tenants are the scopes each scoped class (by class name) holds a
	// tenant for; shared like scopes.
	tenants map[string]*tenantSet
	// grpc runs the candidate queries when Config.GRPCHost is set (nil:
	// GraphQL).
	grpc *grpcSearcher
	// guard re-creates the schema of a server that lost it (lost.go);
	// shared like scopes.
	guard *schemaGuard
}

var _ search.VectorStore = (*Store)(nil)

// New connects to the server of cfg (zero fields take their defaults),
// waiting through connection errors for up to cfg.RetryMaxElapsed, and
// creates the missing collections. Errors: an invalid config (ErrConfig),
// an unreachable server (ErrUnavailable), a refused API key
// (ErrUnauthorized), or the server's refusal of the schema.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: cfg.Timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	wcfg := wv.Config{Host: cfg.Host, Scheme: cfg.Scheme, ConnectionClient: hc, Timeout: cfg.Timeout}
	wcfg.Headers = cfg.authHeaders() // REST/GraphQL and gRPC alike
	if cfg.GRPCHost != "" {
		wcfg.GrpcConfig = &wvgrpc.Config{Host: cfg.GRPCHost, Secured: cfg.Scheme == "https"}
	}
	client, err := wv.NewClient(wcfg) // StartupTimeout 0: no waiting here, retry does it
	if err != nil {
		return nil, fmt.Errorf("weaviate: client: %w", err)
	}
	s := &Store{cfg: cfg, client: client, http: hc, memory: cfg.ClassPrefix + MemoryClass,
		patterns: cfg.ClassPrefix + PatternClass, tools: cfg.ClassPrefix + ToolClass, scopes: map[string]*scopeSet{}, refs: map[string]*refCache{},
		unsure: map[string]*unsureSet{}, tenants: map[string]*tenantSet{}, guard: &schemaGuard{seen: map[string]time.Time{}}}
	for _, c := range []string{s.memory, s.patterns, s.tools} {
		s.scopes[c] = &scopeSet{known: map[string]bool{}}
		s.refs[c] = &refCache{byUUID: map[string]ref{}}
		s.unsure[c] = &unsureSet{uuids: map[string]bool{}}
		s.unsure[c+ScopedSuffix] = &unsureSet{uuids: map[string]bool{}}
		s.tenants[c+ScopedSuffix] = &tenantSet{scopes: map[string]bool{}, hashed: map[string]string{}}
	}
	s.serve(MemoryClass)
	if cfg.GRPCHost != "" {
		if s.grpc, err = newGRPCSearcher(cfg); err != nil {
			return nil, err
		}
	}
	if err := s.ensureSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Config is the store's configuration with its defaults applied.
func (s *Store) Config() Config { return s.cfg }

// serve points s at collection name (MemoryClass, PatternClass or
// ToolClass) with the class prefix.
func (s *Store) serve(name string) {
	s.class, s.idProp = s.cfg.ClassPrefix+name, idProps[name]
	s.text, s.tenant = s.class+ScopedSuffix, ""
	s.queryProp = nil
	for _, p := range append([]string{s.idProp}, docProps...) {
		s.queryProp = append(s.queryProp, graphql.Field{Name: p})
	}
}

var _ search.MultiStore = (*Store)(nil)

// Collection implements search.MultiStore: a Store on the same server and
// connection serving collection c (MemoryClass for search.Memories,
// PatternClass for search.Patterns, ToolClass for search.Tools). An
// unknown collection gives nil.
func (s *Store) Collection(c search.Collection) search.VectorStore {
	name := map[search.Collection]string{search.Memories: MemoryClass, search.Patterns: PatternClass, search.Tools: ToolClass}[c]
	if name == "" {
		return nil
	}
	cp := *s
	cp.serve(name)
	return &cp
}

// Collections are the names of the memory, coordination-pattern and tool
// collections (with ClassPrefix).
func (s *Store) Collections() (memory, patterns, tools string) { return s.memory, s.patterns, s.tools }

// Close releases idle HTTP connections and the search's gRPC connection;
// it always returns nil. The store must not be used after. (With
// GRPCHost, the client library's own gRPC connection for batches stays
// open until the process ends: the library cannot close it.)
func (s *Store) Close() error {
	s.http.CloseIdleConnections()
	if s.grpc != nil {
		_ = s.grpc.conn.Close()
	}
	return nil
}

// Drop deletes the three collections and their scoped classes
// (ScopedSuffix) with everything in them (for tests, and before
// re-syncing vectors of another dimension). A missing collection is not
// an error; the store must be made anew with New after.
func (s *Store) Drop(ctx context.Context) error {
	for _, c := range []string{s.memory, s.patterns, s.tools, s.memory + ScopedSuffix, s.patterns + ScopedSuffix, s.tools + ScopedSuffix} {
		err := s.retry(ctx, "drop collection "+c, func(ctx context.Context) error {
			err := s.client.Schema().ClassDeleter().WithClassName(c).Do(ctx)
			if statusOf(err) == http.StatusNotFound {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// retry runs op until it succeeds, fails with an error that is not a
// connection error, ctx ends, or cfg.RetryMaxElapsed has passed.
func (s *Store) retry(ctx context.Context, what string, op func(ctx context.Context) error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = s.cfg.RetryInitialInterval
	b.MaxInterval = s.cfg.RetryMaxInterval
	b.MaxElapsedTime = s.cfg.RetryMaxElapsed
	attempts := 0
	var last error
	err := backoff.Retry(func() error {
		attempts++
		// each attempt bounded by cfg.Timeout: the HTTP client's own
		// timeout does not reach gRPC calls, and against a SIGSTOPped
		// server a gRPC sync waited without end, so /healthz never named
		// the vector store (an operator's walkthrough, 2026-11-30)
		actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil || !retryable(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
	if err == nil {
		return nil
	}
	if last == nil { // ctx ended before the first attempt
		last = err
	}
	if unauthorized(last) {
		return newAuthError(s.cfg, what, last)
	}
	return &opError{op: what, attempts: attempts, unavailable: retryable(last), cause: last}
}

// opError is the error of a store operation: the operation, the cause's
// message without the client's wrapping, and for connection errors
// ErrUnavailable; errors.Is and errors.As see ErrUnavailable and the
// cause.
type opError struct {
	op          string
	attempts    int
	unavailable bool
	cause       error
}

func (e *opError) Error() string {
	if e.unavailable {
		return fmt.Sprintf("weaviate: %s: server unavailable after %d attempts: %s", e.op, e.attempts, describe(e.cause))
	}
	return fmt.Sprintf("weaviate: %s: %s", e.op, describe(e.cause))
}

func (e *opError) Unwrap() []error {
	if e.unavailable {
		return []error{ErrUnavailable, search.ErrStoreUnavailable, e.cause}
	}
	return []error{e.cause}
}

// describe is err's message without the client's "status code: -1,
// error: check the DerivedFromError field" layers.
func describe(err error) string {
	for {
		var we *fault.WeaviateClientError
		if !errors.As(err, &we) || we == nil {
			return err.Error()
		}
		if we.DerivedFromError != nil {
			err = we.DerivedFromError
			continue
		}
		return fmt.Sprintf("HTTP %d: %s", we.StatusCode, strings.TrimSpace(we.Msg))
	}
}

// retryable reports whether err is worth retrying: a connection error,
// HTTP 502/503/504, or a transient refusal (transientMarkers).
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var te *transientError
	if errors.As(err, &te) {
		return true
	}
	var we *fault.WeaviateClientError
	if errors.As(err, &we) {
		if we.DerivedFromError != nil {
			return retryable(we.DerivedFromError)
		}
		switch we.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return transient(we.Msg)
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return true
		}
		return transient(st.Message())
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// scopeKind is the part of scope before its first ':' ("" without one).
func scopeKind(scope string) string {
	if i := strings.IndexByte(scope, ':'); i >= 0 {
		return scope[:i]
	}
	return ""
}

func object(class, idProp string, d search.Doc) *models.Object {
	whole, err := json.Marshal(d) // Vector is not marshalled (json:"-")
	if err != nil {
		panic(fmt.Sprintf("weaviate: marshal document %q: %v", d.ID, err)) // a Doc has only strings and numbers
	}
	tags, sessions := d.Tags, d.SourceSessions
	if tags == nil {
		tags = []string{}
	}
	if sessions == nil {
		sessions = []string{}
	}
	return &models.Object{
		Class: class,
		ID:    strfmt.UUID(ObjectID(d.ID)),
		Properties: map[string]any{
			idProp: d.ID, "scope": d.Scope, "scope_kind": scopeKind(d.Scope), "title": d.Title, "description": d.Description,
			"content": d.Content, "outcome": d.Outcome, "tags": tags, "source_sessions": sessions, "confidence": d.Confidence,
			"pruned": d.Pruned, "evidence": d.Evidence, "usage_count": d.UsageCount, "model": d.Model, "dim": d.Dim,
			docProp: string(whole),
		},
		Vector: d.Vector,
	}
}

// Upsert writes docs in batches of cfg.BatchSize, replacing the objects of
// ids already held; of several docs with one id, the last wins. A batch is
// retried whole on connection errors (writes are idempotent); an object
// the server refuses (e.g. a vector of another dimension) fails the call
// with its message. Batches before a failing one stay written.
//
// Each batch is written to the collection's class, then (without
// vectors) to its scoped class, each object in its scope's tenant (see
// ScopedSuffix; the server creates a missing tenant). An object whose
// scope changed is first deleted from its old scope's tenant (its old
// scope is this process's, or read from the collection's class).
//
// The objects of a batch request that got no response — within this call
// or an earlier one that failed — are first deleted by UUID, one request
// each, and then written: a server that crashed while applying the batch
// may hold them without their inverted-index entries, which writing the
// same object again would not restore (unsureSet). Until that write
// succeeds, such a document may be absent, even in an older version.
//
// A collection found gone from the server is created again (lost.go), and
// the error wraps search.ErrStoreReset.
func (s *Store) Upsert(ctx context.Context, docs []search.Doc) error {
	if err := s.present(ctx); err != nil {
		return err
	}
	return s.lost(ctx, s.upsert(ctx, docs))
}

func (s *Store) upsert(ctx context.Context, docs []search.Doc) error {
	last := make(map[string]int, len(docs))
	for i, d := range docs {
		if d.ID == "" {
			return fmt.Errorf("weaviate: upsert: document %d has no id", i)
		}
		last[d.ID] = i
	}
	objs := make([]*models.Object, 0, len(last))
	for i, d := range docs {
		if last[d.ID] == i {
			objs = append(objs, object(s.class, s.idProp, d))
		}
	}
	for start := 0; start < len(objs); start += s.cfg.BatchSize {
		batch := objs[start:min(start+s.cfg.BatchSize, len(objs))]
		before, err := s.knownScopes(ctx, uuidsOf(batch))
		if err != nil {
			return err
		}
		scopes := make([]string, len(batch))
		moved := map[string][]string{}
		scoped := make([]*models.Object, len(batch))
		for i, o := range batch {
			scopes[i], _ = o.Properties.(map[string]any)["scope"].(string)
			if old, ok := before[string(o.ID)]; ok && old != scopes[i] {
				moved[old] = append(moved[old], string(o.ID))
			}
			scoped[i] = s.scopedObject(o)
		}
		// Out of the old tenant before the class says the new scope: a
		// retry after a failure past this point reads the new one.
		for old, us := range moved {
			if err := s.deleteScoped(ctx, old, us); err != nil {
				return err
			}
		}
		if err := s.writeBatch(ctx, s.class, batch); err != nil {
			return err
		}
		if err := s.writeBatch(ctx, s.text, scoped); err != nil {
			return err
		}
		for i, o := range batch {
			id, _ := o.Properties.(map[string]any)[s.idProp].(string)
			s.refs[s.class].put(string(o.ID), ref{id, scopes[i]})
		}
		s.scopes[s.class].add(scopes...)
		s.tenants[s.text].add(scopes...)
	}
	return nil
}

// writeBatch writes batch (objects of class) in one batch request,
// retried whole, redoing the objects a request that got no response may
// have cut (unsureSet, one per class).
func (s *Store) writeBatch(ctx context.Context, class string, batch []*models.Object) error {
	unsure := s.unsure[class]
	err := s.retry(ctx, "batch upsert", func(ctx context.Context) error {
		if objs := unsure.of(batch); len(objs) > 0 {
			if err := s.redo(ctx, class, objs); err != nil {
				return err
			}
		}
		resp, err := s.client.Batch().ObjectsBatcher().WithObjects(batch...).Do(ctx)
		if err != nil {
			if unsureOutcome(ctx, err) {
				unsure.add(batch)
			}
			return err
		}
		return batchErrors(resp)
	})
	if err != nil {
		return err
	}
	unsure.drop(batch)
	return nil
}

// batchErrors is the error of the objects a batch response refused
// (nil: none), a transientError when every refusal is transient.
func batchErrors(resp []models.ObjectsGetResponse) error {
	var msgs []string
	n, allTransient := 0, true
	for _, r := range resp {
		if r.Result == nil || r.Result.Errors == nil || len(r.Result.Errors.Error) == 0 {
			continue
		}
		n++
		for _, e := range r.Result.Errors.Error {
			allTransient = allTransient && e != nil && transient(e.Message)
		}
		if len(msgs) < 3 {
			id := ""
			if props, ok := r.Properties.(map[string]any); ok {
				for _, p := range idProps {
					if v, ok := props[p].(string); ok {
						id = v
					}
				}
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s", id, r.Result.Errors.Error[0].Message))
		}
	}
	if n == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d objects refused: %s", n, strings.Join(msgs, "; "))
	if allTransient {
		return &transientError{msg}
	}
	return refusal(msg)
}

// transientMarkers are the messages of a server whose collections are
// still loading (it reports ready before it has loaded every shard after
// a restart); they are retried like connection errors. "delete from
// non-existing index" is what the single-object DELETE of Upsert's redo
// gets then (Weaviate v1.35.2, adapters/repos/db/crud.go, DeleteObject;
// seen in TestServerDownAndRestart). "browse non-existing index" is what a
// GraphQL Get gets then ("explorer: list class: search: tried to browse
// non-existing index for Memory"): since BM25 per scope, Upsert looks up
// the scopes of unseen UUIDs with one, and TestServerDownAndRestart's
// writer failed on it once in CI right after the restart.
var transientMarkers = []string{"could not find index for class", "shard is not ready", "delete from non-existing index", "browse non-existing index"}

func transient(msg string) bool {
	for _, m := range transientMarkers {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// transientError is a refusal worth retrying (see transientMarkers).
type transientError struct{ msg string }

func (e *transientError) Error() string { return e.msg }

// Delete removes the documents with ids (unknown ids are no error), in
// batches of cfg.BatchSize: first from their scopes' tenants of the
// scoped class (their scopes are this process's, or read from the
// collection's class), then from the collection's class, so the scoped
// class never holds an object the collection's class lacks.
func (s *Store) Delete(ctx context.Context, ids []string) error {
	return s.lost(ctx, s.deleteIDs(ctx, ids))
}

func (s *Store) deleteIDs(ctx context.Context, ids []string) error {
	for start := 0; start < len(ids); start += s.cfg.BatchSize {
		chunk := ids[start:min(start+s.cfg.BatchSize, len(ids))]
		uuids := make([]string, len(chunk))
		for i, id := range chunk {
			uuids[i] = ObjectID(id)
		}
		scopes, err := s.knownScopes(ctx, uuids)
		if err != nil {
			return err
		}
		byScope := map[string][]string{}
		for _, u := range uuids {
			if sc, ok := scopes[u]; ok {
				byScope[sc] = append(byScope[sc], u)
			}
		}
		for sc, us := range byScope {
			if err := s.deleteScoped(ctx, sc, us); err != nil {
				return err
			}
		}
		where := filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(uuids...)
		var resp *models.BatchDeleteResponse
		err = s.retry(ctx, "batch delete", func(ctx context.Context) error {
			var err error
			resp, err = s.client.Batch().ObjectsBatchDeleter().WithClassName(s.class).WithWhere(where).WithOutput("minimal").Do(ctx)
			return err
		})
		if err != nil {
			return err
		}
		s.refs[s.class].drop(uuids)
		if resp != nil && resp.Results != nil && resp.Results.Failed > 0 {
			return fmt.Errorf("weaviate: batch delete: %d of %d objects not deleted", resp.Results.Failed, resp.Results.Matches)
		}
	}
	return nil
}

// Len is the number of documents held, pruned ones included.
func (s *Store) Len(ctx context.Context) (int, error) {
	var out struct {
		Aggregate map[string][]struct {
			Meta struct {
				Count int `json:"count"`
			} `json:"meta"`
		} `json:"Aggregate"`
	}
	agg := s.client.GraphQL().Aggregate().WithClassName(s.class).
		WithFields(graphql.Field{Name: "meta", Fields: []graphql.Field{{Name: "count"}}})
	if err := s.query(ctx, "count", agg.Do, &out); err != nil {
		return 0, err
	}
	rows := out.Aggregate[s.class]
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].Meta.Count, nil
}

// query runs a GraphQL request and decodes its data into into, retrying
// connection errors and transient refusals.
func (s *Store) query(ctx context.Context, what string, do func(context.Context) (*models.GraphQLResponse, error), into any) error {
	return s.retry(ctx, what, func(ctx context.Context) error {
		resp, err := do(ctx)
		if err != nil {
			return err
		}
		return decode(resp, into)
	})
}

// graphQLError is the error of a GraphQL response's error messages: a
// transientError when all are transient, else a refusal.
func graphQLError(msgs []string) error {
	allTransient := true
	for _, m := range msgs {
		allTransient = allTransient && transient(m)
	}
	msg := "GraphQL: " + strings.Join(msgs, "; ")
	if allTransient {
		return &transientError{msg}
	}
	return refusal(msg)
}

// decode checks a GraphQL response for errors (a transientError when all
// are transient) and decodes its data.
func decode(resp *models.GraphQLResponse, into any) error {
	if resp == nil {
		return errors.New("empty GraphQL response")
	}
	if len(resp.Errors) > 0 {
		msgs := make([]string, len(resp.Errors))
		for i, e := range resp.Errors {
			msgs[i] = e.Message
		}
		return graphQLError(msgs)
	}
	b, err := json.Marshal(resp.Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// gqlSafe reports whether Go's %q quoting of v (the client's) is a valid
// GraphQL string: only printable runes.
func gqlSafe(v string) bool {
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// where is the server-side part of f and whether it is all of f (then
// Filter.Admits rejects nothing the server returns). Filter.Readable is
// pushed down as Not(scope ContainsAny refused), refused being the known
// scopes it refuses (scopeSet): that counts as exact, since Readable is a
// function of the scope alone, and an object of a scope not yet known is
// caught by Admits and its scope learned (see search).
func where(f search.Filter, refused []string) (*filters.WhereBuilder, bool) {
	exact := true
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
	if f.Readable != nil {
		var vals []string
		for _, sc := range refused {
			if gqlSafe(sc) && strings.TrimSpace(sc) == sc {
				vals = append(vals, sc)
			} else {
				exact = false
			}
		}
		if len(vals) > 0 {
			ops = append(ops, filters.Where().WithOperator(filters.Not).WithOperands([]*filters.WhereBuilder{
				filters.Where().WithPath([]string{"scope"}).WithOperator(filters.ContainsAny).WithValueText(vals...),
			}))
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

// hit is one object of a Get query.
type hit struct {
	MemoryID       string   `json:"memory_id"`
	PatternID      string   `json:"pattern_id"`
	ToolID         string   `json:"tool_id"`
	Scope          string   `json:"scope"`
	Title          string   `json:"title"`
	Description    string   `json:"description"`
	Content        string   `json:"content"`
	Outcome        string   `json:"outcome"`
	Tags           []string `json:"tags"`
	SourceSessions []string `json:"source_sessions"`
	Confidence     float64  `json:"confidence"`
	Pruned         bool     `json:"pruned"`
	Evidence       float64  `json:"evidence"`
	UsageCount     float64  `json:"usage_count"`
	Model          string   `json:"model"`
	Dim            float64  `json:"dim"`
	// Doc is the docProp property: the whole document as JSON ("" for an
	// object written before it existed, or not asked for).
	Doc string `json:"doc"`
	// UUID is the object's UUID (gRPC, when asked for).
	UUID       string `json:"-"`
	Additional struct {
		Distance *float64   `json:"distance"`
		Score    *jsonFloat `json:"score"`
		ID       string     `json:"id"`
	} `json:"_additional"`
}

// jsonFloat reads a number sent as a JSON number or a string (Weaviate
// sends BM25 scores as strings).
type jsonFloat float64

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("score %s: %w", b, err)
	}
	*f = jsonFloat(v)
	return nil
}

// whole is the document of h's docProp; ok is false when h has none.
func (h *hit) whole() (d search.Doc, ok bool, err error) {
	if h.Doc == "" {
		return d, false, nil
	}
	if err := gojson.Unmarshal([]byte(h.Doc), &d); err != nil { // goccy/go-json: 0.6 ms per 200 documents, encoding/json 1.3–1.7 (BenchmarkDecodeDoc)
		return d, false, fmt.Errorf("object %q: property %s: %w", h.MemoryID+h.PatternID+h.ToolID, docProp, err)
	}
	return d, true, nil
}

// doc is the document of h's separate properties.
func (h *hit) doc() search.Doc {
	d := search.Doc{ID: h.MemoryID + h.PatternID + h.ToolID, Scope: h.Scope, Title: h.Title, Description: h.Description, Content: h.Content,
		Outcome: h.Outcome, Confidence: h.Confidence, Pruned: h.Pruned, Evidence: int(h.Evidence),
		UsageCount: int(h.UsageCount), Model: h.Model, Dim: int(h.Dim)}
	if len(h.Tags) > 0 {
		d.Tags = h.Tags
	}
	if len(h.SourceSessions) > 0 {
		d.SourceSessions = h.SourceSessions
	}
	return d
}

// scored is a candidate of one pass with its score.
type scored struct {
	doc   search.Doc
	score float64
}

// search runs one pass (nearVector when vec is set, else bm25 on text)
// with the whole filter in the query when it can be expressed there,
// asking for k objects with their id and docProp only (no vectors), and
// returns the best k admitted documents by score, ties by id. With refs
// (CandidateRefs) and a filter the query holds whole (always over gRPC),
// it asks for refProps instead of docProp, returns documents holding only
// those, and checks in Go only what the server cannot know: the scope
// against Filter.Readable. An object Admits refuses means the query was
// not exact: the known scopes of ss were stale (the refused scope is
// learned and the query asked again) or the GraphQL filter could not
// express part of f (see where; the query then starts at OverFetch × k
// and asks for OverFetch times as many while fewer than k pass and the
// server had more, up to MaxFetch).
func (s *Store) search(ctx context.Context, what string, ss *scopeSet, vec []float32, text string, f search.Filter, k int, refs bool) ([]scored, error) {
	limit := k
	for round := 0; ; round++ {
		var refused []string
		if f.Readable != nil && ss != nil {
			refused = ss.refused(f.Readable)
		}
		var hits []hit
		var err error
		light := refs
		props := []string{s.idProp, docProp}
		if s.grpc != nil {
			if light {
				props = []string{} // object UUIDs alone, resolved by the refCache
			}
			limit = min(limit, s.cfg.MaxFetch)
			err = s.retry(ctx, what, func(ctx context.Context) error {
				hits, err = s.grpc.search(ctx, s.queryClass(), s.tenant, s.idProp, vec, text, grpcWhere(f, refused), limit, props, light)
				return err
			})
			if err == nil && light {
				err = s.resolveRefs(ctx, hits)
			}
		} else {
			w, exact := where(f, refused)
			if !exact && round == 0 {
				limit = k * s.cfg.OverFetch
			}
			light = light && exact
			if light {
				props = s.refProps()
			}
			limit = min(limit, s.cfg.MaxFetch)
			hits, err = s.graphQL(ctx, what, vec, text, w, limit, props)
		}
		if err != nil {
			return nil, err
		}
		var docs []*search.Doc
		if light {
			docs = make([]*search.Doc, len(hits))
			for i := range hits {
				if id := hits[i].MemoryID + hits[i].PatternID + hits[i].ToolID; id != "" { // "": deleted since the query
					docs[i] = &search.Doc{ID: id, Scope: hits[i].Scope}
				}
			}
		} else if docs, err = s.docsOf(ctx, what, hits); err != nil {
			return nil, err
		}
		admits := f.Admits
		if light {
			admits = func(d *search.Doc) bool { return f.Readable == nil || f.Readable(d.Scope) }
		}
		res := make([]scored, 0, min(len(hits), k))
		learned := false
		for i := range hits {
			h, d := &hits[i], docs[i]
			if d == nil { // deleted since the query
				continue
			}
			if !admits(d) {
				if f.Readable != nil && !f.Readable(d.Scope) && ss != nil && ss.add(d.Scope) {
					learned = true
				}
				continue
			}
			var sc float64
			switch {
			case vec != nil && h.Additional.Distance != nil:
				sc = 1 - *h.Additional.Distance
			case vec == nil && h.Additional.Score != nil:
				sc = float64(*h.Additional.Score)
			default:
				return nil, fmt.Errorf("weaviate: %s: object %q came without its distance or score", what, d.ID)
			}
			res = append(res, scored{*d, sc})
		}
		if len(res) >= k || len(hits) < limit || limit >= s.cfg.MaxFetch {
			sort.SliceStable(res, func(i, j int) bool {
				if res[i].score != res[j].score {
					return res[i].score > res[j].score
				}
				return res[i].doc.ID < res[j].doc.ID
			})
			return res[:min(k, len(res))], nil
		}
		if !learned { // the filter is as large as it gets: fetch deeper
			limit = min(limit*max(2, s.cfg.OverFetch), s.cfg.MaxFetch)
		}
	}
}

// refProps are the properties CandidateRefs asks for over GraphQL: the
// id and the scope (search.DocStore).
func (s *Store) refProps() []string { return []string{s.idProp, "scope"} }

// graphQL is one GraphQL Get pass with filter w, limited to limit, asking
// for props and the distance (nearVector) or score (bm25); with neither
// vec nor text, for the objects w admits.
func (s *Store) graphQL(ctx context.Context, what string, vec []float32, text string, w *filters.WhereBuilder, limit int, props []string) ([]hit, error) {
	get := s.client.GraphQL().Get().WithClassName(s.queryClass()).WithWhere(w).WithLimit(limit)
	if s.tenant != "" {
		get = get.WithTenant(s.tenant)
	}
	fields := make([]graphql.Field, 0, len(props)+1)
	for _, p := range props {
		fields = append(fields, graphql.Field{Name: p})
	}
	switch {
	case vec != nil:
		get = get.WithNearVector(s.client.GraphQL().NearVectorArgBuilder().WithVector(vec))
		fields = append(fields, graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "distance"}}})
	case text != "":
		get = get.WithBM25(s.client.GraphQL().Bm25ArgBuilder().WithQuery(text).WithProperties(textProps...))
		fields = append(fields, graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "score"}}})
	}
	get = get.WithFields(fields...)
	var out struct {
		Get map[string][]hit `json:"Get"`
	}
	if err := s.retry(ctx, what, func(ctx context.Context) error { return s.postGraphQL(ctx, get.Build(), &out) }); err != nil {
		return nil, err
	}
	return out.Get[s.queryClass()], nil
}

// postGraphQL posts query to the GraphQL endpoint and decodes the
// response's data into into with goccy/go-json, once (the client's Do
// decodes into maps, which query then encodes and decodes again). Errors
// are those of the client's Do and decode: a fault.WeaviateClientError
// for an HTTP status other than 200, a transientError or a refusal for
// GraphQL errors.
func (s *Store) postGraphQL(ctx context.Context, query string, into any) error {
	body, err := gojson.Marshal(map[string]string{"query": query})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Scheme+"://"+s.cfg.Host+"/v1/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range s.cfg.authHeaders() {
		req.Header.Set(k, v)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return &fault.WeaviateClientError{StatusCode: -1, Msg: "connection error", DerivedFromError: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return &fault.WeaviateClientError{StatusCode: -1, Msg: "read response", DerivedFromError: err}
	}
	if resp.StatusCode != http.StatusOK {
		return &fault.WeaviateClientError{IsUnexpectedStatusCode: true, StatusCode: resp.StatusCode, Msg: string(raw)}
	}
	var out struct {
		Data   gojson.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := gojson.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("GraphQL response: %w", err)
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, len(out.Errors))
		for i, e := range out.Errors {
			msgs[i] = e.Message
		}
		return graphQLError(msgs)
	}
	return gojson.Unmarshal(out.Data, into)
}

// docsOf are the documents of hits, in order: each decoded from its
// docProp, or, for objects written before that property existed, read
// property by property in one more query (nil for one deleted since).
func (s *Store) docsOf(ctx context.Context, what string, hits []hit) ([]*search.Doc, error) {
	out := make([]*search.Doc, len(hits))
	var missing []string
	for i := range hits {
		d, ok, err := hits[i].whole()
		if err != nil {
			return nil, fmt.Errorf("weaviate: %s: %w", what, err)
		}
		if ok {
			out[i] = &d
			continue
		}
		missing = append(missing, hits[i].MemoryID+hits[i].PatternID+hits[i].ToolID)
	}
	if len(missing) == 0 {
		return out, nil
	}
	byID, err := s.fetchDocs(ctx, missing)
	if err != nil {
		return nil, err
	}
	for i := range hits {
		if out[i] == nil {
			if d, ok := byID[hits[i].MemoryID+hits[i].PatternID+hits[i].ToolID]; ok {
				out[i] = &d
			}
		}
	}
	return out, nil
}

// fetchDocs returns the documents with ids (those still held) read
// property by property, in chunks of cfg.MaxFetch.
func (s *Store) fetchDocs(ctx context.Context, ids []string) (map[string]search.Doc, error) {
	out := make(map[string]search.Doc, len(ids))
	for start := 0; start < len(ids); start += s.cfg.MaxFetch {
		chunk := ids[start:min(start+s.cfg.MaxFetch, len(ids))]
		// By the id property, not the object UUID: an older version's
		// objects need not have ObjectID's UUIDs.
		get := s.client.GraphQL().Get().WithClassName(s.class).WithLimit(len(chunk)).
			WithWhere(filters.Where().WithPath([]string{s.idProp}).WithOperator(filters.ContainsAny).WithValueText(chunk...)).
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

// bm25Query is text reduced to the MemStore's tokens (lower-case runs of
// letters and digits), which is also what Weaviate's word tokenisation
// makes of it.
func bm25Query(text string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }), " ")
}

// Candidates implements search.VectorStore: up to k documents nearest to v
// (skipped when v is empty) and up to k best by BM25 on text (skipped when
// text has no word), among those f admits, merged by id. k ≤ 0 returns
// none.
func (s *Store) Candidates(ctx context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	out, err := s.candidates(ctx, v, text, f, k, false)
	return out, s.lost(ctx, err)
}

var _ search.DocStore = (*Store)(nil)

// CandidateRefs implements search.DocStore: Candidates asking the server
// for no property over gRPC — the object UUIDs alone, whose ids and
// scopes come from the refCache (refs.go) — and for the id and scope over
// GraphQL, instead of the whole document (docProp). Over GraphQL, a pass
// whose filter the query cannot hold whole (see where) reads whole
// documents as Candidates does.
func (s *Store) CandidateRefs(ctx context.Context, v []float32, text string, f search.Filter, k int) ([]search.Candidate, error) {
	out, err := s.candidates(ctx, v, text, f, k, true)
	return out, s.lost(ctx, err)
}

// Docs implements search.DocStore: the documents with ids that f admits,
// read in one query per cfg.MaxFetch ids (by the id property, ContainsAny;
// over gRPC when Config.GRPCHost is set), each decoded from docProp (or
// read property by property for an object written before docProp).
func (s *Store) Docs(ctx context.Context, ids []string, f search.Filter) (map[string]search.Doc, error) {
	out, err := s.docs(ctx, ids, f)
	return out, s.lost(ctx, err)
}

func (s *Store) docs(ctx context.Context, ids []string, f search.Filter) (map[string]search.Doc, error) {
	out := make(map[string]search.Doc, len(ids))
	for start := 0; start < len(ids); start += s.cfg.MaxFetch {
		chunk := ids[start:min(start+s.cfg.MaxFetch, len(ids))]
		var hits []hit
		var err error
		if s.grpc != nil {
			err = s.retry(ctx, "read documents", func(ctx context.Context) error {
				hits, err = s.grpc.search(ctx, s.class, "", s.idProp, nil, "", pbTexts(s.idProp, chunk), len(chunk), []string{s.idProp, docProp}, false)
				return err
			})
		} else {
			w := filters.Where().WithPath([]string{s.idProp}).WithOperator(filters.ContainsAny).WithValueText(chunk...)
			hits, err = s.graphQL(ctx, "read documents", nil, "", w, len(chunk), []string{s.idProp, docProp})
		}
		if err != nil {
			return nil, err
		}
		docs, err := s.docsOf(ctx, "read documents", hits)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if d == nil {
				continue
			}
			s.refs[s.class].put(ObjectID(d.ID), ref{d.ID, d.Scope})
			if f.Admits(d) {
				out[d.ID] = *d
			}
		}
	}
	return out, nil
}

// candidates is Candidates, or with refs CandidateRefs.
func (s *Store) candidates(ctx context.Context, v []float32, text string, f search.Filter, k int, refs bool) ([]search.Candidate, error) {
	if k <= 0 {
		return nil, nil
	}
	ss, err := s.scopeSet(ctx)
	if err != nil {
		return nil, err
	}
	// The two passes run concurrently: the server works on both at once.
	var byVec, byText []scored
	var errVec, errText error
	var wg sync.WaitGroup
	if len(v) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			byVec, errVec = s.search(ctx, "nearVector", ss, v, "", f, k, refs)
		}()
	}
	if q := bm25Query(text); q != "" {
		if f.AllScopes() {
			// a searcher of every scope: the class's statistics are
			// those of the scopes it reads, so one query serves
			byText, errText = s.search(ctx, "bm25", ss, nil, q, f, k, refs)
		} else {
			byText, errText = s.bm25(ctx, q, f, k, refs)
		}
	}
	wg.Wait()
	if err := errors.Join(errVec, errText); err != nil {
		return nil, err
	}
	out := make([]search.Candidate, 0, len(byVec)+len(byText))
	at := make(map[string]int, len(byVec)+len(byText))
	for _, c := range byVec {
		at[c.doc.ID] = len(out)
		out = append(out, search.Candidate{Doc: c.doc, Cosine: c.score, HasCosine: true})
	}
	bm := keywordScores(byText)
	for j, c := range byText {
		if i, ok := at[c.doc.ID]; ok {
			out[i].BM25, out[i].HasBM25 = bm[j], true
			continue
		}
		at[c.doc.ID] = len(out)
		out = append(out, search.Candidate{Doc: c.doc, BM25: bm[j], HasBM25: true})
	}
	return out, nil
}

// keywordScores are the BM25 scores of a keyword list as the ranking
// takes them: positive, in the list's order. Weaviate scores a keyword
// match negative when a term's document frequency exceeds the count of
// objects it searches — it keeps an overwritten object's postings until it
// compacts them, so a scope of one memory written twice scores its own
// word below 0 — and such matches were dropped: keyword evidence vanished
// for new tenants and common words (a Weaviate walkthrough, 2026-11-30:
// "zebra" in a one-memory scope, relevance 0.5 against 1 on the embedded
// store). A score s ≤ 0 is kept as floor·eˢ, floor being half the least
// positive score of the list (1 when none is positive): a match still,
// below every positive one, in its order among the others.
func keywordScores(list []scored) []float64 {
	floor := 0.0
	for _, c := range list {
		if c.score > 0 && (floor == 0 || c.score/2 < floor) {
			floor = c.score / 2
		}
	}
	if floor == 0 {
		floor = 1
	}
	out := make([]float64, len(list))
	for i, c := range list {
		out[i] = c.score
		if c.score <= 0 {
			out[i] = floor * math.Exp(c.score)
		}
	}
	return out
}
