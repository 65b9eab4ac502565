package kafkapubsub_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

// TestCloseWhileRejoiningIsBounded: a group member whose JoinGroup the
// broker holds (another member, with a message in flight, cannot rejoin)
// is closed. franz-go's Close leaves only once the rebalance is over (its
// JoinGroup is issued with the client's own context, which Close cancels
// after the leave): up to the group's rebalance timeout, 60 s. The
// subscription cuts it after LeaveTimeout and leaves the group itself.
// Found by three `serve` instances stopped 3 s apart: a worker's
// subscription held its instance's exit 45–64 s.
func TestCloseWhileRejoiningIsBounded(t *testing.T) {
	brokers := startCluster(t)
	const topic, group = "leave-bounded", "leave-bounded-group"
	createTopic(t, brokers, topic, 4)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, topic, 100, nil)

	subA := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group})
	chA, err := subA.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	held := receive(t, chA, waitMsg) // in flight: A cannot revoke, nor rejoin
	defer held.Ack()

	const leave = time.Second
	subB := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group, LeaveTimeout: leave})
	if _, err := subB.Subscribe(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // B joined; it owns nothing until A revoked
	subB.ForceRebalance()       // B's JoinGroup waits for A
	time.Sleep(time.Second)

	closed := make(chan time.Duration, 1)
	t0 := time.Now()
	go func() { _ = subB.Close(); closed <- time.Since(t0) }()
	select {
	case d := <-closed:
		if d > leave+3*time.Second {
			t.Fatalf("Close took %s; want at most LeaveTimeout (%s) + 3 s", d, leave)
		}
		t.Logf("Close returned after %s", d.Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatalf("Close has not returned within 15 s (LeaveTimeout %s)", leave)
	}
	// B left the group (its own LeaveGroup), not kept until its session
	// timeout (45 s)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gs, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(gs[group].Members); n != 1 {
		t.Fatalf("the group has %d members after B's Close; want 1 (A): %+v", n, gs[group].Members)
	}
}

// TestCommitAtStopIsBounded: a subscription stopped while the commit of
// an Acked message waits (franz-go holds commits while the member joins
// and syncs, and the broker holds its JoinGroup behind a member whose
// OnPartitionsAssigned does not return) stops within about two
// LeaveTimeouts: the commit outlives the stop by at most one, the leave
// by one. The commit used to run its whole 10 s first (TestSlowStop: a
// serve 15 s in a transaction marker's commit).
func TestCommitAtStopIsBounded(t *testing.T) {
	brokers := startCluster(t)
	const topic, group = "commit-bounded", "commit-bounded-group"
	createTopic(t, brokers, topic, 4)
	pub := newTestPublisher(t, kafkapubsub.PublisherConfig{Brokers: brokers})
	publishNumbered(t, pub, topic, 400, strconv.Itoa) // keyed: every partition has records

	const leave = time.Second
	subA := newTestSubscriber(t, kafkapubsub.SubscriberConfig{Brokers: brokers, ConsumerGroup: group, LeaveTimeout: leave})
	chA, err := subA.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	receive(t, chA, waitMsg).Ack()

	// D: assigned partitions, it never returns from its callback, so it
	// never rejoins (it keeps heartbeating)
	release := make(chan struct{})
	d, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.HeartbeatInterval(200*time.Millisecond), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { <-release }))
	if err != nil {
		t.Fatal(err)
	}
	defer d.CloseAllowingRebalance()
	defer close(release) // before D's Close, which waits for its callback
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()
	go func() {
		for pollCtx.Err() == nil {
			d.PollFetches(pollCtx)
			d.AllowRebalance()
		}
	}()
	time.Sleep(3 * time.Second)     // A revoked half, D was assigned it
	msg := receive(t, chA, waitMsg) // of a partition A kept
	subA.ForceRebalance()           // A's JoinGroup waits for D
	time.Sleep(time.Second)
	msg.Ack() // its commit waits for the join
	time.Sleep(500 * time.Millisecond)

	closed := make(chan time.Duration, 1)
	t0 := time.Now()
	go func() { _ = subA.Close(); closed <- time.Since(t0) }()
	select {
	case dur := <-closed:
		if dur > 2*leave+3*time.Second {
			t.Fatalf("Close took %s; want at most 2 × LeaveTimeout (%s) + 3 s", dur, leave)
		}
		t.Logf("Close returned after %s", dur.Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("Close has not returned within 20 s (LeaveTimeout %s)", leave)
	}
}
