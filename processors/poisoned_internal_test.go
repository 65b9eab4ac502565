package processors

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The dead-letter metric counts letters, not attempts: a worker handler
// error that hands the event again (an unwritten transaction, a lost
// partition, an engine not yet following) is not a dead letter, so a
// letter whose first transaction failed counts once, when the second
// commits (the double count TestWorkerDeadLettersWrittenOnce saw as 6 for
// 5 letters).
func TestCountPoisonedCountsLettersNotAttempts(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	for _, c := range []struct {
		err  error
		want float64
	}{
		{nil, 0},
		{fmt.Errorf("%w: broker down", errRetryLater), 0},
		{errFollowing, 0},
		{fmt.Errorf("%w: fenced", errLostPartition), 0},
		{errors.New("the worker refused the event"), 1},
	} {
		before := testutil.ToFloat64(m.DeadLettered.WithLabelValues("w"))
		h := countPoisoned(m, "w")(func(*message.Message) ([]*message.Message, error) { return nil, c.err })
		if _, err := h(message.NewMessage("1", nil)); !errors.Is(err, c.err) {
			t.Fatalf("the middleware changed the error %v to %v", c.err, err)
		}
		if got := testutil.ToFloat64(m.DeadLettered.WithLabelValues("w")) - before; got != c.want {
			t.Errorf("handler error %v: the metric rose by %v, want %v", c.err, got, c.want)
		}
	}
}
