package pipeline_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections"
)

// A backup copied while the service runs (cp -a, tar) takes DATA/log
// before DATA/projections: records written between the two are in the
// copy's store and not in its log, and a start on the copy is refused
// (ErrForeignLog). The refusal now says what happened and how to recover
// the copy from its own log (replay --data DIR --into NEW, then put
// NEW/projections in place of DIR/projections), and following it gives a
// directory that starts. Before, it said "a replayed or copied directory
// is read with digest and audit, not served", which left an operator
// restoring a backup without a way to serve it (a disk walkthrough).
func TestLiveCopyAheadOfItsLogSaysHowToRebuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	live, backup := t.TempDir(), t.TempDir()
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: live, KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	publish := func(sessions []int) {
		t.Helper()
		all := sampleEvents(t, 4)
		for _, i := range sessions {
			if err := p.Producer.Publish(ctx, all[i]...); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.WaitCaughtUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	publish([]int{0, 1})
	// the log first, then more writes, then the projections
	if out, err := exec.Command("cp", "-a", pipeline.LogDir(live), backup+"/").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	publish([]int{2, 3})
	p.Close()
	if out, err := exec.Command("cp", "-a", pipeline.ProjectionsDir(live), backup+"/").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	os.Remove(filepath.Join(pipeline.LogDir(backup), broker.LockFile))

	_, err = pipeline.Start(ctx, pipeline.Config{DataDir: backup, KafkaListen: "127.0.0.1:0", Partitions: 1})
	if !errors.Is(err, pipeline.ErrForeignLog) {
		t.Fatalf("a copy whose store is ahead of its log: %v, want ErrForeignLog", err)
	}
	for _, want := range []string{"copied while the service ran", "chronicle replay --data " + backup + " --into", "in place of " + pipeline.ProjectionsDir(backup)} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the refusal does not say %q:\n%v", want, err)
		}
	}
	t.Log(err)

	// what it says: rebuild the projections from the copy's log, swap them in
	rebuilt := t.TempDir()
	b, err := broker.Start(ctx, broker.Config{DataDir: pipeline.LogDir(backup), Listen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := projections.Open(pipeline.ProjectionsDir(rebuilt), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := processors.Replay(ctx, processors.ReplayConfig{Brokers: b.Addrs(), Store: st, Processors: pipeline.DefaultProcessors()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b.Close()
	if err := os.RemoveAll(pipeline.ProjectionsDir(backup)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(pipeline.ProjectionsDir(rebuilt), pipeline.ProjectionsDir(backup)); err != nil {
		t.Fatal(err)
	}
	q, err := pipeline.Start(ctx, pipeline.Config{DataDir: backup, KafkaListen: "127.0.0.1:0", Partitions: 1})
	if err != nil {
		t.Fatalf("the copy with its projections rebuilt from its log: %v", err)
	}
	q.Close()
}
