package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestMutatedRequestsAreAnsweredAsDescribed sends every operation of
// openapi.json requests that differ from a valid one by one change: a
// body member removed, made null, given another type or an extreme value
// (numbers beyond 2^53 or a float64, long, empty and control-character
// strings, deep nesting), an unknown member, a truncated or non-UTF-8
// body, an odd path or query parameter (negative, huge, not a number,
// a path traversal, another scope), another Content-Type, another token.
// Every answer must be one the description allows (conforming checks its
// status, schema, and that a 2xx request and a body 400 agree with the
// request schema), no answer may be a 5xx, the service must still answer
// /healthz afterwards, and the projections the accepted writes built must
// equal a replay of the log (the audit's rule). The valid requests are
// the description's own examples, or a base per route where it has none.
//
// CHRONICLE_MUTATIONS sets the requests per operation (default 6: a
// short slice for make test; make fuzz runs 150) and
// CHRONICLE_MUTATION_SEED the seed (default 1), so that a failure is
// reproduced by its seed; CHRONICLE_MUTATION_LOG=1 logs every request
// with the change made and the answer.
func TestMutatedRequestsAreAnsweredAsDescribed(t *testing.T) {
	perOp := 6
	if n, err := strconv.Atoi(os.Getenv("CHRONICLE_MUTATIONS")); err == nil && n > 0 {
		perOp = n
	}
	seed := uint64(1)
	if n, err := strconv.ParseUint(os.Getenv("CHRONICLE_MUTATION_SEED"), 10, 64); err == nil {
		seed = n
	}
	logAll := os.Getenv("CHRONICLE_MUTATION_LOG") != "" // every request and its answer
	doc := loadOpenAPI(t)
	p, _, base := scopedServer(t)
	const admin = "tok-admin"

	// the entities the requests name: a session, a memory, a workflow
	// with a checkpoint and a decision, a paused tree search
	body, sessionID := sessionJSON(t, 0)
	if code, m := call(t, base, admin, "POST", "/v1/events", json.RawMessage(body)); code != http.StatusAccepted {
		t.Fatalf("seeding a session: %d %v", code, m)
	}
	if code, m := call(t, base, "tok-a", "POST", "/v1/events", pausedSearchIn(t, "project:a", "search-1", "s")); code != http.StatusAccepted {
		t.Fatalf("seeding a search: %d %v", code, m)
	}
	code, m := call(t, base, admin, "POST", "/v1/memories", map[string]any{"title": "Cancel a flight", "description": "Look up the reservation first.", "content": "get_reservation_details, then cancel_reservation", "outcome": "success"})
	if code != http.StatusOK && code != http.StatusAccepted {
		t.Fatalf("seeding a memory: %d %v", code, m)
	}
	memoryID, _ := m["id"].(string)
	const wf = "book-1"
	checkpoint := ""
	for _, op := range []string{"/v1/workflows/{id}/updates", "/v1/workflows/{id}/commands", "/v1/workflows/{id}/decisions", "/v1/workflows/{id}/checkpoints"} {
		mt := doc.Paths.Value(op).Post.RequestBody.Value.Content.Get("application/json")
		for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
			raw, _ := json.Marshal(mt.Examples[name].Value.Value)
			code, m := call(t, base, admin, "POST", strings.Replace(op, "{id}", wf, 1), json.RawMessage(raw))
			if code != http.StatusOK {
				t.Fatalf("seeding the workflow: POST %s %q: %d %v", op, name, code, m)
			}
			if cp, _ := m["checkpoint_id"].(string); cp != "" {
				checkpoint = cp
			}
		}
	}
	waitCaughtUp(t, p)

	paths := map[string][]string{
		"id":         {url.PathEscape(sessionID), url.PathEscape(memoryID), wf, "search-1", "nope", "a%2Fb", "%00", "%C3%A9", "a%20b", strings.Repeat("x", 300), "suggest", "-1"},
		"checkpoint": {checkpoint, exampleCheckpoint, "0", "-1", "abc", "chronicle.workflows:0:99999999999999999999", "chronicle.workflows:-1:0", "%3A%3A"},
		"decision":   {"d-refund", "d-continue", "x", strings.Repeat("d", 300)},
	}
	// good is a valid id per route prefix: most mutations change one
	// thing of a request that would otherwise reach the entity
	good := func(path, param string) string {
		switch {
		case param == "checkpoint":
			return checkpoint
		case param == "decision":
			return "d-refund"
		case strings.HasPrefix(path, "/v1/sessions/"):
			return url.PathEscape(sessionID)
		case strings.HasPrefix(path, "/v1/memories/"):
			return memoryID
		case strings.HasPrefix(path, "/v1/workflows/"):
			return wf
		case strings.HasPrefix(path, "/v1/searches/"):
			return "search-1"
		}
		return "nope"
	}
	queries := map[string][]string{
		"limit":          {"0", "-1", "1", "3", "1000000", "abc", "1.5", "", "9223372036854775808"},
		"k":              {"0", "-1", "1", "1000000", "abc", ""},
		"cursor":         {"", "abc", "!!", "0", "-1", strings.Repeat("c", 500), "chronicle.sessions:0:3"},
		"scope":          {"project:a", "project:b", "org:default", "*", "project:", "x:y", "project:a,project:b", "", "project:a%00"},
		"min_confidence": {"-1", "2", "NaN", "0.5", "1e309", "", "Inf"},
		"outcome":        {"success", "failure", "x", ""},
		"query":          {"cancel flight", "", strings.Repeat("baggage ", 400), "%00", "é"},
		"text":           {"cancel my flight", "", strings.Repeat("w ", 2000)},
		"after":          {"get_user_details", "", "nope", "chronicle.learned:0:0", "-1"},
		"from":           {"get_user_details", "", "0", "-1", "oldest", "latest", "chronicle.learned:0:5"},
		"to":             {"cancel_reservation", "", "nope"},
		"failed":         {"true", "false", "x", ""},
		"follow":         {"false", "0", "x"},
		"types":          {"memory.created.v1", "x", "", "memory.created.v1,x"},
		"type":           {"session.started.v1", "x", ""},
		"session_id":     {sessionID, "", "nope"},
		"context_tools":  {"get_user_details", "", "a,b,c", strings.Repeat("t,", 300)},
	}
	contentTypes := []string{"", "text/plain", "application/json; charset=latin1", "application/cloudevents+json", "application/cloudevents-batch+json", "multipart/form-data", "application/json;;"}
	tokens := []string{admin, admin, admin, "tok-a", "tok-b", "tok-wo", "", "tok-nope"}

	rng := rand.New(rand.NewPCG(seed, 0xC4))
	sent := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for _, method := range slices.Sorted(maps.Keys(item.Operations())) {
			op := item.Operations()[method]
			if path == "/v1/learned/stream" || path == "/mcp" && method == http.MethodGet {
				continue // a stream: answered until the client leaves (its own tests)
			}
			bodies := exampleBodies(t, op, path)
			params := append(slices.Clone(item.Parameters), op.Parameters...)
			for i := 0; i < perOp; i++ {
				uri := path
				for _, prm := range params {
					if prm.Value.In == "path" {
						uri = strings.Replace(uri, "{"+prm.Value.Name+"}", good(path, prm.Value.Name), 1)
					}
				}
				q := url.Values{}
				var raw []byte
				if len(bodies) > 0 {
					raw = bodies[rng.IntN(len(bodies))]
				}
				ct := "application/json"
				token := admin
				what := "valid"
				switch k := rng.IntN(10); {
				case k < 5 && raw != nil:
					raw, what = mutateBody(rng, raw)
				case k < 7:
					var names []string
					for _, prm := range params {
						if prm.Value.In == "path" {
							names = append(names, prm.Value.Name)
						}
					}
					if len(names) > 0 {
						n := names[rng.IntN(len(names))]
						v := paths[n][rng.IntN(len(paths[n]))]
						uri = strings.Replace(path, "{"+n+"}", v, 1)
						for _, o := range names {
							uri = strings.Replace(uri, "{"+o+"}", good(path, o), 1)
						}
						what = "path " + n + "=" + v
						break
					}
					fallthrough
				case k < 9:
					var names []string
					for _, prm := range params {
						if prm.Value.In == "query" {
							names = append(names, prm.Value.Name)
						}
					}
					n := "zz_unknown"
					if len(names) > 0 {
						n = names[rng.IntN(len(names))]
					}
					vs := queries[n]
					if len(vs) == 0 {
						vs = []string{"", "x", "-1", strings.Repeat("q", 300)}
					}
					v := vs[rng.IntN(len(vs))]
					q.Add(n, v)
					if rng.IntN(4) == 0 {
						q.Add(n, vs[rng.IntN(len(vs))]) // repeated
					}
					what = "query " + q.Encode()
				default:
					if rng.IntN(2) == 0 && raw != nil {
						ct = contentTypes[rng.IntN(len(contentTypes))]
						what = "content-type " + ct
					} else {
						token = tokens[rng.IntN(len(tokens))]
						what = "token " + token
					}
				}
				target := base + uri
				if len(q) > 0 {
					target += "?" + q.Encode()
				}
				var rd io.Reader
				if raw != nil {
					rd = bytes.NewReader(raw)
				}
				req, err := http.NewRequest(strings.ToUpper(method), target, rd)
				if err != nil {
					continue // a URI Go cannot send (a mutation of the path)
				}
				if raw != nil && ct != "" {
					req.Header.Set("Content-Type", ct)
				}
				if path == "/mcp" {
					req.Header.Set("Accept", "application/json, text/event-stream")
				}
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				resp, err := http.DefaultClient.Do(req.WithContext(ctx))
				if err != nil {
					cancel()
					t.Errorf("%s %s (%s): no answer: %v", method, target, what, err)
					continue
				}
				ans, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				cancel()
				sent++
				if logAll {
					t.Logf("%s %s (%s) %s: %d %.200s", method, target, what, raw, resp.StatusCode, ans)
				}
				if resp.StatusCode >= 500 {
					t.Errorf("%s %s (%s) %.300s: %d %s", method, target, what, raw, resp.StatusCode, ans)
				}
			}
		}
	}
	t.Logf("%d requests, seed %d", sent, seed)
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after the requests: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	live, replayed := liveAndReplayed(t, p)
	for name, d := range live {
		if replayed[name] != d {
			t.Errorf("projection %s: live %s, replayed %s", name, d, replayed[name])
		}
	}
}

// exampleBodies are the valid JSON bodies of op: its examples, or a base
// per route where the description gives none.
func exampleBodies(t *testing.T, op *openapi3.Operation, path string) [][]byte {
	t.Helper()
	var out [][]byte
	if op.RequestBody != nil {
		for _, mt := range op.RequestBody.Value.Content {
			for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
				b, err := json.Marshal(mt.Examples[name].Value.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
			if mt.Example != nil {
				b, _ := json.Marshal(mt.Example)
				out = append(out, b)
			}
		}
	}
	if len(out) > 0 || op.RequestBody == nil {
		return out
	}
	switch path {
	case "/v1/events":
		b, _ := sessionJSON(t, 1)
		return [][]byte{b, []byte(`{"specversion":"1.0","type":"memory.recorded.v1","source":"mut","id":"m-1","data":{"memory_id":"mm-1","title":"t","description":"d","content":"c","outcome":"success","source":"explicit"}}`)}
	case "/v1/sessions/{id}/improve":
		return [][]byte{[]byte(`{}`)}
	case "/v1/memories":
		return [][]byte{[]byte(`{"title":"Refund a fare","description":"Check the fare rules.","content":"get_reservation_details then refund","outcome":"failure","tags":["refund"],"scope":"org:default"}`)}
	case "/v1/memories/{id}/feedback":
		return [][]byte{[]byte(`{"helpful":true,"comment":"worked"}`), []byte(`{"helpful":false}`)}
	case "/v1/searches/{id}/resume":
		return [][]byte{[]byte(`{"decision":"approve","note":"ok"}`), []byte(`{"decision":"reject"}`)}
	case "/mcp":
		return [][]byte{
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mut","version":"1"}}}`),
			[]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"cancel a flight","limit":3}}}`),
			[]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_record","arguments":{"title":"t","description":"d","content":"c","outcome":"success"}}}`),
			[]byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"next_tool","arguments":{"after":["get_user_details"],"k":3}}}`),
		}
	}
	t.Fatalf("%s: a request body without an example: give the mutation test a base", path)
	return nil
}

// oddValues replace a body member in mutateBody.
var oddValues = []any{
	nil, "", " ", "\u0000", "\u2028", strings.Repeat("é", 3000), "../../etc/passwd", "<b>x</b>",
	0, -1, 1.5, 1e308, -1e308, json.Number("9007199254740993"), json.Number("1e400"), json.Number("-0"),
	true, false, []any{}, map[string]any{}, []any{nil}, []any{1, "a"},
}

// mutateBody returns raw changed in one place, and what was changed.
func mutateBody(rng *rand.Rand, raw []byte) ([]byte, string) {
	switch rng.IntN(12) {
	case 0:
		n := rng.IntN(len(raw) + 1)
		return raw[:n], fmt.Sprintf("truncated at %d", n)
	case 1:
		i := rng.IntN(len(raw) + 1)
		return slices.Concat(raw[:i], []byte{0xff}, raw[i:]), fmt.Sprintf("0xff at %d", i)
	case 2:
		return []byte(strings.Repeat("[", 3000) + strings.Repeat("]", 3000)), "deep nesting"
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return raw, "unchanged"
	}
	// the places: pointers to every value
	type place struct {
		ptr    string
		parent any
		key    any // string for an object, int for an array
	}
	var places []place
	var walk func(ptr string, parent, key, v any)
	walk = func(ptr string, parent, key, v any) {
		places = append(places, place{ptr, parent, key})
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(ptr+"/"+k, x, k, x[k])
			}
		case []any:
			for i, e := range x {
				walk(ptr+"/"+strconv.Itoa(i), x, i, e)
			}
		}
	}
	walk("", nil, nil, v)
	pl := places[rng.IntN(len(places))]
	odd := oddValues[rng.IntN(len(oddValues))]
	what := ""
	switch parent := pl.parent.(type) {
	case nil:
		if obj, ok := v.(map[string]any); ok && rng.IntN(2) == 0 {
			obj["zz_unknown"] = odd
			what = "unknown member"
		} else {
			v = odd
			what = fmt.Sprintf("root = %.40v", odd)
		}
	case map[string]any:
		if rng.IntN(3) == 0 {
			delete(parent, pl.key.(string))
			what = "removed " + pl.ptr
		} else {
			parent[pl.key.(string)] = odd
			what = fmt.Sprintf("%s = %.40v", pl.ptr, odd)
		}
	case []any:
		parent[pl.key.(int)] = odd
		what = fmt.Sprintf("%s = %.40v", pl.ptr, odd)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw, "unchanged"
	}
	return b, what
}
