package processors

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CoPartitionedProtocol is the group protocol name of
// CoPartitionedBalancer.
const CoPartitionedProtocol = "chronicle-copartitioned"

// CoPartitionedBalancer is the processors' group balancer: franz-go's
// cooperative-sticky assignment of *tasks*, where task p is partition p of
// every topic the group reads, as Kafka Streams assigns tasks to
// instances. A processor that reads two topics keyed alike (the PAIR loop:
// chronicle.evaluations and chronicle.learned, both keyed by session) then
// finds a key's records of both topics on the same instance, in its one
// store; with plain per-partition balancing, partition 2 of one topic and
// partition 2 of the other could land on different instances and split the
// key's state.
//
// The balancing: the partitions of the anchor topic (the one with the most
// partitions; ties by name) are balanced by the cooperative-sticky
// balancer, then partition p of every other topic follows the member of
// anchor partition p mod the anchor's count (a single-partition topic such
// as chronicle.memories follows task 0), and franz-go's cooperative
// adjustment runs over the whole plan, so a partition moving between
// members is first revoked by its owner, never owned by two at once.
//
// Use it first in kgo.Balancers, followed by kgo.CooperativeStickyBalancer,
// so that a group with a member that lacks it still agrees on a protocol.
func CoPartitionedBalancer() kgo.GroupBalancer {
	return coPartitioned{inner: kgo.CooperativeStickyBalancer()}
}

type coPartitioned struct{ inner kgo.GroupBalancer }

func (c coPartitioned) ProtocolName() string { return CoPartitionedProtocol }
func (c coPartitioned) IsCooperative() bool  { return true }

func (c coPartitioned) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	return c.inner.JoinGroupMetadata(interests, current, generation)
}

func (c coPartitioned) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return c.inner.ParseSyncAssignment(assignment)
}

// MemberBalancer implements kgo.GroupBalancer.
func (c coPartitioned) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	b, err := kgo.NewConsumerBalancer(coBalance{inner: c.inner, members: members}, members)
	return b, b.MemberTopics(), err
}

type coBalance struct {
	inner   kgo.GroupBalancer
	members []kmsg.JoinGroupResponseMember
}

// Balance implements kgo.ConsumerBalancerBalance.
func (c coBalance) Balance(b *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	if len(names) == 0 {
		return b.NewPlan()
	}
	sort.Slice(names, func(i, j int) bool {
		if topics[names[i]] != topics[names[j]] {
			return topics[names[i]] > topics[names[j]]
		}
		return names[i] < names[j]
	})
	anchor, tasks := names[0], topics[names[0]]
	sticky, _, err := c.inner.MemberBalancer(c.members)
	if err != nil {
		b.SetError(err)
		return b.NewPlan()
	}
	into, err := balanceOrError(sticky, map[string]int32{anchor: tasks})
	if err != nil {
		b.SetError(err)
		return b.NewPlan()
	}
	anchored, ok := into.(*kgo.BalancePlan)
	if !ok || tasks <= 0 {
		into, err := balanceOrError(sticky, topics) // not franz-go's consumer plan: plain sticky
		b.SetError(err)
		return into
	}
	byID := map[string]*kmsg.JoinGroupResponseMember{}
	reads := map[string]map[string]bool{} // member id → topics it subscribed to
	b.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		byID[m.MemberID] = m
		reads[m.MemberID] = map[string]bool{}
		for _, t := range meta.Topics {
			reads[m.MemberID][t] = true
		}
	})
	owner := map[int32]*kmsg.JoinGroupResponseMember{}
	plan := b.NewPlan()
	for id, ts := range anchored.AsMemberIDMap() {
		m, ok := byID[id]
		if !ok {
			continue
		}
		for _, p := range ts[anchor] {
			owner[p] = m
		}
	}
	// a task withheld by the sticky balancer's cooperative step (its owner
	// must revoke it first) has no owner here: its other partitions are
	// withheld too, and assigned together in the next round
	for _, t := range names {
		for p := int32(0); p < topics[t]; p++ {
			if m, ok := owner[p%tasks]; ok && reads[m.MemberID][t] {
				plan.AddPartition(m, t, p)
			}
		}
	}
	plan.AdjustCooperative(b)
	return plan
}

// balanceOrError balances with BalanceOrError when the balancer has it
// (kgo.ConsumerBalancer's Balance panics: franz-go calls BalanceOrError).
func balanceOrError(b kgo.GroupMemberBalancer, topics map[string]int32) (kgo.IntoSyncAssignment, error) {
	if be, ok := b.(kgo.GroupMemberBalancerOrError); ok {
		return be.BalanceOrError(topics)
	}
	return b.Balance(topics), nil
}
