package processors_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// TestRunnerCloseWhileRejoiningIsBounded: a Runner whose engine is
// rejoining the processors' group, which the broker holds because
// another member (A, its poll held by a batch being applied) cannot
// rejoin, stops within RunnerConfig.LeaveTimeout and a little more.
// franz-go's Close waited for the rebalance to complete: up to A's
// session timeout, 45 s here (the workers' subscriptions did so in a
// cluster stopped 3 s apart; kafkapubsub.TestCloseWhileRejoiningIsBounded).
func TestRunnerCloseWhileRejoiningIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers, recs, prod := sampleLog(ctx, t, broker.Config{Partitions: 4})
	publishRecords(ctx, t, prod, recs[:20])
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	hb := kgo.HeartbeatInterval(300 * time.Millisecond)

	// A owns every partition and holds its first batch
	storeA, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ra, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: storeA, Processors: []processors.Processor{sessions.Processor{}, held{release}},
		SubscriberOpts: []kgo.Opt{kgo.ClientID("instance-A"), hb}})
	if err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- ra.Run(context.Background()) }()
	defer func() { free(); _ = ra.Close(); <-doneA; _ = storeA.Close() }()
	select {
	case <-ra.Running():
	case <-ctx.Done():
		t.Fatal("A did not start")
	}
	time.Sleep(time.Second)

	// B joins: it is given nothing until A revoked, which A's held poll
	// blocks
	const leave = time.Second
	storeB, err := projections.Open(t.TempDir(), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer storeB.Close()
	rb, err := processors.NewRunner(processors.RunnerConfig{Brokers: brokers, Store: storeB, Processors: []processors.Processor{sessions.Processor{}},
		SubscriberOpts: []kgo.Opt{kgo.ClientID("instance-B"), hb}, LeaveTimeout: leave})
	if err != nil {
		t.Fatal(err)
	}
	doneB := make(chan error, 1)
	go func() { doneB <- rb.Run(context.Background()) }()
	time.Sleep(3 * time.Second)

	// C joins too: B rejoins, and the broker holds B's JoinGroup for A
	sub, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: string(processors.ProcessorsGroup), ExtraOpts: []kgo.Opt{hb}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Subscribe(ctx, string(events.TopicSessions)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)

	t0 := time.Now()
	go func() { _ = rb.Close() }()
	select {
	case <-doneB:
		d := time.Since(t0)
		if d > leave+4*time.Second {
			t.Fatalf("B's Run returned %s after Close; want at most LeaveTimeout (%s) + 4 s", d, leave)
		}
		t.Logf("B stopped after %s", d.Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("B's Run has not returned 20 s after Close (LeaveTimeout %s)", leave)
	}
}
