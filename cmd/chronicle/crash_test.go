package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver/mcptest"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// A log position in a projection row: "topic:partition:offset" in a value
// (projections.Position.String), topic/partition/offset in a key (the
// session index's rows, a session's trace rows) and in the value that
// names such a key (a session's trace_at).
var (
	positionInValue = regexp.MustCompile(`chronicle\.[a-z.]+(:[0-9]+:[0-9]+|/[0-9]{6}/[0-9]{20})`)
	positionInKey   = regexp.MustCompile(`(chronicle\.[a-z.]+)/[0-9]{6}/[0-9]{20}`)
)

// maskedRows returns every projection row of the stopped service in data,
// "projection/key=value", with log positions masked, sorted (two rows
// that differ only by position count twice).
func maskedRows(t *testing.T, data string) []string {
	t.Helper()
	store, err := projections.Open(pipeline.ProjectionsDir(data), projections.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d, err := store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for proj := range d.Projections {
		if err := store.Scan(proj, "", "", func(k string, v []byte) (bool, error) {
			rows = append(rows, proj+"/"+positionInKey.ReplaceAllString(k, "$1/P/O")+"="+positionInValue.ReplaceAllString(string(v), "POS"))
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(rows)
	return rows
}

// firstDifference names the first row where two sorted row lists differ,
// "" when they are equal.
func firstDifference(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("clean row %q, after crashes %q", a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("clean run %d rows, after crashes %d", len(a), len(b))
	}
	return ""
}

// TestCrashRecovery runs the pipeline over the tau-bench sample in a child
// process, SIGKILLs it at random moments until at least 5 kills landed while
// it was importing or catching up, restarts it each time and finally lets
// it finish. The projections must then pass audit and have
// the digest of a clean, uninterrupted run: nothing lost, nothing applied
// twice, derived events re-sent with identical ids.
func TestCrashRecovery(t *testing.T) { crashRecovery(t, 1) }

// TestCrashRecoveryFourPartitions is the crash test with every topic in 4
// partitions, applied concurrently: audit must pass (live = replay of the
// same log). The digest may differ from a clean run's: which distilled
// memory reaches the memory bank first depends on how the session
// partitions interleave, and the log records that order.
func TestCrashRecoveryFourPartitions(t *testing.T) { crashRecovery(t, 4) }

func crashRecovery(t *testing.T, partitions int) {
	if testing.Short() {
		t.Skip("crash test runs the full demo several times")
	}
	parts := []string{"--partitions", strconv.Itoa(partitions)}
	var (
		clean     Summary
		cleanData string
	)
	if partitions == 1 { // the defaults: the clean run other tests share
		clean, cleanData = cleanDemo(t)
	} else {
		cleanData = t.TempDir()
		clean = runDemo(t, cleanData, parts...)
	}
	if clean.Sessions != 200 || clean.Evaluations != 200 {
		t.Fatalf("clean run: %d sessions, %d evaluations", clean.Sessions, clean.Evaluations)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 42))
	t.Logf("clean run: digest %s in %.2fs; kill seed %d", clean.Digest, clean.Seconds, seed)

	data := t.TempDir()
	// Restarted runs re-import duplicates and finish faster than the clean
	// run, so delays are drawn from the first part of the clean run's
	// duration, and attempts go on until enough kills landed mid-work.
	window := time.Duration(clean.Seconds*float64(time.Second)) * 3 / 4
	const wantKills, maxAttempts = 5, 25
	landed := 0
	for i := 0; i < maxAttempts && landed < wantKills; i++ {
		cmd := exec.Command(binary, append([]string{"demo", "--data", data, "--kafka-listen", "127.0.0.1:0", "--json"}, parts...)...)
		var errb mcptest.Buffer // read while the process writes it
		cmd.Stderr = &errb
		began := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(window)))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if i%3 != 2 {
			// two attempts in three are killed a random time into the
			// work, counted from when the run says it works: a restart
			// on a grown log takes longer to start than the clean run,
			// and with delays counted from the start, on a loaded
			// machine (CI under -race), 21 of 25 kills landed while
			// starting and the test failed for want of kills mid-work;
			// the third is killed a random time from the start, so
			// kills while starting stay covered
			working := time.Now().Add(30 * time.Second)
			for !strings.Contains(errb.String(), "importing") && !strings.Contains(errb.String(), "catching up") && time.Now().Before(working) && len(done) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			after = time.Since(began) + time.Duration(rng.Int64N(int64(window/2)))
		}
		select {
		case err := <-done:
			t.Logf("attempt %d: the run finished before %v (%v); restarting", i, after, err)
		case <-time.After(after - time.Since(began)):
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-done
			stage := "starting"
			switch s := errb.String(); {
			case strings.Contains(s, "catching up"):
				stage = "catching up"
				landed++
			case strings.Contains(s, "importing"):
				stage = "importing"
				landed++
			}
			t.Logf("attempt %d: SIGKILL after %v while %s", i, after, stage)
		}
	}
	if landed < wantKills {
		t.Fatalf("only %d kills landed while the pipeline was working (want %d in %d attempts)", landed, wantKills, maxAttempts)
	}
	final := runDemo(t, data, parts...)
	if partitions == 1 && final.Digest != clean.Digest {
		// rows that name a log position (the session index, a memory's
		// history) differ legitimately: the crashed run's log holds re-sent
		// duplicates, which shift later records' offsets. Everything else,
		// and every row with its positions masked, must be equal.
		want, got := maskedRows(t, cleanData), maskedRows(t, data)
		if d := firstDifference(want, got); d != "" {
			t.Fatalf("digest after crashes %s != clean %s (sessions %d, events %d), and with log positions masked: %s", final.Digest, clean.Digest, final.Sessions, final.Events, d)
		}
		t.Logf("digest after crashes %s != clean %s only by log positions (%d rows equal with positions masked)", final.Digest, clean.Digest, len(want))
	}
	if final.Sessions != 200 || final.Events != clean.Events || final.EvaluationAgreement != clean.EvaluationAgreement {
		t.Fatalf("after crashes: %+v, clean: %+v", final, clean)
	}
	audit := exec.Command(binary, "audit", "--data", data)
	if out, err := audit.CombinedOutput(); err != nil {
		t.Fatalf("audit after crashes: %v\n%s", err, out)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatal(err)
	}
}
