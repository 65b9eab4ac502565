package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/broker"
)

func TestZZSlowShutdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Partitions: 4, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t0 := time.Now()
	m1 := startMember(ctx, t, "m1", b.Addrs(), 0)
	m2 := startMember(ctx, t, "m2", b.Addrs(), 0)
	m3 := startMember(ctx, t, "m3", b.Addrs(), 0)
	ms := []*member{m1, m2, m3}
	waitCluster(t, ms)
	t.Logf("cluster up after %v", time.Since(t0))
	envs, _ := sessionIn(t, 3, "project:a", "x")
	if code, m := call(t, m1.srv.URL, "tok-a", "POST", "/v1/events", envs); code != 202 {
		t.Fatalf("seeding: %d %v", code, m)
	}
	waitCluster(t, ms)
	t.Logf("seeded after %v", time.Since(t0))
	for _, m := range ms {
		s := time.Now()
		m.srv.Close()
		_ = m.p.Close()
		t.Logf("%s closed in %v", m.name, time.Since(s))
	}
}
