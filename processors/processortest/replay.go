package processortest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
)

// ReplayDigest applies the tester's whole log (every record Records
// holds: the events written, the derived events and the dead letters) to
// the tester's processors in a fresh store kept in memory, as a replay
// rebuilds a directory (projections.Store.Rebuilding: nothing relayed
// again), and returns that store's digest. Each topic partition is
// applied in polls of pollLen records through processors.ApplyPoll (0 or
// less: the whole partition in one poll), one topic after another in
// events.AllTopics order (others after, by name).
//
// A processor that keeps the rules of processors.Processor (Apply a
// function of the projection and the event alone: no wall clock, no state
// outside the Tx, rows per record key or one total order) gives Store's
// digest whatever pollLen is: the live engine batches as polls come, a
// replay as the log lies. CheckReplay compares them.
func (t *Tester) ReplayDigest(pollLen int) (projections.Digest, error) {
	store, err := projections.Open("store", projections.Options{FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		return projections.Digest{}, err
	}
	defer store.Close()
	store.Rebuilding()
	for _, topic := range t.topics() {
		parts := t.log[topic]
		for _, rs := range parts {
			for at := 0; at < len(rs); {
				end := len(rs)
				if pollLen > 0 {
					end = min(at+pollLen, len(rs))
				}
				if _, err := processors.ApplyPoll(store, t.procs, t.partitionsOf(topic), rs[at:end]); err != nil {
					return projections.Digest{}, fmt.Errorf("processortest: replay of %s: %w", topic, err)
				}
				at = end
			}
		}
	}
	return store.Digest()
}

// topics is the topics of the log in events.AllTopics order, then the
// others by name.
func (t *Tester) topics() []string {
	var out, other []string
	for _, topic := range events.AllTopics {
		if _, ok := t.log[string(topic)]; ok {
			out = append(out, string(topic))
		}
	}
	for topic := range t.log {
		if !slices.Contains(out, topic) {
			other = append(other, topic)
		}
	}
	sort.Strings(other)
	return append(out, other...)
}

// CheckReplay fails tb (Errorf, naming each projection that differs)
// unless a replay of tt's log gives tt.Store's digest, both with the
// whole of each partition in one poll and with one record a poll
// (ReplayDigest): the check that a processor of one's own rebuilds bit
// for bit from the log, as `chronicle audit` checks a live directory, and
// that its result does not depend on how records are cut into batches.
// It also runs CheckStatePerKey: a replay with one partition cannot show a
// wrong processors.KeyedState claim, which changes results only when
// partitions are applied concurrently. Call it after the test's Publish
// calls.
func CheckReplay(tb testing.TB, tt *Tester) {
	tb.Helper()
	CheckStatePerKey(tb, tt)
	want, err := tt.Store.Digest()
	if err != nil {
		tb.Errorf("processortest: CheckReplay: the tester's digest: %v", err)
		return
	}
	for _, c := range []struct {
		name    string
		pollLen int
	}{{"one poll per partition", 0}, {"one record a poll", 1}} {
		got, err := tt.ReplayDigest(c.pollLen)
		if err != nil {
			tb.Errorf("processortest: CheckReplay, %s: %v", c.name, err)
			return
		}
		if got.All == want.All {
			continue
		}
		names := map[string]bool{}
		for n := range want.Projections {
			names[n] = true
		}
		for n := range got.Projections {
			names[n] = true
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			if got.Projections[n] != want.Projections[n] {
				tb.Errorf("processortest: CheckReplay, %s: projection %q: replay %s (%d rows), tester %s (%d rows)", c.name, n, short(got.Projections[n]), got.Rows[n], short(want.Projections[n]), want.Rows[n])
			}
		}
	}
}

// short is a digest's first 12 hex digits, "none" for an absent one.
func short(h string) string {
	if h == "" {
		return "none"
	}
	return h[:min(12, len(h))]
}
