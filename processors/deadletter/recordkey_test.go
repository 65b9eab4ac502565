package deadletter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A record written straight to Kafka whose key (not its event's,
// events.Key) put it on another partition than its entity's is
// dead-lettered once, with the reason, instead of being applied there out
// of order with its entity's other events; a redrive re-keys it, and then
// it is applied. A wrongly keyed record on the right partition is applied
// as before (a log written then replays as it did). Live equals a replay.
func TestRecordOnAnotherPartitionIsDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	brokers := p.Broker.Addrs()
	envs := sampleSession(t)
	done := envs[len(envs)-1]
	if done.Type != events.SessionCompleted {
		t.Fatalf("last event is %s", done.Type)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(env events.Envelope, key string) {
		t.Helper()
		rec, err := events.Record(&env)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			rec.Key = []byte(key)
		}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, env := range envs[:len(envs)-1] {
		produce(env, "")
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	key := events.EntityKey(done.EffectiveScope(), done.SessionID)
	topic := string(events.TopicSessions)
	// a wrong key that hashes elsewhere: the session id without its
	// scope, a natural mistake, or a variant of it
	wrong := done.SessionID
	for i := 0; events.Partition(topic, wrong, 4) == events.Partition(topic, key, 4); i++ {
		wrong = fmt.Sprintf("%s#%d", done.SessionID, i)
	}
	// and one that hashes to the right partition: applied as keyed right
	sameP := ""
	for i := 0; sameP == ""; i++ {
		if k := fmt.Sprintf("k%d", i); events.Partition(topic, k, 4) == events.Partition(topic, key, 4) {
			sameP = k
		}
	}
	produce(envs[len(envs)-2], sameP) // already applied: a duplicate, wherever its key
	produce(done, wrong)
	waitLetters(ctx, t, brokers, 1) // waits for them (or fails)
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ls, err := deadletter.List(ctx, brokers)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("its event's key %q belongs on partition %d (record key %q)", key, events.Partition(topic, key, 4), wrong)
	if len(ls) != 1 || ls[0].EventID != done.ID || ls[0].Key != wrong || !strings.Contains(ls[0].Reason, want) {
		t.Fatalf("letters %+v, want one for %s saying %s", ls, done.ID, want)
	}
	if v, ok, err := sessions.Get(p.Store, key); err != nil || !ok || v.Status != sessions.StatusRunning {
		t.Fatalf("the completion on another partition was applied: status %q %v %v", v.Status, ok, err)
	}

	out, err := deadletter.Redrive(ctx, brokers, ls)
	if err != nil || len(out) != 1 {
		t.Fatalf("redrive: %+v %v", out, err)
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := sessions.Get(p.Store, key); err != nil || !ok || v.Status != sessions.StatusCompleted {
		t.Fatalf("after the redrive: status %q %v %v", v.Status, ok, err)
	}
	if ls, err := deadletter.List(ctx, brokers); err != nil || len(ls) != 1 {
		t.Fatalf("after the redrive, letters %+v %v, want the one", ls, err)
	}
	replayEqualsLive(ctx, t, p)
}

// With one partition every record is where its entity's events are: a
// record keyed otherwise than events.Key is applied as if keyed right, as
// before the partition check (a single-partition log written by a raw
// client, say kcat without -K, replays as it did).
func TestWrongKeyOnOnePartitionIsApplied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	envs := sampleSession(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Broker.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range envs {
		rec, err := events.Record(&envs[i])
		if err != nil {
			t.Fatal(err)
		}
		rec.Key = nil
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	key := events.EntityKey(envs[0].EffectiveScope(), envs[0].SessionID)
	if v, ok, err := sessions.Get(p.Store, key); err != nil || !ok || v.Status != sessions.StatusCompleted {
		t.Fatalf("a session written without record keys on one partition: status %q %v %v", v.Status, ok, err)
	}
	if ls, err := deadletter.List(ctx, p.Broker.Addrs()); err != nil || len(ls) != 0 {
		t.Fatalf("letters %+v %v, want none", ls, err)
	}
}
