package deadletter_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLettersByScope: the dead-letter projection lists each letter under
// the rejected event's scope, newest first, with the event's id, type,
// source, its original position, the handler and reason and the letter's
// own position and time; a scope's list never holds another scope's
// letters; a record of the dead-letter topic that names no scope is
// skipped and not dead-lettered again; and a replay of the log rebuilds
// the rows (replayEqualsLive). Before the projection the store had no
// such rows: GET /v1/deadletters had nothing to read.
func TestLettersByScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	told := map[string]int{} // letter position → OnDeadLetter calls
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 2,
		OnDeadLetter: func(d processors.LetterData) {
			mu.Lock()
			defer mu.Unlock()
			told[fmt.Sprintf("%d:%d", d.DeadLetterPartition, d.DeadLetterOffset)]++
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	envs := sampleSession(t)
	done := envs[len(envs)-1] // a completion of a session that never started
	a1, a2, b := done, done, done
	a1.Scope, a1.ID = "project:a", "done-a1"
	a2.Scope, a2.ID, a2.SessionID = "project:a", "done-a2", done.SessionID+"-2"
	b.Scope, b.ID = "project:b", "done-b"
	for _, e := range []events.Envelope{a1, b} {
		if err := p.Producer.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	waitLetters(ctx, t, p.Broker.Addrs(), 2)
	time.Sleep(20 * time.Millisecond) // record timestamps are in milliseconds: a2's letter is newer
	if err := p.Producer.Publish(ctx, a2); err != nil {
		t.Fatal(err)
	}
	// a record of the dead-letter topic whose rejected record is no JSON
	// event: it names no scope, so it has no row, and it is not
	// dead-lettered (a letter of a letter)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	odd := &kgo.Record{Topic: string(events.TopicDeadLetter), Key: []byte("x"), Value: []byte("not json"), Headers: []kgo.RecordHeader{
		{Key: processors.HeaderOriginalTopic, Value: []byte(events.TopicSessions)}, {Key: processors.HeaderOriginalPartition, Value: []byte("0")},
		{Key: processors.HeaderOriginalOffset, Value: []byte("99")}, {Key: processors.HeaderHandler, Value: []byte("kcat@chronicle.sessions")},
		{Key: processors.HeaderError, Value: []byte("no event")}}}
	if err := cl.ProduceSync(ctx, odd).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// a record of a topic that is no JSON: its letter names no scope, so
	// it has no row, but serve's log hook is told of it (before, it was the
	// one letter never logged)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: string(events.TopicSessions), Key: []byte("project:a/odd"), Value: []byte("this is not json")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitLetters(ctx, t, p.Broker.Addrs(), 5)
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a letter of a letter would be relayed by now
	ls, err := deadletter.List(ctx, p.Broker.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Topic == string(events.TopicDeadLetter) {
			t.Fatalf("a letter of a letter: %+v", l)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	sessionLetters := func(es []deadletter.Entry) []deadletter.Entry {
		var out []deadletter.Entry
		for _, e := range es {
			if strings.HasPrefix(e.Handler, sessions.Name+"@") {
				out = append(out, e)
			}
		}
		return out
	}
	all, next, err := deadletter.ListScoped(p.Store, []string{"project:a"}, nil, 100, "", "")
	if err != nil || next != "" {
		t.Fatal(err, next)
	}
	as := sessionLetters(all)
	if len(as) != 2 || as[0].EventID != "done-a2" || as[1].EventID != "done-a1" {
		t.Fatalf("project:a's letters %+v; want done-a2 then done-a1 (newest first)", all)
	}
	for _, e := range all {
		if e.Scope != "project:a" {
			t.Fatalf("project:a's list holds %+v", e)
		}
	}
	e := as[1]
	if e.EventType != string(events.SessionCompleted) || e.EventSource != done.Source || e.Topic != string(events.TopicSessions) ||
		!strings.Contains(e.Reason, sessions.ErrNotStarted.Error()) || e.Key != events.EntityKey("project:a", done.SessionID) ||
		e.DeadLetteredAt == "" || !strings.HasPrefix(e.ID, e.Topic+":") {
		t.Fatalf("entry %+v", e)
	}
	bs, _, err := deadletter.ListScoped(p.Store, []string{"project:b"}, nil, 100, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sessionLetters(bs); len(got) != 1 || got[0].EventID != "done-b" || got[0].Scope != "project:b" {
		t.Fatalf("project:b's letters %+v", bs)
	}
	// every scope, filtered: a's and b's only (the record that names no
	// scope has no row); paged one at a time
	var paged []deadletter.Entry
	cursor := ""
	for {
		page, next, err := deadletter.ListScoped(p.Store, nil, func(sc string) bool { return sc == "project:a" }, 1, cursor, string(events.SessionCompleted))
		if err != nil {
			t.Fatal(err)
		}
		if err := deadletter.CheckCursor(next); next != "" && err != nil {
			t.Fatalf("next_cursor %q: %v", next, err)
		}
		paged = append(paged, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(paged) != len(all) {
		t.Fatalf("paged %+v; want %+v", paged, all)
	}
	// serve's log hook: told once of each letter the projection holds,
	// and of the two naming no scope (the odd record and the letter of
	// the record that is no JSON), and of nothing else
	every, _, err := deadletter.ListScoped(p.Store, nil, nil, 100, "", "")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(told) != len(every)+2 {
		t.Errorf("told of %d letters %v; the projection holds %d (%+v), plus two naming no scope", len(told), told, len(every), every)
	}
	for _, e := range every {
		if n := told[fmt.Sprintf("%d:%d", e.DeadLetterPartition, e.DeadLetterOffset)]; n != 1 {
			t.Errorf("told %d times of %+v", n, e)
		}
	}
	mu.Unlock()
	replayEqualsLive(ctx, t, p)
}
