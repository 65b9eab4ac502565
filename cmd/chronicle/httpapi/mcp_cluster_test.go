package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chronicle-dev/chronicle/events"
)

// serve's /mcp on a cluster: its tools go through the HTTP API in process,
// so they answer the same on every member — memory_search finds a memory
// from a member that does not own the memory bank, pair_improvement and
// search_get answer for sessions and searches another member projects.
// Before, the tools read the local store: on a member without
// chronicle.memories/0 memory_search found nothing, and a session or
// search of another member's partition was "not found".
func TestMCPOnEveryMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ms, sessions := twoMembersWithSessions(ctx, t, 6, "mcp")
	m1 := ms[0]
	searches := []string{"mcp-search-0", "mcp-search-1", "mcp-search-2", "mcp-search-3"}
	for _, id := range searches {
		if err := m1.p.Producer.Publish(ctx, pausedSearchIn(t, "project:a", id, "mcp")...); err != nil {
			t.Fatal(err)
		}
	}
	if code, rec := call(t, m1.srv.URL, "tok-a", "POST", "/v1/memories", map[string]any{"title": "zebra crossing rule",
		"description": "found over MCP from every member", "content": "look both ways at the zebra crossing", "outcome": "success", "scope": "project:a"}); code != http.StatusAccepted {
		t.Fatalf("POST /v1/memories: %d %v", code, rec)
	}
	waitCluster(t, ms)
	memOwner := ""
	for _, m := range ms {
		for _, op := range m.p.Runner.Ownership().Partitions {
			if op.Topic == string(events.TopicMemories) {
				memOwner = m.name
			}
		}
	}
	notOwners := 0
	for _, m := range ms {
		if m.name != memOwner {
			notOwners++
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "cluster-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: m.srv.URL + "/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{"tok-a", http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tool := func(name string, args map[string]any) map[string]any {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				var text string
				if res != nil && len(res.Content) > 0 {
					text = res.Content[0].(*mcp.TextContent).Text
				}
				t.Fatalf("%s (memory bank on %s): %s %v: %v %s", m.name, memOwner, name, args, err, text)
			}
			var out map[string]any
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &out)
			return out
		}
		found := tool("memory_search", map[string]any{"query": "zebra crossing", "scope": "project:a"})
		mems, _ := found["memories"].([]any)
		if len(mems) == 0 || mems[0].(map[string]any)["title"] != "zebra crossing rule" {
			t.Fatalf("%s (memory bank on %s): memory_search found %v", m.name, memOwner, found)
		}
		for _, id := range sessions {
			if out := tool("pair_improvement", map[string]any{"session_id": id}); out["session_id"] != id {
				t.Fatalf("%s: pair_improvement of %s: %v", m.name, id, out)
			}
		}
		for _, id := range searches {
			if out := tool("search_get", map[string]any{"search_id": id}); out["status"] != "paused" {
				t.Fatalf("%s: search_get of %s: %v", m.name, id, out)
			}
		}
		cs.Close()
	}
	if memOwner == "" || notOwners != 1 {
		t.Fatalf("memory bank owner %q: the test needs one member without it", memOwner)
	}
}

// GET /v1/sessions/{id}/events on a cluster lists the session's memory
// records whichever member owns chronicle.memories/0: their positions are
// indexed by a global table (sessionlog.Memories) on every member. Before,
// only the memory bank's owner had them, so sessions projected by the
// other member answered an empty memories list.
func TestSessionEventsListMemoriesOnEveryMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ms, sessions := twoMembersWithSessions(ctx, t, 8, "events")
	waitCluster(t, ms)
	for _, m := range ms {
		for _, id := range sessions {
			code, body, servedBy := fetch(t, m.srv.URL, "tok-a", "/v1/sessions/"+url.PathEscape(id)+"/events")
			var v struct {
				Source   string `json:"source"`
				Events   []any  `json:"events"`
				Memories []struct {
					Event struct {
						Data struct {
							SourceSession string `json:"source_session"`
						} `json:"data"`
					} `json:"event"`
				} `json:"memories"`
			}
			if code != 200 || json.Unmarshal(body, &v) != nil || v.Source != "index" || len(v.Events) == 0 {
				t.Fatalf("%s: GET %s/events: %d %s", m.name, id, code, body)
			}
			if len(v.Memories) == 0 {
				t.Fatalf("%s (served by %s): session %s lists no memory record", m.name, servedBy, id)
			}
			for _, mr := range v.Memories {
				if sid := mr.Event.Data.SourceSession; sid != "" && sid != id {
					t.Fatalf("%s: session %s lists a memory of %s", m.name, id, sid)
				}
			}
		}
	}
}

// twoMembersWithSessions starts two members on m1's embedded broker and
// publishes n sample sessions of project:a (original_task marked with
// secret): the members and the session ids.
func twoMembersWithSessions(ctx context.Context, t *testing.T, n int, secret string) ([]*member, []string) {
	t.Helper()
	m1 := startMember(ctx, t, "m1", nil, time.Second)
	m2 := startMember(ctx, t, "m2", m1.p.Broker.Addrs(), time.Second)
	var sessions []string
	for i := 0; i < n; i++ {
		envs, id := sessionIn(t, i, "project:a", secret)
		if err := m1.p.Producer.Publish(ctx, envs...); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, id)
	}
	return []*member{m1, m2}, sessions
}
