package embedder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
)

// Defaults applied by NewOpenAI to the zero fields of an OpenAIConfig.
const (
	// DefaultOpenAITimeout bounds one HTTP attempt.
	DefaultOpenAITimeout = 30 * time.Second
	// DefaultOpenAIMaxRetries is how many times a failed request is retried.
	DefaultOpenAIMaxRetries = 3
	// DefaultOpenAIInitialInterval is the first pause between attempts.
	DefaultOpenAIInitialInterval = 500 * time.Millisecond
	// DefaultOpenAIMaxInterval caps the pause between attempts.
	DefaultOpenAIMaxInterval = 10 * time.Second
	// DefaultOpenAIBatchSize is how many texts go in one request.
	DefaultOpenAIBatchSize = 64
)

// OpenAIConfig configures an OpenAI embedder: any server speaking the
// OpenAI embeddings API (POST {"model", "input": [...]} to .../embeddings),
// such as Ollama, vLLM, llama.cpp's server or a hosted service.
type OpenAIConfig struct {
	// URL is the API's base URL ("http://localhost:11434/v1") or the full
	// endpoint ("https://api.openai.com/v1/embeddings"); "/embeddings" is
	// appended unless the path already ends with it. Required.
	URL string
	// Model is the model name sent with every request
	// ("text-embedding-3-small", "nomic-embed-text"). Required.
	Model string
	// Dimensions is the vector dimension the model returns; a response of
	// any other dimension is an error. Required.
	Dimensions int
	// SendDimensions adds "dimensions": Dimensions to requests, for models
	// that can shorten their vectors (OpenAI text-embedding-3-*).
	// Default false.
	SendDimensions bool
	// ModelID is what Model() returns and so what is recorded with every
	// vector. Default: Model.
	ModelID string
	// APIKeyEnv names the environment variable holding the API key, sent
	// as "Authorization: Bearer <key>". Default "": no Authorization
	// header. When set, the variable must be set and non-empty; it is read
	// once, by NewOpenAI.
	APIKeyEnv string
	// Timeout bounds each HTTP attempt. Default DefaultOpenAITimeout.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a network
	// error, a 408, a 429 or a 5xx, with exponential backoff. Other errors
	// are not retried. Default DefaultOpenAIMaxRetries; negative: no retry.
	MaxRetries int
	// InitialInterval is the first pause between attempts.
	// Default DefaultOpenAIInitialInterval.
	InitialInterval time.Duration
	// MaxInterval caps the pause between attempts.
	// Default DefaultOpenAIMaxInterval.
	MaxInterval time.Duration
	// BatchSize is the largest number of texts sent in one request; longer
	// calls to Embed are split. Default DefaultOpenAIBatchSize.
	BatchSize int
	// HTTPClient sends the requests. Default: a client without a timeout of
	// its own (Timeout applies per attempt).
	HTTPClient *http.Client
}

// setDefaults fills in the zero fields with their documented defaults.
func (c *OpenAIConfig) setDefaults() {
	if c.ModelID == "" {
		c.ModelID = c.Model
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultOpenAITimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultOpenAIMaxRetries
	}
	if c.InitialInterval == 0 {
		c.InitialInterval = DefaultOpenAIInitialInterval
	}
	if c.MaxInterval == 0 {
		c.MaxInterval = DefaultOpenAIMaxInterval
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultOpenAIBatchSize
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
}

// Validate reports the first invalid field, by name. It checks the config
// as given: NewOpenAI applies the defaults before validating.
func (c OpenAIConfig) Validate() error {
	if c.URL == "" {
		return errors.New("OpenAIConfig.URL is required")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("OpenAIConfig.URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("OpenAIConfig.URL %q: want an absolute http or https URL", c.URL)
	}
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("OpenAIConfig.Model is required")
	}
	if c.Dimensions <= 0 {
		return fmt.Errorf("OpenAIConfig.Dimensions must be positive, got %d", c.Dimensions)
	}
	if c.APIKeyEnv != "" && os.Getenv(c.APIKeyEnv) == "" {
		return fmt.Errorf("OpenAIConfig.APIKeyEnv: environment variable %s is not set", c.APIKeyEnv)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("OpenAIConfig.Timeout must not be negative, got %v", c.Timeout)
	}
	if c.InitialInterval < 0 {
		return fmt.Errorf("OpenAIConfig.InitialInterval must not be negative, got %v", c.InitialInterval)
	}
	if c.MaxInterval < 0 || (c.MaxInterval > 0 && c.MaxInterval < c.InitialInterval) {
		return fmt.Errorf("OpenAIConfig.MaxInterval must be at least InitialInterval (%v), got %v", c.InitialInterval, c.MaxInterval)
	}
	if c.BatchSize < 0 {
		return fmt.Errorf("OpenAIConfig.BatchSize must not be negative, got %d", c.BatchSize)
	}
	return nil
}

// OpenAI embeds texts with an OpenAI-compatible /v1/embeddings endpoint.
// It is safe for concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
	apiKey   string
}

// NewOpenAI applies the defaults to cfg, validates it and returns the
// embedder. It does not contact the server.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedder: %w", err)
	}
	u, _ := url.Parse(cfg.URL) // validated above
	if !strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/embeddings") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/embeddings"
	}
	o := &OpenAI{cfg: cfg, endpoint: u.String()}
	if cfg.APIKeyEnv != "" {
		o.apiKey = os.Getenv(cfg.APIKeyEnv)
	}
	return o, nil
}

// Model returns the configured ModelID (by default the model name).
func (o *OpenAI) Model() string { return o.cfg.ModelID }

// Dim returns the configured Dimensions.
func (o *OpenAI) Dim() int { return o.cfg.Dimensions }

// APIError is a non-2xx answer of the embeddings endpoint.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the error message of the OpenAI error body, or the start
	// of the body when it is not one.
	Message string
	// Type and Code are the OpenAI error's type and code, when given.
	Type, Code string
}

// Error implements error.
func (e *APIError) Error() string {
	s := fmt.Sprintf("embeddings API: HTTP %d", e.StatusCode)
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// retryable reports whether the request may succeed if sent again.
func (e *APIError) retryable() bool {
	return e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// embeddingsRequest is the body of POST /v1/embeddings.
type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// embeddingsResponse is the part of the answer that is used.
type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one L2-normalised vector per text, in order, sending at
// most BatchSize texts per request. Vectors are normalised here, since not
// every server does it (an all-zero vector is returned unchanged). A
// response with a vector of another dimension than Dimensions, a missing or
// repeated index, or a non-finite value is an error, and is not retried.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		batch := texts[start:min(start+o.cfg.BatchSize, len(texts))]
		vecs, err := o.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// embedBatch sends one request, with retries.
func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	req := embeddingsRequest{Model: o.cfg.Model, Input: texts, EncodingFormat: "float"}
	if o.cfg.SendDimensions {
		req.Dimensions = o.cfg.Dimensions
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("embedder: %w", err)
	}

	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = o.cfg.InitialInterval
	eb.MaxInterval = o.cfg.MaxInterval
	eb.MaxElapsedTime = 0 // bounded by MaxRetries and ctx
	var b backoff.BackOff = eb
	if o.cfg.MaxRetries >= 0 {
		b = backoff.WithMaxRetries(b, uint64(o.cfg.MaxRetries))
	} else {
		b = backoff.WithMaxRetries(b, 0)
	}
	b = backoff.WithContext(b, ctx)

	var vecs [][]float32
	err = backoff.Retry(func() error {
		v, err := o.post(ctx, body, len(texts))
		if err != nil {
			return err
		}
		vecs = v
		return nil
	}, b)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("embedder: %s: %w", o.endpoint, err)
	}
	return vecs, nil
}

// post makes one attempt. Errors that retrying cannot fix are wrapped in
// backoff.Permanent.
func (o *OpenAI) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	actx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, backoff.Permanent(err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if o.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.cfg.HTTPClient.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, backoff.Permanent(ctx.Err())
		}
		return nil, err // network error or attempt timeout: retry
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr := parseAPIError(resp.StatusCode, raw)
		if apiErr.retryable() {
			if d := retryAfter(resp.Header.Get("Retry-After")); d > 0 {
				select {
				case <-time.After(min(d, o.cfg.MaxInterval)):
				case <-ctx.Done():
					return nil, backoff.Permanent(ctx.Err())
				}
			}
			return nil, apiErr
		}
		return nil, backoff.Permanent(apiErr)
	}
	var er embeddingsResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, backoff.Permanent(fmt.Errorf("decoding response: %w", err))
	}
	if len(er.Data) != n {
		return nil, backoff.Permanent(fmt.Errorf("response has %d embeddings for %d inputs", len(er.Data), n))
	}
	vecs := make([][]float32, n)
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= n || vecs[d.Index] != nil {
			return nil, backoff.Permanent(fmt.Errorf("response has a missing or repeated index %d", d.Index))
		}
		if len(d.Embedding) != o.cfg.Dimensions {
			return nil, backoff.Permanent(fmt.Errorf("dimension mismatch: model %q returned %d dimensions for input %d, configured %d",
				o.cfg.Model, len(d.Embedding), d.Index, o.cfg.Dimensions))
		}
		if err := normalize(d.Embedding); err != nil {
			return nil, backoff.Permanent(fmt.Errorf("embedding %d: %w", d.Index, err))
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// parseAPIError reads an OpenAI error body ({"error": {...}}), falling
// back to the raw body (Ollama sends {"error": "text"}).
func parseAPIError(status int, raw []byte) *APIError {
	e := &APIError{StatusCode: status}
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && len(body.Error) > 0 {
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var str string
		switch {
		case json.Unmarshal(body.Error, &obj) == nil:
			e.Message, e.Type = obj.Message, obj.Type
			if len(obj.Code) > 0 && string(obj.Code) != "null" {
				var code string
				if json.Unmarshal(obj.Code, &code) != nil {
					code = string(obj.Code)
				}
				e.Code = code
			}
			return e
		case json.Unmarshal(body.Error, &str) == nil:
			e.Message = str
			return e
		}
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		// cut at a character: a non-English gateway's page cut inside
		// one ended in half of it
		cut := 200
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	e.Message = msg
	return e
}

// retryAfter parses a Retry-After header given in seconds.
func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
