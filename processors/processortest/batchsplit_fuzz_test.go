package processortest_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/processortest"
	"github.com/chronicle-dev/chronicle/projections"
)

// FuzzBatchSplitsAgree checks what the engine relies on when it batches:
// the processors' projections and dead-letter decisions do not depend on
// how a partition's records are cut into polls. The live engine batches
// by poll, a replay batches otherwise, and a poison event inside a batch
// is re-applied one by one (projections.Store.ApplyBatch).
//
// The input picks tau-bench sessions of the bundled sample, interleaves
// them or not, and mixes in poison records (a truncated record, a reused
// id with other content, an exact copy, an event moved before its
// session's start, a copy under a new id — a second start or completion —
// and an event of a session never started). The live run is the tester's
// (pipeline.DefaultProcessors, one record a poll, derived events and dead
// letters relayed into the log as they come). Its log, every topic, is
// then replayed into fresh stores (projections.Store.Rebuilding, as
// processors.Replay) through processors.ApplyPoll cut three ways: each
// partition in one poll, one record a poll, and polls of the lengths the
// input gives. Every replay must have the live store's digest, projection
// by projection, and the replays the same outcome (result, quiet, reason)
// for every record and processor; the input records' outcomes must be
// the live run's too. The input is also run live a second time in those
// polls (checkLiveInPolls), derived events and letters relayed after it.
func FuzzBatchSplitsAgree(f *testing.F) {
	// layout: n-1 (n = 1 + b%3 sessions), n session indexes (b%200),
	// interleaved (b%2), m (b%8 mutations), m times op (b%6), record and
	// place, then the poll lengths of the third cut (1 + b%16)
	//
	// one session as recorded, polls of 3
	f.Add([]byte{0, 0, 0, 0})
	// its completion first, a second start
	f.Add([]byte{0, 0, 0, 2, 3, 41, 0, 4, 0, 20})
	// two interleaved, a truncated record, one moved first
	f.Add([]byte{1, 3, 77, 1, 2, 0, 5, 30, 3, 40, 0, 2, 1, 4})
	// a conflicting duplicate, a copy, a second start
	f.Add([]byte{2, 10, 11, 12, 0, 3, 1, 9, 40, 2, 30, 3, 4, 0, 50, 1, 2, 3, 5, 8})
	// an orphan, a copy, a move, a truncation, a conflict
	f.Add([]byte{0, 150, 1, 5, 5, 20, 10, 4, 60, 61, 3, 60, 1, 0, 0, 0, 1, 3, 4, 16, 1})
	// seven mutations
	f.Add([]byte{1, 42, 43, 0, 7, 3, 255, 0, 4, 254, 255, 0, 100, 96, 5, 7, 7, 2, 8, 9, 1, 11, 12, 3, 1, 200, 255, 0, 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := splitInput(in).records()
		if err != nil {
			t.Fatal(err)
		}
		checkBatchSplitsAgree(t, recs, splitInput(in).lengths())
	})
}

// splitInput reads a fuzz input; past its end every byte reads as 0.
type splitInput []byte

func (s splitInput) at(i int) int {
	if i < len(s) {
		return int(s[i])
	}
	return 0
}

// header is the byte count before the poll lengths.
func (s splitInput) header() int {
	n := 1 + s.at(0)%3
	m := s.at(n+2) % 8
	return n + 3 + 3*m
}

// lengths are the poll lengths of the third cut (1 to 16 records), the
// bytes after the mutations; none: polls of 3.
func (s splitInput) lengths() []int {
	var out []int
	for i := s.header(); i < len(s); i++ {
		out = append(out, 1+int(s[i])%16)
	}
	if len(out) == 0 {
		out = []int{3}
	}
	return out
}

var (
	sampleOnce sync.Once
	sampleEnvs [][]events.Envelope // by session of the bundled sample
	sampleErr  error
)

func sampleSessions() ([][]events.Envelope, error) {
	sampleOnce.Do(func() {
		recs, err := taubench.SampleRecords()
		if err != nil {
			sampleErr = err
			return
		}
		for _, r := range recs {
			envs, err := taubench.Events(r)
			if err != nil {
				sampleErr = err
				return
			}
			sampleEnvs = append(sampleEnvs, envs)
		}
	})
	return sampleEnvs, sampleErr
}

// records are the input's records on chronicle.sessions, poison mixed in.
func (s splitInput) records() ([]*kgo.Record, error) {
	all, err := sampleSessions()
	if err != nil {
		return nil, err
	}
	n := 1 + s.at(0)%3
	var picked [][]events.Envelope
	for i := 1; i <= n; i++ {
		picked = append(picked, all[s.at(i)%len(all)])
	}
	var envs []events.Envelope
	if s.at(n+1)%2 == 0 {
		for _, p := range picked {
			envs = append(envs, p...)
		}
	} else { // round robin
		for k := 0; ; k++ {
			added := false
			for _, p := range picked {
				if k < len(p) {
					envs = append(envs, p[k])
					added = true
				}
			}
			if !added {
				break
			}
		}
	}
	recs := make([]*kgo.Record, len(envs))
	for i := range envs {
		r, err := events.Record(&envs[i])
		if err != nil {
			return nil, err
		}
		recs[i] = r
	}
	m := s.at(n+2) % 8
	for k := 0; k < m; k++ {
		op, i, p := s.at(n+3+3*k), s.at(n+4+3*k)%len(recs), s.at(n+5+3*k)%(len(recs)+1)
		recs, err = mutate(recs, envs, op, i, p, k)
		if err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// mutate applies mutation op to recs (envs: the picked sessions' events,
// unmutated; i a record of recs, p a place in it; k numbers the mutation
// for the ids it makes up).
func mutate(recs []*kgo.Record, envs []events.Envelope, op, i, p, k int) ([]*kgo.Record, error) {
	insert := func(r *kgo.Record) []*kgo.Record {
		p := min(p, len(recs))
		return append(recs[:p:p], append([]*kgo.Record{r}, recs[p:]...)...)
	}
	parsed := func(r *kgo.Record) (events.Envelope, bool) {
		env, err := events.FromRecord(r)
		return env, err == nil
	}
	encode := func(env events.Envelope) (*kgo.Record, error) { return events.Record(&env) }
	switch op % 6 {
	case 0: // truncated: the record ends inside its data
		c := *recs[i]
		c.Value = c.Value[:len(c.Value)*(p%97+1)/100]
		recs[i] = &c
	case 1: // another event under this one's id: a conflicting duplicate
		env, ok := parsed(recs[i])
		if !ok {
			return recs, nil
		}
		other := envs[(i+p+1)%len(envs)]
		other.ID, other.Source = env.ID, env.Source
		r, err := encode(other)
		if err != nil {
			return nil, err
		}
		return insert(r), nil
	case 2: // an exact copy
		c := *recs[i]
		return insert(&c), nil
	case 3: // moved: a completion or a tool call before its session's start
		r := recs[i]
		rest := append(recs[:i:i], recs[i+1:]...)
		p := min(p, len(rest))
		return append(rest[:p:p], append([]*kgo.Record{r}, rest[p:]...)...), nil
	case 4: // a copy under a new id: a second start, a second completion
		env, ok := parsed(recs[i])
		if !ok {
			return recs, nil
		}
		env.ID = fmt.Sprintf("%s~%d", env.ID, k)
		r, err := encode(env)
		if err != nil {
			return nil, err
		}
		return insert(r), nil
	case 5: // an event of a session never started
		env, ok := parsed(recs[i])
		if !ok {
			return recs, nil
		}
		env.ID = fmt.Sprintf("%s~orphan%d", env.ID, k)
		env.SessionID = fmt.Sprintf("orphan-%d", k)
		env.CorrelationID = env.SessionID
		r, err := encode(env)
		if err != nil {
			return nil, err
		}
		return insert(r), nil
	}
	return recs, nil
}

// checkBatchSplitsAgree runs recs live through the tester, then replays
// its log cut three ways (the third in polls of lengths, cycled) and
// compares digests and outcomes.
func checkBatchSplitsAgree(t *testing.T, recs []*kgo.Record, lengths []int) {
	procs := pipeline.DefaultProcessors()
	tt := processortest.New(t, procs, processortest.InMemory())
	live := map[string]string{}
	for _, r := range recs {
		at := &kgo.Record{Topic: r.Topic, Offset: int64(len(tt.Records(events.Topic(r.Topic))))} // one partition
		outs, err := tt.PublishRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		for name, o := range outs {
			live[outcomeKey(at, name)] = outcomeString(o)
		}
	}
	want, err := tt.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	checkLiveInPolls(t, procs, recs, lengths, tt, want, live)
	var log [][]*kgo.Record // each topic's records (one partition), in offset order
	for _, topic := range events.AllTopics {
		if rs := tt.Records(topic); len(rs) > 0 {
			log = append(log, rs)
		}
	}

	cuts := []struct {
		name string
		next func(k, left int) int // the length of poll k, left records left
	}{
		{"one poll", func(_, left int) int { return left }},
		{"one record a poll", func(int, int) int { return 1 }},
		{fmt.Sprintf("polls of %v", lengths), func(k, _ int) int { return lengths[k%len(lengths)] }},
	}
	var first map[string]string
	for c, cut := range cuts {
		store, err := projections.Open("store", projections.Options{FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		store.Rebuilding()
		got := map[string]string{}
		for _, rs := range log {
			for k, at := 0, 0; at < len(rs); k++ {
				end := min(at+max(cut.next(k, len(rs)-at), 1), len(rs))
				byName, err := processors.ApplyPoll(store, procs, 1, rs[at:end])
				if err != nil {
					t.Fatalf("%s: %v", cut.name, err)
				}
				for name, outs := range byName {
					for j, o := range outs {
						got[outcomeKey(rs[at+j], name)] = outcomeString(o)
					}
				}
				at = end
			}
		}
		d, err := store.Digest()
		_ = store.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d.All != want.All {
			for _, name := range union(d.Projections, want.Projections) {
				if d.Projections[name] != want.Projections[name] {
					t.Errorf("%s: projection %s: replay %s (%d rows), live %s (%d rows)", cut.name, name, d.Projections[name], d.Rows[name], want.Projections[name], want.Rows[name])
				}
			}
			t.Fatalf("%s: the replay's digest differs from the live store's (%d records in, %d in the log)", cut.name, len(recs), logLen(log))
		}
		for k, v := range live {
			if got[k] != v {
				t.Errorf("%s: %s: replay %q, live %q", cut.name, k, got[k], v)
			}
		}
		if c == 0 {
			first = got
			results := map[string]int{}
			for _, v := range got {
				results[strings.SplitN(v, ":", 2)[0]]++
			}
			t.Logf("%d records in, %d in the log; outcomes %v", len(recs), logLen(log), results)
			continue
		}
		for _, k := range union(first, got) {
			if first[k] != got[k] {
				t.Errorf("%s: %s: %q, in %s %q", cut.name, k, got[k], cuts[0].name, first[k])
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// checkLiveInPolls runs recs live once more, in polls of lengths (cycled)
// instead of one record a poll, the derived events and dead letters
// relayed once the input is applied (round by round until none is left,
// each topic's in polls of lengths too), and compares it with the
// tester's run: every projection's digest but the dead letters' (their
// rows are named by the letter's own offset, and letters of one poll
// arrive processor by processor, in another order than one record a poll
// gives), the input records' outcomes, and the letters of input records,
// as a set.
func checkLiveInPolls(t *testing.T, procs []processors.Processor, recs []*kgo.Record, lengths []int, tt *processortest.Tester, want projections.Digest, live map[string]string) {
	store, err := projections.Open("store", projections.Options{FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := map[string][]*kgo.Record{}
	applied := map[string]int{}
	clock := processortest.Epoch
	add := func(r *kgo.Record) {
		c := *r
		c.Partition, c.Offset = 0, int64(len(logs[c.Topic]))
		if c.Timestamp.IsZero() {
			c.Timestamp = clock
		}
		clock = clock.Add(time.Millisecond)
		logs[c.Topic] = append(logs[c.Topic], &c)
	}
	for _, r := range recs {
		add(r)
	}
	got := map[string]string{}
	for round := 0; ; round++ {
		if round == processortest.MaxRelayRounds {
			t.Fatalf("live in polls: still relaying after %d rounds", round)
		}
		for _, topic := range events.AllTopics {
			rs := logs[string(topic)]
			for k := 0; applied[string(topic)] < len(rs); k++ {
				at := applied[string(topic)]
				end := min(at+lengths[k%len(lengths)], len(rs))
				byName, err := processors.ApplyPoll(store, procs, 1, rs[at:end])
				if err != nil {
					t.Fatalf("live in polls: %v", err)
				}
				for name, outs := range byName {
					for j, o := range outs {
						got[outcomeKey(rs[at+j], name)] = outcomeString(o)
					}
				}
				applied[string(topic)] = end
			}
		}
		pending, err := store.PendingOutbox(1 << 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			break
		}
		if err := store.AckOutbox(pending); err != nil {
			t.Fatal(err)
		}
		for _, r := range processors.OutboxRecords(pending) {
			add(r)
		}
	}
	d, err := store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range union(d.Projections, want.Projections) {
		if d.Projections[name] != want.Projections[name] && (name != "deadletters" || d.Rows[name] != want.Rows[name]) {
			t.Errorf("live in polls of %v: projection %s: %s (%d rows), one record a poll %s (%d rows)", lengths, name, d.Projections[name], d.Rows[name], want.Projections[name], want.Rows[name])
		}
	}
	for k, v := range live {
		if got[k] != v {
			t.Errorf("live in polls of %v: %s: %q, one record a poll %q", lengths, k, got[k], v)
		}
	}
	gotLetters, wantLetters := inputLetters(logs[string(events.TopicDeadLetter)]), inputLetters(tt.Records(events.TopicDeadLetter))
	if strings.Join(gotLetters, "\n") != strings.Join(wantLetters, "\n") {
		t.Errorf("live in polls of %v: the input's letters\n%s\none record a poll\n%s", lengths, strings.Join(gotLetters, "\n"), strings.Join(wantLetters, "\n"))
	}
}

// inputLetters describes the letters of records on chronicle.sessions
// (the input's; a derived record's offset depends on the relay's order),
// sorted: original offset, handler, reason.
func inputLetters(letters []*kgo.Record) []string {
	var out []string
	for _, l := range letters {
		h := map[string]string{}
		for _, kv := range l.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if h[processors.HeaderOriginalTopic] != string(events.TopicSessions) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: %s", h[processors.HeaderOriginalOffset], h[processors.HeaderHandler], h[processors.HeaderError]))
	}
	sort.Strings(out)
	return out
}

func outcomeKey(r *kgo.Record, processor string) string {
	return fmt.Sprintf("%s/%d/%d %s", r.Topic, r.Partition, r.Offset, processor)
}

func outcomeString(o projections.Outcome) string {
	var b strings.Builder
	b.WriteString(o.Result.String())
	if o.Quiet {
		b.WriteString(" quiet")
	}
	if o.Err != nil {
		b.WriteString(": " + o.Err.Error())
	}
	return b.String()
}

func union[V any](a, b map[string]V) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func logLen(log [][]*kgo.Record) int {
	n := 0
	for _, rs := range log {
		n += len(rs)
	}
	return n
}
