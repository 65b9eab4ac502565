package weaviate

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An attempt that never returns (a gRPC call to a SIGSTOPped server, which
// the HTTP client's timeout does not reach) ends at Config.Timeout, and
// the operation at its retry budget, with ErrUnavailable: the background
// sync waited without end, so /healthz never named the vector store (an
// operator's walkthrough, 2026-11-30).
func TestAttemptsAreBounded(t *testing.T) {
	s := &Store{cfg: Config{Timeout: 50 * time.Millisecond, RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 20 * time.Millisecond, RetryMaxElapsed: 300 * time.Millisecond}}
	start := time.Now()
	err := s.retry(context.Background(), "batch upsert", func(ctx context.Context) error {
		<-ctx.Done() // as grpc-go ends a call at its context's deadline
		return status.Error(codes.DeadlineExceeded, ctx.Err().Error())
	})
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("retry of a hanging attempt returned after %v", el)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("retry of a hanging attempt: %v, want ErrUnavailable", err)
	}
}
