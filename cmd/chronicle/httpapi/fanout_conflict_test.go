package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events"
)

// ownsKey reports whether member m's engine owns the partition of key on
// topic (4 partitions, as startMember creates them).
func ownsKey(m *member, topic events.Topic, key string) bool {
	p := int32(kgo.StickyKeyPartitioner(nil).ForTopic(string(topic)).Partition(&kgo.Record{Key: []byte(key)}, 4))
	for _, op := range m.p.Runner.Ownership().Partitions {
		if op.Topic == string(topic) && op.Partition == p {
			return true
		}
	}
	return false
}

// TestFanOutConflictNamesScopes: an id held in two scopes the caller
// reads (a session and a workflow in project:a and project:b, their keys
// on partitions owned by different members) is a 409 asking for ?scope=
// that names the scopes, as one instance answers, from every member and
// on every sub-route. Before, the fan-out's 409 named the Kafka member ids
// that held them ("held by members kgo-…"; found by a tenant-isolation
// review).
func TestFanOutConflictNamesScopes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	ms := []*member{m1, m2}
	var ids []string
	for i := 0; i < 12; i++ {
		for _, sc := range []string{"project:a", "project:b"} {
			envs, id := sessionIn(t, i, sc, "s3cret")
			if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
				t.Fatal(err)
			}
			if sc == "project:a" {
				ids = append(ids, id)
			}
		}
	}
	waitCluster(t, ms)
	split := func(topic events.Topic, id string) bool {
		a, b := events.EntityKey("project:a", id), events.EntityKey("project:b", id)
		return ownsKey(m1, topic, a) && ownsKey(m2, topic, b) || ownsKey(m2, topic, a) && ownsKey(m1, topic, b)
	}
	var paths []string
	for _, id := range ids {
		if split(events.TopicSessions, id) {
			esc := url.PathEscape(id)
			paths = append(paths, "/v1/sessions/"+esc, "/v1/sessions/"+esc+"/events", "/v1/sessions/"+esc+"/improvement")
			break
		}
	}
	if paths == nil {
		t.Fatal("no session whose project:a and project:b keys are on different members")
	}
	for i := 0; i < 256; i++ {
		wf := fmt.Sprintf("wfc-%d", i)
		if !split(events.TopicWorkflows, wf) {
			continue
		}
		for _, sc := range []string{"project:a", "project:b"} {
			if code, b := postJSON(t, m1.srv.URL, "tok-ab", "/v1/workflows/"+wf+"/updates?scope="+sc, `{"channel":"messages","update":"x"}`); code != http.StatusOK {
				t.Fatalf("update %s in %s: %d %s", wf, sc, code, b)
			}
		}
		paths = append(paths, "/v1/workflows/"+wf)
		break
	}
	for _, path := range paths {
		for _, m := range ms {
			code, body, _ := fetch(t, m.srv.URL, "tok-ab", path)
			if code != http.StatusConflict || !strings.Contains(string(body), "(project:a, project:b): add ?scope=") || strings.Contains(string(body), "member") {
				t.Errorf("%s: GET %s as ab: %d %s; want 409 naming (project:a, project:b), as one instance", m.name, path, code, body)
			}
			// with ?scope=, each
			for _, sc := range []string{"project:a", "project:b"} {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				if code, body, _ := fetch(t, m.srv.URL, "tok-ab", path+sep+"scope="+sc); code != http.StatusOK {
					t.Errorf("%s: GET %s?scope=%s: %d %s", m.name, path, sc, code, body)
				}
			}
			// a token of one scope reads its own, as before
			if code, body, _ := fetch(t, m.srv.URL, "tok-b", path); code != http.StatusOK {
				t.Errorf("%s: GET %s as b: %d %s", m.name, path, code, body)
			}
		}
	}
}
