package httpapi

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/twmb/franz-go/pkg/kadm"
)

// ClusterMember is one member of the processors' consumer group, as the
// group coordinator describes it.
type ClusterMember struct {
	MemberID   string `json:"member_id"`
	ClientID   string `json:"client_id"`
	ClientHost string `json:"client_host"`
	// URL is the API URL the member advertises (serve --advertise),
	// published in its group join metadata (AdvertisingBalancer); "" for
	// a member that joined without one.
	URL string `json:"url"`
	// Self marks this instance's member.
	Self bool `json:"self"`
	// Assigned are its partitions by topic.
	Assigned map[string][]int32 `json:"assigned"`
}

// ClusterPartition is one partition of a topic the processors read.
type ClusterPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Owner is the member id the group assigned it to ("" when none).
	Owner string `json:"owner"`
	// Lag is the largest of the topic's processors' lags (processors.Lag:
	// end − max(this store's position, the group's committed offset)).
	Lag int64 `json:"lag"`
	End int64 `json:"end"`
	// Restore is set on partitions this instance owns: its stored
	// position at assignment, the end offset then, and how far it is.
	Restore *ClusterRestore `json:"restore,omitempty"`
	// Standby is set on partitions this instance keeps a standby replica
	// of (serve --standby-replicas): how far its copy is.
	Standby *ClusterStandby `json:"standby,omitempty"`
}

// ClusterStandby is this instance's standby replica of a partition another
// member owns (processors.StandbyPartition).
type ClusterStandby struct {
	Next int64 `json:"next"`
	End  int64 `json:"end"` // -1: not fetched yet
	Lag  int64 `json:"lag"`
}

// ClusterRestore is the restore progress of a partition this instance
// owns (processors.OwnedPartition).
type ClusterRestore struct {
	From       int64     `json:"from"`
	End        int64     `json:"end"` // -1: unknown
	Next       int64     `json:"next"`
	Remaining  int64     `json:"remaining"`
	AssignedAt time.Time `json:"assigned_at"` // in UTC, as the API's other times
}

// ClusterView is GET /v1/cluster.
type ClusterView struct {
	Group       string             `json:"group"`
	State       string             `json:"state"` // the coordinator's group state (Stable, PreparingRebalance, …)
	Self        string             `json:"self"`  // this instance's member id
	Advertise   string             `json:"advertise"`
	Rebalancing bool               `json:"rebalancing"`
	Members     []ClusterMember    `json:"members"`
	Partitions  []ClusterPartition `json:"partitions"`
	// StandbyReplicas is this instance's --standby-replicas and Standbys
	// the partitions it keeps standby replicas of, with their owner and
	// lag (empty without).
	StandbyReplicas int                           `json:"standby_replicas"`
	Standbys        []processors.StandbyPartition `json:"standbys"`
}

// cluster serves GET /v1/cluster: the members of the processors' group
// (kadm DescribeGroups) with the URL each advertises, this instance's
// advertised URL, and per partition
// its owner, lag and, for partitions owned here, restore progress, for
// partitions kept here as standby replicas, the standby's lag. The
// view spans every scope: it needs a token that reads "*".
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	if needsAll(w, r) {
		return
	}
	group := string(processors.ProcessorsGroup)
	// 5 s in all, even while franz-go still waits for a broker (within)
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	dg, err := processors.Within(ctx, 5*time.Second, "broker", func(ctx context.Context) (kadm.DescribedGroups, error) {
		dg, err := s.P.Admin().DescribeGroups(ctx, group)
		if err == nil {
			err = dg.Error()
		}
		return dg, err
	})
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, "describe group %s: %v", group, err)
		return
	}
	lag, err := processors.Within(ctx, 5*time.Second, "broker", s.P.Lag)
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, "lag: %v", err)
		return
	}
	own := s.P.Runner.Ownership()
	v := ClusterView{Group: group, State: dg[group].State, Self: s.P.Runner.MemberID(), Advertise: s.Advertise,
		Rebalancing: own.Rebalancing, Members: []ClusterMember{}, Partitions: []ClusterPartition{}}
	owner := map[tp]string{}
	for _, m := range dg[group].Members {
		cm := ClusterMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, URL: AdvertisedURL(m), Self: m.MemberID == v.Self, Assigned: map[string][]int32{}}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				ps := append([]int32(nil), t.Partitions...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				cm.Assigned[t.Topic] = ps
				for _, p := range ps {
					owner[tp{t.Topic, p}] = m.MemberID
				}
			}
		}
		v.Members = append(v.Members, cm)
	}
	sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].MemberID < v.Members[j].MemberID })
	v.StandbyReplicas = s.P.Config.StandbyReplicas
	v.Standbys = s.P.Runner.Standbys()
	standby := map[tp]processors.StandbyPartition{}
	for _, sp := range v.Standbys {
		standby[tp{sp.Topic, sp.Partition}] = sp
	}
	restore := map[tp]processors.OwnedPartition{}
	for _, p := range own.Partitions {
		restore[tp{p.Topic, p.Partition}] = p
	}
	idx := map[tp]int{}
	for _, l := range lag {
		k := tp{l.Topic, l.Partition}
		i, ok := idx[k]
		if !ok {
			i = len(v.Partitions)
			idx[k] = i
			cp := ClusterPartition{Topic: l.Topic, Partition: l.Partition, Owner: owner[k], End: l.End}
			if op, ok := restore[k]; ok {
				cp.Restore = &ClusterRestore{From: op.RestoreFrom, End: op.RestoreEnd, Next: op.Next, Remaining: op.RestoreRemaining(), AssignedAt: op.AssignedAt.UTC()}
			}
			if sp, ok := standby[k]; ok {
				cp.Standby = &ClusterStandby{Next: sp.Next, End: sp.End, Lag: sp.Lag}
			}
			v.Partitions = append(v.Partitions, cp)
		}
		v.Partitions[i].Lag = max(v.Partitions[i].Lag, l.Lag)
	}
	sort.Slice(v.Partitions, func(i, j int) bool {
		a, b := v.Partitions[i], v.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	writeJSON(w, http.StatusOK, v)
}
