// Package kafkaconn holds how Chronicle's Kafka clients reach a cluster:
// the seed brokers, the client id, and for an external cluster TLS and
// SASL. Every client is made with NewClient, so one Use at start (the
// --kafka-tls… and --kafka-sasl… flags of the commands that take
// --brokers) reaches all of them. Before, no client could reach a cluster
// that wants TLS or SASL (SASL_SSL on most managed Kafka services): a Kafka
// platform review, 2026-12-01.
package kafkaconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
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
	// Mechanism is the SASL mechanism: "" (none), PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512 (case-insensitive). PLAIN sends the password as it is:
	// use it with TLS only.
	Mechanism string
	// User is the SASL user name, required with Mechanism.
	User string
	// PasswordEnv names the environment variable holding the SASL
	// password (default DefaultPasswordEnv): never a flag, which ps would
	// show. Unset or empty with Mechanism set is an error.
	PasswordEnv string
}

// Zero reports whether c asks for nothing (plaintext, no SASL).
func (c Config) Zero() bool { return c == Config{} }

// Opts returns the client options c asks for, reading the files and the
// password now. Errors name the flag (--kafka-…) and the reason.
func (c Config) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if c.TLS || c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
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
		if c.User != "" || c.PasswordEnv != "" {
			return nil, errors.New("--kafka-sasl-user and --kafka-sasl-password-env need --kafka-sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
		return opts, nil
	}
	mech := strings.ToUpper(c.Mechanism)
	if mech != "PLAIN" && mech != "SCRAM-SHA-256" && mech != "SCRAM-SHA-512" {
		return nil, fmt.Errorf("--kafka-sasl-mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.Mechanism)
	}
	if c.User == "" {
		return nil, fmt.Errorf("--kafka-sasl-user: required with --kafka-sasl-mechanism %s", c.Mechanism)
	}
	env := c.PasswordEnv
	if env == "" {
		env = DefaultPasswordEnv
	}
	pass := os.Getenv(env)
	if pass == "" {
		return nil, fmt.Errorf("--kafka-sasl-password-env: the environment variable %s is unset or empty; it holds the SASL password of %s", env, c.User)
	}
	var m sasl.Mechanism
	switch mech {
	case "PLAIN":
		m = plain.Auth{User: c.User, Pass: pass}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: c.User, Pass: pass}.AsSha256Mechanism()
	default:
		m = scram.Auth{User: c.User, Pass: pass}.AsSha512Mechanism()
	}
	return append(opts, kgo.SASL(m)), nil
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
