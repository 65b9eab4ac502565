package events_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker/brokertest"
)

// TestRefusedWriteIsErrRefused: a broker that refuses a write before
// appending it (an ACL: TOPIC_AUTHORIZATION_FAILED) makes Publish fail at
// once with ErrRefused (and ErrNotAcknowledged), naming the code; one
// that answers UNKNOWN_SERVER_ERROR, which may come after an append began,
// leaves the outcome unknown: ErrNotAcknowledged alone, after the
// attempts. Before, both were ErrNotAcknowledged after five attempts.
func TestRefusedWriteIsErrRefused(t *testing.T) {
	for _, c := range []struct {
		code    int16
		refused bool
		name    string
	}{
		{kerr.TopicAuthorizationFailed.Code, true, "TOPIC_AUTHORIZATION_FAILED"},
		{kerr.PolicyViolation.Code, true, "POLICY_VIOLATION"},
		{kerr.UnknownServerError.Code, false, "UNKNOWN_SERVER_ERROR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := brokertest.FakeCluster(t)
			var produces atomic.Int32
			cl.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
				cl.KeepControl()
				produces.Add(1)
				return brokertest.RejectProduce(req.(*kmsg.ProduceRequest), c.code), nil, true
			})
			p, err := events.NewProducer(events.ProducerConfig{Brokers: cl.ListenAddrs(), PublishTimeout: 10 * time.Second, InitialBackoff: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			env, err := events.New(events.MemoryFeedback, "test", "refused-1", time.Unix(1700000000, 0), events.MemoryFeedbackData{MemoryID: "m1", Signal: "task_completion", Positive: true})
			if err != nil {
				t.Fatal(err)
			}
			perr := p.Publish(context.Background(), env)
			if !errors.Is(perr, events.ErrNotAcknowledged) || !strings.Contains(perr.Error(), c.name) {
				t.Fatalf("Publish: %v, want ErrNotAcknowledged naming %s", perr, c.name)
			}
			if got := errors.Is(perr, events.ErrRefused); got != c.refused {
				t.Fatalf("Publish: %v: ErrRefused %v, want %v", perr, got, c.refused)
			}
			var pe *events.ProduceError
			if !errors.As(perr, &pe) || len(pe.Failed) != 1 {
				t.Fatalf("Publish: %v, want a *ProduceError naming the record", perr)
			}
			if c.refused && strings.Contains(perr.Error(), "attempt 2") {
				t.Errorf("a refusal was retried: %v (%d produce requests)", perr, produces.Load())
			}
			if !c.refused && !strings.Contains(perr.Error(), "attempt 5") {
				t.Errorf("an unknown outcome was not retried: %v", perr)
			}
		})
	}
}
