package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/chronicle-dev/chronicle/events"
)

// writeRefused answers err, a write's failure, when the broker refused the
// write before appending it (events.ErrRefused: an ACL, a size limit, a
// topic policy, the embedded broker's full disk): a 503 without Retry-After saying what was not written
// (a clause, e.g. "the feedback was not written") and that a retry is
// refused again until the cluster's cause is fixed, with the broker's
// error. It reports whether it
// answered; any other failure is the caller's to answer (its outcome is
// unknown, as its 503 says). Before, a refusal was answered as an unknown
// outcome, "may still be written: retry", which an agent retries for
// ever against a cluster whose ACL refuses Chronicle's producer.
func writeRefused(w http.ResponseWriter, err error, notWritten string) bool {
	if !errors.Is(err, events.ErrRefused) {
		return false
	}
	writeErr(w, http.StatusServiceUnavailable, "refused by the broker: %s, and a retry is refused again until its cause is fixed (an ACL, a size limit or a topic policy of the Kafka cluster, or the embedded broker's full disk): %v", notWritten, err)
	return true
}

// refusedEvents says what a refused POST /v1/events of m events did not
// write: all of them, or "N of the M events" when the broker acknowledged
// the others (a *events.ProduceError names the records it did not).
func refusedEvents(err error, m int) string {
	var pe *events.ProduceError
	if errors.As(err, &pe) && len(pe.Failed) < m {
		return fmt.Sprintf("%d of the %d events were not written (the others were)", len(pe.Failed), m)
	}
	if m == 1 {
		return "the event was not written"
	}
	return "the events were not written"
}
