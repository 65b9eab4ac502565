package memories

import (
	"math"
	"slices"
	"time"
)

// Signal deltas (ReasoningBank design): positive / negative.
var signalDeltas = map[string][2]float64{
	"explicit_feedback": {+0.30, -0.20},
	"task_completion":   {+0.10, -0.05},
	"code_stability":    {+0.20, -0.15},
}

// Thresholds of the ReasoningBank design.
const (
	// ConsensusUsage: below this usage count a signal needs consensus.
	// The count is of the memory's usage authors (usageAuthors): its
	// usages grouped by the caller who caused them, so sessions one token
	// searched as count once.
	ConsensusUsage = 3
	// ConsensusSignals agreeing signals (same polarity) are needed…
	ConsensusSignals = 2
	// …within ConsensusWindow of the newest.
	ConsensusWindow = 7 * 24 * time.Hour
	// DecayPerMonth is lost per month of age (30-day months).
	DecayPerMonth = 0.05
	// Month is the decay month.
	Month = 30 * 24 * time.Hour
	// PruneBelow: a memory whose confidence falls below it is pruned.
	PruneBelow = 0.3
)

// Delta is the confidence change of one signal; ok is false for an
// unknown signal kind.
func Delta(signal string, positive bool) (float64, bool) {
	d, ok := signalDeltas[signal]
	if !ok {
		return 0, false
	}
	if positive {
		return d[0], true
	}
	return d[1], true
}

// Clamp bounds c to [0, 1] and rounds it to 6 decimals, so stored values
// are stable (0.7 + 0.1 is 0.8, not 0.7999999999999999).
func Clamp(c float64) float64 {
	c = math.Max(0, math.Min(1, c))
	return math.Round(c*1e6) / 1e6
}

// Decay is the confidence lost between two times: DecayPerMonth per 30-day
// month, pro rata. Nothing is lost when to is not after from.
func Decay(from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	return DecayPerMonth * float64(to.Sub(from)) / float64(Month)
}

// Pending is a stored signal that has not changed confidence yet.
type Pending struct {
	EventID  string  `json:"event_id"`
	Time     string  `json:"time"`
	Signal   string  `json:"signal"`
	Positive bool    `json:"positive"`
	Delta    float64 `json:"delta"`
	Applied  bool    `json:"applied"`
	// Source is who gave the signal (memory.feedback's source, else
	// "session:" and the event's sessionid); empty for an event that
	// names neither, which then counts as a source of its own.
	Source string `json:"source,omitempty"`
	// Repeat marks a signal consumed by consensus without a delta of its
	// own: its source had an agreeing signal that applied with it.
	Repeat bool `json:"repeat,omitempty"`
	// Comment is the feedback's comment; Position where the signal sits
	// in the log, "topic:partition:offset".
	Comment  string `json:"comment,omitempty"`
	Position string `json:"position,omitempty"`
}

// SourceKey is the identity a signal is counted by: its Source, or its
// event id when it names none (events written before sources existed,
// each of which keeps counting once, as it did).
func (p Pending) SourceKey() string {
	if p.Source != "" {
		return p.Source
	}
	return "event:" + p.EventID
}

// Consensus decides which stored signals apply when sig arrives
// (ReasoningBank design, with distinct sources — issue 11): with usage ≥
// ConsensusUsage the new signal applies, unless its source already
// applied a signal of the same polarity within ConsensusWindow of it
// (before or after: a signal may be dated earlier than one already
// applied): then it is a repeat (one vote per source and polarity per window, so one
// client cannot drive a used memory to pruning by repeating itself; a
// walkthrough pruned one with three clicks in 104 ms); below it, the not yet
// applied signals of sig's polarity within ConsensusWindow of sig, before
// or after it (sig included), apply together once they come from at least
// ConsensusSignals distinct sources (Pending.SourceKey), otherwise none.
// Either side: the log's order is not its signals' times' (a producer
// dates its event, up to 5 minutes back; two requests stamp their times
// before either is written), and a stored signal dated a moment after sig
// was not counted: two agreeing sources stayed pending, and a third then
// applied with them as if alone (a walkthrough, 2026-11-30: 3 of 30 pairs
// of concurrent feedback, and every backdated one). Of the signals of
// one source only the first applies its delta; the others are repeats,
// consumed with it without a delta. It returns the indexes into stored
// (sig must be the last element) that apply and those that are repeats.
//
// usage is the memory's usage authors before sig (usageAuthors), not its
// UsageCount: three sessions one token started and searched as are three
// usages but one author, so that token's single signal is no consensus.
//
// A signal that applies at usage ≥ ConsensusUsage takes with it the
// signals stored while usage was below (not yet applied, of its polarity,
// within ConsensusWindow of it, either side): with it they are agreeing signals of
// at least 2 distinct sources, so they apply together:
// the first of each other source applies its delta, unless that source
// already applied one of the same polarity within ConsensusWindow of it
// (one vote per source), and the rest — sig's own source's included —
// are repeats. Before, a signal stored at usage 2 whose own arrival lifted
// usage to 3 stayed unapplied for ever, and the next agreeing signal of
// another source applied alone.
//
// Below ConsensusUsage, too, a source votes once per polarity and window: a
// signal of a source that already applied one of its polarity within
// ConsensusWindow of it is a repeat at once, and counts for no consensus.
// Before, once x and y had agreed, x's second signal was stored and
// applied with the next agreeing one of any source, so x voted twice.
func Consensus(usage int, stored []Pending, at time.Time) (apply, repeats []int) {
	last := len(stored) - 1
	sig := stored[last]
	if usage >= ConsensusUsage {
		if voted(stored[:last], sig.SourceKey(), sig.Positive, at) {
			return nil, []int{last}
		}
		seen := map[string]bool{sig.SourceKey(): true}
		for i, p := range stored[:last] {
			if p.Applied || p.Positive != sig.Positive || !withinEitherSide(p.Time, at) {
				continue
			}
			pt, err := time.Parse(time.RFC3339Nano, p.Time)
			if err != nil || seen[p.SourceKey()] || voted(stored[:last], p.SourceKey(), p.Positive, pt) {
				repeats = append(repeats, i)
				continue
			}
			seen[p.SourceKey()] = true
			apply = append(apply, i)
		}
		return append(apply, last), repeats
	}
	seen := map[string]bool{}
	var voteRepeats []int // of a source that already applied its vote
	for i, p := range stored {
		if p.Applied || p.Positive != sig.Positive {
			continue
		}
		if !withinEitherSide(p.Time, at) {
			continue
		}
		pt, err := time.Parse(time.RFC3339Nano, p.Time)
		if err != nil || voted(stored, p.SourceKey(), p.Positive, pt) {
			voteRepeats = append(voteRepeats, i)
			continue
		}
		if seen[p.SourceKey()] {
			repeats = append(repeats, i)
			continue
		}
		seen[p.SourceKey()] = true
		apply = append(apply, i)
	}
	if len(apply) < ConsensusSignals {
		return nil, voteRepeats
	}
	repeats = append(repeats, voteRepeats...)
	slices.Sort(repeats)
	return apply, repeats
}

// voted reports whether source has an applied signal (not a repeat) of
// polarity positive among signals within ConsensusWindow of at, before
// or after it: its vote for that window.
func voted(signals []Pending, source string, positive bool, at time.Time) bool {
	for _, p := range signals {
		if p.Applied && !p.Repeat && p.Positive == positive && p.SourceKey() == source && withinEitherSide(p.Time, at) {
			return true
		}
	}
	return false
}

// withinEitherSide reports whether a signal at time ts lies within
// ConsensusWindow of at, before or after it: a source's vote holds for 7
// days on both sides, so a signal dated a moment before the source's last
// applied one (a producer's time) is a repeat too; and stored signals
// agree with a new one dated before them (Consensus). A window that only
// looked back let each backdated signal apply (one token pruned a memory
// three sources used with backdated negative feedback) and left agreeing
// signals dated after the new one pending.
func withinEitherSide(ts string, at time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return false
	}
	d := at.Sub(t)
	return d <= ConsensusWindow && d >= -ConsensusWindow
}
