package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/events/taubench"
)

// TestServeForwardsAcrossInstances is issue 15's operator run with
// forwarding: `chronicle broker --partitions 4`, two `serve --brokers …
// --partitions 4` with their own --data and no --advertise (the listen
// address is advertised), the bundled tau-bench sessions imported. Both
// instances' GET /v1/cluster list both URLs; both list every session in
// the same pages of 50 (bodies and cursors equal), and every session reads
// 200 with the same body from both.
func TestServeForwardsAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and imports 200 sessions")
	}
	addr := freePort(t)
	brk := exec.Command(binary, "broker", "--data", t.TempDir(), "--kafka-listen", addr, "--partitions", "4")
	out, err := brk.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := brk.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = brk.Process.Kill(); _ = brk.Wait() })
	buf := make([]byte, 64)
	if _, err := out.Read(buf); err != nil {
		t.Fatalf("broker: %v", err)
	}
	var apis []string
	for i := 0; i < 2; i++ {
		h := freePort(t)
		cmd := exec.Command(binary, "serve", "--brokers", addr, "--partitions", "4", "--data", t.TempDir(), "--http", h, "--decay-interval", "24h")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		apis = append(apis, "http://"+h)
	}
	if b, err := exec.Command(binary, "import", "taubench", "sample", "--brokers", addr).CombinedOutput(); err != nil {
		t.Fatalf("import: %v %s", err, b)
	}
	recs, err := sampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	getJSON := func(u string, v any) (int, []byte) {
		resp, err := http.Get(u)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if v != nil {
			_ = json.Unmarshal(b, v)
		}
		return resp.StatusCode, b
	}
	// both members published their URL, every instance lists every
	// session and has caught up on its partitions (a partition's new owner
	// answers from what it has restored so far)
	deadline := time.Now().Add(90 * time.Second)
	for _, api := range apis {
		for {
			var v httpapi.ClusterView
			_, _ = getJSON(api+"/v1/cluster", &v)
			urls := map[string]bool{}
			for _, m := range v.Members {
				urls[m.URL] = true
			}
			var total int
			cursor := ""
			for page := 0; page < 10; page++ {
				var l struct {
					Sessions   []json.RawMessage `json:"sessions"`
					NextCursor string            `json:"next_cursor"`
				}
				code, _ := getJSON(api+"/v1/sessions?limit=50&cursor="+url.QueryEscape(cursor), &l)
				if code != 200 {
					break
				}
				total += len(l.Sessions)
				if cursor = l.NextCursor; cursor == "" {
					break
				}
			}
			var h struct {
				Status string `json:"status"`
				Lag    int64  `json:"lag"`
			}
			_, _ = getJSON(api+"/healthz", &h)
			if urls[apis[0]] && urls[apis[1]] && total == len(recs) && h.Status == "ok" && h.Lag == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: members %+v, %d of %d sessions listed, health %+v", api, v.Members, total, len(recs), h)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	// the same pages and cursors from both
	var pages [2]string
	for k, api := range apis {
		cursor := ""
		for page := 0; page < 10; page++ {
			code, body := getJSON(api+"/v1/sessions?limit=50&cursor="+url.QueryEscape(cursor), nil)
			var l struct {
				NextCursor string `json:"next_cursor"`
			}
			_ = json.Unmarshal(body, &l)
			if code != 200 {
				t.Fatalf("%s list: %d %s", api, code, body)
			}
			pages[k] += string(body)
			if cursor = l.NextCursor; cursor == "" {
				break
			}
		}
	}
	if pages[0] != pages[1] {
		t.Fatal("the two instances list different pages")
	}
	for i := 0; i < len(recs); i++ {
		envs, err := taubench.Events(recs[i])
		if err != nil {
			t.Fatal(err)
		}
		path := "/v1/sessions/" + url.PathEscape(envs[0].SessionID)
		c1, b1 := getJSON(apis[0]+path, nil)
		c2, b2 := getJSON(apis[1]+path, nil)
		if c1 != 200 || c2 != 200 || string(b1) != string(b2) {
			for _, api := range apis {
				_, cl := getJSON(api+"/v1/cluster", nil)
				_, h := getJSON(api+"/healthz", nil)
				t.Logf("%s: cluster %s\nhealth %s", api, cl, h)
			}
			t.Fatalf("GET %s: %d / %d, bodies equal %v: %s", path, c1, c2, string(b1) == string(b2), strings.TrimSpace(fmt.Sprint(string(b1), " | ", string(b2))))
		}
	}
}
