package processors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A worker reads the projections of its instance's store (the pair worker
// reads the session an evaluation is about). On one instance that store
// holds every key; on a cluster it holds the keys of the partitions the
// engine owns there. A worker's consumer group is balanced on its own, so
// without more, partition p of chronicle.evaluations could be handled on
// one instance while the session behind it is projected on another: the
// worker found "no such session" and dead-lettered the evaluation (on two
// instances, 96 dead letters and 49 of 114 failed sessions without their
// PAIR context). Kafka Streams avoids this by assigning all of a task's
// partitions to one instance; Chronicle's workers get the same effect with
// two pieces:
//
//   - followEngineBalancer: a worker group's leader assigns partition p of
//     the worker's topic to the worker member of the instance whose engine
//     owns partition p of that topic in the processors' group (read with
//     DescribeGroups; each worker member names its engine's member id in its
//     join metadata). Every change of the engine's assignment on an
//     instance makes its workers rejoin, so the worker groups follow.
//   - a gate in front of Handle: a worker hands an event back (no dead
//     letter, no output) while its instance's engine does not own the
//     event's partition or is still restoring that task's partitions, for
//     at most RunnerConfig.WorkerFollowWait; after that the event is handled
//     as before (a group shared with an instance that runs no such worker).

// FollowEngineProtocol is the group protocol name of the worker groups'
// balancer (followEngineBalancer).
const FollowEngineProtocol = "chronicle-follow-engine"

// followMagic tags the engine's member id in FollowEngineProtocol's member
// metadata (TagJoinMetadata).
var followMagic = []byte("chf1")

// DefaultWorkerFollowWait is RunnerConfig.WorkerFollowWait's default: how
// long a worker hands back an event of a partition its instance's engine
// does not own (or is restoring) before it handles it anyway. Two
// rebalances of the worker's group take well under a second on loopback;
// a restore of a partition takes what its size takes (the restore gauge
// shows it), so 30 s covers a restore of ~100k records at the engine's
// replay rate.
const DefaultWorkerFollowWait = 30 * time.Second

// followDescribeWait bounds how long a worker group's leader waits for the
// processors' group to be stable (its assignment described) before it
// falls back to plain cooperative-sticky for this round.
const followDescribeWait = 2 * time.Second

// errFollowing hands an event back while its partition is not this
// instance's engine's yet (see the gate above): it is not poisonous, and
// the Router's log of it is at debug level.
var errFollowing = fmt.Errorf("%w: the engine of this instance does not own the event's partition yet, or is restoring it", errRetryLater)

// engineOwners describes a processors' group: partition (of any topic it
// reads) → the member id that owns it.
type engineOwners func(ctx context.Context) (map[tp]string, error)

// followEngineBalancer returns the balancer of a worker's consumer group:
// partition p of the worker's topic goes to the member whose instance's
// engine (memberID: its member id in the processors' group, "" before it
// joined) owns partition p of that topic, as owners describes the
// processors' group; a partition whose owner runs no member of this group,
// or every partition when the processors' group cannot be described within
// 2 s, is placed by franz-go's cooperative-sticky balancer. Moves go
// through franz-go's cooperative adjustment (revoked by the old member
// first). Use it first in kgo.Balancers, followed by
// kgo.CooperativeStickyBalancer.
func followEngineBalancer(memberID func() string, owners engineOwners) kgo.GroupBalancer {
	return followBalancer{inner: kgo.CooperativeStickyBalancer(), self: memberID, owners: owners}
}

type followBalancer struct {
	inner  kgo.GroupBalancer
	self   func() string
	owners engineOwners
}

func (f followBalancer) ProtocolName() string { return FollowEngineProtocol }
func (f followBalancer) IsCooperative() bool  { return true }

func (f followBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return f.inner.ParseSyncAssignment(assignment)
}

// JoinGroupMetadata is the sticky balancer's metadata with this instance's
// engine member id put in front of its user data (TagJoinMetadata).
func (f followBalancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	return TagJoinMetadata(f.inner.JoinGroupMetadata(interests, current, generation), followMagic, f.self())
}

// MemberBalancer strips the engine ids from the members' metadata (the
// sticky balancer sees the members as it would without them) and balances
// with followBalance.
func (f followBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	plain, engineOf := UntagMembers(members, followMagic)
	for id, e := range engineOf {
		if e == "" { // an engine that had not joined yet: no engine
			delete(engineOf, id)
		}
	}
	b, err := kgo.NewConsumerBalancer(followBalance{f: f, members: plain, engineOf: engineOf}, plain)
	if err != nil {
		return nil, nil, err
	}
	return b, b.MemberTopics(), nil
}

type followBalance struct {
	f        followBalancer
	members  []kmsg.JoinGroupResponseMember
	engineOf map[string]string // worker member id → its instance's engine member id
}

// Balance implements kgo.ConsumerBalancerBalance.
func (fb followBalance) Balance(b *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	sticky, _, err := fb.f.inner.MemberBalancer(fb.members)
	if err != nil {
		b.SetError(err)
		return b.NewPlan()
	}
	into, err := balanceOrError(sticky, topics)
	if err != nil {
		b.SetError(err)
		return b.NewPlan()
	}
	base, ok := into.(*kgo.BalancePlan)
	if !ok {
		return into
	}
	ctx, cancel := context.WithTimeout(context.Background(), followDescribeWait)
	owners, err := fb.f.owners(ctx)
	cancel()
	if err != nil || len(owners) == 0 {
		return base // this round plain sticky; the next change of the engine's assignment balances again
	}
	byID := map[string]*kmsg.JoinGroupResponseMember{}
	worker := map[string]*kmsg.JoinGroupResponseMember{} // engine member id → worker member
	reads := map[string]map[string]bool{}
	b.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		byID[m.MemberID] = m
		reads[m.MemberID] = map[string]bool{}
		for _, t := range meta.Topics {
			reads[m.MemberID][t] = true
		}
		if e := fb.engineOf[m.MemberID]; e != "" {
			worker[e] = m
		}
	})
	stickyOwner := map[tp]*kmsg.JoinGroupResponseMember{}
	for id, ts := range base.AsMemberIDMap() {
		for t, ps := range ts {
			for _, p := range ps {
				stickyOwner[tp{t, p}] = byID[id]
			}
		}
	}
	plan := b.NewPlan()
	for t, n := range topics {
		for p := int32(0); p < n; p++ {
			m := stickyOwner[tp{t, p}]
			if w := worker[owners[tp{t, p}]]; w != nil && reads[w.MemberID][t] {
				m = w
			}
			if m != nil {
				plan.AddPartition(m, t, p)
			}
		}
	}
	plan.AdjustCooperative(b)
	return plan
}

// describeOwners describes group with adm until it is stable (the
// assignment is only described then), every 100 ms until ctx ends.
func describeOwners(adm *kadm.Client, group string) engineOwners {
	return func(ctx context.Context) (map[tp]string, error) {
		for {
			dg, err := adm.DescribeGroups(ctx, group)
			if err == nil {
				err = dg.Error()
			}
			if err == nil {
				if d, ok := dg[group]; ok && d.State == "Stable" {
					out := map[tp]string{}
					for _, m := range d.Members {
						if c, ok := m.Assigned.AsConsumer(); ok {
							for _, t := range c.Topics {
								for _, p := range t.Partitions {
									out[tp{t.Topic, p}] = m.MemberID
								}
							}
						}
					}
					return out, nil
				}
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = fmt.Errorf("group %s is not stable", group)
				}
				return nil, fmt.Errorf("processors: describing %s for the workers' balance: %w", group, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// followGate is the gate in front of one worker's Handle (see above).
type followGate struct {
	e     *engine
	topic string
	wait  time.Duration
	// rejoin makes the worker's group balance again (its subscriber's
	// ForceRebalance)
	rejoin func()
	logger watermill.LoggerAdapter

	mu       sync.Mutex
	since    map[int32]time.Time // partition → when an event of it was first handed back
	rejoined time.Time
}

// admit reports nil when the event of partition p may be handled now, and
// errFollowing while this instance's engine does not own p of the
// worker's topic or restores a partition of task p, up to g.wait from the
// first refusal; it asks the worker's group to balance again (at most once
// a second) while the engine does not own p.
func (g *followGate) admit(p int32) error {
	owned, restoring := g.e.own.task(g.topic, p)
	g.mu.Lock()
	defer g.mu.Unlock()
	if owned && !restoring {
		delete(g.since, p)
		return nil
	}
	first, ok := g.since[p]
	if !ok {
		first = time.Now()
		g.since[p] = first
	}
	if time.Since(first) >= g.wait {
		g.logger.Info("worker: handling an event although this instance's engine does not own its partition (or still restores it)", watermill.LogFields{"topic": g.topic, "partition": p, "owned": owned, "waited": g.wait.String()})
		return nil
	}
	if !owned && time.Since(g.rejoined) >= time.Second {
		g.rejoined = time.Now()
		go g.rejoin()
	}
	return errFollowing
}

// task reports whether this instance owns partition p of topic, and
// whether any partition p it owns (of any topic: task p) is still
// restoring.
func (o *ownership) task(topic string, p int32) (owned, restoring bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, op := range o.parts {
		if k.partition != p {
			continue
		}
		if k.topic == topic {
			owned = true
		}
		if op.end >= 0 && op.next < op.end {
			restoring = true
		}
	}
	return owned, restoring
}

// quietFollowing logs the Router's errFollowing at debug level: an event
// handed back while the worker's group follows the engine is not an error.
type quietFollowing struct{ watermill.LoggerAdapter }

func (l quietFollowing) Error(msg string, err error, fields watermill.LogFields) {
	if errors.Is(err, errFollowing) {
		l.LoggerAdapter.Debug(msg, fields.Add(watermill.LogFields{"err": err.Error()}))
		return
	}
	l.LoggerAdapter.Error(msg, err, fields)
}

func (l quietFollowing) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return quietFollowing{l.LoggerAdapter.With(fields)}
}
