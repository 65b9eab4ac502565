package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdvertisingBalancerAssignsAsSticky: for the same members (each with
// partitions it owns from the previous generation), the advertising
// balancer's assignment is byte for byte cooperative-sticky's, and its
// join metadata carries the URL where DescribeGroups shows it.
func TestAdvertisingBalancerAssignsAsSticky(t *testing.T) {
	topics := []string{"chronicle.sessions", "chronicle.memories"}
	current := []map[string][]int32{
		{"chronicle.sessions": {0, 1}, "chronicle.memories": {0}},
		{"chronicle.sessions": {2, 3}},
		nil, // a new member
	}
	var wrapped, plain []kmsg.JoinGroupResponseMember
	for i, cur := range current {
		id := fmt.Sprintf("member-%d", i)
		url := fmt.Sprintf("http://chronicle-%d:8080", i)
		wm := AdvertisingBalancer(url, nil).JoinGroupMetadata(topics, cur, 7)
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(wm); err != nil {
			t.Fatal(err)
		}
		if got, _, ok := processors.UntagUserData(advertiseMagic, meta.UserData); !ok || got != url {
			t.Fatalf("member %d: metadata carries %q, want %q", i, got, url)
		}
		wrapped = append(wrapped, kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: wm})
		plain = append(plain, kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: kgo.CooperativeStickyBalancer().JoinGroupMetadata(topics, cur, 7)})
	}
	parts := map[string]int32{"chronicle.sessions": 4, "chronicle.memories": 1}
	wb, wt, err := AdvertisingBalancer("", nil).MemberBalancer(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	pb, pt, err := kgo.CooperativeStickyBalancer().MemberBalancer(plain)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(wt, pt) {
		t.Fatalf("topics %v vs %v", wt, pt)
	}
	// kgo balances through BalanceOrError (and sets the balance info) on
	// the balancer MemberBalancer returns: the wrapper returns the sticky one
	wa, err := wb.(kgo.GroupMemberBalancerOrError).BalanceOrError(parts)
	if err != nil {
		t.Fatal(err)
	}
	pa, err := pb.(kgo.GroupMemberBalancerOrError).BalanceOrError(parts)
	if err != nil {
		t.Fatal(err)
	}
	got, want := wa.IntoSyncAssignment(), pa.IntoSyncAssignment()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("assignment differs from cooperative-sticky's:\n%v\n%v", got, want)
	}
	if len(got) != 3 {
		t.Fatalf("%d members assigned", len(got))
	}
}

// spyBalancer records the members its MemberBalancer is given.
type spyBalancer struct {
	kgo.GroupBalancer
	got *[]kmsg.JoinGroupResponseMember
}

func (s spyBalancer) MemberBalancer(m []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	*s.got = m
	return s.GroupBalancer.MemberBalancer(m)
}

// TestAdvertisingBalancerHandsStickyItsOwnMetadata: the wrapped balancer
// receives each member's metadata exactly as cooperative-sticky itself
// would have encoded it (the URL removed).
func TestAdvertisingBalancerHandsStickyItsOwnMetadata(t *testing.T) {
	topics := []string{"chronicle.sessions"}
	cur := map[string][]int32{"chronicle.sessions": {1, 3}}
	var got []kmsg.JoinGroupResponseMember
	b := advertisingBalancer{inner: spyBalancer{kgo.CooperativeStickyBalancer(), &got}, url: "http://a:1"}
	members := []kmsg.JoinGroupResponseMember{
		{MemberID: "m0", ProtocolMetadata: b.JoinGroupMetadata(topics, cur, 3)},
		{MemberID: "m1", ProtocolMetadata: kgo.CooperativeStickyBalancer().JoinGroupMetadata(topics, nil, 3)}, // no URL: passed as is
	}
	if _, _, err := b.MemberBalancer(members); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{kgo.CooperativeStickyBalancer().JoinGroupMetadata(topics, cur, 3), members[1].ProtocolMetadata}
	for i := range want {
		if string(got[i].ProtocolMetadata) != string(want[i]) {
			t.Fatalf("member %d: the sticky balancer got %x, want %x", i, got[i].ProtocolMetadata, want[i])
		}
	}
	if string(members[0].ProtocolMetadata) == string(want[0]) {
		t.Fatal("the join metadata carries no URL")
	}
}

// TestDirectoryKeepsLastStableView: the coordinator describes no URL or
// partition while the group rebalances, so the directory routes by the
// last Stable view then (kept), carries an owner forward over a Stable
// view that leaves its partition unassigned (between the two rounds of a
// cooperative rebalance) while that member is still in the group, and,
// with no Stable view seen, is blind when other members are in the group
// and not when this instance is alone.
func TestDirectoryKeepsLastStableView(t *testing.T) {
	const topic = "chronicle.sessions"
	stable := func(owner map[int32]string, urls map[string]string) *groupView {
		v := &groupView{self: "a", urls: urls, owner: map[tp]string{}, parts: map[string]int{topic: 4}, topics: map[string]bool{topic: true}, state: groupStable}
		for m := range urls {
			v.members = append(v.members, m)
		}
		sortStrings(v.members)
		for p, m := range owner {
			v.owner[tp{topic, p}] = m
		}
		return v
	}
	rebalancing := func(members ...string) *groupView {
		v := &groupView{self: "a", urls: map[string]string{}, owner: map[tp]string{}, parts: map[string]int{topic: 4}, topics: map[string]bool{}, state: "PreparingRebalance"}
		for _, m := range members {
			v.urls[m] = ""
			v.members = append(v.members, m)
		}
		return v
	}
	urls := map[string]string{"a": "http://a", "b": "http://b"}

	var alone directory
	if v := alone.settle(rebalancing("a")); v.blind || v.kept || v.forwarding() {
		t.Fatalf("alone while rebalancing: %+v, want the local store", v)
	}
	var d directory
	if v := d.settle(rebalancing("a", "b")); !v.blind || v.forwarding() {
		t.Fatalf("no Stable view yet, another member: %+v, want blind", v)
	}
	v := d.settle(stable(map[int32]string{0: "a", 1: "a", 2: "b", 3: "b"}, urls))
	if v.blind || v.kept || !v.forwarding() || !v.complete(topic) {
		t.Fatalf("Stable: %+v", v)
	}
	v = d.settle(rebalancing("a", "b", "c"))
	if !v.kept || v.blind || !v.forwarding() || v.state != "PreparingRebalance" || v.owner[tp{topic, 2}] != "b" || v.urls["b"] != "http://b" || !v.complete(topic) {
		t.Fatalf("rebalancing after a Stable view: %+v, want the last Stable view kept", v)
	}
	// the first round of the cooperative rebalance: b gives up 3 (to c)
	v = d.settle(stable(map[int32]string{0: "a", 1: "a", 2: "b"}, map[string]string{"a": "http://a", "b": "http://b", "c": "http://c"}))
	if v.owner[tp{topic, 3}] != "b" || !v.complete(topic) {
		t.Fatalf("partition 3 unassigned between the rounds: owner %q, want b's carried forward", v.owner[tp{topic, 3}])
	}
	// b left: its partitions have no owner until the rebalance gives them out
	v = d.settle(stable(map[int32]string{0: "a", 1: "a"}, map[string]string{"a": "http://a", "c": "http://c"}))
	if !v.ownerless(topic, 2) || !v.ownerless(topic, 3) || v.complete(topic) {
		t.Fatalf("b left: owners %v, want 2 and 3 without one", v.owner)
	}
	if v.ownerless("chronicle.digest", 0) {
		t.Fatal("a topic the group does not read has no owner to wait for")
	}
	// this instance not (yet) in the view: it forwards to the owners
	v = d.settle(stable(map[int32]string{0: "b"}, map[string]string{"b": "http://b"}))
	if !v.forwarding() {
		t.Fatal("a view without this instance: not forwarding to its one member")
	}
}

// TestDirectoryKeepsMembersURLs: a Stable description whose members show
// no URL (a restarted embedded broker persists the group without the
// members' join metadata, and members that stay do not join again) keeps
// each member's URL from the last Stable view by member id, so reads are
// still forwarded; before, the group read as one with older instances
// and every instance answered from its own store (false 404s, partial
// lists). A member never seen with a URL stays without one.
func TestDirectoryKeepsMembersURLs(t *testing.T) {
	const topic = "chronicle.sessions"
	view := func(urls map[string]string) *groupView {
		v := &groupView{self: "a", urls: urls, owner: map[tp]string{{topic, 0}: "a", {topic, 1}: "b"}, parts: map[string]int{topic: 2}, topics: map[string]bool{topic: true}, state: groupStable}
		for m := range urls {
			v.members = append(v.members, m)
		}
		sortStrings(v.members)
		return v
	}
	var d directory
	d.settle(view(map[string]string{"a": "http://a", "b": "http://b"}))
	v := d.settle(view(map[string]string{"a": "", "b": "", "c": ""}))
	if v.urls["a"] != "http://a" || v.urls["b"] != "http://b" || v.urls["c"] != "" {
		t.Fatalf("urls after a description without them: %v", v.urls)
	}
	if v.forwarding() {
		t.Fatal("c never showed a URL (an older instance): not forwarding")
	}
	v = d.settle(view(map[string]string{"a": "", "b": ""}))
	if !v.forwarding() || v.urls["b"] != "http://b" {
		t.Fatalf("the same members without URLs: forwarding %v, urls %v", v.forwarding(), v.urls)
	}
}

// TestFanOutMarksItsLocalRequest: a fan-out's request to this instance
// itself carries FanOutHeader as the other members' requests do, so
// ownedOnly names the scope it read the entity in (heldScopeHeader) and
// fanOutEntity takes this instance's 200 and another member's for one key
// as one entity; without the mark, the two read as the id in two scopes:
// a false 409 (a walkthrough of a broker restart saw one).
func TestFanOutMarksItsLocalRequest(t *testing.T) {
	s := &Server{}
	v := &groupView{self: "me", members: []string{"me"}, urls: map[string]string{"me": "http://127.0.0.1:1"}}
	for _, mark := range []bool{true, false} {
		var got string
		local := func(w http.ResponseWriter, r *http.Request) {
			got = r.Header.Get(FanOutHeader)
			w.WriteHeader(http.StatusOK)
		}
		s.fanOut(httptest.NewRequest(http.MethodGet, "/v1/sessions/x", nil), v, local, mark)
		if (got != "") != mark {
			t.Errorf("fan-out mark %v: the local request's %s is %q", mark, FanOutHeader, got)
		}
	}
}

// TestOutageViewLastsASessionTimeout: while the brokers do not answer,
// reads are routed by the last Stable view for at most the group's
// session timeout after it was described (an instance cut off from the
// brokers is evicted by then); none before the first Stable view.
func TestOutageViewLastsASessionTimeout(t *testing.T) {
	var d directory
	if v := d.outageView("a", time.Minute); v != nil {
		t.Fatalf("no Stable view yet: %+v", v)
	}
	d.settle(&groupView{self: "a", urls: map[string]string{"a": "http://a", "b": "http://b"}, members: []string{"a", "b"}, owner: map[tp]string{}, parts: map[string]int{}, topics: map[string]bool{}, state: groupStable})
	v := d.outageView("a2", time.Minute)
	if v == nil || !v.kept || !v.outage || v.self != "a2" || v.state != "unknown" || !v.forwarding() {
		t.Fatalf("outage view: %+v", v)
	}
	d.stableAt = time.Now().Add(-2 * time.Minute)
	if v := d.outageView("a", time.Minute); v != nil {
		t.Fatalf("a view described 2 min ago, session timeout 1 min: %+v", v)
	}
}
