package httpapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
)

// TestClusterView: two instances (the second a pipeline against the
// first's broker, its own store) in the processors' group. Each one's GET
// /v1/cluster lists both members with their client hosts, marks itself,
// shows its advertised URL, gives every partition of chronicle.sessions
// one owner, the two members' assignments together cover the partitions
// exactly once, and the partitions it owns carry restore progress, done
// once caught up.
func TestClusterView(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	p1, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p1.Close() })
	body, _ := sessionJSON(t, 0)
	srv1 := httptest.NewServer(conforming(t, (&httpapi.Server{P: p1, Advertise: "http://chronicle-1:8080"}).Handler()))
	t.Cleanup(srv1.Close)
	if code, m := post(t, srv1, body); code != 202 {
		t.Fatalf("POST: %d %v", code, m)
	}
	p2, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: p1.Broker.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p2.Close() })
	srv2 := httptest.NewServer(conforming(t, (&httpapi.Server{P: p2, Advertise: "http://chronicle-2:8080"}).Handler()))
	t.Cleanup(srv2.Close)

	for i, srv := range []*httptest.Server{srv1, srv2} {
		want := fmt.Sprintf("http://chronicle-%d:8080", i+1)
		deadline := time.Now().Add(20 * time.Second)
		for {
			why := checkCluster(t, srv, want)
			if why == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d: %s", i+1, why)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func checkCluster(t *testing.T, srv *httptest.Server, advertise string) string {
	var v httpapi.ClusterView
	if code := get(t, srv, "/v1/cluster", &v); code != 200 {
		return fmt.Sprintf("GET /v1/cluster: %d", code)
	}
	if v.Advertise != advertise || v.Self == "" || v.Group != "chronicle.processors" {
		return fmt.Sprintf("view %+v: advertise %s expected", v, advertise)
	}
	if len(v.Members) != 2 {
		return fmt.Sprintf("%d members: %+v", len(v.Members), v.Members)
	}
	selfSeen := 0
	var assigned []int32
	for _, m := range v.Members {
		if m.Self {
			selfSeen++
			if m.MemberID != v.Self {
				return "self flag on another member"
			}
		}
		if m.ClientHost == "" {
			return fmt.Sprintf("member %s has no client host", m.MemberID)
		}
		assigned = append(assigned, m.Assigned[string(events.TopicSessions)]...)
	}
	sort.Slice(assigned, func(i, j int) bool { return assigned[i] < assigned[j] })
	if selfSeen != 1 || fmt.Sprint(assigned) != "[0 1 2 3]" {
		return fmt.Sprintf("self seen %d times; sessions partitions assigned %v", selfSeen, assigned)
	}
	owned := 0
	for _, p := range v.Partitions {
		if p.Topic != string(events.TopicSessions) {
			continue
		}
		if p.Owner == "" {
			return fmt.Sprintf("partition %d has no owner", p.Partition)
		}
		if (p.Owner == v.Self) != (p.Restore != nil) {
			return fmt.Sprintf("partition %d owned by %s: restore %+v (self %s)", p.Partition, p.Owner, p.Restore, v.Self)
		}
		if p.Restore != nil {
			owned++
			if p.Restore.Remaining != 0 || p.Lag != 0 {
				return fmt.Sprintf("partition %d not restored yet: %+v lag %d", p.Partition, p.Restore, p.Lag)
			}
		}
	}
	if owned == 0 {
		return "this instance owns no sessions partition"
	}
	return ""
}

// TestClusterViewStandbys: the second instance runs with one standby
// replica (the first, on the embedded broker, cannot: it has no
// --brokers). Its GET /v1/cluster lists as standbys exactly the partitions
// the first owns, each with the first as owner and, once caught up, lag 0,
// on the partition's row too; its /healthz lists them and
// chronicle_standby_lag_records has one series (0) per standby partition;
// the first lists none.
func TestClusterViewStandbys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // setup of two pipelines under -race on a loaded machine took over 25 s once
	defer cancel()
	if _, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", StandbyReplicas: 1}); err == nil || !strings.Contains(err.Error(), "StandbyReplicas") {
		t.Fatalf("standby replicas on the embedded broker: error %v, want one naming StandbyReplicas", err)
	}
	p1, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), KafkaListen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p1.Close() })
	srv1 := httptest.NewServer(conforming(t, (&httpapi.Server{P: p1}).Handler()))
	t.Cleanup(srv1.Close)
	for i := range 4 {
		body, _ := sessionJSON(t, i)
		if code, m := post(t, srv1, body); code != 202 {
			t.Fatalf("POST: %d %v", code, m)
		}
	}
	p2, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Brokers: p1.Broker.Addrs(), StandbyReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p2.Close() })
	srv2 := httptest.NewServer(conforming(t, (&httpapi.Server{P: p2}).Handler()))
	t.Cleanup(srv2.Close)

	deadline := time.Now().Add(20 * time.Second)
	for {
		why := func() string {
			var v1, v2 httpapi.ClusterView
			if code := get(t, srv1, "/v1/cluster", &v1); code != 200 || len(v1.Members) != 2 {
				return fmt.Sprintf("instance 1: GET /v1/cluster %d, %d members", code, len(v1.Members))
			}
			if len(v1.Standbys) != 0 || v1.StandbyReplicas != 0 {
				return fmt.Sprintf("instance 1 (no standby replicas) lists %d: %+v", v1.StandbyReplicas, v1.Standbys)
			}
			if code := get(t, srv2, "/v1/cluster", &v2); code != 200 || v2.StandbyReplicas != 1 {
				return fmt.Sprintf("instance 2: GET /v1/cluster %d, standby_replicas %d", code, v2.StandbyReplicas)
			}
			var owns1 []string
			for _, m := range v2.Members {
				if m.MemberID == v1.Self {
					for topic, ps := range m.Assigned {
						for _, p := range ps {
							owns1 = append(owns1, fmt.Sprintf("%s/%d", topic, p))
						}
					}
				}
			}
			var sb []string
			for _, s := range v2.Standbys {
				if s.Owner != v1.Self || s.Lag != 0 || s.End < 0 {
					return fmt.Sprintf("instance 2's standby %+v: want owner %s, caught up", s, v1.Self)
				}
				sb = append(sb, fmt.Sprintf("%s/%d", s.Topic, s.Partition))
			}
			sort.Strings(owns1)
			sort.Strings(sb)
			if len(owns1) == 0 || fmt.Sprint(sb) != fmt.Sprint(owns1) {
				return fmt.Sprintf("instance 2's standbys %v, instance 1 owns %v", sb, owns1)
			}
			for _, p := range v2.Partitions {
				if (p.Owner == v1.Self) != (p.Standby != nil) {
					return fmt.Sprintf("partition %s/%d owned by %s: standby %+v", p.Topic, p.Partition, p.Owner, p.Standby)
				}
			}
			var h struct {
				Standbys []processors.StandbyPartition `json:"standbys"`
			}
			if code := get(t, srv2, "/healthz", &h); code != 200 || len(h.Standbys) != len(sb) {
				return fmt.Sprintf("instance 2's /healthz %d lists %d standbys, want %d", code, len(h.Standbys), len(sb))
			}
			mfs, err := p2.Registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			series := 0
			for _, mf := range mfs {
				if mf.GetName() == "chronicle_standby_lag_records" {
					for _, m := range mf.GetMetric() {
						series++
						if v := m.GetGauge().GetValue(); v != 0 {
							return fmt.Sprintf("chronicle_standby_lag_records %v = %v, want 0", m.GetLabel(), v)
						}
					}
				}
			}
			if series != len(sb) {
				return fmt.Sprintf("chronicle_standby_lag_records has %d series, want one per standby partition (%d)", series, len(sb))
			}
			return ""
		}()
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
