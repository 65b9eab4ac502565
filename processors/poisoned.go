package processors

import "github.com/ThreeDotsLabs/watermill/message"

// countPoisoned is the worker handler middleware that counts, in
// chronicle_dead_letter_events_total{processor=<worker>}, every message
// whose handler failed: the workers have no retry middleware, so each
// failure is final and the poison queue above it dead-letters the
// message. Watermill's own router metrics cannot show this: the poison
// queue swallows the error, so they record the message as
// success="true".
func countPoisoned(m *Metrics, worker string) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil && m != nil {
				m.DeadLettered.WithLabelValues(worker).Inc()
			}
			return out, err
		}
	}
}
