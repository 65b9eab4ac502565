package kafkaconn_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// AWS_MSK_IAM signs MSK's authentication payload with the credentials of
// the AWS SDK's default chain (here its environment variables) for the
// region of AWS_REGION (a broker host name that is not MSK's names none),
// over TLS, which it implies (MSK's IAM listeners are TLS only). kfake has
// no AWS_MSK_IAM: its SASL handshake and authenticate are answered here,
// recording the payload. Without credentials, the connection fails naming
// the mechanism and the chain. Before, AWS_MSK_IAM was not offered.
func TestMSKIAMFromTheSDKChain(t *testing.T) {
	caFile, serverTLS := tlsFiles(t)
	var mu sync.Mutex
	var payloads []map[string]string
	c := saslBroker(t, "AWS_MSK_IAM", func(b []byte) ([]byte, bool) {
		var p map[string]string
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, false
		}
		mu.Lock()
		payloads = append(payloads, p)
		mu.Unlock()
		return []byte(`{"version":"2020_10_22","request-id":"r1"}`), true // MSK answers a non-empty response
	}, kfake.TLS(serverTLS))
	// the SDK's chain: environment credentials first; no shared files
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCHRONICLETEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "session-token")
	opts, err := kafkaconn.Config{CAFile: caFile, Mechanism: "aws_msk_iam"}.Opts()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("a request over AWS_MSK_IAM: %v", err)
	}
	cl.Close()
	mu.Lock()
	if len(payloads) == 0 {
		mu.Unlock()
		t.Fatal("no AWS_MSK_IAM authentication reached the broker")
	}
	p := payloads[0]
	mu.Unlock()
	if !strings.HasPrefix(p["x-amz-credential"], "AKIDCHRONICLETEST/") || !strings.HasSuffix(p["x-amz-credential"], "/eu-west-1/kafka-cluster/aws4_request") ||
		p["x-amz-security-token"] != "session-token" || p["action"] != "kafka-cluster:Connect" || p["x-amz-signature"] == "" || p["user-agent"] != "chronicle" {
		t.Fatalf("authentication payload %v; want MSK's, signed with the environment's credentials for eu-west-1", p)
	}

	// no credentials anywhere in the chain: the request fails saying so
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	opts, err = kafkaconn.Config{CAFile: caFile, Mechanism: "AWS_MSK_IAM"}.Opts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	short, cancelShort := context.WithTimeout(ctx, 8*time.Second)
	defer cancelShort()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(short, cl)
	if err == nil || !strings.Contains(err.Error(), "AWS_MSK_IAM: AWS credentials") {
		t.Fatalf("without credentials: %v; want an error naming the mechanism and the chain", err)
	}
	t.Log(err)

	// the SDK's chain is the only source: a user or a password is refused
	if _, err := (kafkaconn.Config{Mechanism: "AWS_MSK_IAM", User: "u"}).Opts(); err == nil || !strings.Contains(err.Error(), "are not for it") {
		t.Fatalf("AWS_MSK_IAM with a user: %v", err)
	}
}
