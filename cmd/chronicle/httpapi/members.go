package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
func AdvertisingBalancer(url string) kgo.GroupBalancer {
	return advertisingBalancer{inner: processors.CoPartitionedBalancer(), url: url}
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
}

type tp struct {
	topic string
	part  int32
}

// forwarding reports whether reads can be spread over the members: more
// than one member, and every other one advertises a URL (a group shared
// with an instance of an older Chronicle has none: each instance then
// answers from its own store, as before).
func (v *groupView) forwarding() bool {
	if len(v.members) < 2 {
		return false
	}
	for _, m := range v.members {
		if m != v.self && v.urls[m] == "" {
			return false
		}
	}
	return true
}

// directory caches the groupView, or the error describing it, for
// DirectoryTTL.
type directory struct {
	mu   sync.Mutex
	at   time.Time
	view *groupView
	err  error
}

// DescribeTimeout bounds describing the group for the forwarding routes
// (2 s). When the brokers do not answer, the error is kept for
// DirectoryTTL and reads are answered from the local store meanwhile, so
// an outage costs a read at most this once per DirectoryTTL.
const DescribeTimeout = 2 * time.Second

// errNoGroup: the coordinator did not describe the group.
var errNoGroup = errors.New("the processors' group is not described")

// groupView returns the processors' group, described at most DirectoryTTL
// ago.
func (s *Server) groupView(ctx context.Context) (*groupView, error) {
	s.dir.mu.Lock()
	defer s.dir.mu.Unlock()
	if !s.dir.at.IsZero() && time.Since(s.dir.at) < DirectoryTTL {
		return s.dir.view, s.dir.err
	}
	v, err := s.describeGroup(context.WithoutCancel(ctx)) // cached for every caller: not cut short by this one leaving
	s.dir.view, s.dir.err, s.dir.at = v, err, time.Now()
	return v, err
}

func (s *Server) describeGroup(ctx context.Context) (*groupView, error) {
	ctx, cancel := context.WithTimeout(ctx, DescribeTimeout)
	defer cancel()
	group := string(processors.ProcessorsGroup)
	if g := s.P.Config.Group; g != "" {
		group = string(g)
	}
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
	v := &groupView{self: s.P.Runner.MemberID(), urls: map[string]string{}, owner: map[tp]string{}, parts: map[string]int{}}
	for _, m := range d.Members {
		v.urls[m.MemberID] = AdvertisedURL(m)
		v.members = append(v.members, m.MemberID)
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
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
// with (pipeline.Config.SubscriberOpts): AdvertisingBalancer(url), then
// the co-partitioned balancer without URLs, then plain cooperative-sticky,
// for a group shared with older instances.
func MemberOpts(url string) []kgo.Opt {
	return []kgo.Opt{kgo.Balancers(AdvertisingBalancer(url), processors.CoPartitionedBalancer(), kgo.CooperativeStickyBalancer())}
}
