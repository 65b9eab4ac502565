package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search/weaviate"
	"github.com/chronicle-dev/chronicle/projections/search/weaviate/weaviatetest"
)

// --weaviate-grpc: auto probes the --weaviate host's port 50051 and stays
// on GraphQL when no gRPC API answers there (the test server's gRPC port
// is a free port, not 50051); host:port is used as given; off and ""
// keep GraphQL; a host:port without --weaviate is refused while auto and
// off (the default, and its opposite) are not.
func TestWeaviateGRPCFlag(t *testing.T) {
	for _, v := range []string{grpcAuto, grpcOff, ""} {
		if vs, err := (&commonFlags{weaviateGRPC: v}).vectorStore(context.Background()); err != nil || vs != nil {
			t.Errorf("--weaviate-grpc %q without --weaviate: %v, %v; want the embedded store", v, vs, err)
		}
	}
	if _, err := (&commonFlags{weaviateGRPC: "127.0.0.1:50051"}).vectorStore(context.Background()); err == nil || !strings.Contains(err.Error(), "needs --weaviate") {
		t.Errorf("--weaviate-grpc host:port without --weaviate: %v", err)
	}
	srv := weaviatetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if addr := weaviate.DefaultGRPCHost(srv.Host); weaviate.ProbeGRPC(ctx, weaviate.Config{}, addr, time.Second) == nil {
		t.Skipf("a gRPC API answers at %s on this machine: auto would take it", addr)
	}
	for _, c := range []struct{ flag, want string }{{grpcAuto, ""}, {grpcOff, ""}, {srv.GRPCHost, srv.GRPCHost}} {
		vs, err := (&commonFlags{weaviate: srv.Host, weaviateGRPC: c.flag}).vectorStore(ctx)
		if err != nil {
			t.Fatalf("--weaviate-grpc %s: %v", c.flag, err)
		}
		st := vs.(*weaviate.Store)
		if got := st.Config().GRPCHost; got != c.want {
			t.Errorf("--weaviate-grpc %s: GRPCHost %q, want %q", c.flag, got, c.want)
		}
		if err := st.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	// an address where no gRPC API answers is refused at start, naming the
	// flag: the HTTP port, and a closed one (both started the service,
	// and every search was then a 503 after 14 s: a Weaviate
	// walkthrough, 2026-11-30)
	for _, bad := range []string{srv.Host, weaviate.DefaultGRPCHost(srv.Host)} {
		if _, err := (&commonFlags{weaviate: srv.Host, weaviateGRPC: bad}).vectorStore(ctx); err == nil || !strings.Contains(err.Error(), "--weaviate-grpc "+bad) {
			t.Errorf("--weaviate-grpc %s (no gRPC there): %v; want a refusal naming the flag", bad, err)
		}
	}
}

// --llm-model without --llm-url was ignored silently (no LLM, no word):
// its configuration is now refused, naming --llm-url; neither flag is no
// LLM at all.
func TestLLMModelNeedsURL(t *testing.T) {
	if cfg := (&commonFlags{}).llm(); cfg != nil {
		t.Fatalf("no LLM flags: %+v, want nil", cfg)
	}
	cfg := (&commonFlags{llmModel: "m"}).llm()
	if cfg == nil {
		t.Fatal("--llm-model alone: nil, the flag ignored")
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--llm-url") {
		t.Fatalf("--llm-model alone: %v, want an error naming --llm-url", err)
	}
}
