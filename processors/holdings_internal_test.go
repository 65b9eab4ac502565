package processors

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// placement renders a placement as "member:tasks ..." in member order.
func placement(out map[int32]string) string {
	by := map[string][]int32{}
	for p, m := range out {
		by[m] = append(by[m], p)
	}
	var ms []string
	for m := range by {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	var b strings.Builder
	for _, m := range ms {
		sort.Slice(by[m], func(i, j int) bool { return by[m][i] < by[m][j] })
		fmt.Fprintf(&b, "%s:%v ", m, by[m])
	}
	return strings.TrimSpace(b.String())
}

// Tasks go where their state is: after a restart of every member (no
// owner), after one member came back first and took everything, and when
// an owner's copy is fresher than a returning member's; counts stay
// balanced and an owner keeps what it owns up to its count.
func TestPlaceTasks(t *testing.T) {
	for _, c := range []struct {
		name    string
		members []string
		tasks   int32
		current map[int32]string
		held    map[string]map[int32]int64
		want    string
	}{{
		// new member ids, nothing owned: each task back to its holder,
		// whatever the ids' order
		name: "all restarted", members: []string{"z", "a"}, tasks: 4,
		held: map[string]map[int32]int64{"z": {0: 900, 2: 800}, "a": {1: 700, 3: 600}},
		want: "a:[1 3] z:[0 2]",
	}, {
		// a came back first and owns all four (it restored z's two); z
		// rejoins: a gives up the two z holds, not its own
		name: "first back took all", members: []string{"a", "z"}, tasks: 4,
		current: map[int32]string{0: "a", 1: "a", 2: "a", 3: "a"},
		held:    map[string]map[int32]int64{"a": {0: 50, 1: 900, 2: 50, 3: 900}, "z": {0: 800, 2: 700}},
		want:    "a:[1 3] z:[0 2]",
	}, {
		// partition numbers beyond the task count fold onto task q mod tasks
		name: "more partitions than tasks", members: []string{"a", "b"}, tasks: 2,
		held: map[string]map[int32]int64{"a": {1: 10, 3: 10}, "b": {0: 10, 2: 10}},
		want: "a:[1] b:[0]",
	}, {
		// three members, four tasks: the member owning most keeps two
		name: "uneven counts", members: []string{"a", "b", "c"}, tasks: 4,
		current: map[int32]string{0: "b", 1: "b", 2: "c", 3: "c"},
		held:    map[string]map[int32]int64{"a": {3: 5}, "b": {0: 9, 1: 9}, "c": {2: 9, 3: 9}},
		want:    "a:[3] b:[0 1] c:[2]",
	}, {
		// no holdings anywhere (the balancer then keeps the sticky plan):
		// balanced, each placement as good as another
		name: "nothing held", members: []string{"a", "b"}, tasks: 4,
		want: "balanced",
	}, {
		// a member that left: its claim does not count
		name: "claim of a member gone", members: []string{"a", "b"}, tasks: 2,
		current: map[int32]string{0: "gone", 1: "gone"},
		held:    map[string]map[int32]int64{"b": {0: 3}},
		want:    "a:[1] b:[0]",
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := placeTasks(c.members, c.tasks, c.current, c.held)
			if c.want == "balanced" {
				n := map[string]int{}
				for _, m := range got {
					n[m]++
				}
				if len(got) != int(c.tasks) || n["a"] != 2 || n["b"] != 2 {
					t.Fatalf("placed %s, want two each", placement(got))
				}
			} else if len(got) != int(c.tasks) || placement(got) != c.want {
				t.Fatalf("placed %s, want %s", placement(got), c.want)
			}
			// deterministic: the same inputs, the same placement
			for i := 0; i < 5; i++ {
				if again := placeTasks(c.members, c.tasks, maps.Clone(c.current), c.held); !maps.Equal(again, got) {
					t.Fatalf("placed %s, then %s", placement(got), placement(again))
				}
			}
		})
	}
}

func TestHoldingsEncoding(t *testing.T) {
	h := map[int32]int64{0: 1, 3: 1 << 40, 17: 12345}
	if got := decodeHoldings(encodeHoldings(h)); !maps.Equal(got, h) {
		t.Fatalf("round trip: %v, want %v", got, h)
	}
	if got := decodeHoldings("\xff"); len(got) != 0 {
		t.Fatalf("garbage decoded to %v", got)
	}
}

// The leader of a StateAwareBalancer group places the anchor's tasks by
// the holdings in the members' join metadata, behind an advertised URL's
// tag too, and the sticky balancer still reads the members' metadata
// (their subscriptions) with the holdings taken out.
func TestStateAwareBalancerPlacesByHoldings(t *testing.T) {
	topics := []string{"chronicle.sessions", "chronicle.evaluations"}
	join := func(id string, h map[int32]int64) kmsg.JoinGroupResponseMember {
		raw := CoPartitionedBalancer().JoinGroupMetadata(topics, nil, -1)
		if h != nil {
			raw = TagJoinMetadata(raw, holdingsMagic, encodeHoldings(h))
		}
		return kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: raw}
	}
	// ids in the order that would give a 0 and 2 without holdings
	members := []kmsg.JoinGroupResponseMember{join("a", map[int32]int64{1: 40, 3: 40}), join("b", map[int32]int64{0: 40, 2: 40})}
	bal, _, err := StateAwareBalancer(nil).MemberBalancer(members)
	if err != nil {
		t.Fatal(err)
	}
	into, err := balanceOrError(bal, map[string]int32{"chronicle.sessions": 4, "chronicle.evaluations": 4})
	if err != nil {
		t.Fatal(err)
	}
	plan, ok := into.(*kgo.BalancePlan)
	if !ok {
		t.Fatalf("plan %T", into)
	}
	got := plan.AsMemberIDMap()
	for _, tp := range topics {
		a, b := fmt.Sprint(got["a"][tp]), fmt.Sprint(got["b"][tp])
		if !(a == "[1 3]" || a == "[3 1]") || !(b == "[0 2]" || b == "[2 0]") {
			t.Fatalf("%s: a %s, b %s; want a [1 3], b [0 2]", tp, a, b)
		}
	}
	// without holdings the same members get the sticky balancer's plan
	bal, _, err = StateAwareBalancer(nil).MemberBalancer([]kmsg.JoinGroupResponseMember{join("a", nil), join("b", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if into, err = balanceOrError(bal, map[string]int32{"chronicle.sessions": 4, "chronicle.evaluations": 4}); err != nil {
		t.Fatal(err)
	}
	if got := into.(*kgo.BalancePlan).AsMemberIDMap(); len(got["a"]["chronicle.sessions"]) != 2 || len(got["b"]["chronicle.sessions"]) != 2 {
		t.Fatalf("sticky plan without holdings: %v", got)
	}
}

// The placement is optimal: on small random cases, no balanced assignment
// gives the new owners more of what they hold (brute force over every
// assignment), and among those with as much, none keeps more tasks with
// their current owners.
func TestPlaceTasksIsOptimal(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for c := 0; c < 300; c++ {
		k, n := 1+rng.Intn(3), 1+rng.Intn(6)
		var ms []string
		for j := 0; j < k; j++ {
			ms = append(ms, string(rune('a'+j)))
		}
		current := map[int32]string{}
		held := map[string]map[int32]int64{}
		for p := 0; p < n; p++ {
			if rng.Intn(2) == 0 {
				current[int32(p)] = ms[rng.Intn(k)]
			}
		}
		for _, m := range ms {
			held[m] = map[int32]int64{}
			for p := 0; p < n; p++ {
				if rng.Intn(2) == 0 {
					held[m][int32(p)] = int64(rng.Intn(50))
				}
			}
		}
		score := func(a []int) (h int64, kept int) {
			for p, i := range a {
				h += held[ms[i]][int32(p)]
				if current[int32(p)] == ms[i] {
					kept++
				}
			}
			return h, kept
		}
		got := placeTasks(ms, int32(n), current, held)
		ga := make([]int, n)
		for p, m := range got {
			ga[p] = slices.Index(ms, m)
		}
		gh, gk := score(ga)
		a := make([]int, n)
		var walk func(p int)
		walk = func(p int) {
			if p == n {
				cnt := make([]int, k)
				for _, i := range a {
					cnt[i]++
				}
				for _, x := range cnt {
					if x < n/k || x > n/k+1 {
						return
					}
				}
				if h, kept := score(a); h > gh || h == gh && kept > gk {
					t.Fatalf("case %d: placed %s (held %d, kept %d), but %v holds %d, keeps %d (current %v, held %v)", c, placement(got), gh, gk, a, h, kept, current, held)
				}
				return
			}
			for i := 0; i < k; i++ {
				a[p] = i
				walk(p + 1)
			}
		}
		walk(0)
	}
}
