package kafkaconn_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// tlsFiles makes a CA and a server certificate for 127.0.0.1 signed by it,
// writes the CA's PEM to a file and returns its path and the server's
// TLS configuration.
func tlsFiles(t *testing.T) (caFile string, server *tls.Config) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, srvKey := key(), key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}, MinVersion: tls.VersionTLS12}
}

// Chronicle's clients reach a cluster that wants TLS and SASL (SCRAM-SHA-512
// here) with the configuration of Use, and start on a cluster whose topics
// a platform team created, with a service account allowed to describe,
// read and write them but not to create any (broker.Start creates only the
// topics that are missing). A wrong password, a CA file that does not
// read or an unset password variable is an error naming the flag. Before,
// no client could reach such a cluster, and Start asked to create every
// topic, which an account without Create is refused for topics that exist
// (a Kafka platform review, 2026-12-01).
func TestSecuredClusterWithProvisionedTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caFile, serverTLS := tlsFiles(t)
	allow := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: op, Allow: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(serverTLS), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-512", "platform", "platform-secret"),
		kfake.User("SCRAM-SHA-512", "chronicle-svc", "svc-secret",
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationDescribe),
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationWrite),
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationDescribeConfigs)),
		// an account that may not read the topics' configurations
		kfake.User("SCRAM-SHA-512", "no-configs", "nc-secret",
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationDescribe),
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeTopic, "chronicle.", kmsg.ACLOperationWrite)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Cleanup(func() { _ = kafkaconn.Use(kafkaconn.Config{}) })
	// the platform team creates the topics
	t.Setenv("PLATFORM_PASSWORD", "platform-secret")
	if err := kafkaconn.Use(kafkaconn.Config{CAFile: caFile, Mechanism: "SCRAM-SHA-512", User: "platform", PasswordEnv: "PLATFORM_PASSWORD"}); err != nil {
		t.Fatal(err)
	}
	if err := broker.EnsureTopics(ctx, c.ListenAddrs(), 1, -1); err != nil {
		t.Fatalf("the platform team's creation: %v", err)
	}
	// the service account, which may not create topics, starts on them
	t.Setenv(kafkaconn.DefaultPasswordEnv, "svc-secret")
	if err := kafkaconn.Use(kafkaconn.Config{CAFile: caFile, Mechanism: "scram-sha-512", User: "chronicle-svc"}); err != nil {
		t.Fatal(err)
	}
	var lossy []broker.TopicRetention
	b, err := broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 1, OnFiniteRetention: func(rs []broker.TopicRetention) { lossy = rs }})
	if err != nil {
		t.Fatalf("start with an account that may not create topics: %v", err)
	}
	b.Close()
	if lossy != nil {
		t.Fatalf("topics Chronicle's configuration created reported as removing records: %+v", lossy)
	}
	cl, err := kafkaconn.NewClient(c.ListenAddrs())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: string(events.TopicSessions), Value: []byte(`{}`)}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS and SCRAM: %v", err)
	}
	cl.Close()
	// without DescribeConfigs the check of what the topics keep is a
	// warning naming the error, not a failed start
	t.Setenv("NC_PASSWORD", "nc-secret")
	if err := kafkaconn.Use(kafkaconn.Config{CAFile: caFile, Mechanism: "SCRAM-SHA-512", User: "no-configs", PasswordEnv: "NC_PASSWORD"}); err != nil {
		t.Fatal(err)
	}
	lossy = nil
	b, err = broker.Start(ctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 1, OnFiniteRetention: func(rs []broker.TopicRetention) { lossy = rs }})
	if err != nil {
		t.Fatalf("start without DescribeConfigs: %v", err)
	}
	b.Close()
	if len(lossy) == 0 || lossy[0].Err == nil {
		t.Fatalf("without DescribeConfigs: reported %+v; want the topics whose configuration could not be read, with the error", lossy)
	}
	// a wrong password: refused, and said
	t.Setenv(kafkaconn.DefaultPasswordEnv, "wrong")
	if err := kafkaconn.Use(kafkaconn.Config{CAFile: caFile, Mechanism: "SCRAM-SHA-512", User: "chronicle-svc"}); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if _, err := broker.Start(sctx, broker.Config{Brokers: c.ListenAddrs(), Partitions: 1}); err == nil {
		t.Fatal("a wrong password: started")
	}
	// the configuration's own errors name the flag
	t.Setenv("EMPTY_PASSWORD", "")
	for _, bad := range []struct {
		c    kafkaconn.Config
		flag string
	}{
		{kafkaconn.Config{CAFile: filepath.Join(t.TempDir(), "missing.pem")}, "--kafka-tls-ca"},
		{kafkaconn.Config{CertFile: caFile}, "--kafka-tls-cert"},
		{kafkaconn.Config{Mechanism: "GSSAPI", User: "u"}, "--kafka-sasl-mechanism"},
		{kafkaconn.Config{Mechanism: "PLAIN"}, "--kafka-sasl-user"},
		{kafkaconn.Config{Mechanism: "PLAIN", User: "u", PasswordEnv: "EMPTY_PASSWORD"}, "--kafka-sasl-password-env"},
		{kafkaconn.Config{User: "u"}, "--kafka-sasl-mechanism"},
	} {
		if err := kafkaconn.Use(bad.c); err == nil || !strings.Contains(err.Error(), bad.flag) {
			t.Errorf("%+v: %v; want an error naming %s", bad.c, err, bad.flag)
		}
	}
}
