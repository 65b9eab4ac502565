package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

// An unknown data member is named by its own pointer, as POST
// /v1/memories names one; before, "/data" (a producer's walkthrough,
// 2026-12-06). Two unknown members: the object's pointer, naming both.
func TestUnknownDataMemberPointer(t *testing.T) {
	for raw, want := range map[string]string{
		`{"specversion":"1.0","id":"x1","source":"test","type":"coordination.session.started.v1","sessionid":"s1","data":{"original_task":"Do it.","success_criteria":[],"colour":"red"}}`:            "/data/colour",
		`{"specversion":"1.0","id":"x1","source":"test","type":"coordination.session.started.v1","sessionid":"s1","data":{"original_task":"Do it.","success_criteria":[],"a/b":"red"}}`:               "/data/a~1b",
		`{"specversion":"1.0","id":"x1","source":"test","type":"coordination.session.started.v1","sessionid":"s1","data":{"original_task":"Do it.","success_criteria":[],"colour":"red","size":"L"}}`: "/data",
	} {
		_, err := events.ParseProducerEvent([]byte(raw))
		var ve *events.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != want || !strings.Contains(ve.Reason, "not allowed") {
			t.Errorf("%s: %v, want a validation error at %s", raw, err, want)
		}
	}
}

// A time without a time zone (Python's datetime.utcnow().isoformat()) is
// refused saying so; the validator said "offset must be 6 characters
// long" (a producer's walkthrough, 2026-12-06).
func TestZonelessTimeSaysSo(t *testing.T) {
	raw := `{"specversion":"1.0","id":"x1","source":"test","type":"coordination.session.started.v1","sessionid":"s1","time":"2026-12-06T05:12:19.376536","data":{"original_task":"Do it.","success_criteria":[]}}`
	_, err := events.ParseProducerEvent([]byte(raw))
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/time" || !strings.Contains(ve.Reason, "has no time zone: RFC 3339 needs Z or ±hh:mm") {
		t.Fatalf("%v, want /time: … has no time zone", err)
	}
}

// A scope the envelope's pattern refuses is named in ScopeReason's words,
// as POST /v1/memories names it; the validator quoted its regular
// expression (a producer's walkthrough, 2026-12-06).
func TestEnvelopeScopeReason(t *testing.T) {
	raw := `{"specversion":"1.0","id":"x1","source":"test","type":"coordination.session.started.v1","sessionid":"s1","scope":"project:東京","data":{"original_task":"Do it.","success_criteria":[]}}`
	_, err := events.ParseProducerEvent([]byte(raw))
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Pointer != "/scope" || ve.Reason != events.ScopeReason("project:東京") || !strings.Contains(ve.Reason, "at byte 8") {
		t.Fatalf("%v, want /scope: %s", err, events.ScopeReason("project:東京"))
	}
}
