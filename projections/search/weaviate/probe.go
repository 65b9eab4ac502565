package weaviate

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// DefaultGRPCPort is the port of Weaviate's gRPC API when its GRPC_PORT
// is not set.
const DefaultGRPCPort = "50051"

// DefaultGRPCHost is the gRPC address a server at host (host:port of its
// REST API) has by default: the same host, port DefaultGRPCPort.
func DefaultGRPCHost(host string) string {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	return net.JoinHostPort(h, DefaultGRPCPort)
}

// ProbeGRPC reports whether a Weaviate gRPC API answers at addr
// (host:port): one health check (grpc.health.v1.Health/Check, which
// Weaviate serves) with cfg's scheme (TLS for https) and API key, within
// timeout. nil: it answered SERVING.
func ProbeGRPC(ctx context.Context, cfg Config, addr string, timeout time.Duration) error {
	creds := insecure.NewCredentials()
	if cfg.Scheme == "https" {
		creds = credentials.NewClientTLSFromCert(nil, "")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("weaviate: gRPC probe of %s: %w", addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if h := cfg.withDefaults().authHeaders(); len(h) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(h))
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("weaviate: gRPC probe of %s: %w", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("weaviate: gRPC probe of %s: status %s", addr, resp.GetStatus())
	}
	return nil
}
