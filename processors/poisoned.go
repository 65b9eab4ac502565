package processors

import "github.com/ThreeDotsLabs/watermill/message"

// countPoisoned is the worker handler middleware that counts, in
// chronicle_dead_letter_events_total{processor=<worker>}, every message
// the poison queue above it dead-letters: a handler error that is
// poisonous (the workers have no retry middleware, so such a failure is
// final). An error that hands the event again (errRetryLater: an
// unwritten or unconfirmed transaction, an engine not yet following the
// partition; errLostPartition) is not counted: the letter, if there is
// one, is counted once when it is committed (workerOnce.poisoned), not
// once per attempt. Watermill's own router metrics cannot show this: the
// poison queue swallows the error, so they record the message as
// success="true".
func countPoisoned(m *Metrics, worker string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil && m != nil && poisonous(err) {
				m.DeadLettered.WithLabelValues(worker).Inc()
			}
			return out, err
		}
	}
}
