package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/weaviate"
	"github.com/spf13/cobra"
)

// common flags of the commands that run or read a pipeline.
type commonFlags struct {
	data         string
	brokers      string
	kafkaListen  string
	partitions   int32
	replication  int16 // --replication-factor
	minInsync    int16 // --min-insync-replicas
	llmURL       string
	llmModel     string
	llmKeyEnv    string
	llmRate      float64
	weaviate     string
	weaviateGRPC string
	weaviateKey  string // name of the environment variable holding the API key
}

// registerLLM adds the flags of the LLM distiller and judge.
func (c *commonFlags) registerLLM(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.llmURL, "llm-url", "", "OpenAI-compatible API base URL (e.g. http://127.0.0.1:11434/v1); enables the LLM distiller, the judge and, under serve, the PAIR LLM revision; search game24 --proposer llm's model")
	cmd.Flags().StringVar(&c.llmModel, "llm-model", "", "chat model for the LLM distiller, the judge, the PAIR LLM revision and search game24 --proposer llm")
	cmd.Flags().StringVar(&c.llmKeyEnv, "llm-key-env", "CHRONICLE_LLM_API_KEY", "environment variable holding the API key")
	cmd.Flags().Float64Var(&c.llmRate, "llm-rate", 1, "requests per second to the model, at most (a tree search's value samples are many calls)")
}

// registerSearch adds the vector store flags. The Weaviate API key is
// read from an environment variable, never from a flag: a flag's value
// shows in ps and /proc/<pid>/cmdline.
func (c *commonFlags) registerSearch(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.weaviate, "weaviate", "", "host:port of a Weaviate server for memory search (e.g. 127.0.0.1:8081); empty: the embedded vector store")
	cmd.Flags().StringVar(&c.weaviateGRPC, "weaviate-grpc", "auto", "host:port of the --weaviate server's gRPC port (its GRPC_PORT): batch upserts and candidate queries over gRPC, faster than GraphQL (README, Weaviate candidate queries); auto: the --weaviate host's port 50051 when a gRPC health check answers there at start, else REST/GraphQL; off: REST/GraphQL only")
	cmd.Flags().StringVar(&c.weaviateKey, "weaviate-api-key-env", "WEAVIATE_API_KEY", "environment variable holding the --weaviate server's API key; unset or empty: anonymous access")
}

// Values of --weaviate-grpc besides host:port.
const (
	grpcAuto = "auto"
	grpcOff  = "off"
)

// grpcProbeTimeout bounds the gRPC health check of --weaviate-grpc auto.
const grpcProbeTimeout = 3 * time.Second

// vectorStore connects --weaviate, or returns nil for the embedded store.
func (c *commonFlags) vectorStore(ctx context.Context) (search.VectorStore, error) {
	if c.weaviate == "" && c.weaviateGRPC != "" && c.weaviateGRPC != grpcAuto && c.weaviateGRPC != grpcOff {
		return nil, fmt.Errorf("--weaviate-grpc %s: needs --weaviate", c.weaviateGRPC)
	}
	if c.weaviate == "" {
		return nil, nil
	}
	// the flags' own values named, not weaviate.Config's fields (an
	// operator's walkthrough, 2026-11-30: "invalid config: GRPCHost
	// \"bogus\"", and port 99999 accepted, every search then a 503)
	if err := hostPort(c.weaviate); err != nil {
		return nil, fmt.Errorf("--weaviate %s: %v: give host:port, e.g. 127.0.0.1:8080 (no scheme)", c.weaviate, err)
	}
	if g := c.weaviateGRPC; g != "" && g != grpcAuto && g != grpcOff {
		if err := hostPort(g); err != nil {
			return nil, fmt.Errorf("--weaviate-grpc %s: %v: give auto, off or host:port, e.g. 127.0.0.1:50051", g, err)
		}
	}
	cfg := weaviate.Config{Host: c.weaviate}
	if c.weaviateKey != "" {
		cfg.APIKey = os.Getenv(c.weaviateKey)
	}
	switch c.weaviateGRPC {
	case grpcOff, "":
	case grpcAuto:
		addr := weaviate.DefaultGRPCHost(c.weaviate)
		if err := weaviate.ProbeGRPC(ctx, cfg, addr, grpcProbeTimeout); err != nil {
			fmt.Fprintf(os.Stderr, "chronicle: --weaviate-grpc auto: no gRPC API at %s (%v): candidate queries over GraphQL, the slower path\n", addr, err)
		} else {
			cfg.GRPCHost = addr
		}
	default:
		// checked as auto checks its guess, but refused: an address that
		// does not answer gRPC started the service, and every search was
		// then a 503 after 14 s (connection refused, or "http2: frame too
		// large" for the HTTP port: a Weaviate walkthrough, 2026-11-30)
		if err := weaviate.ProbeGRPC(ctx, cfg, c.weaviateGRPC, grpcProbeTimeout); err != nil {
			return nil, fmt.Errorf("--weaviate-grpc %s: no gRPC API answers there (%v): give the server's GRPC_PORT address, auto (tried, else GraphQL) or off", c.weaviateGRPC, err)
		}
		cfg.GRPCHost = c.weaviateGRPC
	}
	return weaviate.New(ctx, cfg)
}

// hostPort says why s is not host:port with a port from 1 to 65535.
func hostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); host == "" || err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("not host:port with a port from 1 to 65535")
	}
	return nil
}

// llm is the LLM configuration, nil without --llm-url and --llm-model
// (--llm-model alone was ignored silently: its LLMConfig.Validate now says
// --llm-url is required; a walkthrough, 2026-11-30).
// llmFlagError restates an error of distill.LLMConfig.Validate that names
// its flag ("distill: LLMConfig.URL: … (--llm-url)") as the flag's
// ("--llm-url: …"); other errors are returned as they are. search game24
// --proposer llm said "distill: LLMConfig.URL: required", naming a Go
// field of a package the command's user never chose (a walkthrough).
func llmFlagError(err error) error {
	m := llmFieldError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	return fmt.Errorf("%s: %s", m[2], m[1])
}

var llmFieldError = regexp.MustCompile(`^distill: LLMConfig\.\w+: (.*) \((--llm-[a-z-]+)\)$`)

func (c *commonFlags) llm() *distill.LLMConfig {
	if c.llmURL == "" && c.llmModel == "" {
		return nil
	}
	rate := c.llmRate
	if rate == 0 {
		rate = -1 // LLMConfig's 0 is its default; --llm-rate 0 is refused
	}
	return &distill.LLMConfig{URL: c.llmURL, Model: c.llmModel, APIKeyEnv: c.llmKeyEnv, RatePerSecond: rate}
}

func (c *commonFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.data, "data", "./data", "data directory: the embedded broker's log (DATA/log) and the projections (DATA/projections)")
	cmd.Flags().StringVar(&c.brokers, "brokers", "", "comma-separated host:port of a Kafka cluster; empty starts the embedded broker")
	cmd.Flags().Int32Var(&c.partitions, "partitions", 1, "partitions of each topic created at start; existing topics keep theirs (serve, broker, replay and audit warn when they differ) (1 keeps derived events in one order: see README)")
}

// registerTopicReplicas adds --replication-factor and
// --min-insync-replicas, the replicas of the topics a command that starts
// the pipeline (serve, demo) creates on a cluster named by --brokers
// (broker.Config). Before, both were the cluster's defaults, with no flag
// (a Kafka platform review, 2026-12-01); checkFlags refuses them without
// --brokers and a min.insync.replicas above the replication factor.
func (c *commonFlags) registerTopicReplicas(cmd *cobra.Command) {
	cmd.Flags().Int16Var(&c.replication, "replication-factor", -1, "replication factor of the topics created on the cluster of --brokers (-1: the cluster's default.replication.factor); existing topics keep theirs")
	cmd.Flags().Int16Var(&c.minInsync, "min-insync-replicas", 0, "min.insync.replicas of the topics created on the cluster of --brokers: replicas that must have a write before it is acknowledged (0: the cluster's, Kafka's stock 1); existing topics keep theirs")
}

// registerKafkaListen adds --kafka-listen, only to the commands that start
// the embedded broker on it (serve, demo, broker, search, solver); replay,
// audit and deadletter start theirs on a free loopback port and do not
// show it (kafkaListenHint points them to --brokers).
func (c *commonFlags) registerKafkaListen(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.kafkaListen, "kafka-listen", "127.0.0.1:9092", "address of the embedded broker (port 0: any free port)")
}

// logReaderBrokers says in the --brokers help of cmd (replay, audit), a
// command that reads a log, what it names and where the embedded broker
// listens without it: "a Kafka cluster; empty starts the embedded broker"
// left out a chronicle broker, which an as-of audit is pointed to, and
// read as if the embedded broker took --kafka-listen's address (a
// walkthrough, 2026-12-07: a user guessed `audit --kafka-listen`).
func logReaderBrokers(cmd *cobra.Command) {
	cmd.Flags().Lookup("brokers").Usage = "comma-separated host:port of the broker serving the log: the address a chronicle broker or serve listens on (e.g. 127.0.0.1:9092), or a Kafka cluster; empty: the embedded broker, started on DATA/log at a free loopback port"
}

func (c *commonFlags) brokerList() []string {
	if c.brokers == "" {
		return nil
	}
	var out []string
	for _, b := range strings.Split(c.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// signalContext is cancelled on SIGINT or SIGTERM, or when cmd's own
// context ends (context.Background under main: a test that runs a command
// in-process with ExecuteContext cancels it as a signal would).
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// interrupted is err of a producing command (ingest, import, demo) whose
// signal context ctx ended, said as what it is: the command was stopped,
// not the broker failing, and running it again is safe. Before, SIGTERM
// during an import read "not acknowledged by the broker: … context
// canceled" (an SRE's walkthrough, 2026-11-30). Any other err is returned
// as it is.
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("interrupted by a signal: the events acknowledged before it are in the log, the others were not written; running the command again is safe (an event the log holds already is a duplicate, which the processors drop) (%w)", err)
}

// searchInterrupted is err of a command running tree searches (search
// game24, import tot) whose signal context ctx ended, said as what it is:
// the search was stopped, and the same command run again resumes it.
// Before, Ctrl-C read "events: not acknowledged by the broker: … context
// canceled", the message interrupted replaced for ingest and import (a
// CLI walkthrough, 2026-12-05). Any other err is returned as it is.
func searchInterrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("interrupted by a signal: the steps acknowledged before it are in the log; the same command run again on the same directory resumes the searches where they stand (%w)", err)
}

// startInterrupted is err of serve or demo whose signal context ctx ended
// while the pipeline started, said as what it is: the command was stopped
// before it did anything, and running it again is safe; done says what it
// had not done yet ("no event was imported"). Before, it read "context
// canceled", or "broker: log …: closing the transactions a killed process
// left open: … context canceled" when the signal came while the embedded
// broker started (a CLI walkthrough, 2026-12-05). Any other err is
// returned as it is.
func startInterrupted(ctx context.Context, err error, done string) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("interrupted by a signal while the pipeline started: %s; running the command again is safe (%w)", done, err)
}

// exitCoder is an error with its own exit status.
type exitCoder interface {
	error
	ExitCode() int
}

type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}
