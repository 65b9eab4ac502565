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
// parent_session to a parent another member projects, asking that member
// for its view (one hop), so the chain is the same whichever member
// answers and whoever owns the parent. Before, the chain stopped at the
// first parent this member did not project.
func TestImprovementChainAcrossMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	ms := []*member{m1, m2}
	waitCluster(t, ms)
	owner := map[int32]*member{}
	for _, m := range ms {
		for _, op := range m.p.Runner.Ownership().Partitions {
			if op.Topic == string(events.TopicSessions) {
				owner[op.Partition] = m
			}
		}
	}
	partition := func(id string) int32 {
		return int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(events.TopicSessions)).Partition(&kgo.Record{Key: []byte(events.EntityKey("project:a", id))}, 4))
	}
	// a parent and a revision projected by different members
	var parent, child []events.Envelope
	var parentID, childID string
	for i := 0; i < 40 && parent == nil; i++ {
		for j := i + 1; j < 40 && parent == nil; j++ {
			pe, pid := sessionIn(t, i, "project:a", "chain")
			ce, cid := sessionIn(t, j, "project:a", "chain")
			if owner[partition(pid)] != nil && owner[partition(cid)] != nil && owner[partition(pid)] != owner[partition(cid)] {
				parent, child, parentID, childID = pe, ce, pid, cid
			}
		}
	}
	if parent == nil {
		t.Fatal("no two sample sessions on partitions of different members")
	}
	for k := range child {
		if child[k].Type == events.SessionStarted {
			var d map[string]any
			_ = json.Unmarshal(child[k].Data, &d)
			d["iteration"], d["parent_session"] = 2, parentID
			child[k].Data, _ = json.Marshal(d)
		}
	}
	if err := m1.p.Producer.Publish(ctx, append(parent, child...)...); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, ms)
	for _, m := range ms {
		code, body, _ := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(childID)+"/improvement")
		var v struct {
			Chain []struct {
				SessionID string `json:"session_id"`
				Iteration int    `json:"iteration"`
				Evaluated bool   `json:"evaluated"`
			} `json:"chain"`
		}
		if code != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("%s: %d %s", m.name, code, body)
		}
		if len(v.Chain) != 2 || v.Chain[0].SessionID != parentID || v.Chain[1].SessionID != childID || v.Chain[1].Iteration != 2 || !v.Chain[0].Evaluated {
			t.Fatalf("%s: chain %+v, want [%s (evaluated), %s (iteration 2)]", m.name, v.Chain, parentID, childID)
		}
	}
}
