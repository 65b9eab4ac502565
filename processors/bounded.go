package processors

import (
	"context"
	"fmt"
	"time"
)

// Within runs f with a context that ends after d (or with ctx) and
// returns f's results, or, once that context is done, an error naming
// what and d (wrapping the context's error) without waiting for f any
// longer. franz-go does not end a request at its context's deadline while
// the request waits for a connection: the connection's ApiVersions
// handshake ignores the context (bounded by the client's read timeout
// overhead, 10 s), a dial started by an earlier request or the client's
// own metadata refresh is bounded by kgo.DialTimeout (10 s), and the
// requests to one broker queue behind it. So a bound put in the context
// alone held reads, /healthz and the /metrics lag gauges for 10 s against
// a broker that accepts connections and never answers (kill -STOP; an
// operator's walkthrough). The HTTP routes and the lag collectors bound
// their broker calls with it.
// f goes on in its goroutine until franz-go returns (its context is
// done by then, so no retry follows); its results are then dropped.
func Within[T any](ctx context.Context, d time.Duration, what string, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1) // f's send never blocks once nobody waits
	go func() {
		v, err := f(ctx)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-ch: // f returned too
			return r.v, r.err
		default:
		}
		var zero T
		return zero, fmt.Errorf("%s: no answer within %v: %w", what, d, ctx.Err())
	}
}
