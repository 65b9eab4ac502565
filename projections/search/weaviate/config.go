package weaviate

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"
)

// Defaults applied by New to the zero fields of a Config.
const (
	// DefaultHost is the host:port of Weaviate's REST/GraphQL API.
	DefaultHost = "127.0.0.1:8081"
	// DefaultScheme is the scheme of the REST/GraphQL API.
	DefaultScheme = "http"
	// DefaultTimeout bounds one HTTP (or gRPC) request.
	DefaultTimeout = 10 * time.Second
	// DefaultRetryInitialInterval is the first pause after a connection
	// error.
	DefaultRetryInitialInterval = 100 * time.Millisecond
	// DefaultRetryMaxInterval caps the pause between two attempts.
	DefaultRetryMaxInterval = 2 * time.Second
	// DefaultRetryMaxElapsed is how long one operation keeps retrying
	// connection errors before it fails with ErrUnavailable.
	DefaultRetryMaxElapsed = 15 * time.Second
	// DefaultOverFetch is the factor by which Candidates over-fetches when
	// part of the filter cannot be sent to the server (a GraphQL value
	// with unprintable characters).
	DefaultOverFetch = 4
	// DefaultMaxFetch is the most objects one query asks for: Weaviate's
	// own default QUERY_MAXIMUM_RESULTS.
	DefaultMaxFetch = 10000
	// DefaultBatchSize is how many objects one batch request carries.
	DefaultBatchSize = 200
)

// Config says where the Weaviate server is and how the store talks to it.
// New fills every zero field with its default, then calls Validate.
type Config struct {
	// Host is the host:port of the REST/GraphQL API (DefaultHost).
	Host string
	// APIKey is the key of a server with API-key authentication
	// (AUTHENTICATION_APIKEY_ENABLED). Default empty: anonymous access.
	// It is sent as a Bearer token (the client's auth.ApiKey) with every
	// REST/GraphQL request and gRPC call, and never logged: String and
	// GoString redact it, and errors do not contain it. A missing, wrong
	// or insufficient key fails at once with ErrUnauthorized.
	APIKey string
	// Scheme is "http" or "https" (DefaultScheme).
	Scheme string
	// GRPCHost, when set (host:port of Weaviate's GRPC_PORT), sends batch
	// upserts and candidate queries over gRPC (the Search API), which is
	// faster for both: at 10k documents the p50 of a two-phase search
	// (CandidateRefs and Docs) was 0.31–0.62 × that of Candidates over
	// GraphQL in nine runs (README, "Two-phase candidates on Weaviate"). Empty (the default): every request goes
	// over REST/GraphQL. ProbeGRPC tells whether a port serves it.
	GRPCHost string
	// ClassPrefix is put before the collection names (Memory,
	// CoordinationPattern, Tool), for several independent stores on one
	// server (tests, staging). It must start with a capital letter and hold
	// only letters, digits and underscores. Default: none.
	ClassPrefix string
	// Timeout bounds one request (DefaultTimeout).
	Timeout time.Duration
	// RetryInitialInterval is the first pause after a connection error
	// (DefaultRetryInitialInterval); pauses grow exponentially (×1.5,
	// with ±50% jitter).
	RetryInitialInterval time.Duration
	// RetryMaxInterval caps one pause (DefaultRetryMaxInterval).
	RetryMaxInterval time.Duration
	// RetryMaxElapsed is how long an operation retries connection errors
	// (refused, reset, timed out, HTTP 502/503/504) and the refusals of a
	// server still loading its collections after a restart, before it
	// returns an error wrapping ErrUnavailable (DefaultRetryMaxElapsed).
	// Other errors, among them a refused API key (ErrUnauthorized), are
	// returned at once.
	RetryMaxElapsed time.Duration
	// OverFetch multiplies k when part of the filter cannot be sent to
	// the server (DefaultOverFetch); it multiplies again while too few
	// pass.
	OverFetch int
	// MaxFetch caps the objects one query asks for (DefaultMaxFetch); keep
	// it at most the server's QUERY_MAXIMUM_RESULTS.
	MaxFetch int
	// BatchSize is how many objects one batch request carries
	// (DefaultBatchSize).
	BatchSize int
}

// String is c with APIKey redacted, as %v and %+v print it.
func (c Config) String() string { return fmt.Sprintf("%+v", c.redacted()) }

// GoString is c with APIKey redacted, as %#v prints it.
func (c Config) GoString() string { return fmt.Sprintf("%#v", c.redacted()) }

// redacted is c, without its methods, with "[redacted]" for a set APIKey.
func (c Config) redacted() any {
	type config Config
	if c.APIKey != "" {
		c.APIKey = "[redacted]"
	}
	return config(c)
}

// DefaultConfig is the Config with every default.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Scheme == "" {
		c.Scheme = DefaultScheme
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RetryInitialInterval == 0 {
		c.RetryInitialInterval = DefaultRetryInitialInterval
	}
	if c.RetryMaxInterval == 0 {
		c.RetryMaxInterval = DefaultRetryMaxInterval
	}
	if c.RetryMaxElapsed == 0 {
		c.RetryMaxElapsed = DefaultRetryMaxElapsed
	}
	if c.OverFetch == 0 {
		c.OverFetch = DefaultOverFetch
	}
	if c.MaxFetch == 0 {
		c.MaxFetch = DefaultMaxFetch
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	return c
}

var classPrefixRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)

// ErrConfig is wrapped by every error of Validate.
var ErrConfig = errors.New("weaviate: invalid config")

// Validate reports the first invalid field of c as an error wrapping
// ErrConfig. It does not apply defaults: a zero duration or count is
// invalid here (New applies the defaults before validating).
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	if _, _, err := net.SplitHostPort(c.Host); err != nil {
		return bad("Host %q is not host:port: %v", c.Host, err)
	}
	if c.Scheme != "http" && c.Scheme != "https" {
		return bad("Scheme %q is not http or https", c.Scheme)
	}
	if c.GRPCHost != "" {
		if _, _, err := net.SplitHostPort(c.GRPCHost); err != nil {
			return bad("GRPCHost %q is not host:port: %v", c.GRPCHost, err)
		}
	}
	if c.ClassPrefix != "" && !classPrefixRE.MatchString(c.ClassPrefix) {
		return bad("ClassPrefix %q must start with A-Z and hold only letters, digits and _", c.ClassPrefix)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", c.Timeout}, {"RetryInitialInterval", c.RetryInitialInterval}, {"RetryMaxInterval", c.RetryMaxInterval}, {"RetryMaxElapsed", c.RetryMaxElapsed}} {
		if d.v <= 0 {
			return bad("%s %v must be positive", d.name, d.v)
		}
	}
	if c.RetryMaxInterval < c.RetryInitialInterval {
		return bad("RetryMaxInterval %v is below RetryInitialInterval %v", c.RetryMaxInterval, c.RetryInitialInterval)
	}
	if c.OverFetch < 1 {
		return bad("OverFetch %d must be at least 1", c.OverFetch)
	}
	if c.MaxFetch < 1 {
		return bad("MaxFetch %d must be at least 1", c.MaxFetch)
	}
	if c.BatchSize < 1 {
		return bad("BatchSize %d must be at least 1", c.BatchSize)
	}
	return nil
}
