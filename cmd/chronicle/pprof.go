package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// pprofFlag is serve's --pprof-listen: where Go's profiler answers, empty
// for nowhere (the default).
const pprofFlag = "pprof-listen"

// startPprof serves Go's profiler (net/http/pprof: /debug/pprof/, its
// goroutine, heap, allocs, profile and trace pages) on addr, a loopback
// address only: the pages have no authentication and show the process's
// insides, so a remote operator reaches them through an SSH tunnel. It
// prints "chronicle: profiler on http://ADDR/debug/pprof/" and returns
// the function that stops it (within 1 s). Errors: an address that is not
// loopback, or one that cannot be listened on, each naming the flag. A
// cluster soak (2026-12-07) could compare no goroutine dumps over time and
// take no heap profile: serve had no profiler, and SIGQUIT, the only dump,
// ends the process.
func startPprof(addr string) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usage(fmt.Errorf("--%s %s: %w", pprofFlag, addr, err))
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usage(fmt.Errorf("--%s %s: a loopback address only (127.0.0.1:6060, [::1]:6060, localhost:6060): the profiler's pages have no authentication; reach them from elsewhere through an SSH tunnel", pprofFlag, addr))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--%s %s: %w", pprofFlag, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "chronicle: profiler on http://%s/debug/pprof/\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close() // a CPU profile or trace still being taken
		}
	}, nil
}
