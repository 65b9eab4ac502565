package processors_test

import (
	"fmt"
	"testing"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinMember is a JoinGroup member reading topics and owning owned (from its
// last assignment, generation gen).
func joinMember(t *testing.T, id string, topics []string, owned map[string][]int32, gen int32) kmsg.JoinGroupResponseMember {
	t.Helper()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2
	meta.Topics = topics
	meta.Generation = gen
	for topic, ps := range owned {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = topic, ps
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	m := kmsg.NewJoinGroupResponseMember()
	m.MemberID = id
	m.ProtocolMetadata = meta.AppendTo(nil)
	return m
}

func balance(t *testing.T, members []kmsg.JoinGroupResponseMember, topics map[string]int32) map[string]map[string][]int32 {
	t.Helper()
	b, _, err := processors.CoPartitionedBalancer().MemberBalancer(members)
	if err != nil {
		t.Fatal(err)
	}
	into, err := b.(kgo.GroupMemberBalancerOrError).BalanceOrError(topics)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]int32{}
	for _, a := range into.IntoSyncAssignment() {
		var ma kmsg.ConsumerMemberAssignment
		if err := ma.ReadFrom(a.MemberAssignment); err != nil {
			t.Fatal(err)
		}
		out[a.MemberID] = map[string][]int32{}
		for _, tp := range ma.Topics {
			out[a.MemberID][tp.Topic] = tp.Partitions
		}
	}
	return out
}

// ownerOf maps topic/partition to its member in a plan, failing on a
// partition given to two members.
func ownerOf(t *testing.T, plan map[string]map[string][]int32) map[string]string {
	t.Helper()
	own := map[string]string{}
	for m, ts := range plan {
		for topic, ps := range ts {
			for _, p := range ps {
				k := fmt.Sprintf("%s/%d", topic, p)
				if prev, dup := own[k]; dup {
					t.Fatalf("%s given to %s and %s", k, prev, m)
				}
				own[k] = m
			}
		}
	}
	return own
}

// Partition p of every topic goes to one member, in a fresh group and
// after a member joins (cooperatively: what moves is first revoked), and a
// single-partition topic follows partition 0.
func TestCoPartitionedBalancer(t *testing.T) {
	topics := map[string]int32{"chronicle.sessions": 4, "chronicle.evaluations": 4, "chronicle.learned": 4, "chronicle.memories": 1}
	names := []string{"chronicle.sessions", "chronicle.evaluations", "chronicle.learned", "chronicle.memories"}
	colocated := func(own map[string]string, complete bool) {
		t.Helper()
		for p := 0; p < 4; p++ {
			anchor, ok := own[fmt.Sprintf("chronicle.sessions/%d", p)]
			for _, topic := range names[1:3] {
				m, has := own[fmt.Sprintf("%s/%d", topic, p)]
				if has != ok || m != anchor {
					t.Fatalf("partition %d: %s on %q (assigned %v), chronicle.sessions on %q (assigned %v)", p, topic, m, has, anchor, ok)
				}
			}
			if complete && !ok {
				t.Fatalf("partition %d unassigned", p)
			}
		}
		if own["chronicle.memories/0"] != own["chronicle.sessions/0"] {
			t.Fatalf("chronicle.memories/0 on %q, chronicle.sessions/0 on %q", own["chronicle.memories/0"], own["chronicle.sessions/0"])
		}
	}
	// two fresh members
	first := balance(t, []kmsg.JoinGroupResponseMember{joinMember(t, "a", names, nil, -1), joinMember(t, "b", names, nil, -1)}, topics)
	own := ownerOf(t, first)
	colocated(own, true)
	if len(first["a"]["chronicle.sessions"]) != 2 || len(first["b"]["chronicle.sessions"]) != 2 {
		t.Fatalf("unbalanced: %v", first)
	}
	// c joins: a and b keep what stays, what moves to c is withheld until revoked
	second := balance(t, []kmsg.JoinGroupResponseMember{joinMember(t, "a", names, first["a"], 1), joinMember(t, "b", names, first["b"], 1), joinMember(t, "c", names, nil, -1)}, topics)
	own2 := ownerOf(t, second)
	colocated(own2, false)
	for k, m := range own2 {
		if prev, ok := own[k]; ok && prev != m {
			t.Fatalf("%s moved from %s to %s in one round: cooperative rebalancing revokes first", k, prev, m)
		}
	}
	// after the revocation round, c gets its tasks, all topics together
	third := balance(t, []kmsg.JoinGroupResponseMember{joinMember(t, "a", names, second["a"], 2), joinMember(t, "b", names, second["b"], 2), joinMember(t, "c", names, nil, 2)}, topics)
	own3 := ownerOf(t, third)
	colocated(own3, true)
	if len(third["c"]["chronicle.sessions"]) == 0 {
		t.Fatalf("the joining member got no task: %v", third)
	}
}
