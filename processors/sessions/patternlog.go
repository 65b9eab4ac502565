package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/events/keylog"
	"github.com/chronicle-dev/chronicle/projections"
)

// PatternStep is one coordination.pattern.counted.v1 of a pattern read
// back from chronicle.patterns, with what it did to the pattern's counts:
// an entry of GET /v1/patterns/{id}/history.
type PatternStep struct {
	// Position is where the record sits in the log, "topic:partition:offset".
	Position string `json:"position"`
	EventID  string `json:"event_id"`
	Time     string `json:"time"`
	// SessionID is the session the record counts (or takes out).
	SessionID string `json:"session_id"`
	// Met, First, WasMet and Left are the record's own flags
	// (PatternCountedData).
	Met    bool `json:"met"`
	First  bool `json:"first"`
	WasMet bool `json:"was_met"`
	Left   bool `json:"left"`
	// Change is CountPattern's (created, updated, removed), "unchanged"
	// for a record that took a session out of a pattern not there, or
	// "duplicate" for a second copy of a record (same scope, source and
	// id), which the patterns processor drops: neither moves a count.
	Change string `json:"change"`
	// Effect says in words what the record did: which count moved and why.
	Effect string `json:"effect"`
	// SessionCount, SucceededCount and Confidence are the pattern's after
	// the record.
	SessionCount   int     `json:"session_count"`
	SucceededCount int     `json:"succeeded_count"`
	Confidence     float64 `json:"confidence"`
}

// The Change of a PatternStep that moved nothing.
const (
	StepUnchanged = "unchanged"
	StepDuplicate = "duplicate"
)

// ErrNoPatternLog is wrapped by PatternLog's error when no broker is given
// (chronicle inspect serves a data directory without one).
var ErrNoPatternLog = errors.New("the Kafka log is not read here (no broker)")

// PatternLog reads the coordination.pattern.counted.v1 records of the
// pattern id of scope back from chronicle.patterns (the partition its key,
// events.EntityKey(scope, id), goes to; read committed) and folds them
// with CountPattern in log order, as the patterns processor applied them:
// each step with its position and the counts and confidence after it. The
// last step's counts are the pattern row's unless a record was refused
// (a global table logs a refusal instead of dead-lettering it). Records
// of another scope under the key, or that do not decode, are left out.
// The patterns projection keeps no history rows (they would change every
// replay's digest), so the log is the history. Cost: with cache nil, one
// scan of the partition from offset 0, whatever the pattern's size; with
// a cache (the projections store), the pattern's records read before are
// kept there (keylog.ScanCached, outside the digest), so a call scans
// only the records that arrived since the last one.
func PatternLog(ctx context.Context, brokers []string, cache keylog.Cache, scope, id string) ([]PatternStep, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w: the history of pattern %s is read back from %s", ErrNoPatternLog, id, events.TopicPatterns)
	}
	key := events.EntityKey(scope, id)
	topic := string(events.TopicPatterns)
	adm, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return nil, err
	}
	pl, err := keylog.Locate(ctx, adm, topic, key)
	adm.Close()
	if err != nil || pl.End == 0 {
		return nil, wrapPatterns(err)
	}
	var steps []PatternStep
	var p Pattern
	found := false
	seen := map[string]bool{}
	err = keylog.ScanCached(ctx, brokers, cache, topic, pl, key, func(rec *kgo.Record) {
		env, err := events.FromRecord(rec)
		if err != nil || env.Type != events.PatternCounted || env.EffectiveScope() != scope {
			return
		}
		var d PatternCountedData
		if env.Decode(&d) != nil || d.PatternID != id {
			return
		}
		var step PatternStep
		p, found, step = patternStep(p, found, seen, scope, &env, d)
		step.Position = projections.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}.String()
		steps = append(steps, step)
	})
	if err != nil {
		return nil, wrapPatterns(err)
	}
	return steps, nil
}

// wrapPatterns prefixes a log read's error with the package's name (nil
// stays nil).
func wrapPatterns(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("patterns: %w", err)
}

// patternStep applies record env (its data d) to pattern p (found) as the
// patterns processor does, seen holding the (scope, source, id) of the
// records applied before, and describes the step.
func patternStep(p Pattern, found bool, seen map[string]bool, scope string, env *events.Envelope, d PatternCountedData) (Pattern, bool, PatternStep) {
	step := PatternStep{EventID: env.ID, Time: env.TimeUTC(), SessionID: d.SessionID, Met: d.Met, First: d.First, WasMet: d.WasMet, Left: d.Left}
	ik := scope + "\x00" + env.Source + "\x00" + env.ID
	before := p
	switch {
	case seen[ik]:
		step.Change, step.Effect = StepDuplicate, "a second copy of an earlier record (same scope, source and id): dropped, nothing counted"
	default:
		seen[ik] = true
		next, change := CountPattern(p, found, scope, d)
		switch change {
		case PatternUnchanged:
			step.Change, step.Effect = StepUnchanged, fmt.Sprintf("session %s left a pattern that holds no session: nothing counted", d.SessionID)
		default:
			step.Change, step.Effect = change, stepEffect(before, next, d)
			p, found = next, change != PatternRemoved
			if !found {
				p = Pattern{}
			}
		}
	}
	if found {
		step.SessionCount, step.SucceededCount, step.Confidence = p.SessionCount, p.SucceededCount, p.Confidence()
	} else {
		step.Confidence = Pattern{}.Confidence()
	}
	return p, found, step
}

// stepEffect says what record d did to a pattern's counts, from before to
// after.
func stepEffect(before, after Pattern, d PatternCountedData) string {
	var what string
	switch {
	case d.Left:
		what = fmt.Sprintf("session %s left the pattern: its tool sequence changed after its completion", d.SessionID)
		if d.WasMet {
			what += ", and it had met its criteria"
		}
	case d.First && d.Met:
		what = fmt.Sprintf("session %s followed the sequence and met its criteria", d.SessionID)
	case d.First:
		what = fmt.Sprintf("session %s followed the sequence and did not meet its criteria", d.SessionID)
	case d.Met:
		what = fmt.Sprintf("session %s, counted before, meets its criteria now (a later evaluation)", d.SessionID)
	default:
		what = fmt.Sprintf("session %s, counted before, no longer meets its criteria (a later evaluation)", d.SessionID)
	}
	return fmt.Sprintf("%s: sessions %d → %d, succeeded %d → %d, confidence (succeeded + 1) / (sessions + 2) = %d/%d = %.3f",
		what, before.SessionCount, after.SessionCount, before.SucceededCount, after.SucceededCount,
		after.SucceededCount+1, after.SessionCount+2, after.Confidence())
}
