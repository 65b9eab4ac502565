package pipeline

import (
	"testing"
	"time"
)

// The relay's and the workers' transaction timeout is twice the session
// timeout, at least a minute and at most Kafka's default maximum, 15
// minutes (a session timeout of 10 minutes asked a broker for 20, which
// it refuses).
func TestTransactionTimeoutWithinKafkasMaximum(t *testing.T) {
	for _, c := range []struct{ session, want time.Duration }{
		{0, time.Minute},
		{10 * time.Second, time.Minute},
		{45 * time.Second, 90 * time.Second},
		{5 * time.Minute, 10 * time.Minute},
		{10 * time.Minute, 15 * time.Minute},
		{30 * time.Minute, 15 * time.Minute},
	} {
		if got := transactionTimeout(c.session); got != c.want {
			t.Errorf("session timeout %v: transaction timeout %v, want %v", c.session, got, c.want)
		}
	}
}
