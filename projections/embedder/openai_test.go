package embedder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeOpenAI is an httptest server speaking the OpenAI embeddings API. Its
// vectors are deterministic and deliberately not normalised: component j
// of the vector for text s is len(s)+j+1.
type fakeOpenAI struct {
	*httptest.Server
	dim      int
	calls    atomic.Int32
	mu       sync.Mutex
	requests []embeddingsRequest
	auth     []string
	paths    []string
	// respond, when set, answers call n (1-based) instead of the default.
	respond func(n int, w http.ResponseWriter, req embeddingsRequest) bool
}

func newFakeOpenAI(t *testing.T, dim int) *fakeOpenAI {
	f := &fakeOpenAI{dim: dim}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.calls.Add(1))
		var req embeddingsRequest
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"error":{"message":"bad method or content type"}}`, http.StatusBadRequest)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		if f.respond != nil && f.respond(n, w, req) {
			return
		}
		writeEmbeddings(w, req, f.dim, false)
	}))
	t.Cleanup(f.Close)
	return f
}

// writeEmbeddings answers req with the fake vectors, in reverse index
// order when reversed (the API gives an index per item).
func writeEmbeddings(w http.ResponseWriter, req embeddingsRequest, dim int, reversed bool) {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model}
	for i, s := range req.Input {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(len(s) + j + 1)
		}
		resp.Data = append(resp.Data, item{"embedding", i, v})
	}
	if reversed {
		for i, j := 0, len(resp.Data)-1; i < j; i, j = i+1, j-1 {
			resp.Data[i], resp.Data[j] = resp.Data[j], resp.Data[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// fastRetries keeps the backoff pauses short in tests.
func fastRetries(c OpenAIConfig) OpenAIConfig {
	c.InitialInterval = time.Millisecond
	c.MaxInterval = 5 * time.Millisecond
	return c
}

func TestOpenAIEmbed(t *testing.T) {
	f := newFakeOpenAI(t, 4)
	f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
		writeEmbeddings(w, req, 4, true) // out of order on purpose
		return true
	}
	t.Setenv("CHRONICLE_TEST_EMBED_KEY", "sk-test-123")
	o, err := NewOpenAI(OpenAIConfig{
		URL:        f.URL + "/v1",
		Model:      "nomic-embed-text",
		Dimensions: 4,
		APIKeyEnv:  "CHRONICLE_TEST_EMBED_KEY",
		BatchSize:  2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Model() != "nomic-embed-text" || o.Dim() != 4 {
		t.Fatalf("Model() = %q, Dim() = %d", o.Model(), o.Dim())
	}
	in := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	got, err := o.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d vectors for %d texts", len(got), len(in))
	}
	for i, v := range got {
		want := make([]float32, 4)
		var n float64
		for j := range want {
			want[j] = float32(len(in[i]) + j + 1)
			n += float64(want[j]) * float64(want[j])
		}
		for j := range want {
			want[j] = float32(float64(want[j]) / math.Sqrt(n))
		}
		if d := maxAbsDiff(v, want); d > 1e-6 {
			t.Errorf("vector %d = %v, want %v (normalised, in input order)", i, v, want)
		}
	}
	if f.calls.Load() != 3 {
		t.Errorf("%d requests for 5 texts with BatchSize 2, want 3", f.calls.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.requests {
		if r.Model != "nomic-embed-text" || r.EncodingFormat != "float" || r.Dimensions != 0 {
			t.Errorf("request %d = %+v", i, r)
		}
		if f.auth[i] != "Bearer sk-test-123" {
			t.Errorf("request %d: Authorization %q", i, f.auth[i])
		}
		if f.paths[i] != "/v1/embeddings" {
			t.Errorf("request %d: path %q, want /v1/embeddings", i, f.paths[i])
		}
	}
	if strings.Join(f.requests[2].Input, ",") != "eeeee" {
		t.Errorf("last batch = %v", f.requests[2].Input)
	}
}

func TestOpenAIFullEndpointAndDimensions(t *testing.T) {
	f := newFakeOpenAI(t, 3)
	o, err := NewOpenAI(OpenAIConfig{
		URL: f.URL + "/v1/embeddings/", Model: "text-embedding-3-small", Dimensions: 3,
		SendDimensions: true, ModelID: "text-embedding-3-small@2024-01",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if o.Model() != "text-embedding-3-small@2024-01" {
		t.Errorf("Model() = %q", o.Model())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paths[0] != "/v1/embeddings/" || f.requests[0].Dimensions != 3 || f.auth[0] != "" {
		t.Errorf("path %q, dimensions %d, auth %q", f.paths[0], f.requests[0].Dimensions, f.auth[0])
	}
	// No texts: no request at all.
	if v, err := o.Embed(context.Background(), nil); err != nil || len(v) != 0 || f.calls.Load() != 1 {
		t.Errorf("Embed(nil) = %v, %v after %d calls", v, err, f.calls.Load())
	}
}

func TestOpenAIErrorResponse(t *testing.T) {
	f := newFakeOpenAI(t, 4)
	f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`)
		return true
	}
	o, err := NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 4}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"too long"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v is not an *APIError", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || apiErr.Code != "context_length_exceeded" ||
		!strings.Contains(apiErr.Message, "maximum context length") {
		t.Errorf("APIError = %+v", apiErr)
	}
	if !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("error %q does not name the status", err)
	}
	if f.calls.Load() != 1 {
		t.Errorf("a 400 was sent %d times; it must not be retried", f.calls.Load())
	}
}

func TestOpenAIOllamaStyleError(t *testing.T) {
	f := newFakeOpenAI(t, 4)
	f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"model \"nomic\" not found, try pulling it first"}`)
		return true
	}
	o, err := NewOpenAI(OpenAIConfig{URL: f.URL, Model: "nomic", Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"x"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, "not found") {
		t.Errorf("error = %v", err)
	}
}

func TestOpenAIRetries(t *testing.T) {
	f := newFakeOpenAI(t, 4)
	f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "upstream overloaded")
			return true
		case 2:
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"rate limited","type":"rate_limit_error"}}`)
			return true
		}
		return false
	}
	o, err := NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 4}))
	if err != nil {
		t.Fatal(err)
	}
	v, err := o.Embed(context.Background(), []string{"x", "y"})
	if err != nil || len(v) != 2 {
		t.Fatalf("Embed = %d vectors, %v; want success after 2 retries", len(v), err)
	}
	if f.calls.Load() != 3 {
		t.Errorf("%d calls, want 3", f.calls.Load())
	}
}

func TestOpenAIRetriesExhausted(t *testing.T) {
	f := newFakeOpenAI(t, 4)
	f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"boom","type":"server_error"}}`)
		return true
	}
	o, err := NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 4, MaxRetries: 2}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"x"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Message != "boom" {
		t.Errorf("error = %v", err)
	}
	if f.calls.Load() != 3 {
		t.Errorf("%d calls with MaxRetries 2, want 3", f.calls.Load())
	}

	f.calls.Store(0)
	o, err = NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 4, MaxRetries: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), []string{"x"}); err == nil || f.calls.Load() != 1 {
		t.Errorf("MaxRetries -1: error %v after %d calls, want an error after 1", err, f.calls.Load())
	}
}

func TestOpenAIDimensionMismatch(t *testing.T) {
	f := newFakeOpenAI(t, 768) // the server's model gives 768 dimensions
	o, err := NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 512}))
	if err != nil {
		t.Fatal(err)
	}
	v, err := o.Embed(context.Background(), []string{"x"})
	if err == nil || v != nil {
		t.Fatalf("Embed = %d vectors, %v; want a dimension error", len(v), err)
	}
	if !strings.Contains(err.Error(), "dimension mismatch") || !strings.Contains(err.Error(), "768") || !strings.Contains(err.Error(), "512") {
		t.Errorf("error %q does not explain the mismatch", err)
	}
	if f.calls.Load() != 1 {
		t.Errorf("a dimension mismatch was retried (%d calls)", f.calls.Load())
	}
}

func TestOpenAIMalformedResponses(t *testing.T) {
	for name, body := range map[string]string{
		"not json":       `<html>oops</html>`,
		"too few":        `{"data":[{"index":0,"embedding":[1,2]}]}`,
		"repeated index": `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`,
		"bad index":      `{"data":[{"index":0,"embedding":[1,2]},{"index":5,"embedding":[3,4]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeOpenAI(t, 2)
			f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
				fmt.Fprint(w, body)
				return true
			}
			o, err := NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 2}))
			if err != nil {
				t.Fatal(err)
			}
			if v, err := o.Embed(context.Background(), []string{"a", "b"}); err == nil {
				t.Errorf("accepted %s: %v", body, v)
			}
			if f.calls.Load() != 1 {
				t.Errorf("retried a malformed response (%d calls)", f.calls.Load())
			}
		})
	}
}

func TestOpenAITimeoutAndContext(t *testing.T) {
	release := make(chan struct{})
	f := newFakeOpenAI(t, 2)
	f.respond = func(n int, w http.ResponseWriter, req embeddingsRequest) bool {
		<-release // hang until the test ends
		return true
	}
	// Close the channel before the server's own Close (cleanups run in
	// reverse order).
	t.Cleanup(func() { close(release) })
	o, err := NewOpenAI(fastRetries(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 2, Timeout: 20 * time.Millisecond, MaxRetries: 1}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := o.Embed(context.Background(), []string{"x"}); err == nil {
		t.Fatal("a hanging server did not time out")
	}
	if f.calls.Load() != 2 || time.Since(start) > 5*time.Second {
		t.Errorf("%d attempts in %v; want 2 quick attempts", f.calls.Load(), time.Since(start))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	o, err = NewOpenAI(OpenAIConfig{URL: f.URL, Model: "m", Dimensions: 2, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
}

func TestOpenAIConfigValidate(t *testing.T) {
	valid := OpenAIConfig{URL: "http://localhost:11434/v1", Model: "nomic-embed-text", Dimensions: 768}
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for field, mutate := range map[string]func(*OpenAIConfig){
		"URL":             func(c *OpenAIConfig) { c.URL = "" },
		"URL ":            func(c *OpenAIConfig) { c.URL = "localhost:11434" },
		"URL  ":           func(c *OpenAIConfig) { c.URL = "ftp://example.com/v1" },
		"Model":           func(c *OpenAIConfig) { c.Model = " " },
		"Dimensions":      func(c *OpenAIConfig) { c.Dimensions = 0 },
		"APIKeyEnv":       func(c *OpenAIConfig) { c.APIKeyEnv = "CHRONICLE_TEST_SURELY_UNSET_KEY" },
		"Timeout":         func(c *OpenAIConfig) { c.Timeout = -time.Second },
		"InitialInterval": func(c *OpenAIConfig) { c.InitialInterval = -time.Second },
		"MaxInterval":     func(c *OpenAIConfig) { c.InitialInterval, c.MaxInterval = time.Second, time.Millisecond },
		"BatchSize":       func(c *OpenAIConfig) { c.BatchSize = -1 },
	} {
		c := valid
		mutate(&c)
		err := c.Validate()
		name := strings.TrimSpace(field)
		if err == nil || !strings.Contains(err.Error(), "OpenAIConfig."+name) {
			t.Errorf("%s: Validate() = %v; want an error naming OpenAIConfig.%s", name, err, name)
		}
		if _, err := NewOpenAI(c); err == nil {
			t.Errorf("%s: NewOpenAI accepted the config", name)
		}
	}
	// Defaults are documented and applied by NewOpenAI.
	o, err := NewOpenAI(valid)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.Timeout != DefaultOpenAITimeout || c.MaxRetries != DefaultOpenAIMaxRetries || c.BatchSize != DefaultOpenAIBatchSize ||
		c.InitialInterval != DefaultOpenAIInitialInterval || c.MaxInterval != DefaultOpenAIMaxInterval ||
		c.ModelID != "nomic-embed-text" || c.HTTPClient == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
	if o.endpoint != "http://localhost:11434/v1/embeddings" {
		t.Errorf("endpoint = %q", o.endpoint)
	}
}
