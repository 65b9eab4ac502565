package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// curlWords splits a curl command line of README.md as a POSIX shell does
// for what the examples use: words separated by blanks, single quotes
// taken literally.
func curlWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, has := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			in, has = !in, true
		case !in && (r == ' ' || r == '\t'):
			if has {
				words = append(words, w.String())
				w.Reset()
				has = false
			}
		default:
			w.WriteRune(r)
			has = true
		}
	}
	if in {
		t.Fatalf("unterminated quote in %s", line)
	}
	if has {
		words = append(words, w.String())
	}
	return words
}

// TestReadmeCurlExamples sends the README's "Send events with curl"
// requests, as written but for the address, to a server: each POST is a
// 202, the session is evaluated meeting its criterion, and its events read
// back keep the tracing extension (a producer's walkthrough, 2026-12-06:
// the README had no request to copy).
func TestReadmeCurlExamples(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "**Send events with curl**")
	if !ok {
		t.Fatal("README.md has no \"Send events with curl\"")
	}
	_, after, _ = strings.Cut(after, "```sh\n")
	block, _, _ := strings.Cut(after, "```")
	block = strings.ReplaceAll(block, "\\\n", " ")
	_, srv := setup(t)
	var posts, gets int
	var bodies []string
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := curlWords(t, line)
		if words[0] != "curl" {
			t.Fatalf("not a curl command: %s", line)
		}
		method, url, data := "GET", "", ""
		hdr := http.Header{}
		for i := 1; i < len(words); i++ {
			switch w := words[i]; {
			case w == "-sS":
			case w == "-H" && i+1 < len(words):
				k, v, ok := strings.Cut(words[i+1], ":")
				if !ok {
					t.Fatalf("header %q", words[i+1])
				}
				hdr.Add(k, strings.TrimSpace(v))
				i++
			case w == "-d" && i+1 < len(words):
				method, data = "POST", words[i+1]
				i++
			case strings.HasPrefix(w, "http://127.0.0.1:8080/"):
				url = srv.URL + strings.TrimPrefix(w, "http://127.0.0.1:8080")
			default:
				t.Fatalf("%s: the test does not know %q", line, w)
			}
		}
		if url == "" {
			t.Fatalf("no URL in %s", line)
		}
		send := func() (int, string) {
			req, err := http.NewRequest(method, url, strings.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = hdr
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		if method == "POST" {
			if code, body := send(); code != http.StatusAccepted {
				t.Fatalf("%s: %d %s, want 202", line, code, body)
			}
			posts++
			continue
		}
		// a read: the events are applied shortly after their 202
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := send()
			if code == http.StatusOK && !strings.HasSuffix(url, "/readme-s1") || strings.Contains(body, `"status":"completed"`) {
				bodies = append(bodies, body)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d %s, want 200 with the session completed", line, code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		gets++
	}
	if posts != 3 || gets != 2 {
		t.Fatalf("%d POSTs and %d GETs in the README's block, want 3 and 2", posts, gets)
	}
	var s struct {
		Evaluation struct {
			Recommendation string `json:"recommendation"`
		} `json:"evaluation"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &s); err != nil || s.Evaluation.Recommendation != "meets_criteria" {
		t.Errorf("the session: %s, want it evaluated meets_criteria (%v)", bodies[0], err)
	}
	if !strings.Contains(bodies[1], `"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`) || strings.Count(bodies[1], `"specversion"`) < 3 {
		t.Errorf("the session's events: %s, want the three, the tool call with its traceparent", bodies[1])
	}
}
