package events_test

import (
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// TestUnknownTypeListsProducerTypes: the error of an unknown type lists
// the types a producer may send, not the derived ones it cannot.
func TestUnknownTypeListsProducerTypes(t *testing.T) {
	_, err := events.ParseEvent([]byte(`{"specversion":"1.0","id":"e1","source":"s","type":"coordination.sesion.started.v1","data":{}}`))
	if err == nil {
		t.Fatal("an unknown type was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, string(events.SessionStarted)) {
		t.Errorf("error %q does not list %s", msg, events.SessionStarted)
	}
	if strings.Contains(msg, string(events.EvaluationCompleted)) {
		t.Errorf("error %q lists the derived type %s", msg, events.EvaluationCompleted)
	}
	for _, tp := range events.ProducerTypes() {
		if tp == events.EvaluationCompleted || tp == events.MemoryCreated {
			t.Errorf("ProducerTypes lists the derived %s", tp)
		}
	}
}
