package main

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/twmb/franz-go/pkg/kfake"
)

// serve --partitions N on topics that exist with another count warns on
// stderr naming the flag, each such topic and its count, which it keeps;
// the flag was ignored silently (found by an operator's walkthrough:
// joining a 3-partition cluster with --partitions 5). chronicle.memories,
// created with one partition whatever the flag, is not named when it has
// one. Without the flag the existing count is the expected one: no
// warning.
func TestServeWarnsWhenPartitionsDoNotApply(t *testing.T) {
	topics := make([]string, len(events.AllTopics))
	for i, tp := range events.AllTopics {
		topics[i] = string(tp)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...), kfake.SeedTopics(1, string(events.TopicMemories)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		flags []string
		warn  bool
	}{{nil, false}, {[]string{"--partitions", "5"}, true}} {
		args := append([]string{"serve", "--data", t.TempDir(), "--brokers", c.ListenAddrs()[0], "--http", "127.0.0.1:0"}, tc.flags...)
		cmd := exec.Command(binary, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var warning, all string
		timeout := time.After(90 * time.Second)
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				all += l + "\n"
				if strings.Contains(l, "warning: --partitions") {
					warning = l
					break read // printed before the group join
				}
				if strings.Contains(l, "HTTP API on") {
					break read
				}
			case <-timeout:
				break read
			}
		}
		_ = cmd.Process.Kill()
		go func() {
			for range lines {
			}
		}()
		_ = cmd.Wait()
		if !tc.warn {
			if warning != "" || !strings.Contains(all, "HTTP API on") {
				t.Errorf("serve %v: want it up without a warning:\n%s", tc.flags, all)
			}
			continue
		}
		t.Logf("serve %v: %s", tc.flags, warning)
		for _, w := range []string{"--partitions 5", "chronicle.sessions has 3", "chronicle.deadletter has 3"} {
			if !strings.Contains(warning, w) {
				t.Errorf("serve %v: warning %q, want %q; stderr:\n%s", tc.flags, warning, w, all)
			}
		}
		if strings.Contains(warning, "chronicle.memories") {
			t.Errorf("serve %v: warning %q names chronicle.memories, which has the one partition Chronicle creates it with", tc.flags, warning)
		}
	}
}
