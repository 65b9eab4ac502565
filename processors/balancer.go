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
//
// It publishes no Holdings; StateAwareBalancer does, and a leader of either
// kind places tasks by the holdings its members publish.
func CoPartitionedBalancer() kgo.GroupBalancer {
	return coPartitioned{inner: kgo.CooperativeStickyBalancer()}
}

// StateAwareBalancer is CoPartitionedBalancer with this member's holdings
// (h, bound by its Runner) in its join metadata: once a member of the
// group publishes holdings, the leader places the anchor topic's tasks by
// them (see Holdings and placeTasks) instead of by the sticky balancer's
// choice. The protocol is the same, so members of both kinds share a
// group (a member without holdings holds nothing, for the leader).
func StateAwareBalancer(h *Holdings) kgo.GroupBalancer {
	return coPartitioned{inner: kgo.CooperativeStickyBalancer(), held: h}
}

type coPartitioned struct {
	inner kgo.GroupBalancer
	held  *Holdings // nil: none published
}

func (c coPartitioned) ProtocolName() string { return CoPartitionedProtocol }
func (c coPartitioned) IsCooperative() bool  { return true }

// JoinGroupMetadata is the sticky balancer's metadata, with this member's
// holdings in front of its user data (TagJoinMetadata under holdingsMagic)
// when it has any.
func (c coPartitioned) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	raw := c.inner.JoinGroupMetadata(interests, current, generation)
	if c.held == nil {
		return raw
	}
	if h := c.held.offsets(); len(h) > 0 {
		return TagJoinMetadata(raw, holdingsMagic, encodeHoldings(h))
	}
	return raw
}

func (c coPartitioned) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return c.inner.ParseSyncAssignment(assignment)
}

// MemberBalancer implements kgo.GroupBalancer.
// The members' holdings are taken out of their metadata before the sticky
// balancer sees it.
func (c coPartitioned) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	plain, tags := UntagMembers(members, holdingsMagic)
	held := map[string]map[int32]int64{}
	for id, v := range tags {
		held[id] = decodeHoldings(v)
	}
	b, err := kgo.NewConsumerBalancer(coBalance{inner: c.inner, members: plain, held: held}, plain)
	return b, b.MemberTopics(), err
}

type coBalance struct {
	inner   kgo.GroupBalancer
	members []kmsg.JoinGroupResponseMember
	held    map[string]map[int32]int64 // member id → holdings by partition number
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
	if placed := c.placeByHoldings(b, anchor, tasks, reads); placed != nil {
		for p, id := range placed {
			owner[p] = byID[id]
		}
	} else {
		for id, ts := range anchored.AsMemberIDMap() {
			m, ok := byID[id]
			if !ok {
				continue
			}
			for _, p := range ts[anchor] {
				owner[p] = m
			}
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

// placeByHoldings places the anchor's tasks by the members' holdings
// (placeTasks) when a member reading the anchor published a positive one;
// nil otherwise (the sticky balancer's plan stands). A task's current
// owner is the member claiming it at the highest generation (KIP-792: a
// lower claim is stale).
func (c coBalance) placeByHoldings(b *kgo.ConsumerBalancer, anchor string, tasks int32, reads map[string]map[string]bool) map[int32]string {
	var members []string
	some := false
	for id, ts := range reads {
		if !ts[anchor] {
			continue
		}
		members = append(members, id)
		for _, v := range c.held[id] {
			some = some || v > 0
		}
	}
	if !some {
		return nil
	}
	current := map[int32]string{}
	gen := map[int32]int32{}
	b.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		if !reads[m.MemberID][anchor] {
			return
		}
		for _, o := range meta.OwnedPartitions {
			if o.Topic != anchor {
				continue
			}
			for _, p := range o.Partitions {
				if g, ok := gen[p]; p >= 0 && p < tasks && (!ok || meta.Generation > g) {
					current[p], gen[p] = m.MemberID, meta.Generation
				}
			}
		}
	})
	return placeTasks(members, tasks, current, c.held)
}
