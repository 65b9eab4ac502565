package httpapi_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
)

// GET /v1/sessions/{id}/improvement on a cluster: the chain follows
// parent_session to parents other members project, asking each owner for
// its view (one hop per request; the member answering walks on from the
// first attempt's parent_session), so the chain is the same whichever
// member answers and whoever owns each attempt. Three attempts on the
// partitions of three members; and two sessions naming each other as
// parent, whose chains end (each session once) instead of bouncing
// between members. Before, the chain stopped at the first parent the
// answering member did not project.
func TestImprovementChainAcrossMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	m3 := startMember(ctx, t, "m3", m1.p.Broker.Addrs(), time.Second)
	ms := []*member{m1, m2, m3}
	waitCluster(t, ms)
	owner := map[int32]*member{}
	for _, m := range ms {
		for _, op := range m.p.Runner.Ownership().Partitions {
			if op.Topic == string(events.TopicSessions) {
				owner[op.Partition] = m
			}
		}
	}
	ownerOf := func(id string) *member {
		return owner[int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicSessions)).Partition(&kgo.Record{Key: []byte(events.EntityKey("project:a", id))}, 4))]
	}
	// three sample sessions projected by three different members
	var picked []int
	var ids []string
	used := map[*member]bool{}
	for i := 0; i < 60 && len(picked) < 3; i++ {
		_, id := sessionIn(t, i, "project:a", "chain")
		if m := ownerOf(id); m != nil && !used[m] {
			used[m] = true
			picked, ids = append(picked, i), append(ids, id)
		}
	}
	if len(picked) != 3 {
		t.Fatalf("no three sample sessions on partitions of three members (owners %v)", owner)
	}
	revise := func(envs []events.Envelope, iteration int, parent string) []events.Envelope {
		for k := range envs {
			if envs[k].Type == events.SessionStarted {
				var d map[string]any
				_ = json.Unmarshal(envs[k].Data, &d)
				d["iteration"], d["parent_session"] = iteration, parent
				envs[k].Data, _ = json.Marshal(d)
			}
		}
		return envs
	}
	var all []events.Envelope
	for k, i := range picked {
		envs, _ := sessionIn(t, i, "project:a", "chain")
		if k > 0 {
			envs = revise(envs, k+1, ids[k-1])
		}
		all = append(all, envs...)
	}
	// a cycle: two more sessions, each the other's parent
	var cyc []string
	for i := 60; i < 62; i++ {
		envs, id := sessionIn(t, i, "project:a", "cycle")
		cyc = append(cyc, id)
		all = append(all, envs...)
	}
	for k := range all {
		for j, id := range cyc {
			if all[k].SessionID == id && all[k].Type == events.SessionStarted {
				all[k] = revise([]events.Envelope{all[k]}, 2, cyc[1-j])[0]
			}
		}
	}
	if err := m1.p.Producer.Publish(ctx, all...); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, ms)
	type step struct {
		SessionID string `json:"session_id"`
		Iteration int    `json:"iteration"`
		Evaluated bool   `json:"evaluated"`
	}
	chain := func(m *member, id string) []step {
		t.Helper()
		code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id)+"/improvement")
		var v struct {
			Chain []step `json:"chain"`
		}
		if code != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("%s: %d %s", m.name, code, body)
		}
		return v.Chain
	}
	for _, m := range ms {
		got := chain(m, ids[2])
		if len(got) != 3 {
			t.Fatalf("%s: chain %+v, want %v", m.name, got, ids)
		}
		for k, st := range got {
			if st.SessionID != ids[k] || st.Iteration != k+1 || !st.Evaluated {
				t.Fatalf("%s: chain %+v, want %v with iterations 1, 2, 3, evaluated", m.name, got, ids)
			}
		}
		for j, id := range cyc {
			if got := chain(m, id); len(got) != 2 || got[0].SessionID != cyc[1-j] || got[1].SessionID != id {
				t.Fatalf("%s: chain of %s in a cycle: %+v, want [%s %s]", m.name, id, got, cyc[1-j], id)
			}
		}
	}
}
