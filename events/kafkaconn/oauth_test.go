package kafkaconn_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// saslBroker is a kfake cluster (with opts) that takes the SASL mechanism
// mechanism alone, its handshake and authenticate requests answered here
// (kfake has neither OAUTHBEARER nor AWS_MSK_IAM): auth gets each
// authenticate request's bytes and returns the response's bytes and
// whether to accept them.
func saslBroker(t *testing.T, mechanism string, auth func([]byte) ([]byte, bool), opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.SASLHandshake), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.SASLHandshakeRequest)
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		if req.Mechanism != mechanism {
			resp.ErrorCode = 33 // UNSUPPORTED_SASL_MECHANISM
		}
		resp.SupportedMechanisms = []string{mechanism}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.SASLAuthenticateRequest)
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		out, ok := auth(req.SASLAuthBytes)
		if !ok {
			resp.ErrorCode = 58 // SASL_AUTHENTICATION_FAILED
		}
		resp.SASLAuthBytes = out
		return resp, nil, true
	})
	return c
}

// oauthBrokerBytes is a saslBroker of OAUTHBEARER that accepts the tokens
// "tok-…", recording the bearer tokens it was given, and returns the last
// authenticate request's bytes (RFC 7628's client initial response).
func oauthBrokerBytes(t *testing.T) (addrs []string, tokens func() []string, last func() string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	var lastBytes string
	c := saslBroker(t, "OAUTHBEARER", func(b []byte) ([]byte, bool) {
		// RFC 7628, section 3.1: n,,\x01auth=Bearer <token>\x01\x01
		_, tok, ok := strings.Cut(string(b), "auth=Bearer ")
		tok, _, _ = strings.Cut(tok, "\x01")
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tok)
		lastBytes = string(b)
		return nil, ok && strings.HasPrefix(tok, "tok-")
	})
	return c.ListenAddrs(), func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), seen...)
		}, func() string {
			mu.Lock()
			defer mu.Unlock()
			return lastBytes
		}
}

// OAUTHBEARER asks the token endpoint for a token with the client
// credentials grant (the client id, the secret from the environment, the
// scope), presents it to the broker, and keeps it while it is valid: two
// clients' connections cost one token request. Before, OAUTHBEARER was
// not offered (a Kafka platform review listed it as not wired).
func TestOAuthBearerClientCredentials(t *testing.T) {
	var requests atomic.Int32
	var form atomic.Value
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		form.Store(r.PostForm.Get("grant_type") + " " + r.PostForm.Get("scope") + " " + id + ":" + secret)
		if id != "chronicle" || secret != "s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok-` + string(rune('0'+n)) + `","token_type":"Bearer","expires_in":3600}`))
	}))
	defer idp.Close()
	addrs, tokens, lastAuth := oauthBrokerBytes(t)
	t.Setenv("CHRONICLE_TEST_OAUTH_SECRET", "s3cret")
	opts, err := kafkaconn.Config{Mechanism: "oauthbearer", User: "chronicle", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET",
		TokenURL: idp.URL + "/token", Scope: "kafka,produce", Extensions: "logicalCluster=lkc-abc12, identityPoolId=pool-Xyz9"}.Opts()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 2 {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatalf("a request over OAUTHBEARER: %v", err)
		}
		cl.Close()
	}
	if got := form.Load(); got != "client_credentials kafka produce chronicle:s3cret" {
		t.Errorf("token request: %v; want the client credentials grant with the scope, the id and the secret", got)
	}
	seen := tokens()
	if len(seen) < 2 || requests.Load() != 1 {
		t.Fatalf("%d authentications (%v) on %d token requests; want one token for every connection", len(seen), seen, requests.Load())
	}
	// RFC 7628, section 3.1: the extensions follow the token's auth, sorted
	if got, want := lastAuth(), "n,,\x01auth=Bearer tok-1\x01identityPoolId=pool-Xyz9\x01logicalCluster=lkc-abc12\x01\x01"; got != want {
		t.Errorf("authenticate bytes %q, want %q", got, want)
	}
	for _, tok := range seen {
		if tok != "tok-1" {
			t.Fatalf("the broker was given %q; want the endpoint's token tok-1", tok)
		}
	}

	// a secret the endpoint refuses: the request fails naming the token URL
	t.Setenv("CHRONICLE_TEST_OAUTH_SECRET", "wrong")
	opts, err = kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "chronicle", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: idp.URL + "/token"}.Opts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(short, cl)
	if err == nil || !strings.Contains(err.Error(), "--kafka-oauth-token-url") || !strings.Contains(err.Error(), idp.URL+"/token") {
		t.Fatalf("with a refused secret: %v; want an error naming the token URL", err)
	}

	// an endpoint that does not answer: the connection's authentication
	// gives up after TokenTimeout, saying so; before TokenTimeout was
	// below franz-go's dial timeout (10 s), the error was "unable to dial:
	// i/o timeout", which sent an operator to the broker's address
	stop := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stop }))
	defer hung.Close()
	defer close(stop)
	opts, err = kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "chronicle", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: hung.URL + "/token"}.Opts()
	if err != nil {
		t.Fatal(err)
	}
	hcl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer hcl.Close()
	t0 := time.Now()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, hcl)
	if err == nil || !strings.Contains(err.Error(), "no token from "+hung.URL+"/token within "+kafkaconn.TokenTimeout.String()) {
		t.Fatalf("with an endpoint that does not answer: %v after %v; want an error saying no token came within %v", err, time.Since(t0), kafkaconn.TokenTimeout)
	}
}

// OAUTHBEARER's settings are checked, each error naming its flag.
func TestOAuthBearerConfigErrors(t *testing.T) {
	t.Setenv("CHRONICLE_TEST_OAUTH_SECRET", "s3cret")
	for _, c := range []struct {
		cfg  kafkaconn.Config
		want string
	}{
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET"}, "--kafka-oauth-token-url: required"},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: "idp.example/token"}, `--kafka-oauth-token-url: "idp.example/token" is not an http or https URL`},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: "https://idp.example/token"}, "--kafka-sasl-user: required with --kafka-sasl-mechanism OAUTHBEARER (the OAuth client id)"},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_UNSET_SECRET", TokenURL: "https://idp.example/token"}, "CHRONICLE_TEST_UNSET_SECRET is unset or empty; it holds the OAuth client secret of c"},
		{kafkaconn.Config{Mechanism: "PLAIN", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", Scope: "kafka"}, "for --kafka-sasl-mechanism OAUTHBEARER, not PLAIN"},
		{kafkaconn.Config{TokenURL: "https://idp.example/token"}, "need --kafka-sasl-mechanism"},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: "https://idp.example/token", Extensions: "logicalCluster"}, `--kafka-oauth-extensions: "logicalCluster" is not key=value`},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: "https://idp.example/token", Extensions: "logical_cluster=x"}, `key "logical_cluster": letters only`},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: "https://idp.example/token", Extensions: "auth=x"}, `key "auth" is the token's own`},
		{kafkaconn.Config{Mechanism: "OAUTHBEARER", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", TokenURL: "https://idp.example/token", Extensions: "a=1,a=2"}, "key a given twice"},
		{kafkaconn.Config{Mechanism: "SCRAM-SHA-256", User: "c", PasswordEnv: "CHRONICLE_TEST_OAUTH_SECRET", Extensions: "a=1"}, "for --kafka-sasl-mechanism OAUTHBEARER, not SCRAM-SHA-256"},
	} {
		if _, err := c.cfg.Opts(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
}
