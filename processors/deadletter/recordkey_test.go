package deadletter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A record written straight to Kafka with a key that is not its event's
// (events.Key) is dead-lettered once, with the reason, instead of being
// applied as if keyed right from whatever partition its key chose; a
// redrive re-keys it, and then it is applied. Live equals a replay.
func TestWrongRecordKeyIsDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	brokers := p.Broker.Addrs()
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := taubench.Events(recs[0])
	if err != nil {
		t.Fatal(err)
	}
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
	produce(done, done.SessionID) // the session id without its scope: a natural mistake
	ls := waitLetters(ctx, t, brokers, 1)
	if err := p.WaitCaughtUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ls, err = deadletter.List(ctx, brokers); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].EventID != done.ID || ls[0].Key != done.SessionID ||
		!strings.Contains(ls[0].Reason, `record key "`+done.SessionID+`" is not the event's key "`+key+`"`) {
		t.Fatalf("letters %+v, want one for %s naming both keys", ls, done.ID)
	}
	if v, ok, err := sessions.Get(p.Store, key); err != nil || !ok || v.Status != sessions.StatusRunning {
		t.Fatalf("the wrongly keyed completion was applied: status %q %v %v", v.Status, ok, err)
	}
	var ke *events.RecordKeyError
	if _, err := events.FromRecord(ls[0].Original()); !errors.As(err, &ke) || ke.Got != done.SessionID || ke.Want != key {
		t.Fatalf("FromRecord of the letter's record: %v", err)
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
