package pipeline

import (
	"errors"
	"testing"
)

// The clock ticker's failures (a tick not written, a wall-clock step) go
// to OnTickError when it is set, and only otherwise to OnRelayError: serve
// printed a clock step as an "outbox relay" failure (the time walkthrough,
// 2026-12-04).
func TestTickErrorsGoToOnTickError(t *testing.T) {
	step := errors.New("clock: the wall clock stepped")
	var tick, relay []error
	cfg := Config{OnTickError: func(err error) { tick = append(tick, err) }, OnRelayError: func(err error) { relay = append(relay, err) }}
	cfg.tickErrorSink()(step)
	if len(tick) != 1 || len(relay) != 0 {
		t.Fatalf("with OnTickError set: OnTickError got %v, OnRelayError got %v; want the step in OnTickError only", tick, relay)
	}
	cfg.OnTickError = nil
	cfg.tickErrorSink()(step)
	if len(relay) != 1 {
		t.Fatalf("without OnTickError: OnRelayError got %v, want the step (where it went before OnTickError existed)", relay)
	}
	if (Config{}).tickErrorSink() != nil {
		t.Fatal("with neither set the sink must be nil (the ticker then ignores its errors)")
	}
}
