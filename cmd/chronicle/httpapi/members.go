package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AdvertisingProtocol is the group protocol name of AdvertisingBalancer:
// franz-go's cooperative-sticky assignment with each member's advertised
// URL carried in its join metadata.
const AdvertisingProtocol = "chronicle-cooperative-sticky"

// advertiseMagic tags the URL in AdvertisingProtocol's member metadata
// (processors.TagJoinMetadata: magic, uvarint length of the URL, the URL,
// then the wrapped cooperative-sticky balancer's user data unchanged).
var advertiseMagic = []byte("chr1")

// AdvertisingBalancer is the processors' group balancer of a cluster
// member that publishes url (serve --advertise) to the other members, the
// way Kafka Streams publishes application.server for interactive queries:
// in the member metadata of the group protocol. The assignment is
// processors.CoPartitionedBalancer's (cooperative-sticky over tasks),
// unchanged: before balancing, the leader strips the URL from every
// member's user data and hands the members to that balancer as it would
// see them. The URL reaches
// every member through DescribeGroups (GroupMembers), always with the
// assignment of the same generation, so no extra topic or coordination
// service is needed.
//
// Use it first in kgo.Balancers, followed by kgo.CooperativeStickyBalancer:
// a group with an instance of an older Chronicle then agrees on plain
// cooperative-sticky (its members have no URL, so reads are not forwarded
// to them).
//
// held, when not nil, is this member's processors.Holdings, published as
// processors.StateAwareBalancer publishes it (the Runner of
// pipeline.Config.Holdings binds it to the store).
func AdvertisingBalancer(url string, held *processors.Holdings) kgo.GroupBalancer {
	if held == nil {
		return advertisingBalancer{inner: processors.CoPartitionedBalancer(), url: url}
	}
	return advertisingBalancer{inner: processors.StateAwareBalancer(held), url: url}
}

type advertisingBalancer struct {
	inner kgo.GroupBalancer
	url   string
}

func (b advertisingBalancer) ProtocolName() string { return AdvertisingProtocol }
func (b advertisingBalancer) IsCooperative() bool  { return b.inner.IsCooperative() }

func (b advertisingBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return b.inner.ParseSyncAssignment(assignment)
}

// JoinGroupMetadata is the sticky balancer's metadata with the URL put in
// front of its user data (processors.TagJoinMetadata).
func (b advertisingBalancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	return processors.TagJoinMetadata(b.inner.JoinGroupMetadata(interests, current, generation), advertiseMagic, b.url)
}

// MemberBalancer gives the sticky balancer every member's metadata with
// the URL removed.
func (b advertisingBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	plain, _ := processors.UntagMembers(members, advertiseMagic)
	return b.inner.MemberBalancer(plain)
}

// AdvertisedURL is the URL a member published with AdvertisingBalancer in
// its join metadata ("" when it joined without one).
func AdvertisedURL(m kadm.DescribedGroupMember) string {
	c, ok := m.Join.AsConsumer()
	if !ok {
		return ""
	}
	url, _, _ := processors.UntagUserData(advertiseMagic, c.UserData)
	return url
}

// DirectoryTTL is how long a described group (members, their URLs, the
// assignment) and the topics' partition counts are reused by the routes
// that forward to a partition's owner (1 s). A rebalance within it may
// send a read to the previous owner, which then answers from its own
// store (see "Running as a cluster" in the README).
const DirectoryTTL = time.Second

// groupView is the processors' group as the forwarding routes use it.
type groupView struct {
	self    string            // this instance's member id
	urls    map[string]string // member id → advertised URL ("" unknown)
	members []string          // member ids, sorted
	owner   map[tp]string     // partition → member id
	parts   map[string]int    // topic → partition count
	// topics are the topics the group reads (the members' subscriptions
	// and assignments): a partition of one of them without an owner is
	// one the group is moving, not one nobody reads.
	topics map[string]bool
	// state is the group's state when the coordinator described it
	// (Stable, PreparingRebalance, CompletingRebalance, Empty).
	state string
	// kept: the group was not Stable when described (or, with outage,
	// could not be described), and urls, members, owner and topics are
	// the last Stable view's (directory.stable).
	kept bool
	// outage: the brokers did not answer the describe (state "unknown").
	outage bool
	// blind: the group was not Stable when described, this instance has
	// not seen it Stable since it started, and other members are in it:
	// no partition's owner is known here (answered 503, see noOwner).
	blind bool
}

// groupStable is the coordinator's state of a group with an assignment
// (DescribeGroups shows the members' URLs and partitions only then).
const groupStable = "Stable"

type tp struct {
	topic string
	part  int32
}

// forwarding reports whether reads can be spread over the members: there
// is a member other than this instance, and every other one advertises a
// URL (a group shared with an instance of an older Chronicle has none:
// each instance then answers from its own store, as before). This
// instance need not be in the view: a member the group has not taken in
// yet (or has dropped) owns nothing and forwards to the owners.
func (v *groupView) forwarding() bool {
	others := false
	for _, m := range v.members {
		if m == v.self {
			continue
		}
		if v.urls[m] == "" {
			return false
		}
		others = true
	}
	return others
}

// ownerless reports whether partition p of topic, a topic the group
// reads, has no owner in v: the group is moving it (a cooperative
// rebalance assigns a partition to its new owner only in the round after
// its previous owner gave it up, and that owner left the group).
func (v *groupView) ownerless(topic string, p int32) bool {
	return v.topics[topic] && v.owner[tp{topic, p}] == ""
}

// complete reports whether every partition of topic has an owner in v (a
// topic the group does not read counts as complete: it is read locally).
func (v *groupView) complete(topic string) bool {
	for p := 0; p < v.parts[topic]; p++ {
		if v.ownerless(topic, int32(p)) {
			return false
		}
	}
	return true
}

// directory caches the groupView, or the error describing it, for
// DirectoryTTL, and keeps the last view described while the group was
// Stable for the rebalances that follow.
type directory struct {
	mu   sync.Mutex
	at   time.Time
	view *groupView
	err  error
	// stable is the last view described while the group was Stable
	// (owners carried forward, see settle); nil before the first.
	stable *groupView
	// stableAt is when stable was described: while the brokers do not
	// answer, it routes reads for at most the group's session timeout.
	stableAt time.Time
	// describing is the description under way, nil when none: one at a
	// time, however many reads wait for it (see groupView).
	describing *describeCall
	// joined: this instance got its first assignment since it started:
	// its engine owns a partition, or a description showed it so
	// (joined; see joinedGroup).
	joined bool
	// notJoined is why the last description did not show it ("" none).
	notJoined string
	// probedAt is when keepGroupViewFresh last started a probe (a
	// description before the first Stable view, see describeCall.probe).
	probedAt time.Time
	// othersSeen: the last description that came (in any state) showed
	// a member other than this instance (see wasCluster).
	othersSeen bool
}

// errNoAnswer is wrapped by groupView's error when the group's
// description did not come within DescribeTimeout.
var errNoAnswer = errors.New("no answer")

// brokersAway reports whether err, groupView's, says the brokers did not
// answer (no answer in time, a refused or broken connection), not that
// they answered with an error (an authorization failure, a coordinator
// loading, no such group): only then is a member's local "not found"
// unknown (localOrUnknown).
func brokersAway(err error) bool {
	var ne net.Error
	var fe *kgo.ErrFirstReadEOF
	return errors.Is(err, errNoAnswer) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.As(err, &fe)
}

// wasCluster reports whether this member was last seen Stable in a group
// with other members, or the group's last description (in any state)
// showed another member: a cluster, whose owners it cannot know once the
// brokers have been away longer than a session timeout (localOrUnknown).
// The second case is a member that restarted and never saw the group
// Stable before the brokers went: the group waits a session timeout for
// the member's old incarnation before it settles, and such a member
// answered from its own store, false 404s and a partial list with 200
// for the whole outage, where the others answered 503 (an operator's
// walkthrough, 2026-12-06: the broker stopped 10 s after a restart).
func (d *directory) wasCluster() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stable != nil && len(d.stable.members) > 1 || d.othersSeen
}

// settle turns a view just described into the one the routes use. The
// coordinator describes a group's members' URLs and assignment only while
// it is Stable (Kafka and kfake alike), so for the whole of a rebalance a
// description has no owner for any partition: routing by it answered
// every read locally (a member joining said 404 for existing sessions, a
// list on an existing member gave a partial page). So:
//
//   - Stable: it becomes the last Stable view. A partition it leaves
//     unassigned (between the two rounds of a cooperative rebalance the
//     partition a member gives up is nobody's) keeps its owner from the
//     last Stable view while that member is still in the group: it holds
//     the partition's rows (or did until the revoke, like any previous
//     owner in the cache window).
//   - not Stable, with a last Stable view: that view, with kept set (and
//     this instance's member id and the partition counts just read).
//   - not Stable, none seen yet (an instance that started during the
//     rebalance): the description, with blind set when another member is
//     in the group (alone, the local store is all there is).
func (d *directory) settle(v *groupView) *groupView {
	if v.state == groupStable {
		if last := d.stable; last != nil {
			// a member's URL by its member id, which a member keeps
			// while it stays in the group: a restarted broker (kfake
			// persists the group without the members' join metadata)
			// describes the same members with no URL until they next
			// join, and every instance answered from its own store, 404
			// for other members' sessions and partial lists, for minutes
			// (an operator's walkthrough)
			for _, m := range v.members {
				if v.urls[m] == "" && last.urls[m] != "" {
					v.urls[m] = last.urls[m]
				}
			}
			for k, m := range last.owner {
				if _, assigned := v.owner[k]; assigned {
					continue
				}
				if _, member := v.urls[m]; member {
					v.owner[k] = m
				}
			}
		}
		d.stable, d.stableAt = v, time.Now()
		return v
	}
	if last := d.stable; last != nil {
		kept := *last
		kept.self, kept.state, kept.parts, kept.kept = v.self, v.state, v.parts, true
		return &kept
	}
	for _, m := range v.members {
		if m != v.self {
			v.blind = true
		}
	}
	return v
}

// outageView is the view reads are routed by while the brokers do not
// answer: no rebalance can move a partition while they are away, and the
// members' HTTP still answers, so the last Stable view, marked kept and
// outage (state "unknown") with self as this instance's member id. Before,
// every instance answered from its own store: false 404s and partial
// lists for the whole broker outage (an operator's walkthrough). nil when
// there is none, or it was described ttl or more ago (the group's session
// timeout: an instance cut off from brokers the others still reach is
// evicted by then, and its view goes stale; a review): then the local
// store answers, as before.
func (d *directory) outageView(self string, ttl time.Duration) *groupView {
	if d.stable == nil || time.Since(d.stableAt) >= ttl {
		return nil
	}
	kept := *d.stable
	kept.self, kept.kept, kept.outage, kept.state = self, true, true, "unknown"
	return &kept
}

// DescribeTimeout bounds describing the group for the forwarding routes
// (2 s). When the brokers do not answer, the failure is kept for
// DirectoryTTL and reads are routed by the last Stable view meanwhile
// (for at most a session timeout; then, or without one, from the local
// store), so an outage costs a read at most this once per DirectoryTTL.
const DescribeTimeout = 2 * time.Second

// errNoGroup: the coordinator did not describe the group.
var errNoGroup = errors.New("the processors' group is not described")

// groupView returns the processors' group, described at most DirectoryTTL
// ago, as settle makes it: while the group rebalances, its last Stable
// view; while the brokers do not answer, that view too (an error only
// before the group was first seen Stable).
//
// It waits at most DescribeTimeout, however long franz-go takes, and
// holds no lock meanwhile: one describe runs at a time, every read that
// finds the cache stale waits for it until its deadline, and one that
// comes after the deadline while it still runs is answered at once as in
// an outage. Before, the describe ran under the directory's lock and
// franz-go kept it for 10 s against a broker that accepts connections and
// never answers (see within), so a read took 10 s, not 2, and concurrent
// reads queued behind it (7–10 s; an operator's walkthrough).
func (s *Server) groupView(ctx context.Context) (*groupView, error) {
	d := &s.dir
	d.mu.Lock()
	if !d.at.IsZero() && time.Since(d.at) < DirectoryTTL {
		defer d.mu.Unlock()
		return d.view, d.err
	}
	c := s.startDescribe()
	d.mu.Unlock()
	t := time.NewTimer(time.Until(c.deadline))
	defer t.Stop()
	select {
	case <-c.done:
		return c.view, c.err
	case <-t.C:
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-c.done:
		return c.view, c.err
	default:
	}
	if d.at.IsZero() || time.Since(d.at) >= DirectoryTTL { // not yet kept by another read
		d.record(nil, fmt.Errorf("describe group %s: %w within %v", s.groupName(), errNoAnswer, DescribeTimeout), s.P.Runner.MemberID(), s.sessionTimeout())
	}
	return d.view, d.err
}

// startDescribe returns the description of the group under way, started
// now when there is none. s.dir.mu is held.
func (s *Server) startDescribe() *describeCall {
	d := &s.dir
	if d.describing == nil {
		d.describing = &describeCall{done: make(chan struct{}), deadline: time.Now().Add(DescribeTimeout)}
		go s.describe(d.describing) // cached for every caller: not cut short by one leaving
	}
	d.describing.probe = false // a read waits for it: it is cached, whatever it finds
	return d.describing
}

// keepGroupViewFresh starts describing the group in the background when
// the cached description is DirectoryTTL old or more and none is under
// way, and returns at once; every request calls it (authenticate). The
// outage view lasts a session timeout from the last Stable description,
// and requests that look nothing up (those forwarded by another member,
// /healthz, writes) described nothing: a member serving mostly forwarded
// reads had no view left when the brokers stopped answering and answered
// a read for another member's session from its own store, a false 404
// (an operator's walkthrough; TestOutageViewOfAMemberServingForwardedReads).
func (s *Server) keepGroupViewFresh() {
	if s.P == nil || s.P.Runner == nil || s.ReadOnly {
		return
	}
	d := &s.dir
	d.mu.Lock()
	defer d.mu.Unlock()
	// only once a Stable view exists, which is what the outage view
	// needs kept fresh: before it (a member starting, the group forming),
	// a background description cached the group's PreparingRebalance
	// for the reads of the next DirectoryTTL, which answered 503 where
	// their own lookup a moment later found the group Stable (seven
	// cluster tests failed so in CI)
	if d.stable == nil {
		// but a probe: whether other members are in the group
		// (othersSeen, see wasCluster), caching no view unless it finds
		// the group Stable. A member that restarted, got its partitions
		// and served /healthz only until the brokers went had described
		// nothing, and answered from its own store, false 404s and a
		// partial list (an operator's re-test, 2026-12-06)
		if d.describing == nil && time.Since(d.probedAt) >= DirectoryTTL {
			d.probedAt = time.Now()
			d.describing = &describeCall{done: make(chan struct{}), deadline: time.Now().Add(DescribeTimeout), probe: true}
			go s.describe(d.describing)
		}
		return
	}
	if !d.at.IsZero() && time.Since(d.at) < DirectoryTTL {
		return
	}
	s.startDescribe()
}

// joined reports whether description v (as described, before settle)
// shows this instance's first assignment (directory.joined): the group
// Stable with this instance in it, owning a partition, or owning none
// while every partition of the group's topics has an owner; if not, why.
func joined(v *groupView) (bool, string) {
	switch {
	case v.state != groupStable:
		return false, "the group is " + v.state
	case !slices.Contains(v.members, v.self):
		return false, "this member (" + v.self + ") is not in it yet"
	}
	for _, m := range v.owner {
		if m == v.self {
			return true, ""
		}
	}
	for t := range v.topics {
		for p := 0; p < v.parts[t]; p++ {
			if v.ownerless(t, int32(p)) {
				return false, fmt.Sprintf("%s/%d has no owner yet", t, p)
			}
		}
	}
	return true, ""
}

// joinedGroup reports whether this instance got its first assignment of
// the processors' group since it started (directory.joined): its engine
// owns a partition, or a description showed the group Stable with this
// instance in it, owning a partition or, owning none, with every
// partition of the group's topics owned (joined: a member the group has
// no partition for, more members than partitions). Until then it looks
// the group up (groupView: at most DescribeTimeout) and says in why what
// is missing. A member joining a cooperative group is assigned nothing in
// the first round, and its partitions only in the second, once their
// owners gave them up: between the two, its engine saw an assignment
// (empty) and /healthz said "ok" with no partition (an operator's
// walkthrough).
func (s *Server) joinedGroup(ctx context.Context) (bool, string) {
	s.dir.mu.Lock()
	if len(s.P.Runner.Ownership().Partitions) > 0 { // assigned: no lookup needed
		s.dir.joined = true
	}
	joined := s.dir.joined
	s.dir.mu.Unlock()
	if joined {
		return true, ""
	}
	_, err := s.groupView(ctx)
	s.dir.mu.Lock()
	defer s.dir.mu.Unlock()
	switch {
	case s.dir.joined:
		return true, ""
	case err != nil:
		return false, err.Error()
	}
	return false, s.dir.notJoined
}

// describeCall is a description of the group under way (directory.describing).
type describeCall struct {
	done     chan struct{} // closed once view and err are set
	deadline time.Time     // its start + DescribeTimeout
	// probe: started by keepGroupViewFresh before any Stable view, and
	// no read waits for it: it caches nothing unless it finds the group
	// Stable, and notes othersSeen (guarded by directory.mu)
	probe bool
	view  *groupView
	err   error
}

// describe runs c and keeps its result in the directory's cache, even
// when the reads stopped waiting for it (a late answer is still the
// group's latest).
func (s *Server) describe(c *describeCall) {
	v, err := s.describeGroup(context.Background())
	d := &s.dir
	d.mu.Lock()
	d.finish(c, v, err, s.P.Runner.MemberID(), s.sessionTimeout())
	d.mu.Unlock()
	close(c.done)
}

// finish ends description c with its result, v or err: recorded (record),
// but for a probe no read joined that found no Stable group, which only
// notes othersSeen. d.mu is held.
func (d *directory) finish(c *describeCall, v *groupView, err error, self string, ttl time.Duration) {
	if c.probe && (err != nil || v.state != groupStable) {
		if err == nil {
			d.othersSeen = othersIn(v, self)
		}
		c.view, c.err = v, err
	} else {
		d.record(v, err, self, ttl)
		c.view, c.err = d.view, d.err
	}
	d.describing = nil
}

// othersIn reports whether description v shows a member other than self
// (with self "", not joined yet, more than one member).
func othersIn(v *groupView, self string) bool {
	if self == "" {
		return len(v.members) > 1
	}
	return slices.ContainsFunc(v.members, func(m string) bool { return m != self })
}

// record keeps a description of the group, v, or the error describing it
// (then the outage view, when there is one, for self and a session
// timeout of ttl) in the cache for DirectoryTTL. d.mu is held.
func (d *directory) record(v *groupView, err error, self string, ttl time.Duration) {
	switch {
	case err == nil:
		if !d.joined {
			d.joined, d.notJoined = joined(v)
		}
		d.othersSeen = othersIn(v, self)
		v = d.settle(v)
	default:
		if kept := d.outageView(self, ttl); kept != nil {
			v, err = kept, nil
		}
	}
	d.view, d.err, d.at = v, err, time.Now()
}

// describeGroup describes the group and lists the topics, bounded by
// DescribeTimeout in its context (which franz-go may overrun: groupView
// does not wait for it longer).
func (s *Server) describeGroup(ctx context.Context) (*groupView, error) {
	ctx, cancel := context.WithTimeout(ctx, DescribeTimeout)
	defer cancel()
	group := s.groupName()
	dg, err := s.P.Admin().DescribeGroups(ctx, group)
	if err == nil {
		err = dg.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	d, ok := dg[group]
	if !ok {
		return nil, errNoGroup
	}
	v := &groupView{self: s.P.Runner.MemberID(), urls: map[string]string{}, owner: map[tp]string{}, parts: map[string]int{}, topics: map[string]bool{}, state: d.State}
	for _, m := range d.Members {
		v.urls[m.MemberID] = AdvertisedURL(m)
		if m.MemberID == v.self && v.urls[m.MemberID] == "" {
			v.urls[m.MemberID] = s.Advertise // this instance's own, described without it
		}
		v.members = append(v.members, m.MemberID)
		if c, ok := m.Join.AsConsumer(); ok {
			for _, t := range c.Topics {
				v.topics[t] = true
			}
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				v.topics[t.Topic] = true
				for _, p := range t.Partitions {
					v.owner[tp{t.Topic, p}] = m.MemberID
				}
			}
		}
	}
	sortStrings(v.members)
	td, err := s.P.Admin().ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	for _, t := range td {
		if t.Err == nil {
			v.parts[t.Topic] = len(t.Partitions)
		}
	}
	return v, nil
}

// groupName is the processors' consumer group.
// keptWhy is the note an error adds when v is a kept view: how the
// request was routed (verb: "routed", "asked") and why.
func (v *groupView) keptWhy(verb string) string {
	switch {
	case v.outage:
		return " (the brokers do not answer: " + verb + " by the group's last Stable view)"
	case v.kept:
		return " (the group is rebalancing: " + verb + " by its last Stable view)"
	}
	return ""
}

// sessionTimeout is the processors' group session timeout the pipeline
// runs with (pipeline.Config.SessionTimeout; 0: franz-go's 45 s).
func (s *Server) sessionTimeout() time.Duration {
	if t := s.P.Config.SessionTimeout; t > 0 {
		return t
	}
	return 45 * time.Second
}

func (s *Server) groupName() string {
	if g := s.P.Config.Group; g != "" {
		return string(g)
	}
	return string(processors.ProcessorsGroup)
}

// partitionOf is the partition of key on a topic of n partitions, by the
// partitioner Chronicle's producer uses (franz-go's default: Kafka's
// murmur2 hash of the key, as kgo.StickyKeyPartitioner(nil) computes it).
func partitionOf(topic, key string, n int) int32 {
	if n <= 1 {
		return 0
	}
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, n))
}

// MemberOpts are the franz-go options a cluster member's pipeline runs
// with (pipeline.Config.SubscriberOpts): AdvertisingBalancer(url, held),
// then the co-partitioned balancer without URLs, then plain
// cooperative-sticky, for a group shared with older instances. Pass the
// same held as pipeline.Config.Holdings (nil: none published).
func MemberOpts(url string, held *processors.Holdings) []kgo.Opt {
	inner := processors.CoPartitionedBalancer()
	if held != nil {
		inner = processors.StateAwareBalancer(held)
	}
	return []kgo.Opt{kgo.Balancers(AdvertisingBalancer(url, held), inner, kgo.CooperativeStickyBalancer())}
}
