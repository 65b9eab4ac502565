package weaviate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"
	"google.golang.org/grpc/codes"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
	"github.com/chronicle-dev/chronicle/projections/search/weaviate/weaviatetest"
)

// failFastLimit bounds how long a refused key may take to fail: far
// below DefaultRetryMaxElapsed (15 s), which the stores of these tests
// keep, so a refusal retried as "unavailable" cannot pass.
const failFastLimit = 5 * time.Second

// TestAPIKeyAuth runs a server with API-key authentication and the admin
// list authorization (an admin key and a read-only key). With the admin
// key the store works over REST and with gRPC batches; with no key, a
// wrong key, or the read-only key for a write, New or the call fails in
// under failFastLimit with an error wrapping ErrUnauthorized (not
// ErrUnavailable) that names the host and holds no key.
func TestAPIKeyAuth(t *testing.T) {
	adminKey, readKey := "admin-"+uuid.NewString(), "reader-"+uuid.NewString()
	srv := weaviatetest.StartWith(t, weaviatetest.Options{APIKey: adminKey, ReadOnlyAPIKey: readKey})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The default retry budget (15 s): a retried refusal would show.
	config := func(key, prefix string, grpc bool) Config {
		cfg := Config{Host: srv.Host, APIKey: key, ClassPrefix: prefix}
		if grpc {
			cfg.GRPCHost = srv.GRPCHost
		}
		return cfg
	}
	doc := search.Doc{ID: "auth-1", Scope: "project:p", Title: "API key", Content: "authenticated upsert",
		Outcome: "success", Confidence: 0.9, Vector: searchtest.OneHot(3), Model: "auth-test"}

	// refused checks that run fails fast with ErrUnauthorized and a
	// message naming the host and no key.
	refused := func(t *testing.T, what string, run func() error) {
		t.Helper()
		start := time.Now()
		err := run()
		took := time.Since(start)
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		t.Logf("%s: failed after %v: %v", what, took.Round(time.Millisecond), err)
		if !errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnauthorized and not ErrUnavailable", what, err)
		}
		if took > failFastLimit {
			t.Errorf("%s took %v to fail, want under %v (no retries)", what, took, failFastLimit)
		}
		msg := err.Error()
		if !strings.Contains(msg, "weaviate: "+srv.Host+": unauthorized: check the API key") {
			t.Errorf("%s: message does not name the host and the cause: %s", what, msg)
		}
		if strings.Contains(msg, adminKey) || strings.Contains(msg, readKey) {
			t.Errorf("%s: message holds a key: %s", what, msg)
		}
	}
	failNew := func(cfg Config) func() error {
		return func() error {
			s, err := New(ctx, cfg)
			if err == nil {
				s.Close()
			}
			return err
		}
	}

	for _, grpc := range []bool{false, true} {
		t.Run(fmt.Sprintf("admin key, gRPC %v", grpc), func(t *testing.T) {
			prefix := fmt.Sprintf("Admin%v_", grpc)
			s, err := New(ctx, config(adminKey, prefix, grpc))
			if err != nil {
				t.Fatalf("New with the admin key: %v", err)
			}
			defer s.Close()
			if err := s.Upsert(ctx, []search.Doc{doc}); err != nil {
				t.Fatalf("Upsert: %v", err)
			}
			cs, err := s.Candidates(ctx, doc.Vector, "authenticated", search.Filter{}, 5)
			if err != nil {
				t.Fatalf("Candidates: %v", err)
			}
			if len(cs) != 1 || cs[0].ID != doc.ID || !cs[0].HasCosine || !cs[0].HasBM25 || cs[0].Content != doc.Content {
				t.Fatalf("Candidates = %+v, want %s by vector and by text", cs, doc.ID)
			}
			if n, err := s.Len(ctx); err != nil || n != 1 {
				t.Fatalf("Len = %d, %v; want 1", n, err)
			}
			if cfg := s.Config(); strings.Contains(fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg), adminKey) {
				t.Errorf("the printed Config holds the key")
			}
		})
	}

	t.Run("no key", func(t *testing.T) {
		refused(t, "New without a key", failNew(config("", "NoKey_", false)))
	})
	t.Run("wrong key", func(t *testing.T) {
		wrong := "wrong-" + uuid.NewString()
		for _, grpc := range []bool{false, true} {
			what := fmt.Sprintf("New with a wrong key (gRPC %v)", grpc)
			refused(t, what, func() error {
				err := failNew(config(wrong, "Wrong_", grpc))()
				if err != nil && strings.Contains(err.Error(), wrong) {
					t.Errorf("%s: message holds the wrong key: %v", what, err)
				}
				return err
			})
		}
	})
	t.Run("read-only key", func(t *testing.T) {
		// Creating the collections is a write: HTTP 403.
		refused(t, "New with the read-only key on missing collections", failNew(config(readKey, "ReadOnly_", false)))
		// On the admin's collections it may read but not write (REST
		// and gRPC batches).
		for _, grpc := range []bool{false, true} {
			s, err := New(ctx, config(readKey, "Adminfalse_", grpc))
			if err != nil {
				t.Fatalf("New with the read-only key on existing collections (gRPC %v): %v", grpc, err)
			}
			defer s.Close()
			cs, err := s.Candidates(ctx, doc.Vector, "", search.Filter{}, 5)
			if err != nil || len(cs) != 1 || cs[0].ID != doc.ID {
				t.Fatalf("Candidates with the read-only key: %+v, %v", cs, err)
			}
			what := fmt.Sprintf("Upsert with the read-only key (gRPC %v)", grpc)
			refused(t, what, func() error {
				err := s.Upsert(ctx, []search.Doc{doc})
				// The server knew the user: the key reached it (over gRPC
				// too).
				if err != nil && !strings.Contains(err.Error(), weaviatetest.ReadOnlyUser) {
					t.Errorf("%s: the refusal does not name %s: %v", what, weaviatetest.ReadOnlyUser, err)
				}
				return err
			})
		}
	})
}

// TestUnauthorizedNotRetried: HTTP 401/403, gRPC Unauthenticated and
// PermissionDenied, bare or wrapped by the client, and batch objects or
// GraphQL queries refused as a "forbidden action", fail at once with
// ErrUnauthorized and the host, the key cut out of the server's message;
// they are not retryable, and other errors are not unauthorized.
func TestUnauthorizedNotRetried(t *testing.T) {
	const key = "k-0123456789"
	httpStatus := func(code int) error {
		return &fault.WeaviateClientError{IsUnexpectedStatusCode: true, StatusCode: code,
			Msg: `{"code":401,"message":"unauthorized: invalid api key ` + key + `"}`}
	}
	derived := func(err error) error { return &fault.WeaviateClientError{StatusCode: -1, DerivedFromError: err} }
	// The server's message for a user without the permission (what a
	// gRPC batch reports per object, in a successful reply).
	forbidden := "adminlist: authorization, forbidden action: user 'r' has insufficient permissions to U [data/collections/M]"
	batch := batchErrors([]models.ObjectsGetResponse{{Object: models.Object{Properties: map[string]any{"memory_id": "m1"}},
		Result: &models.ObjectsGetResponseAO2Result{Errors: &models.ErrorResponse{Error: []*models.ErrorResponseErrorItems0{{Message: forbidden}}}}}})
	var into map[string]any
	gql := decode(&models.GraphQLResponse{Errors: []*models.GraphQLError{{Message: forbidden}}}, &into)
	s := &Store{cfg: Config{Host: "db.example:8081", APIKey: key, RetryMaxElapsed: time.Minute}.withDefaults()}
	for i, cause := range []error{httpStatus(http.StatusUnauthorized), httpStatus(http.StatusForbidden),
		derived(httpStatus(http.StatusUnauthorized)), grpcStatus(codes.Unauthenticated), derived(grpcStatus(codes.PermissionDenied)),
		batch, gql} {
		if !unauthorized(cause) || retryable(cause) {
			t.Errorf("case %d: unauthorized %v, retryable %v; want true, false", i, unauthorized(cause), retryable(cause))
		}
		calls := 0
		err := s.retry(context.Background(), "probe", func(context.Context) error { calls++; return cause })
		msg := err.Error()
		if calls != 1 || !errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrUnavailable) {
			t.Errorf("case %d: %d calls, %v; want 1 call, ErrUnauthorized", i, calls, err)
		}
		if !strings.HasPrefix(msg, "weaviate: db.example:8081: unauthorized: check the API key: probe: ") || strings.Contains(msg, key) {
			t.Errorf("case %d: message %q", i, msg)
		}
		if !errors.Is(err, cause) {
			t.Errorf("case %d: the cause is not reachable with errors.Is", i)
		}
	}
	for i, err := range []error{httpStatus(http.StatusNotFound), httpStatus(http.StatusServiceUnavailable), derivedRefused(),
		grpcStatus(codes.Unavailable), errors.New("unauthorized"), refusal("vector lengths don't match"),
		decode(&models.GraphQLResponse{Errors: []*models.GraphQLError{{Message: "Cannot query field"}}}, &into), nil} {
		if unauthorized(err) {
			t.Errorf("other case %d: %v is unauthorized", i, err)
		}
	}
	// Without a key the message says none was sent.
	anon := &Store{cfg: Config{Host: "db.example:8081"}.withDefaults()}
	err := anon.retry(context.Background(), "probe", func(context.Context) error { return httpStatus(http.StatusUnauthorized) })
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "check the API key (no key was sent): probe") {
		t.Errorf("anonymous: %v", err)
	}
}

// TestAPIKeyConfig: the key goes into the client's headers as the
// client's auth.ApiKey makes them (REST and gRPC share them), none
// without a key; a printed Config shows no key.
func TestAPIKeyConfig(t *testing.T) {
	if h := (Config{}).authHeaders(); h != nil {
		t.Errorf("headers without a key: %v", h)
	}
	const key = "k-0123456789"
	if h := (Config{APIKey: key}).authHeaders(); len(h) != 1 || h["authorization"] != "Bearer "+key {
		t.Errorf("headers: %v", h)
	}
	cfg := Config{Host: "db.example:8081", APIKey: key}.withDefaults()
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, cfg)
		if strings.Contains(out, key) || !strings.Contains(out, "[redacted]") || !strings.Contains(out, "db.example:8081") {
			t.Errorf("%s: %s", format, out)
		}
	}
	if out := fmt.Sprintf("%+v", DefaultConfig()); !strings.Contains(out, "APIKey: ") || strings.Contains(out, "redacted") {
		t.Errorf("without a key: %s", out)
	}
	if cfg.APIKey != key {
		t.Errorf("printing changed the key")
	}
}

// A key sent to a server without API-key authentication is refused (401),
// and the error says the server takes no key, not to check it (a Weaviate
// walkthrough, 2026-11-30: a stray WEAVIATE_API_KEY, read by default,
// stopped serve with "unauthorized: check the API key").
func TestKeyToAServerWithoutAuthSaysSo(t *testing.T) {
	srv := sharedServer(t)
	cfg := testConfig(srv)
	cfg.APIKey = "stray-" + uuid.NewString()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(ctx, cfg)
	if err == nil {
		s.Close()
		t.Fatal("New with a key on a server without authentication: no error")
	}
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "has no API-key authentication") || strings.Contains(err.Error(), cfg.APIKey) {
		t.Fatalf("New with a key on a server without authentication: %v", err)
	}
}
