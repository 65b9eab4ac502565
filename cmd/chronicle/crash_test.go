package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
	clean := runDemo(t, t.TempDir(), parts...)
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
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(window)))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Logf("attempt %d: the run finished before %v (%v); restarting", i, after, err)
		case <-time.After(after):
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
		t.Fatalf("digest after crashes %s != clean %s (sessions %d, events %d)", final.Digest, clean.Digest, final.Sessions, final.Events)
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
