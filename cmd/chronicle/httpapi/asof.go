package httpapi

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/projections"
)

// AsOfPosition is where a store's projections stand on one partition of
// the log: they hold its records up to and including Last (Position,
// "topic:partition:offset", the form replay --until and the memory
// history's positions take) and none after it, unless AheadTo says that
// some processor of the partition read further (a stopped service whose
// processors had not all reached the same record; a replay's never
// differ).
type AsOfPosition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Last is the offset of the last record every processor reading the
	// partition has read (applied, dropped as a duplicate, dead-lettered
	// or passed over).
	Last     int64  `json:"last"`
	Position string `json:"position"`
	// AheadTo is the last offset the furthest processor read, when it is
	// past Last; 0 otherwise.
	AheadTo int64 `json:"ahead_to,omitempty"`
}

// AsOf lists, in topic and partition order, where store's projections
// stand in the log (AsOfPosition), from the processors' stored offsets.
// A partition no processor read a record of is not listed. An analyst
// reading an as-of directory (chronicle inspect over a replay --until)
// could not tell which records its answers were built from: neither
// replay nor inspect named them (an analyst walkthrough, 2026-12-07).
func AsOf(store *projections.Store) []AsOfPosition {
	type bounds struct{ lo, hi int64 }
	parts := map[string]bounds{}           // topic/partition → next offsets, lowest and highest
	for k, next := range store.Offsets() { // processor/topic/partition
		i := strings.LastIndexByte(k, '/')
		j := strings.LastIndexByte(k[:max(i, 0)], '/')
		if i < 0 || j < 0 {
			continue
		}
		tp := k[j+1:]
		b, ok := parts[tp]
		if !ok {
			b = bounds{next, next}
		}
		parts[tp] = bounds{min(b.lo, next), max(b.hi, next)}
	}
	var out []AsOfPosition
	for tp, b := range parts {
		if b.hi <= 0 {
			continue
		}
		i := strings.LastIndexByte(tp, '/')
		p, err := strconv.ParseInt(tp[i+1:], 10, 32)
		if err != nil {
			continue
		}
		ap := AsOfPosition{Topic: tp[:i], Partition: int32(p), Last: b.lo - 1}
		ap.Position = fmt.Sprintf("%s:%d:%d", ap.Topic, ap.Partition, ap.Last)
		if b.hi > b.lo {
			ap.AheadTo = b.hi - 1
		}
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b AsOfPosition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// AsOfLine is AsOf as one line for a terminal: "as of the log up to
// chronicle.memories:0:72, chronicle.sessions:0:2456 (each partition's
// last record read, itself included; a partition not named had none)",
// a position some processor read past followed by "(some processors to
// N)"; "as of no record of the log (none was read)" when nothing was read.
func AsOfLine(store *projections.Store) string {
	ps := AsOf(store)
	if len(ps) == 0 {
		return "as of no record of the log (none was read)"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Position
		if p.AheadTo > 0 {
			s[i] += fmt.Sprintf(" (some processors to %d)", p.AheadTo)
		}
	}
	return "as of the log up to " + strings.Join(s, ", ") + " (each partition's last record read, itself included; a partition not named had none)"
}
