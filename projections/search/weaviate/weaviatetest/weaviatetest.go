// Package weaviatetest runs a real Weaviate server for tests: a
// single-node weaviate-server process on free loopback ports (within
// $CHRONICLE_WEAVIATE_TEST_PORTS when set: EnvPorts) with its own data
// directory (anonymous access, or API-key authentication with
// StartWith/LaunchWith and Options.APIKey), built from the Go module proxy
// by
//
//	cd /tmp && GOFLAGS=-mod=mod go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2
//
// (`make weaviate` does that when the binary is missing).
//
// The binary is $WEAVIATE_SERVER when set, else weaviate-server in `go env
// GOBIN`, else in `go env GOPATH`/bin. When it is missing, Start and Require
// skip the test with a message saying how to install it, or fail it when
// $CHRONICLE_REQUIRE_WEAVIATE is 1 (CI sets it, so a missing install step
// cannot pass as green).
package weaviatetest

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables the package reads.
const (
	// EnvServer names the weaviate-server binary to run (default: the one
	// `go install` puts in GOBIN or GOPATH/bin).
	EnvServer = "WEAVIATE_SERVER"
	// EnvRequire set to 1 turns a missing binary from a skip into a
	// failure.
	EnvRequire = "CHRONICLE_REQUIRE_WEAVIATE"
	// EnvPorts, when set to "lo-hi" (e.g. 22000-22999), confines the
	// server's six ports to that range, so that test runs sharing a
	// machine can each keep to a range of their own; unset, the kernel
	// picks free ephemeral ports.
	EnvPorts = "CHRONICLE_WEAVIATE_TEST_PORTS"
)

// Version is the Weaviate release the tests are written against.
const Version = "v1.35.2"

// InstallCommand is the shell command that installs the binary.
const InstallCommand = "cd /tmp && GOFLAGS=-mod=mod go install github.com/weaviate/weaviate/cmd/weaviate-server@" + Version

// StartTimeout bounds how long Launch and Restart wait for the server to
// report ready (/v1/.well-known/ready).
const StartTimeout = 90 * time.Second

// StopTimeout is how long Stop waits after SIGTERM before it kills.
const StopTimeout = 20 * time.Second

// ErrNoBinary is wrapped by Binary's error when no weaviate-server binary
// is found.
var ErrNoBinary = errors.New("weaviatetest: weaviate-server binary not found")

// Binary returns the path of the weaviate-server binary: $WEAVIATE_SERVER,
// else GOBIN/weaviate-server, else GOPATH/bin/weaviate-server (as `go env`
// reports them). The error wraps ErrNoBinary and names the paths tried.
func Binary() (string, error) {
	if p := os.Getenv(EnvServer); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return "", fmt.Errorf("%w: %s=%s is not a file (install: make weaviate, i.e. %s)", ErrNoBinary, EnvServer, p, InstallCommand)
		}
		return p, nil
	}
	var tried []string
	for _, dir := range goBinDirs() {
		p := filepath.Join(dir, "weaviate-server")
		tried = append(tried, p)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (tried %s; install: make weaviate, i.e. %s; or set %s)", ErrNoBinary, strings.Join(tried, ", "), InstallCommand, EnvServer)
}

func goBinDirs() []string {
	var dirs []string
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
			dirs = append(dirs, strings.TrimSpace(lines[0]))
		}
		if len(lines) > 1 {
			for _, p := range filepath.SplitList(strings.TrimSpace(lines[1])) {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
}

// Require returns the binary's path, or ends tb: Fatal when
// $CHRONICLE_REQUIRE_WEAVIATE is 1, Skip otherwise.
func Require(tb testing.TB) string {
	tb.Helper()
	p, err := Binary()
	if err == nil {
		return p
	}
	if os.Getenv(EnvRequire) == "1" {
		tb.Fatalf("%v (%s=1: a real Weaviate server is required)", err, EnvRequire)
	}
	tb.Skipf("skipping: %v", err)
	return ""
}

// Users of the API keys of a server started with Options.APIKey.
const (
	// AdminUser is the user of Options.APIKey: it may do everything.
	AdminUser = "chronicle-admin"
	// ReadOnlyUser is the user of Options.ReadOnlyAPIKey: it may only
	// read.
	ReadOnlyUser = "chronicle-reader"
)

// Options are the settings of a server beyond the defaults of Start and
// Launch (the zero Options: anonymous access, which may do everything).
type Options struct {
	// APIKey, when set, turns anonymous access off and API-key
	// authentication on (AUTHENTICATION_APIKEY_*), with this key for
	// AdminUser, and the admin list authorization on
	// (AUTHORIZATION_ADMINLIST_*), with AdminUser as its admin. A request
	// without a key or with an unknown one gets HTTP 401 (gRPC
	// Unauthenticated).
	APIKey string
	// ReadOnlyAPIKey, with APIKey, is a second key, for ReadOnlyUser, a
	// read-only user of the admin list: its writes get HTTP 403 (gRPC
	// PermissionDenied).
	ReadOnlyAPIKey string
	// GOGC is the Go garbage collector's target percentage for the
	// server process (the GOGC environment variable, "off" or a number).
	// Default DefaultGOGC; the server's own default, Go's, is 100.
	GOGC string
}

// DefaultGOGC is the GOGC the server runs with unless Options.GOGC says
// otherwise, and the one compose.yaml gives the Weaviate service. Chosen
// by the server's CPU per search (BenchmarkCandidateCost/two-phase, 10,000
// memories, 400 searches, two runs each, 2026-11-30): 12.5 / 11.3 ms at
// 100, 11.3 / 10.9 at 200, 10.7 / 10.3 at 400, 10.7 / 10.8 at 800, for a
// resident set of 241, 302–345, 617–635 and 1,166–1,377 MB: 400 is the
// last step that still saves CPU. The collector took about 12% of the
// server's CPU at 100 (its pprof profile); less of it is less of the
// latency tail on two shared cores (README, "Weaviate's collector").
const DefaultGOGC = "400"

// Server is a weaviate-server process on free ports: REST, gossip and
// raft on 127.0.0.1; gRPC and the cluster data port on all interfaces
// (weaviate-server has no setting for their address).
type Server struct {
	// Host is the REST/GraphQL address, 127.0.0.1:<port>.
	Host string
	// GRPCHost is the gRPC address, 127.0.0.1:<port>.
	GRPCHost string
	// DataDir is PERSISTENCE_DATA_PATH; it outlives Stop, so Restart
	// finds the data again.
	DataDir string
	// LogPath is the file the server's output is appended to.
	LogPath string

	bin   string
	opts  Options
	ports [4]int // grpc, gossip (data = +1), raft (internal rpc = +1), http in Host

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start launches a server for tb (after Require) in a temporary
// directory and stops it when tb ends; on failure it fails tb. When tb
// failed, the end of the server's log is logged.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartWith(tb, Options{})
}

// StartWith is Start with opts.
func StartWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	bin := Require(tb)
	dir := tb.TempDir()
	s, err := LaunchWith(bin, filepath.Join(dir, "data"), filepath.Join(dir, "weaviate.log"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("weaviate-server log (last lines):\n%s", s.LogTail(40))
		}
		if err := s.Stop(); err != nil {
			tb.Errorf("stop weaviate-server: %v", err)
		}
	})
	return s
}

// Launch starts bin on free loopback ports with dataDir (created if
// missing), appending its output to logPath, and waits until it is ready
// (StartTimeout). If the ports were taken meanwhile it tries new ones,
// three times at most.
func Launch(bin, dataDir, logPath string) (*Server, error) {
	return LaunchWith(bin, dataDir, logPath, Options{})
}

// LaunchWith is Launch with opts (kept by Restart).
func LaunchWith(bin, dataDir, logPath string, opts Options) (*Server, error) {
	if opts.ReadOnlyAPIKey != "" && opts.APIKey == "" {
		return nil, errors.New("weaviatetest: Options.ReadOnlyAPIKey needs APIKey")
	}
	if opts.ReadOnlyAPIKey != "" && opts.ReadOnlyAPIKey == opts.APIKey {
		return nil, errors.New("weaviatetest: Options.ReadOnlyAPIKey equals APIKey")
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		s := &Server{DataDir: dataDir, LogPath: logPath, bin: bin, opts: opts}
		if err := s.pickPorts(); err != nil {
			return nil, err
		}
		if last = s.Restart(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// portRange is EnvPorts's range (ok false: unset).
func portRange() (lo, hi int, ok bool, err error) {
	v := os.Getenv(EnvPorts)
	if v == "" {
		return 0, 0, false, nil
	}
	a, b, cut := strings.Cut(v, "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !cut || err1 != nil || err2 != nil || lo < 1 || hi > 65535 || hi-lo < 16 {
		return 0, 0, false, fmt.Errorf("weaviatetest: %s=%q is not a range lo-hi of at least 16 ports", EnvPorts, v)
	}
	return lo, hi, true, nil
}

// portFree reports whether p can be bound on every interface (the gRPC
// and cluster data ports listen there) and on loopback.
func portFree(p int) bool {
	for _, addr := range []string{":" + strconv.Itoa(p), "127.0.0.1:" + strconv.Itoa(p)} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// taken are the ports this process handed out from EnvPorts's range, so
// that two servers it starts never pick the same one before either binds.
var taken struct {
	mu    sync.Mutex
	ports map[int]bool
}

// freeRun returns p with p .. p+n-1 free: in EnvPorts's range when set
// (from a random start, skipping ports this process handed out), else
// from the kernel's ephemeral ports.
func freeRun(n int) (int, error) {
	lo, hi, ok, err := portRange()
	if err != nil {
		return 0, err
	}
	if !ok {
		if n == 1 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			defer l.Close()
			return l.Addr().(*net.TCPAddr).Port, nil
		}
		for i := 0; i < 50; i++ {
			p, err := freeRun(1)
			if err != nil {
				return 0, err
			}
			if p+n-1 <= 65535 && portFree(p+1) {
				return p, nil
			}
		}
		return 0, errors.New("weaviatetest: no two adjacent free ports")
	}
	taken.mu.Lock()
	defer taken.mu.Unlock()
	if taken.ports == nil {
		taken.ports = map[int]bool{}
	}
	span := hi - lo + 1
	start := int(time.Now().UnixNano() % int64(span))
	for i := 0; i < span; i++ {
		p := lo + (start+i)%span
		if p+n-1 > hi {
			continue
		}
		free := true
		for j := 0; j < n && free; j++ {
			free = !taken.ports[p+j] && portFree(p+j)
		}
		if free {
			for j := 0; j < n; j++ {
				taken.ports[p+j] = true
			}
			return p, nil
		}
	}
	return 0, fmt.Errorf("weaviatetest: no %d adjacent free ports in %s=%d-%d", n, EnvPorts, lo, hi)
}

func freePort() (int, error) { return freeRun(1) }

// freePair returns p with p and p+1 both free.
func freePair() (int, error) { return freeRun(2) }

func (s *Server) pickPorts() error {
	httpPort, err := freePort()
	if err != nil {
		return err
	}
	grpcPort, err := freePort()
	if err != nil {
		return err
	}
	gossip, err := freePair()
	if err != nil {
		return err
	}
	raft, err := freePair()
	if err != nil {
		return err
	}
	s.Host = "127.0.0.1:" + strconv.Itoa(httpPort)
	s.GRPCHost = "127.0.0.1:" + strconv.Itoa(grpcPort)
	s.ports = [4]int{grpcPort, gossip, raft, httpPort}
	return nil
}

func (s *Server) env() []string {
	grpcPort, gossip, raft := s.ports[0], s.ports[1], s.ports[2]
	env := append(os.Environ(),
		"PERSISTENCE_DATA_PATH="+s.DataDir,
		"DEFAULT_VECTORIZER_MODULE=none",
		"ENABLE_MODULES=",
		"CLUSTER_HOSTNAME=node1",
		"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
		// Gossip (TCP and UDP), raft and raft's internal RPC bind to
		// CLUSTER_BIND_ADDR. The gRPC API (GRPC_PORT) and the cluster data
		// port (CLUSTER_DATA_BIND_PORT) listen on all interfaces whatever
		// the settings: v1.35.2 listens on ":<port>" for both and has no
		// setting for their address.
		"CLUSTER_BIND_ADDR=127.0.0.1",
		"CLUSTER_GOSSIP_BIND_PORT="+strconv.Itoa(gossip),
		"CLUSTER_DATA_BIND_PORT="+strconv.Itoa(gossip+1),
		"RAFT_PORT="+strconv.Itoa(raft),
		"RAFT_INTERNAL_RPC_PORT="+strconv.Itoa(raft+1),
		"RAFT_BOOTSTRAP_EXPECT=1",
		"RAFT_JOIN=node1:"+strconv.Itoa(raft),
		// One node: no need for production's 5× raft timeouts (start-up
		// takes ~3 s instead of ~10 s).
		"RAFT_TIMEOUTS_MULTIPLIER=1",
		"GRPC_PORT="+strconv.Itoa(grpcPort),
		// Flush memtables 5 s after the last write instead of 60 s, so a
		// benchmark after a bulk load measures flushed segments (BM25 over
		// a large unflushed memtable is several times slower).
		"PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS=5",
		"GO_PROFILING_DISABLE=true",
		"PROMETHEUS_MONITORING_ENABLED=false",
		"DISABLE_TELEMETRY=true",
		"LOG_LEVEL=warning",
		"GOGC="+cmp.Or(s.opts.GOGC, DefaultGOGC), // after os.Environ(): the last value wins
	)
	if s.opts.APIKey == "" {
		return append(env, "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true")
	}
	keys, users := s.opts.APIKey, AdminUser
	if s.opts.ReadOnlyAPIKey != "" {
		keys, users = keys+","+s.opts.ReadOnlyAPIKey, users+","+ReadOnlyUser
		env = append(env, "AUTHORIZATION_ADMINLIST_READONLY_USERS="+ReadOnlyUser)
	}
	// Without an authorization module every authenticated user may do
	// everything; the admin list makes the read-only user read-only.
	// (/v1/.well-known/ready, which Restart polls, needs no key.)
	return append(env,
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=false",
		"AUTHENTICATION_APIKEY_ENABLED=true",
		"AUTHENTICATION_APIKEY_ALLOWED_KEYS="+keys,
		"AUTHENTICATION_APIKEY_USERS="+users,
		"AUTHORIZATION_ADMINLIST_ENABLED=true",
		"AUTHORIZATION_ADMINLIST_USERS="+AdminUser,
	)
}

// Running reports whether the process is up (started and not exited).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Restart starts the process again after Stop (or for the first time),
// on the same ports and data directory, and waits until it is ready. It
// is an error while it is running.
func (s *Server) Restart() error {
	if s.Running() {
		return errors.New("weaviatetest: server already running")
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "---- weaviatetest: start %s at %s, data %s\n", s.bin, s.Host, s.DataDir)
	cmd := exec.Command(s.bin, "--host", "127.0.0.1", "--port", strconv.Itoa(s.ports[3]), "--scheme", "http")
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("weaviatetest: start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("weaviatetest: weaviate-server exited during start-up (%v); log:\n%s", cmd.ProcessState, s.LogTail(30))
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get("http://" + s.Host + "/v1/.well-known/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	_ = s.Stop()
	return fmt.Errorf("weaviatetest: weaviate-server not ready after %v; log:\n%s", StartTimeout, s.LogTail(30))
}

// Stop ends the process: SIGTERM, then SIGKILL after StopTimeout. It
// keeps the data directory. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(StopTimeout):
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("weaviatetest: weaviate-server ignored SIGTERM for %v, killed", StopTimeout)
}

// Kill ends the process with SIGKILL at once (a crash) and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// LogTail is the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	f, err := os.Open(s.LogPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
