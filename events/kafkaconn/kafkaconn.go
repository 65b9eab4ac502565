// Package kafkaconn holds how Chronicle's Kafka clients reach a cluster:
// the seed brokers, the client id, and for an external cluster TLS and
// SASL. Every client is made with NewClient, so one Use at start (the
// --kafka-tls… and --kafka-sasl… flags of the commands that take
// --brokers) reaches all of them. Before, no client could reach a cluster
// that wants TLS or SASL (SASL_SSL on most managed Kafka services): a Kafka
// platform review, 2026-12-01.
package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	awssasl "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"
)

// ClientID is the client.id of every Chronicle client: brokers' request
// logs and quotas tell Chronicle's requests from other services' (it was
// franz-go's default, "kgo").
const ClientID = "chronicle"

// DefaultPasswordEnv is the environment variable the SASL password is read
// from when Config.PasswordEnv is empty.
const DefaultPasswordEnv = "CHRONICLE_KAFKA_PASSWORD"

// Config is how clients authenticate to and encrypt their connections to
// an external cluster. The zero Config is plaintext without
// authentication (the embedded broker's, and a cluster's PLAINTEXT
// listener).
type Config struct {
	// TLS encrypts every connection (Kafka's SSL and SASL_SSL security
	// protocols). Default false. Implied by CAFile, CertFile and KeyFile.
	TLS bool
	// CAFile is a PEM file of the certificate authorities the brokers'
	// certificates are checked against; empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// clusters that authenticate clients by TLS (mTLS); both or neither.
	CertFile, KeyFile string
	// Mechanism is the SASL mechanism: "" (none), PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM (case-insensitive). PLAIN
	// sends the password as it is: use it with TLS only. AWS_MSK_IAM
	// (Amazon MSK's IAM access control) takes no User or password: its
	// credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID
	// and AWS_SECRET_ACCESS_KEY, AWS_PROFILE's shared files, web identity
	// as EKS's IRSA sets it, ECS and EKS Pod Identity container
	// credentials, EC2 instance roles), refreshed by the SDK before they
	// expire, each retrieval bounded by TokenTimeout; the region is the
	// broker host name's (MSK's b-1.….kafka.<region>.amazonaws.com) or
	// AWS_REGION's. It implies TLS: MSK's IAM listeners (port 9098) are
	// TLS only.
	Mechanism string
	// User is the SASL user name, required with Mechanism; with
	// OAUTHBEARER, the OAuth client id.
	User string
	// PasswordEnv names the environment variable holding the SASL
	// password (default DefaultPasswordEnv): never a flag, which ps would
	// show. Unset or empty with Mechanism set is an error. With
	// OAUTHBEARER it holds the OAuth client secret.
	PasswordEnv string
	// TokenURL is OAUTHBEARER's OAuth 2.0 token endpoint (an http or
	// https URL): tokens are asked for with the client credentials grant
	// (RFC 6749, section 4.4; Kafka's sasl.oauthbearer.token.endpoint.url
	// with its client credentials login), User as the client id and the
	// PasswordEnv variable as the secret, and kept until 10 s before they
	// expire (a token without expires_in is kept for good). Required with
	// OAUTHBEARER, refused with the other mechanisms. A token request
	// waits at most TokenTimeout. An https endpoint's certificate is
	// checked against the system's roots (SSL_CERT_FILE and SSL_CERT_DIR
	// name others), not CAFile, which is the brokers'.
	TokenURL string
	// Scope is the OAuth scope OAUTHBEARER asks for: scope names separated
	// by spaces or commas (Kafka's sasl.oauthbearer.scope). Empty (the
	// default): none asked for, the identity provider's default.
	Scope string
	// Extensions are OAUTHBEARER's SASL extensions (RFC 7628, section 3.1;
	// Kafka's sasl.oauthbearer.extensions / the JAAS extension_ options):
	// key=value pairs separated by commas, e.g. Confluent Cloud's
	// "logicalCluster=lkc-abc12,identityPoolId=pool-Xyz9". A key is
	// letters only and not "auth", a value printable ASCII without a
	// comma (RFC 7628's key and value rules, without its tabs and line
	// breaks; the comma separates pairs).
	// Default: none. Refused with the other mechanisms.
	Extensions string
}

// TokenTimeout bounds an OAUTHBEARER token request (Config.TokenURL) and
// an AWS_MSK_IAM retrieval of credentials: past it, the connection's
// authentication fails with an error naming what it waited for and the
// wait, and franz-go retries the request it was for as for any failed
// connection. It is below franz-go's dial timeout (10 s), within which a
// connection authenticates: at 10 s, an endpoint that did not answer
// showed as "unable to dial: i/o timeout", which names the broker's
// address.
const TokenTimeout = 5 * time.Second

// Zero reports whether c asks for nothing (plaintext, no SASL).
func (c Config) Zero() bool { return c == Config{} }

// Opts returns the client options c asks for, reading the files and the
// password now. Errors name the flag (--kafka-…) and the reason.
func (c Config) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	msk := strings.EqualFold(c.Mechanism, "AWS_MSK_IAM")
	if c.TLS || c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || msk {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--kafka-tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--kafka-tls-ca: %s holds no PEM certificate", c.CAFile)
			}
			tc.RootCAs = pool
		}
		if (c.CertFile == "") != (c.KeyFile == "") {
			return nil, errors.New("--kafka-tls-cert and --kafka-tls-key: give both (a client certificate and its key) or neither")
		}
		if c.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("--kafka-tls-cert, --kafka-tls-key: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if c.Mechanism == "" {
		if c.User != "" || c.PasswordEnv != "" || c.TokenURL != "" || c.Scope != "" || c.Extensions != "" {
			return nil, errors.New("--kafka-sasl-user, --kafka-sasl-password-env and --kafka-oauth-… need --kafka-sasl-mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)")
		}
		return opts, nil
	}
	mech := strings.ToUpper(c.Mechanism)
	if mech != "PLAIN" && mech != "SCRAM-SHA-256" && mech != "SCRAM-SHA-512" && mech != "OAUTHBEARER" && mech != "AWS_MSK_IAM" {
		return nil, fmt.Errorf("--kafka-sasl-mechanism: %q is not PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", c.Mechanism)
	}
	if msk {
		if c.User != "" || c.PasswordEnv != "" || c.TokenURL != "" || c.Scope != "" || c.Extensions != "" {
			return nil, errors.New("--kafka-sasl-mechanism AWS_MSK_IAM: its credentials come from the AWS SDK's chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, web identity, container or instance roles): --kafka-sasl-user, --kafka-sasl-password-env and --kafka-oauth-… are not for it")
		}
		// the chain is read now (environment, shared files); the
		// credentials themselves are fetched at the first connection
		lctx, cancel := context.WithTimeout(context.Background(), TokenTimeout)
		defer cancel()
		ac, err := awsconfig.LoadDefaultConfig(lctx)
		if err != nil {
			return nil, fmt.Errorf("--kafka-sasl-mechanism AWS_MSK_IAM: AWS configuration: %w", err)
		}
		creds := ac.Credentials
		return append(opts, kgo.SASL(awssasl.ManagedStreamingIAM(func(ctx context.Context) (awssasl.Auth, error) {
			if creds == nil {
				return awssasl.Auth{}, errors.New("--kafka-sasl-mechanism AWS_MSK_IAM: the AWS SDK found no credentials provider")
			}
			rctx, cancel := context.WithTimeout(ctx, TokenTimeout)
			defer cancel()
			v, err := creds.Retrieve(rctx)
			if err != nil {
				return awssasl.Auth{}, fmt.Errorf("--kafka-sasl-mechanism AWS_MSK_IAM: AWS credentials (the SDK's chain: AWS_ACCESS_KEY_ID, AWS_PROFILE, web identity, container or instance role), within %s: %w", TokenTimeout, err)
			}
			return awssasl.Auth{AccessKey: v.AccessKeyID, SecretKey: v.SecretAccessKey, SessionToken: v.SessionToken, UserAgent: ClientID}, nil
		}))), nil
	}
	if mech != "OAUTHBEARER" && (c.TokenURL != "" || c.Scope != "" || c.Extensions != "") {
		return nil, fmt.Errorf("--kafka-oauth-token-url, --kafka-oauth-scope and --kafka-oauth-extensions: for --kafka-sasl-mechanism OAUTHBEARER, not %s", c.Mechanism)
	}
	exts, err := parseExtensions(c.Extensions)
	if err != nil {
		return nil, err
	}
	what := "SASL password"
	if mech == "OAUTHBEARER" {
		what = "OAuth client secret"
		if c.TokenURL == "" {
			return nil, errors.New("--kafka-oauth-token-url: required with --kafka-sasl-mechanism OAUTHBEARER (the identity provider's OAuth 2.0 token endpoint)")
		}
		if u, err := url.Parse(c.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("--kafka-oauth-token-url: %q is not an http or https URL", c.TokenURL)
		}
	}
	if c.User == "" {
		if mech == "OAUTHBEARER" {
			return nil, errors.New("--kafka-sasl-user: required with --kafka-sasl-mechanism OAUTHBEARER (the OAuth client id)")
		}
		return nil, fmt.Errorf("--kafka-sasl-user: required with --kafka-sasl-mechanism %s", c.Mechanism)
	}
	env := c.PasswordEnv
	if env == "" {
		env = DefaultPasswordEnv
	}
	pass := os.Getenv(env)
	if pass == "" {
		return nil, fmt.Errorf("--kafka-sasl-password-env: the environment variable %s is unset or empty; it holds the %s of %s", env, what, c.User)
	}
	var m sasl.Mechanism
	switch mech {
	case "PLAIN":
		m = plain.Auth{User: c.User, Pass: pass}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: c.User, Pass: pass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: c.User, Pass: pass}.AsSha512Mechanism()
	default:
		ts := &tokenSource{cfg: clientcredentials.Config{ClientID: c.User, ClientSecret: pass, TokenURL: c.TokenURL,
			Scopes: strings.FieldsFunc(c.Scope, func(r rune) bool { return r == ' ' || r == ',' })}, extensions: exts}
		m = oauth.Oauth(ts.auth)
	}
	return append(opts, kgo.SASL(m)), nil
}

// tokenSource gives OAUTHBEARER its token (Config.TokenURL): the last one
// while it is valid (oauth2.Token.Valid: until 10 s before its expiry),
// else a new one from the token endpoint, asked for at most TokenTimeout.
// Each connection's authentication calls auth, and so does franz-go's
// re-authentication when a broker bounds the session
// (connections.max.reauth.ms, KIP-368), which then gets a fresh token.
// Connections that need a token at once share one request (singleflight),
// so an endpoint that does not answer costs each of them one
// TokenTimeout, not one per connection before it.
type tokenSource struct {
	cfg        clientcredentials.Config
	extensions map[string]string // sent with every token (Config.Extensions)
	sf         singleflight.Group
	mu         sync.Mutex
	tok        *oauth2.Token
}

func (s *tokenSource) auth(ctx context.Context) (oauth.Auth, error) {
	s.mu.Lock()
	tok := s.tok
	s.mu.Unlock()
	if tok != nil && tok.Valid() {
		return oauth.Auth{Token: tok.AccessToken, Extensions: s.extensions}, nil
	}
	ch := s.sf.DoChan("token", func() (any, error) {
		// not the caller's context: the request is shared, and one
		// caller giving up does not fail the others
		fctx, cancel := context.WithTimeout(context.Background(), TokenTimeout)
		defer cancel()
		tok, err := s.cfg.Token(fctx)
		if err != nil {
			if fctx.Err() != nil {
				return nil, fmt.Errorf("--kafka-oauth-token-url: no token from %s within %s: %w", s.cfg.TokenURL, TokenTimeout, err)
			}
			return nil, fmt.Errorf("--kafka-oauth-token-url: token from %s for client %s: %w", s.cfg.TokenURL, s.cfg.ClientID, err)
		}
		s.mu.Lock()
		s.tok = tok
		s.mu.Unlock()
		return tok, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return oauth.Auth{}, r.Err
		}
		return oauth.Auth{Token: r.Val.(*oauth2.Token).AccessToken, Extensions: s.extensions}, nil
	case <-ctx.Done():
		return oauth.Auth{}, fmt.Errorf("--kafka-oauth-token-url: waiting for a token from %s: %w", s.cfg.TokenURL, ctx.Err())
	}
}

// parseExtensions reads Config.Extensions: nil for "", else each
// key=value pair, checked as RFC 7628 (section 3.1) has them: a key of
// letters (not "auth", the token's own), a value of printable ASCII (a
// comma separates pairs, so none is in a value; RFC 7628 also allows tabs
// and line breaks, which a flag does not carry).
func parseExtensions(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--kafka-oauth-extensions: %q is not key=value", kv)
		}
		for _, r := range k {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return nil, fmt.Errorf("--kafka-oauth-extensions: key %q: letters only (RFC 7628, section 3.1)", k)
			}
		}
		if k == "auth" {
			return nil, errors.New(`--kafka-oauth-extensions: key "auth" is the token's own (RFC 7628, section 3.1)`)
		}
		for _, r := range v {
			if r < 0x20 || r > 0x7e {
				return nil, fmt.Errorf("--kafka-oauth-extensions: the value of %s: printable ASCII only (RFC 7628, section 3.1)", k)
			}
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--kafka-oauth-extensions: key %s given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

var current atomic.Pointer[[]kgo.Opt]

// Use makes every client NewClient makes from now on connect as c asks:
// called once at start, before any client is made. An error (a file that
// does not read, a password not set) changes nothing.
func Use(c Config) error {
	opts, err := c.Opts()
	if err != nil {
		return err
	}
	current.Store(&opts)
	return nil
}

// NewClient is kgo.NewClient with the seed brokers, ClientID and the
// connection options of Use, then opts (which may override them).
func NewClient(seeds []string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(With(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)...)
}

// With is opts after ClientID and the connection options of Use, for a
// client whose options name its seed brokers themselves.
func With(opts ...kgo.Opt) []kgo.Opt {
	all := []kgo.Opt{kgo.ClientID(ClientID)}
	if p := current.Load(); p != nil {
		all = append(all, *p...)
	}
	return append(all, opts...)
}
