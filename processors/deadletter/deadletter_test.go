package deadletter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sampleSession is the first bundled tau-bench session's events.
// sampleRecords is the embedded tau-bench sample, decoded once for the
// package's tests (taubench.SampleRecords decodes it anew, about 1.3 s
// under -race, and helpers here ran it per test). Shared: read the
// records, never change them (a copy of a Record is safe to change, its
// slices are not).
var sampleRecords = sync.OnceValues(taubench.SampleRecords)

func sampleSession(t *testing.T) []events.Envelope {
	t.Helper()
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	return envs
}

// waitLetters polls the dead-letter topic until it holds at least n
// letters (the outbox relay produces them after the batch commits).
func waitLetters(ctx context.Context, t *testing.T, brokers []string, n int) []deadletter.Letter {
	t.Helper()
	for {
		ls, err := deadletter.List(ctx, brokers)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) >= n {
			return ls
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d letters, want %d", len(ls), n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// A completion for a session that never started is dead-lettered and
// listed with its position, handler, reason, key and event id; once the
// session has started, redriving it makes the sessions processor apply it.
func TestListAndRedrive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var reported atomic.Int64 // letters the engine reported (serve logs each)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2,
		OnDeadLetter: func(processors.LetterData) { reported.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	envs := sampleSession(t)
	done := envs[len(envs)-1]
	if done.Type != events.SessionCompleted {
		t.Fatalf("last event is %s", done.Type)
	}
	done.Time = "" // the record's timestamp stands in, and a redrive must keep it
	if err := p.Producer.Publish(ctx, done); err != nil {
		t.Fatal(err)
	}
	brokers := p.Broker.Addrs()
	ls := waitLetters(ctx, t, brokers, 1)
	var l deadletter.Letter
	for _, x := range ls {
		if strings.HasPrefix(x.Handler, sessions.Name+"@") {
			l = x
		}
	}
	key := events.EntityKey(done.EffectiveScope(), done.SessionID)
	if l.Topic != string(events.TopicSessions) || l.EventID != done.ID || l.Key != key || !strings.Contains(l.Reason, sessions.ErrNotStarted.Error()) ||
		l.ID != fmt.Sprintf("%s:%d:%d", l.Topic, l.Partition, l.Offset) {
		t.Fatalf("letters %+v (want the sessions processor's, key %q)", ls, key)
	}
	orig := l.Original()
	for _, h := range orig.Headers {
		if h.Key != "content-type" {
			t.Fatalf("restored record keeps header %s", h.Key)
		}
	}

	if err := p.Producer.Publish(ctx, envs[:len(envs)-1]...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := sessions.Get(p.Store, key); err != nil || !ok || v.Status != sessions.StatusRunning {
		t.Fatalf("before the redrive: %+v %v %v", v, ok, err)
	}
	time.Sleep(20 * time.Millisecond) // record timestamps are in milliseconds
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	out, err := deadletter.Redrive(ctx, brokers, ls)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].ID != l.ID || out[0].Topic != l.Topic || out[0].Partition != l.Partition || out[0].Offset <= l.Offset {
		t.Fatalf("redriven %+v (letter %+v)", out, l)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v, ok, err := sessions.Get(p.Store, key)
	if err != nil || !ok || v.Status != sessions.StatusCompleted {
		t.Fatalf("after the redrive: %+v %v %v", v, ok, err)
	}
	// the time-less completion keeps the time it had (its original
	// record's), while the redriven record is stamped when the log got it
	if at, err := time.Parse(time.RFC3339Nano, v.CompletedAt); err != nil || !at.Before(mid) {
		t.Fatalf("completed_at %q (%v): want the original record's time, before the redrive at %v", v.CompletedAt, err, mid)
	}
	// so the state as of a moment before the redrive is what the live
	// service said then: running (with the original timestamp on the
	// redriven record, replay --until mid showed it completed)
	asOf, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer asOf.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: brokers, Store: asOf, Processors: pipeline.DefaultProcessors(),
		Until: processors.Until{Time: mid}}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := sessions.Get(asOf, key); err != nil || !ok || v.Status != sessions.StatusRunning {
		t.Fatalf("replay --until %v (before the redrive): %+v %v %v; want running", mid, v, ok, err)
	}
	// the processors that had applied it see an exact duplicate (same
	// record time), not a conflicting one
	var conflicts float64
	for _, name := range []string{sessions.Name, "toolgraph.transitions"} {
		conflicts += testutil.ToFloat64(p.Metrics.ConflictingDuplicates.WithLabelValues(name))
	}
	if conflicts != 0 {
		t.Fatalf("%v conflicting duplicates after the redrive", conflicts)
	}
	// every letter of the id is marked redriven, where to and when, in
	// `deadletter list` and in the tenant's GET /v1/deadletters rows, by
	// the redrive notes; the notes are no letters (the engine reports the
	// letters only)
	to := fmt.Sprintf("%s:%d:%d", out[0].Topic, out[0].Partition, out[0].Offset)
	after, err := deadletter.List(ctx, brokers)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(ls) {
		t.Fatalf("%d letters after the redrive, %d before: the notes are listed as letters", len(after), len(ls))
	}
	for _, x := range after {
		if x.ID == l.ID && (x.RedrivenTo != to || x.RedrivenAt == "" || x.Pending()) {
			t.Fatalf("letter %+v after its redrive to %s", x, to)
		}
	}
	rows, _, err := deadletter.ListScoped(p.Store, nil, nil, 50, "", "")
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, e := range rows {
		if e.ID == l.ID {
			if e.RedrivenTo != to || e.RedrivenAt == "" {
				t.Fatalf("row %+v after the redrive to %s", e, to)
			}
			marked++
		}
	}
	if marked == 0 || marked != len(rows) {
		t.Fatalf("rows %+v: %d of them marked redriven to %s", rows, marked, to)
	}
	if n := reported.Load(); n != int64(len(ls)) {
		t.Fatalf("the engine reported %d letters, the topic holds %d (and their notes)", n, len(ls))
	}
	// the time-less events' times come from the log: a replay rebuilds
	// the same projections, the marks included
	replayEqualsLive(ctx, t, p)
}

// replayEqualsLive replays p's log into a new store and fails t unless its
// digest is the live store's.
func replayEqualsLive(ctx context.Context, t *testing.T, p *pipeline.Pipeline) {
	t.Helper()
	rs, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: rs, Processors: pipeline.DefaultProcessors()}); err != nil {
		t.Fatal(err)
	}
	live, err := p.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := rs.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if live.All != replayed.All {
		t.Fatalf("replay digest differs from live:\n%v\n%v", replayed, live)
	}
}

// A worker's letter holds the event converted to structured mode next to
// the original ce_ headers: the restored record drops them (it would
// otherwise parse as binary mode with the envelope as data) and parses as
// the original event. An engine letter of a binary-mode record keeps them.
func TestRestoreContentMode(t *testing.T) {
	data := `{"memory_id":"m1","signal":"task_completion","positive":false}`
	ce := []kgo.RecordHeader{
		{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte("b1")},
		{Key: "ce_source", Value: []byte("kcat")}, {Key: "ce_type", Value: []byte("memory.feedback.v1")},
		{Key: "content-type", Value: []byte("application/json")},
	}
	pos := []kgo.RecordHeader{
		{Key: processors.HeaderOriginalTopic, Value: []byte(events.TopicMemories)}, {Key: processors.HeaderOriginalPartition, Value: []byte("0")},
		{Key: processors.HeaderOriginalOffset, Value: []byte("7")}, {Key: processors.HeaderHandler, Value: []byte("w@chronicle.memories")},
		{Key: processors.HeaderError, Value: []byte("boom")},
	}
	structured := `{"data":{"memory_id":"m1","positive":false,"signal":"task_completion"},"datacontenttype":"application/json","id":"b1","source":"kcat","specversion":"1.0","time":"2026-11-21T10:00:00Z","type":"memory.feedback.v1"}`
	worker := &kgo.Record{Topic: string(events.TopicDeadLetter), Key: []byte("org:default/m1"), Value: []byte(structured),
		Headers: append(append(append([]kgo.RecordHeader{}, ce...), pos...), kgo.RecordHeader{Key: "_watermill_message_uuid", Value: []byte("u")}, kgo.RecordHeader{Key: "kafka_key", Value: []byte("org:default/m1")})}
	engine := &kgo.Record{Topic: string(events.TopicDeadLetter), Key: []byte("org:default/m1"), Value: []byte(data), Headers: append(append([]kgo.RecordHeader{}, ce...), pos...)}
	for name, rec := range map[string]*kgo.Record{"worker": worker, "engine": engine} {
		l, err := deadletter.Parse(rec)
		if err != nil {
			t.Fatal(err)
		}
		o := l.Original()
		if o.Topic != string(events.TopicMemories) || string(o.Key) != "org:default/m1" || l.ID != "chronicle.memories:0:7" || l.EventID != "b1" || l.Handler != "w@chronicle.memories" || l.Reason != "boom" {
			t.Fatalf("%s: %+v", name, l)
		}
		for _, h := range o.Headers {
			if h.Key == processors.HeaderError || strings.HasPrefix(h.Key, "kafka_") || strings.HasPrefix(h.Key, "_watermill") {
				t.Fatalf("%s: kept %s", name, h.Key)
			}
		}
		env, err := events.FromRecord(o)
		if err != nil {
			t.Fatalf("%s: restored record does not parse: %v", name, err)
		}
		var d events.MemoryFeedbackData
		if err := env.Decode(&d); err != nil || env.ID != "b1" || d.Signal != "task_completion" {
			t.Fatalf("%s: %+v %v", name, env, err)
		}
	}
	if _, err := deadletter.Parse(&kgo.Record{Headers: pos[1:]}); err == nil || !strings.Contains(err.Error(), processors.HeaderOriginalTopic) {
		t.Fatalf("letter without its topic: %v", err)
	}
}

// A conflicting duplicate (a used id with other content) is dead-lettered
// once, though every processor that had applied the first event refuses
// it. Before, a task completion sent again with other content was
// dead-lettered by sessionlog, sessions and toolgraph.transitions: three
// letters for one record.
func TestConflictingDuplicateIsDeadLetteredOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	envs := sampleSession(t)
	if err := p.Producer.Publish(ctx, envs...); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(envs, func(e events.Envelope) bool { return e.Type == events.WorkflowTaskCompleted })
	if i < 0 {
		t.Fatal("no task completion in the session")
	}
	other := envs[i]
	var data map[string]any
	if err := json.Unmarshal(other.Data, &data); err != nil {
		t.Fatal(err)
	}
	data["duration_ms"] = 987654.5 // other content under the same id
	if other.Data, err = json.Marshal(data); err != nil {
		t.Fatal(err)
	}
	if err := p.Producer.Publish(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var conflicts float64
	for _, name := range []string{"sessionlog", sessions.Name, "toolgraph.transitions"} {
		conflicts += testutil.ToFloat64(p.Metrics.ConflictingDuplicates.WithLabelValues(name))
	}
	if conflicts != 3 {
		t.Fatalf("%v conflicting duplicates counted, want 3 (each processor of the topic refused it)", conflicts)
	}
	waitLetters(ctx, t, p.Broker.Addrs(), 1) // waits for them (or fails)
	time.Sleep(500 * time.Millisecond)       // a second letter would be relayed by now
	ls, err := deadletter.List(ctx, p.Broker.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	var mine []deadletter.Letter
	for _, l := range ls {
		if l.EventID == other.ID {
			mine = append(mine, l)
		}
	}
	if len(mine) != 1 || !strings.Contains(mine[0].Reason, projections.ErrConflictingDuplicate.Error()) {
		t.Fatalf("letters of the conflicting duplicate: %+v, want one", mine)
	}
	var lettered float64
	for _, name := range []string{"sessionlog", sessions.Name, "toolgraph.transitions"} {
		lettered += testutil.ToFloat64(p.Metrics.DeadLettered.WithLabelValues(name))
	}
	if lettered != 1 {
		t.Fatalf("chronicle_dead_letter_events_total %v, want 1", lettered)
	}
	// chronicle_processor_events_total: dead_lettered once (the letterer),
	// rejected by the other two. Before, all three counted dead_lettered
	// (a subscriber walkthrough summed 2 for one letter).
	var dead, rejected float64
	for _, name := range []string{"sessionlog", sessions.Name, "toolgraph.transitions"} {
		dead += testutil.ToFloat64(p.Metrics.Events.WithLabelValues(name, "dead_lettered"))
		rejected += testutil.ToFloat64(p.Metrics.Events.WithLabelValues(name, "rejected"))
	}
	if dead != 1 || rejected != 2 {
		t.Fatalf("processor_events_total: dead_lettered %v, rejected %v; want 1 and 2", dead, rejected)
	}
	// a replay counts the record once too (it counted each processor's
	// refusal: 12 for 6 letters in a re-test)
	store, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: p.Broker.Addrs(), Store: store, Processors: pipeline.DefaultProcessors()})
	if err != nil || st.DeadLettered != 1 {
		t.Fatalf("replay: %+v %v, want dead_lettered 1", st, err)
	}
}

// Every processor's and worker's counters exist at 0 before their first
// event, so increase() sees the first one (they appeared only at it: a
// subscriber walkthrough's first dead letter did not show in increase()).
func TestMetricsExistBeforeTheFirstEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := map[string]bool{
		`chronicle_processor_events_total{processor="` + sessions.Name + `",result="rejected"}`:        true,
		`chronicle_processor_events_total{processor="` + sessions.Name + `",result="already_applied"}`: true,
	}
	// every processor, the global tables (outcomes, patterns,
	// sessionlog.memories, toolgraph) included: they had no series until
	// their first event, and never a dead_lettered one (a walkthrough)
	for _, proc := range pipeline.DefaultProcessors() {
		n := proc.Name()
		want[`chronicle_dead_letter_events_total{processor="`+n+`"}`] = true
		want[`chronicle_conflicting_duplicates_total{processor="`+n+`"}`] = true
		want[`chronicle_processor_events_total{processor="`+n+`",result="dead_lettered"}`] = true
	}
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					name += ","
				}
				name += l.GetName() + `="` + l.GetValue() + `"`
			}
			delete(want, name+"}")
		}
	}
	if len(want) > 0 {
		t.Fatalf("series missing before any event: %v", want)
	}
}

// A letter keeps the pointer its rejection named (HeaderPointer), as GET
// /v1/deadletters answers it; `deadletter list` showed none (a re-test).
func TestLetterKeepsItsPointer(t *testing.T) {
	rec := &kgo.Record{Topic: string(events.TopicDeadLetter), Key: []byte("org:default/m1"), Value: []byte(`{}`), Headers: []kgo.RecordHeader{
		{Key: processors.HeaderOriginalTopic, Value: []byte(events.TopicMemories)}, {Key: processors.HeaderOriginalPartition, Value: []byte("0")},
		{Key: processors.HeaderOriginalOffset, Value: []byte("3")}, {Key: processors.HeaderHandler, Value: []byte("memories@chronicle.memories")},
		{Key: processors.HeaderError, Value: []byte("memory org:default/m1: unknown memory")}, {Key: processors.HeaderPointer, Value: []byte("/data/memory_id")},
	}}
	l, err := deadletter.Parse(rec)
	if err != nil || l.Pointer != "/data/memory_id" {
		t.Fatalf("%+v %v, want pointer /data/memory_id", l, err)
	}
}

// A completion the sessions processor refused (its session had not
// started) takes its id for sessions as for sessionlog, which applied it:
// the same id with another output, sent once the session has started, is
// one conflicting duplicate for both, and the session stays running.
// Before, sessions applied the second output while sessionlog
// dead-lettered it, so the letter named a record the sessions projection
// held (a cluster walkthrough, 2026-12-03). Replay agrees with live.
func TestRefusedCompletionTakesItsID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	envs := sampleSession(t)
	done := envs[len(envs)-1]
	if err := p.Producer.Publish(ctx, done); err != nil {
		t.Fatal(err)
	}
	brokers := p.Broker.Addrs()
	waitLetters(ctx, t, brokers, 1)
	if err := p.Producer.Publish(ctx, envs[:len(envs)-1]...); err != nil {
		t.Fatal(err)
	}
	other := done
	var d events.SessionCompletedData
	if err := json.Unmarshal(done.Data, &d); err != nil {
		t.Fatal(err)
	}
	d.Output += " (another output under the same id)"
	if other.Data, err = json.Marshal(d); err != nil {
		t.Fatal(err)
	}
	if err := p.Producer.Publish(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitLetters(ctx, t, brokers, 2) // waits for them (or fails)
	key := events.EntityKey(done.EffectiveScope(), done.SessionID)
	if v, ok, err := sessions.Get(p.Store, key); err != nil || !ok || v.Status != sessions.StatusRunning {
		t.Fatalf("session %+v %v %v: want running (the second output is a conflicting duplicate)", v.Session, ok, err)
	}
	time.Sleep(200 * time.Millisecond) // a second letter for the record would have been relayed by now
	ls, err := deadletter.List(ctx, brokers)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || !strings.Contains(ls[0].Reason, sessions.ErrNotStarted.Error()) || !strings.Contains(ls[1].Reason, "conflicting duplicate") {
		t.Fatalf("letters %+v: want the refusal and one conflicting duplicate", ls)
	}
	replayEqualsLive(ctx, t, p)
}
