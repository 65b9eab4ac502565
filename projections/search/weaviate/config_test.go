package weaviate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chronicle-dev/chronicle/projections/search"
)

func TestConfigDefaultsAndValidate(t *testing.T) {
	d := DefaultConfig()
	if d.Host != "127.0.0.1:8081" || d.Scheme != "http" || d.GRPCHost != "" || d.Timeout != 10*time.Second ||
		d.RetryMaxElapsed != 15*time.Second || d.OverFetch != 4 || d.MaxFetch != 10000 || d.BatchSize != 200 {
		t.Fatalf("DefaultConfig = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := []struct {
		name string
		mod  func(*Config)
		msg  string
	}{
		{"host without port", func(c *Config) { c.Host = "localhost" }, "Host"},
		{"scheme", func(c *Config) { c.Scheme = "ftp" }, "Scheme"},
		{"grpc host", func(c *Config) { c.GRPCHost = "nohost" }, "GRPCHost"},
		{"prefix lower-case", func(c *Config) { c.ClassPrefix = "test" }, "ClassPrefix"},
		{"prefix dash", func(c *Config) { c.ClassPrefix = "T-1" }, "ClassPrefix"},
		{"timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"retry elapsed", func(c *Config) { c.RetryMaxElapsed = 0 }, "RetryMaxElapsed"},
		{"retry intervals", func(c *Config) { c.RetryInitialInterval, c.RetryMaxInterval = time.Second, time.Millisecond }, "RetryMaxInterval"},
		{"overfetch", func(c *Config) { c.OverFetch = 0 }, "OverFetch"},
		{"maxfetch", func(c *Config) { c.MaxFetch = -1 }, "MaxFetch"},
		{"batch", func(c *Config) { c.BatchSize = 0 }, "BatchSize"},
	}
	for _, tc := range bad {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: Validate = %v, want ErrConfig naming %s", tc.name, err, tc.msg)
		}
	}
	// New validates after applying defaults, before any connection.
	if _, err := New(context.Background(), Config{Scheme: "gopher"}); !errors.Is(err, ErrConfig) {
		t.Errorf("New with a bad scheme: %v, want ErrConfig", err)
	}
	good := DefaultConfig()
	good.ClassPrefix, good.GRPCHost = "Staging_2", "127.0.0.1:50051"
	if err := good.Validate(); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
}

func TestObjectIDDeterministic(t *testing.T) {
	a, b := ObjectID("mem-1"), ObjectID("mem-1")
	if a != b {
		t.Fatalf("ObjectID not deterministic: %s, %s", a, b)
	}
	u := uuid.MustParse(a)
	if u.Version() != 5 {
		t.Fatalf("ObjectID version %d, want 5", u.Version())
	}
	if want := uuid.NewSHA1(uuid.MustParse(Namespace), []byte("mem-1")).String(); a != want {
		t.Fatalf("ObjectID = %s, want UUID v5 in Namespace %s", a, want)
	}
	// Pinned (computed independently with Python's uuid.uuid5): changing
	// Namespace or the derivation would orphan every stored object.
	if a != "fbd26f07-cf88-5484-9f35-be31932781c3" {
		t.Fatalf("ObjectID(mem-1) = %s, want fbd26f07-cf88-5484-9f35-be31932781c3", a)
	}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := ObjectID(fmt.Sprintf("mem-%d", i))
		if seen[id] {
			t.Fatalf("collision at %d", i)
		}
		seen[id] = true
	}
}

func TestScopeKindAndQuery(t *testing.T) {
	for scope, want := range map[string]string{"project:p-1": "project", "team:x:y": "team", "org:default": "org", "nocolon": "", "": ""} {
		if got := scopeKind(scope); got != want {
			t.Errorf("scopeKind(%q) = %q, want %q", scope, got, want)
		}
	}
	if got := bm25Query(`Pebble, "COMMIT"!\ été 42`); got != "pebble commit été 42" {
		t.Errorf("bm25Query = %q", got)
	}
	if got := bm25Query(" ,;! "); got != "" {
		t.Errorf("bm25Query of punctuation = %q, want empty", got)
	}
}

func TestWhereExactness(t *testing.T) {
	cases := []struct {
		f       search.Filter
		refused []string
		exact   bool
		has     []string
		hasNot  []string
	}{
		{search.Filter{}, nil, true, []string{`path: ["pruned"]`, `valueBoolean: false`, `path: ["confidence"]`}, nil},
		{search.Filter{MinConfidence: 0.5, Outcome: "success", ScopeKind: "team", ExcludeSourceSession: "s1"}, nil, true,
			[]string{`valueNumber: 0.5`, `path: ["outcome"]`, `valueText: "success"`, `path: ["scope_kind"]`, `valueText: "team"`,
				`operator: Not`, `path: ["source_sessions"]`, `operator: ContainsAny`, `valueText: ["s1"]`}, nil},
		{search.Filter{Outcome: "all", ScopeKind: "all"}, nil, true, nil, nil},
		// Readable pushed down: the known scopes it refuses are excluded
		// by the server (none known refused: no scope clause at all).
		{search.Filter{Readable: func(string) bool { return true }}, nil, true, nil, []string{`path: ["scope"]`}},
		{search.Filter{Readable: func(sc string) bool { return sc == "project:a" }}, []string{"project:b", "team:t"}, true,
			[]string{`operator: Not`, `path: ["scope"]`, `operator: ContainsAny`, `valueText: ["project:b","team:t"]`}, nil},
		{search.Filter{Readable: func(string) bool { return false }}, []string{"project:b", "bad\x00scope"}, false,
			[]string{`valueText: ["project:b"]`}, nil},
		{search.Filter{ExcludeSourceSession: "bad\x00id"}, nil, false, nil, nil},
		{search.Filter{ScopeKind: "a:b"}, nil, false, nil, nil},
	}
	for i, tc := range cases {
		w, exact := where(tc.f, tc.refused)
		s := w.String()
		if exact != tc.exact {
			t.Errorf("case %d: exact = %v, want %v (%s)", i, exact, tc.exact, s)
		}
		for _, h := range tc.has {
			if !strings.Contains(s, h) {
				t.Errorf("case %d: where %s lacks %s", i, s, h)
			}
		}
		for _, h := range tc.hasNot {
			if strings.Contains(s, h) {
				t.Errorf("case %d: where %s has %s", i, s, h)
			}
		}
		if strings.Contains(s, "\x00") {
			t.Errorf("case %d: unsafe value sent to the server: %q", i, s)
		}
	}
}

type netErr struct{ timeout bool }

func (e netErr) Error() string   { return "net" }
func (e netErr) Timeout() bool   { return e.timeout }
func (e netErr) Temporary() bool { return false }

var _ net.Error = netErr{}

func TestRetryable(t *testing.T) {
	derived := func(err error) error { return &fault.WeaviateClientError{StatusCode: -1, DerivedFromError: err} }
	httpStatus := func(code int) error {
		return &fault.WeaviateClientError{IsUnexpectedStatusCode: true, StatusCode: code, Msg: "x"}
	}
	cases := []struct {
		err  error
		want bool
	}{
		{derived(&url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNREFUSED}), true},
		{derived(derived(&url.Error{Op: "Post", URL: "http://x", Err: io.EOF})), true},
		{derived(netErr{timeout: true}), true},
		{syscall.ECONNRESET, true},
		{httpStatus(http.StatusServiceUnavailable), true},
		{derived(httpStatus(http.StatusBadGateway)), true},
		{grpcStatus(codes.Unavailable), true},
		{httpStatus(http.StatusUnprocessableEntity), false},
		{httpStatus(http.StatusNotFound), false},
		{grpcStatus(codes.InvalidArgument), false},
		{errors.New("GraphQL: no such class"), false},
		{&fault.WeaviateClientError{IsUnexpectedStatusCode: true, StatusCode: 422, Msg: "local memory_abc shard is not ready"}, true},
		{fmt.Errorf("x: %w", &transientError{"could not find index for class Memory"}), true},
		{nil, false},
	}
	for i, tc := range cases {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("case %d: retryable(%v) = %v, want %v", i, tc.err, got, tc.want)
		}
	}
}

func grpcStatus(c codes.Code) error { return fmt.Errorf("batch objects: %w", status.Error(c, "x")) }

// TestRetryBudget: an operation meeting only connection errors fails with
// ErrUnavailable after about RetryMaxElapsed, and a cancelled
// context ends it at once.
func TestRetryBudget(t *testing.T) {
	cfg := Config{RetryInitialInterval: 20 * time.Millisecond, RetryMaxInterval: 100 * time.Millisecond,
		RetryMaxElapsed: 400 * time.Millisecond, Timeout: time.Second}.withDefaults()
	s := &Store{cfg: cfg}
	calls := 0
	start := time.Now()
	err := s.retry(context.Background(), "probe", func(context.Context) error {
		calls++
		return derivedRefused()
	})
	took := time.Since(start)
	if !errors.Is(err, ErrUnavailable) || calls < 3 || took < 150*time.Millisecond || took > 2*time.Second {
		t.Fatalf("err %v after %d calls in %v, want ErrUnavailable after several calls in ~400ms", err, calls, took)
	}
	var we *fault.WeaviateClientError
	if !errors.As(err, &we) {
		t.Errorf("the cause is not reachable with errors.As: %v", err)
	}
	if strings.Contains(err.Error(), "DerivedFromError") {
		t.Errorf("message keeps the client's wrapping: %v", err)
	}
	// A non-connection error is returned at once.
	calls = 0
	err = s.retry(context.Background(), "probe", func(context.Context) error {
		calls++
		return &fault.WeaviateClientError{IsUnexpectedStatusCode: true, StatusCode: 422, Msg: "bad vector"}
	})
	if calls != 1 || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "HTTP 422: bad vector") {
		t.Errorf("422: %d calls, %v", calls, err)
	}
	// A cancelled context stops the retries.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	err = s.retry(ctx, "probe", func(context.Context) error { return derivedRefused() })
	if err == nil || time.Since(start) > 200*time.Millisecond {
		t.Errorf("cancelled: %v after %v", err, time.Since(start))
	}
}

func derivedRefused() error {
	return &fault.WeaviateClientError{StatusCode: -1, Msg: "check the DerivedFromError field for more information",
		DerivedFromError: &url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNREFUSED}}
}

// TestTransientRefusals: a server still loading its collections after a
// restart refuses objects and queries with messages that are retried;
// other refusals are not.
func TestTransientRefusals(t *testing.T) {
	refused := func(msgs ...string) []models.ObjectsGetResponse {
		var out []models.ObjectsGetResponse
		for i, m := range msgs {
			r := models.ObjectsGetResponse{Object: models.Object{Properties: map[string]any{"memory_id": fmt.Sprintf("m%d", i)}},
				Result: &models.ObjectsGetResponseAO2Result{}}
			if m != "" {
				r.Result.Errors = &models.ErrorResponse{Error: []*models.ErrorResponseErrorItems0{{Message: m}}}
			}
			out = append(out, r)
		}
		return out
	}
	if err := batchErrors(refused("", "")); err != nil {
		t.Fatalf("no refusals: %v", err)
	}
	loading := "could not find index for class Memory. It might have been deleted in the meantime"
	if err := batchErrors(refused("", loading, loading)); !retryable(err) || !strings.Contains(err.Error(), "2 objects refused") {
		t.Errorf("loading refusals: %v, retryable %v", err, retryable(err))
	}
	if err := batchErrors(refused(loading, "vector lengths don't match: 3 vs 512")); err == nil || retryable(err) {
		t.Errorf("a real refusal among loading ones: %v, retryable %v", err, retryable(err))
	}
	var into map[string]any
	if err := decode(&models.GraphQLResponse{Errors: []*models.GraphQLError{{Message: "local x shard is not ready"}}}, &into); !retryable(err) {
		t.Errorf("GraphQL shard not ready: %v not retryable", err)
	}
	if err := decode(&models.GraphQLResponse{Errors: []*models.GraphQLError{{Message: "Cannot query field \"nope\""}}}, &into); err == nil || retryable(err) {
		t.Errorf("GraphQL field error: %v, retryable %v", err, retryable(err))
	}
}

// ProbeGRPC answers nil for the test server's gRPC port and an error,
// within its timeout, for a port where nothing listens (serve
// --weaviate-grpc auto then stays on GraphQL).
func TestProbeGRPC(t *testing.T) {
	srv := sharedServer(t)
	cfg := testConfig(srv)
	if err := ProbeGRPC(ctxT(t), cfg, srv.GRPCHost, 10*time.Second); err != nil {
		t.Fatalf("probe of the server's gRPC port: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	start := time.Now()
	if err := ProbeGRPC(ctxT(t), cfg, closed, 500*time.Millisecond); err == nil {
		t.Fatalf("probe of %s (nothing listening) succeeded", closed)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("probe of a closed port took %v, timeout 500ms", took)
	}
	if got := DefaultGRPCHost("weaviate:8080"); got != "weaviate:50051" {
		t.Errorf("DefaultGRPCHost(weaviate:8080) = %s", got)
	}
	if got := DefaultGRPCHost("[::1]:8080"); got != "[::1]:50051" {
		t.Errorf("DefaultGRPCHost([::1]:8080) = %s", got)
	}
}
