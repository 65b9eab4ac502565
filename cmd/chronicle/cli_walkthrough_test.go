package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// A group command (workflow, deadletter, search) given an argument that
// names none of its commands exits non-zero naming it; cobra printed the
// group's help and exited 0 (found by a new user's walkthrough).
func TestUnknownSubcommandFails(t *testing.T) {
	// completion too: cobra's own group, added in Execute (a CLI
	// walkthrough, 2026-12-05: `completion zhs > _chronicle` wrote its
	// help there and exited 0)
	for _, group := range []string{"workflow", "deadletter", "search", "completion"} {
		out, err := exec.Command(binary, group, "bogus").CombinedOutput()
		if err == nil || !strings.Contains(string(out), `unknown command "bogus"`) {
			t.Errorf("chronicle %s bogus: %v\n%s\nwant a failure naming bogus", group, err, out)
		}
	}
	if out, err := exec.Command(binary, "workflow").CombinedOutput(); err != nil || !strings.Contains(string(out), "Usage") {
		t.Errorf("chronicle workflow alone: %v\n%s\nwant its help", err, out)
	}
	if out, err := exec.Command(binary, "completion", "bash").Output(); err != nil || !strings.Contains(string(out), "bash completion") {
		t.Errorf("chronicle completion bash: %v\n%.200s\nwant the script", err, out)
	}
}

// `chronicle help TOPIC` exits 1 naming a TOPIC that is no command; it
// printed "Unknown help topic" and the usage with exit 0 (a CLI
// walkthrough, 2026-12-05). A command's help is printed as before.
func TestHelpOfAnUnknownTopicFails(t *testing.T) {
	for _, topic := range [][]string{{"bogus"}, {"workflow", "bogus"}} {
		out, err := exec.Command(binary, append([]string{"help"}, topic...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "is not a command") {
			t.Errorf("chronicle help %v: %v\n%s\nwant a failure naming it", topic, err, out)
		}
	}
	for _, topic := range [][]string{nil, {"serve"}, {"workflow", "list"}, {"completion", "bash"}} {
		out, err := exec.Command(binary, append([]string{"help"}, topic...)...).Output()
		if err != nil || !strings.Contains(string(out), "Usage:") {
			t.Errorf("chronicle help %v: %v\n%s\nwant its help", topic, err, out)
		}
	}
}

// audit on a directory without projections fails and writes nothing: it
// used to leave an empty store behind, which digest and inspect then took
// for a real, empty state (found by a new user's walkthrough).
func TestAuditOfNothingLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing")
	out, err := exec.Command(binary, "audit", "--data", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no projections to audit") {
		t.Fatalf("audit of a missing directory: %v\n%s", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("audit left %s behind (%v)", dir, err)
	}
	if out, err := exec.Command(binary, "digest", "--data", dir).CombinedOutput(); err == nil {
		t.Fatalf("digest of the directory audit refused succeeded:\n%s", out)
	}
}

// A count flag below its least value is refused naming the flag, before
// anything starts (--partitions 0 used to start with one partition and -1
// to fail as "broker: Config.Partitions"; bench's --events 0 ran 20,000),
// and so is a --brokers that names no host:port, a negative duration (a
// negative --decay-interval turned decay off) and a --kafka-listen that is
// no host:port (named "broker: Config.Listen").
func TestCountFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--events", "0"}, "--events: 0, must be ≥ 1"},
		{[]string{"bench", "--runs", "-1"}, "--runs: -1, must be ≥ 1"},
		{[]string{"bench", "--probes", "-1"}, "--probes: -1, must be ≥ 0"},
		// accepted, but too few to time: said so (it was "caught up
		// without applying a batch" and a lag listing)
		{[]string{"bench", "--events", "10", "--runs", "1"}, "all 10 events were applied in one commit"},
		{[]string{"serve", "--partitions", "0", "--data", t.TempDir()}, "--partitions: 0, must be ≥ 1"},
		{[]string{"ingest", "x.jsonl", "--brokers", ",,"}, `--brokers: ",," names no host:port`},
		{[]string{"serve", "--data", t.TempDir(), "--weaviate", ""}, `--weaviate: "" names no host:port`}, // a script's unset variable ran on the embedded store (a Weaviate walkthrough)
		// a bare host was dialled on 9092, and "foo" or port 99999 failed
		// later naming an internal field (a walkthrough, 2026-11-30)
		{[]string{"replay", "--data", t.TempDir(), "--into", filepath.Join(t.TempDir(), "r"), "--brokers", "127.0.0.1"}, `--brokers: "127.0.0.1" is not host:port`},
		{[]string{"ingest", "x.jsonl", "--brokers", "foo"}, `--brokers: "foo" is not host:port`},
		{[]string{"serve", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092,127.0.0.1:99999"}, `--brokers: "127.0.0.1:99999" is not host:port`},
		{[]string{"bench", "--dir", nonEmptyDir(t)}, "--dir: "},
		// a file: "broker: Config.DataDir …/log: … not a directory", no
		// flag (a CLI walkthrough, 2026-12-05)
		{[]string{"bench", "--dir", filepath.Join(nonEmptyDir(t), "left-over")}, "is not a directory: the bench writes"},
		// weaviate.Config's fields were named, and port 99999 accepted
		{[]string{"serve", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--weaviate", "127.0.0.1:1", "--weaviate-grpc", "bogus"}, "--weaviate-grpc bogus:"},
		{[]string{"serve", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--weaviate", "127.0.0.1:1", "--weaviate-grpc", "127.0.0.1:99999"}, "--weaviate-grpc 127.0.0.1:99999: not host:port with a port from 1 to 65535"},
		{[]string{"serve", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0", "--weaviate", "http://127.0.0.1:8080"}, "--weaviate http://127.0.0.1:8080:"},
		{[]string{"serve", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092", "--kafka-listen", "127.0.0.1:9093"}, "--kafka-listen 127.0.0.1:9093: the embedded broker's address, and --brokers names a Kafka cluster instead"},
		{[]string{"serve", "--decay-interval", "-1s", "--data", t.TempDir()}, "--decay-interval: -1s, must not be negative"},
		{[]string{"serve", "--stall-after", "-1s", "--data", t.TempDir()}, "--stall-after: -1s, must not be negative"},
		{[]string{"broker", "--kafka-listen", "bogus", "--data", t.TempDir()}, `--kafka-listen: "bogus" is not host:port`},
		// an SRE's walkthrough, 2026-11-30: 100,000 partitions left
		// 900,001 directories (7 GB); a 1 ns decay interval wrote 93,138
		// ticks in 15 s; demo --timeout -1s imported everything, then
		// failed naming no flag; the others named broker.Config's fields
		{[]string{"broker", "--partitions", "100000", "--data", t.TempDir()}, "--partitions: 100000, must be ≤ 1024"},
		{[]string{"serve", "--decay-interval", "1ns", "--data", t.TempDir()}, "--decay-interval: 1ns, must be 0 (no decay) or at least 1s"},
		{[]string{"demo", "--timeout", "-1s", "--data", t.TempDir()}, "--timeout: -1s, must be positive"},
		{[]string{"demo", "--timeout", "0s", "--data", t.TempDir()}, "--timeout: 0s, must be positive"},
		{[]string{"serve", "--kafka-listen", "0.0.0.0:35199", "--data", t.TempDir()}, `--kafka-listen: "0.0.0.0:35199": the embedded broker listens on a loopback address only`},
		{[]string{"serve", "--kafka-listen", "127.0.0.1:99999", "--data", t.TempDir()}, `--kafka-listen: "127.0.0.1:99999": the port must be 0`},
		{[]string{"broker", "--group-min-session-timeout", "-1s", "--data", t.TempDir()}, "--group-min-session-timeout: -1s, must not be negative"},
		// TLS and SASL are for a cluster named by --brokers, and their
		// errors name the flag (a Kafka platform review, 2026-12-01)
		{[]string{"serve", "--data", t.TempDir(), "--kafka-tls"}, "--kafka-tls…, --kafka-sasl… and --kafka-oauth-… are for a Kafka cluster named by --brokers"},
		{[]string{"serve", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092", "--kafka-sasl-mechanism", "GSSAPI", "--kafka-sasl-user", "u"}, `--kafka-sasl-mechanism: "GSSAPI" is not PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM`},
		{[]string{"serve", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092", "--kafka-sasl-mechanism", "OAUTHBEARER", "--kafka-sasl-user", "chronicle"}, "--kafka-oauth-token-url: required with --kafka-sasl-mechanism OAUTHBEARER"},
		{[]string{"serve", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092", "--kafka-sasl-mechanism", "SCRAM-SHA-512", "--kafka-sasl-user", "u", "--kafka-oauth-token-url", "https://idp.example/token"}, "--kafka-oauth-token-url, --kafka-oauth-scope and --kafka-oauth-extensions: for --kafka-sasl-mechanism OAUTHBEARER, not SCRAM-SHA-512"},
		{[]string{"replay", "--data", t.TempDir(), "--into", filepath.Join(t.TempDir(), "r"), "--brokers", "127.0.0.1:9092", "--kafka-sasl-mechanism", "PLAIN", "--kafka-sasl-user", "u", "--kafka-sasl-password-env", "CHRONICLE_TEST_UNSET_PASSWORD"}, "--kafka-sasl-password-env: the environment variable CHRONICLE_TEST_UNSET_PASSWORD is unset or empty"},
		{[]string{"ingest", "x.jsonl", "--kafka-tls-ca", "/nonexistent/ca.pem"}, "--kafka-tls-ca:"},
		// a flag that means nothing without another was accepted and
		// ignored (a walkthrough's finding): checkFlagNeeds
		{[]string{"serve", "--data", t.TempDir(), "--llm-rate", "2"}, "--llm-rate 2: the rate of calls to the model, which means nothing without --llm-url"},
		{[]string{"serve", "--data", t.TempDir(), "--weaviate-grpc", "off"}, "--weaviate-grpc off: the gRPC port of the Weaviate server, which means nothing without --weaviate"},
		{[]string{"demo", "--data", t.TempDir(), "--http", "127.0.0.1:9999"}, "--http 127.0.0.1:9999: the address the HTTP API is served on afterwards, which means nothing without --serve"},
		{[]string{"demo", "--data", t.TempDir(), "--serve=false", "--http", "127.0.0.1:9999"}, "which means nothing without --serve"},
		// a key variable named and unset started, and every model call
		// failed 401 three times and was dead-lettered
		{[]string{"serve", "--data", t.TempDir(), "--llm-url", "http://127.0.0.1:1/v1", "--llm-model", "m", "--llm-key-env", "CHRONICLE_TEST_UNSET_KEY"}, "--llm-key-env CHRONICLE_TEST_UNSET_KEY: the environment variable CHRONICLE_TEST_UNSET_KEY is unset or empty, so the model would be called without an API key"},
		{[]string{"serve", "--data", t.TempDir(), "--llm-url", "http://127.0.0.1:1/v1", "--llm-model", "m", "--llm-key-env", ""}, `--llm-key-env: "" names no environment variable`},
		{[]string{"serve", "--data", t.TempDir(), "--weaviate", "127.0.0.1:1", "--weaviate-api-key-env", "CHRONICLE_TEST_UNSET_KEY"}, "--weaviate-api-key-env CHRONICLE_TEST_UNSET_KEY: the environment variable CHRONICLE_TEST_UNSET_KEY is unset or empty, so the Weaviate server would be called anonymously"},
		{[]string{"mcp", "--api", "notaurl", "--scope", "project:a"}, `--api "notaurl": not the http:// or https:// URL of a running chronicle serve`},
		// the topics' replicas are a cluster's (a Kafka platform review)
		{[]string{"serve", "--data", t.TempDir(), "--replication-factor", "3"}, "--replication-factor: for the topics created on a Kafka cluster named by --brokers"},
		{[]string{"serve", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092", "--replication-factor", "2", "--min-insync-replicas", "3"}, "--min-insync-replicas: 3 is above --replication-factor 2"},
		{[]string{"demo", "--data", t.TempDir(), "--brokers", "127.0.0.1:9092", "--replication-factor", "0"}, "--replication-factor: 0, must be -1 (the cluster's default) or ≥ 1"},
	} {
		// bounded: a flag no longer refused starts the command, and a
		// serve would run until the test binary's own timeout
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, binary, c.args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("chronicle %v: %v\n%s\nwant a refusal saying %s", c.args, err, out, c.want)
		}
	}
}

// token create names its missing flags: --name (the file's check named
// "tokens[0].name") and at least one of --read and --write (a token with
// neither was stored and could do nothing).
func TestTokenCreateNamesItsFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "--file", file, "--read", "project:a"}, "--name: required"},
		{[]string{"token", "create", "--file", file, "--name", "a"}, "--read, --write: give at least one"},
	} {
		out, err := exec.Command(binary, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("chronicle %v: %v\n%s\nwant a refusal saying %s", c.args, err, out, c.want)
		}
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused token create wrote %s (%v)", file, err)
	}
}

// search game24 refuses a negative --quota and ranks out of order by flag,
// before starting a broker or creating --data.
func TestSearchFlagsCheckedFirst(t *testing.T) {
	data := filepath.Join(t.TempDir(), "sg")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--quota", "-1"}, "--quota: -1"},
		{[]string{"--from", "-5", "--to", "2"}, "--from -5 --to 2"},
		{[]string{"--from", "10", "--to", "2"}, "--from 10 --to 2"},
		// the recording covers ToT's puzzles only: others were reported as
		// 0 solved, every one unexpandable (a walkthrough)
		{[]string{"--proposer", "recorded", "--from", "1", "--to", "1"}, "covers puzzles 901–1000 only"},
		// the flag, not distill's Go field ("distill: LLMConfig.URL: …":
		// a walkthrough)
		{[]string{"--proposer", "llm", "--llm-url", "ftp://x", "--llm-model", "m"}, `--proposer llm: --llm-url: "ftp://x" is not an http or https URL`},
	} {
		out, err := exec.Command(binary, append([]string{"search", "game24", "--data", data}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("search game24 %v: %v\n%s\nwant a refusal saying %s", c.args, err, out, c.want)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("a refused search created %s (%v)", data, err)
	}
}

// solver lock on a --data without a log fails naming it and creates
// nothing: it used to start an embedded broker there, leaving an empty log
// tree, and then answer "not found" (found by a new user's walkthrough).
func TestSolverLockWithoutALog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	out, err := exec.Command(binary, "solver", "lock", "s1", "--data", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no log at "+filepath.Join(dir, "log")) {
		t.Fatalf("solver lock on a missing directory: %v\n%s\nwant a refusal naming the log", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("solver lock left %s behind (%v)", dir, err)
	}
}

// Each importer has its own help with only its flags: the three shared one
// text, and tot's --data, --scope and --json showed under taubench's
// (found by a new user's walkthrough). An unknown format is refused.
func TestImportHelpPerFormat(t *testing.T) {
	for _, c := range []struct {
		format, want, notWant string
	}{
		{"taubench", "tau-bench sessions", "--data"},
		{"tot", "Tree of Thoughts", "Reflexion"},
		{"reflexion", "Reflexion HotPotQA", "--scope"},
	} {
		out, err := exec.Command(binary, "import", c.format, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) || strings.Contains(string(out), c.notWant) {
			t.Errorf("chronicle import %s --help: %v\n%s\nwant %q and no %q", c.format, err, out, c.want, c.notWant)
		}
	}
	if out, err := exec.Command(binary, "import", "bogus", "x").CombinedOutput(); err == nil || !strings.Contains(string(out), `unknown command "bogus"`) {
		t.Errorf("chronicle import bogus x: %v\n%s\nwant a failure naming bogus", err, out)
	}
}

// ingest and import fail at once naming the error when the broker refuses
// the connection or its host is unknown: they waited the producer's whole
// 15 s publish timeout first (found by a new user's walkthrough).
func TestProducerCommandsFailFastOnARefusedBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "taubench", "sample", "--brokers", closed}, "connection refused"},
		{[]string{"import", "reflexion", "react-base-100q-5trials", "--brokers", closed}, "connection refused"},
		{[]string{"import", "taubench", "sample", "--brokers", "nosuchhost.invalid:9092"}, "nosuchhost.invalid"},
	} {
		t0 := time.Now()
		out, err := exec.Command(binary, c.args...).CombinedOutput()
		took := time.Since(t0)
		if err == nil || !strings.Contains(string(out), "no broker answered") || !strings.Contains(string(out), c.want) {
			t.Errorf("chronicle %v: %v\n%s\nwant a failure naming %q", c.args, err, out, c.want)
		}
		if took > 10*time.Second && c.want == "connection refused" { // the publish timeout is 15 s; a name lookup takes what the resolver takes
			t.Errorf("chronicle %v took %v to fail, want well under the 15 s publish timeout", c.args, took)
		}
	}
}

// A command that takes no positional argument refuses one, naming it,
// before it starts anything: `chronicle digest DIR` digested ./data and
// `chronicle serve DIR` served ./data, the argument silently ignored
// (found by a new user's walkthrough). The directory given as an argument
// is left untouched, and none is created in the working directory.
func TestStrayArgumentIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--http", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0", "somedir"},
		{"demo", "--kafka-listen", "127.0.0.1:0", "somedir"},
		{"digest", "somedir"},
		{"replay", "--into", filepath.Join(dir, "into"), "somedir"},
		{"audit", "somedir"},
		{"inspect", "--http", "127.0.0.1:0", "somedir"},
		{"deadletter", "list", "somedir"},
		{"broker", "--kafka-listen", "127.0.0.1:0", "somedir"},
		{"token", "create", "--file", filepath.Join(dir, "t.json"), "--name", "a", "somedir"},
		{"eval", "somedir"},
		{"mcp", "--api", "http://127.0.0.1:1", "--scope", "project:a", "somedir"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("chronicle %s: still running after 30 s; want a refusal of the argument", strings.Join(args, " "))
			continue
		}
		if err == nil || !strings.Contains(string(out), `takes no argument, got "somedir"`) {
			t.Errorf("chronicle %s: %v\n%s\nwant a refusal naming the argument", strings.Join(args, " "), err, out)
		}
	}
	for _, name := range []string{"data", "into", "t.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("a refused command left %s behind (%v)", name, err)
		}
	}
}

// nonEmptyDir is a new directory holding one file.
func nonEmptyDir(t *testing.T) string {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "left-over"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// search game24 --to past the end of 24.csv says where it ends instead of
// cutting the range silently (a walkthrough).
func TestSearchRangePastTheEndIsSaid(t *testing.T) {
	out, err := exec.Command(binary, "search", "game24", "--from", "1362", "--to", "1363", "--baseline=false", "--json",
		"--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--to 1363: 24.csv ends at rank 1362") || !strings.Contains(string(out), `"puzzles": 1`) {
		t.Fatalf("search game24 --to 1363: %v\n%s\nwant one puzzle and a warning naming the end", err, out)
	}
	// and the summary names the ranks searched, not the ones asked (it
	// said 1360–1365 after warning 1360–1362: a README-claims walkthrough)
	out, err = exec.Command(binary, "search", "game24", "--from", "1362", "--to", "1363", "--baseline=false",
		"--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ranks 1362–1362") {
		t.Fatalf("search game24 --to 1363: %v\n%s\nwant the summary to name ranks 1362–1362", err, out)
	}
	// the Tree of Thoughts log covers ranks 901–1000: outside them its
	// figure is "not logged", not "solved 0", which read as a failure (a
	// walkthrough's finding)
	if !strings.Contains(string(out), "Tree of Thoughts  not logged for these ranks") || strings.Contains(string(out), "Tree of Thoughts  solved") {
		t.Fatalf("search game24 --from 1362: %s\nwant the Tree of Thoughts figure said to be not logged", out)
	}
}

// replay --into a directory holding the store of a replay that did not
// finish (killed) says so and what to do; it said only "already holds
// projections", while digest and serve named the unfinished replay (an
// SRE's walkthrough, 2026-12-03).
func TestReplayIntoAnUnfinishedReplaySaysSo(t *testing.T) {
	into := t.TempDir()
	st, err := projections.Open(pipeline.ProjectionsDir(into), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkReplayStarted(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, err := exec.Command(binary, "replay", "--data", t.TempDir(), "--into", into).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a replay that did not finish") || !strings.Contains(string(out), "remove that directory") {
		t.Fatalf("replay into an unfinished replay's directory: %v\n%s", err, out)
	}
}

// A demo that does not catch up because every model call fails says what
// the processors dead-lettered, not only "context deadline exceeded" (an
// LLM-endpoint walkthrough, 2026-12-03: a model answering 500 had each
// session dead-lettered, and nothing on stderr said so).
func TestDemoTimeoutNamesTheDeadLetters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the model is down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	out, err := exec.Command(binary, "demo", "--data", t.TempDir(), "--kafka-listen", "127.0.0.1:0",
		"--llm-url", srv.URL, "--llm-model", "m", "--llm-rate", "1000", "--timeout", "12s", "--json").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "dead-lettered so far") || !strings.Contains(string(out), "500") {
		t.Fatalf("demo against a failing model: %v\n%s", err, out)
	}
}

// --llm-rate 0, negative, NaN or +Inf is refused before anything is
// written, naming the value given: it was refused only once serve had
// made the data directory and started the embedded broker, and named as
// -1 whatever was given (a CLI walkthrough, 2026-12-05).
func TestLLMRateIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	for _, rate := range []string{"0", "-2", "NaN", "+Inf"} {
		for _, command := range []string{"serve", "demo"} {
			data := filepath.Join(t.TempDir(), "data")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err := exec.CommandContext(ctx, binary, command, "--data", data, "--kafka-listen", "127.0.0.1:0",
				"--llm-url", "http://127.0.0.1:1/v1", "--llm-model", "m", "--llm-rate", rate).CombinedOutput()
			cancel()
			if want := "--llm-rate: " + rate + ", must be a finite number > 0"; err == nil || !strings.Contains(string(out), want) {
				t.Errorf("%s --llm-rate %s: %v\n%s\nwant a refusal saying %q", command, rate, err, out, want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("%s --llm-rate %s left %s behind (%v)", command, rate, data, err)
			}
		}
	}
}

// A replay stopped by SIGINT or SIGTERM removes the unfinished store it
// made and the --into it made, says so, and the same command then runs: it
// left the part-built store behind (432 MB after a second of a demo's
// log), said only "context canceled", and refused the command run again
// (a CLI walkthrough, 2026-12-05).
func TestInterruptedReplayLeavesNothing(t *testing.T) {
	_, data := cleanDemo(t)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		into := filepath.Join(t.TempDir(), "asof")
		cmd := exec.Command(binary, "replay", "--data", data, "--into", into)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// the first progress line: the store is made and records are read
		var seen strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(seen.String(), "replaying") {
			n, err := stderr.Read(buf)
			seen.Write(buf[:n])
			if err != nil {
				t.Fatalf("replay's stderr ended before its progress: %v\n%s", err, seen.String())
			}
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(stderr)
		seen.Write(rest)
		err = cmd.Wait()
		if err == nil {
			t.Fatalf("%v: the replay exited 0 (finished before the signal?)\n%s", sig, seen.String())
		}
		if !strings.Contains(seen.String(), "interrupted by a signal") || !strings.Contains(seen.String(), "were removed") {
			t.Errorf("%v: %v\n%s\nwant it to say it was interrupted and what it removed", sig, err, seen.String())
		}
		if _, err := os.Stat(into); !os.IsNotExist(err) {
			t.Errorf("%v: the replay left %s behind (%v)", sig, into, err)
		}
	}
	into := filepath.Join(t.TempDir(), "asof")
	if out, err := exec.Command(binary, "replay", "--data", data, "--into", into).CombinedOutput(); err != nil {
		t.Fatalf("the replay run again: %v\n%s", err, out)
	}
}

// --data "" (a script's unset variable) is refused naming the flag: every
// --data defaults to ./data, and given it empty serve and demo ran on
// ./data without a word and broker wrote ./log (a CLI walkthrough,
// 2026-12-05).
func TestEmptyDataIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"broker", "--kafka-listen", "127.0.0.1:0"},
		{"serve", "--kafka-listen", "127.0.0.1:0", "--http", "127.0.0.1:0"},
		{"demo", "--kafka-listen", "127.0.0.1:0"},
		{"digest"},
		{"inspect", "--http", "127.0.0.1:0"},
		{"deadletter", "list"},
	} {
		cwd := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary, append(args, "--data", "")...)
		cmd.Dir = cwd
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), `--data: "" names no directory`) {
			t.Errorf("%v --data \"\": %v\n%s\nwant a refusal naming --data", args, err, out)
		}
		if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
			t.Errorf("%v --data \"\" wrote %s into the working directory", args, entries[0].Name())
		}
	}
}

// An embedded broker's address in use is said naming --kafka-listen: it
// said "broker: start embedded broker on …: address already in use", no
// flag (a CLI walkthrough, 2026-12-05).
func TestKafkaListenInUseNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	out, err := exec.Command(binary, "broker", "--data", t.TempDir(), "--kafka-listen", addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--kafka-listen "+addr+": the address is in use") {
		t.Fatalf("broker on an address in use: %v\n%s", err, out)
	}
}

// A command run with the wrong number of arguments names the ones it
// takes, from its usage: cobra's "accepts 1 arg(s), received 0" named none
// (`workflow state` without its ID: a CLI walkthrough, 2026-12-05).
func TestMissingArgumentsAreNamed(t *testing.T) {
	for args, want := range map[string]string{
		"workflow state":    "chronicle workflow state takes ID, got 0 argument(s)",
		"workflow at w1":    "chronicle workflow at takes ID CHECKPOINT_ID, got 1 argument(s)",
		"import taubench":   "chronicle import taubench takes ",
		"solver lock a b c": "chronicle solver lock takes ",
	} {
		out, err := exec.Command(binary, strings.Fields(args)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("chronicle %s: %v\n%s\nwant %q", args, err, out, want)
		}
	}
}
