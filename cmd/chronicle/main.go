// Command chronicle is Chronicle's CLI: the service (serve), the demo on
// the bundled tau-bench sessions, ingest and import into the log, and the
// analyst's tools — replay, digest and audit.
package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

func main() {
	if cmd, err := newRoot().ExecuteC(); err != nil {
		if cmd == cmd.Root() {
			// the root runs nothing: its error is cobra's refusal of an
			// unknown command (or of a flag, a usage error already)
			err = usage(err)
		}
		err = namedListen(cmd, err)
		fmt.Fprintln(os.Stderr, "chronicle:", err)
		var ec exitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// newRoot is the chronicle command with every subcommand, its flags and
// its refusals, as main runs it (a test walks the same tree).
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "chronicle",
		Short: "An auditable memory for AI-agent systems: every decision an event in Kafka, projections rebuilt by replay",
		Long: `An auditable memory for AI-agent systems: every decision an event in Kafka, projections rebuilt by replay.

Exit status: 0 success; 1 a failure of what a command talks to or reads (a broker, an API,
a directory, a file's content); 2 audit found a difference; 64 a command line refused before
anything starts (an unknown command or flag, a wrong argument count, a flag value out of range);
70 a projections store that cannot go on (a failed write-ahead-log write).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.AddCommand(serveCmd(), demoCmd(), evalCmd(), benchCmd(), ingestCmd(), importCmd(), replayCmd(), digestCmd(), auditCmd(), brokerCmd(), tokenCmd(), mcpCmd(),
		workflowCmd(),            // issue 14
		searchCmd(), solverCmd(), // issue 12
		deadletterCmd(), // issue 11 item 8
		inspectCmd(),    // issue 11 item 7: the read API over a stopped or replayed directory
	)
	addKafkaSecurityFlags(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error { return usage(checkFlags(cmd, args)) }
	// a flag cobra cannot parse (unknown, or a value its type refuses)
	// is a usage error; every subcommand asks its parents for this func
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usage(kafkaListenHint(c, err)) })
	// cobra adds its completion command only in Execute, after the
	// refusals below were set: added now, `chronicle completion zhs`
	// is refused as `workflow bogus` is (it printed the group's help into
	// the completion file and exited 0: a CLI walkthrough, 2026-12-05)
	root.InitDefaultCompletionCmd()
	refuseUnknownHelpTopics(root)
	refuseUnknownSubcommands(root)
	refuseStrayArgs(root)
	return root
}

// namedListen names --kafka-listen in err, a failure of cmd, when the
// embedded broker could not listen there because the address is in use:
// `broker: start embedded broker on 127.0.0.1:9092: … address already in
// use` named no flag (a CLI walkthrough, 2026-12-05), and `make run`
// holding 9092 is the usual cause.
func namedListen(cmd *cobra.Command, err error) error {
	f := cmd.Flags().Lookup("kafka-listen")
	if f == nil || !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "embedded broker") {
		return err
	}
	return fmt.Errorf("--kafka-listen %s: the address is in use (another chronicle serve, demo or broker, or `make run`, listens there?): give another, or 127.0.0.1:0 for a free port: %w", f.Value.String(), err)
}

// kafkaListenHint is err, cobra's refusal of c's flags, saying what to give
// instead when it refuses --kafka-listen on a command that takes
// --brokers: replay, audit and deadletter start their embedded broker on
// a free loopback port, and ingest and the importers start none. The bare
// "unknown flag: --kafka-listen" left a user who guessed `audit
// --kafka-listen` (as `chronicle broker` takes it) to find --brokers
// alone (a walkthrough, 2026-12-07). Any other error is err.
func kafkaListenHint(c *cobra.Command, err error) error {
	b := c.Flags().Lookup("brokers")
	if err == nil || b == nil || err.Error() != "unknown flag: --kafka-listen" {
		return err
	}
	name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
	if b.DefValue == "" {
		return fmt.Errorf("%w: %s starts its embedded broker on DATA/log at a free loopback port, which takes no address; to read a log that another broker serves (a chronicle broker's or a running serve's --kafka-listen, or a Kafka cluster), give it as --brokers HOST:PORT", err, name)
	}
	return fmt.Errorf("%w: %s starts no broker; --brokers names the one it writes to (default %s, serve's default --kafka-listen)", err, name, b.DefValue)
}

// addKafkaSecurityFlags gives every command that takes --brokers the flags
// of a cluster that wants TLS or SASL (kafkaconn.Config); checkFlags reads
// them. Before, no command could reach such a cluster (a Kafka platform
// review, 2026-12-01).
func addKafkaSecurityFlags(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if f := c.Flags(); f.Lookup("brokers") != nil {
			f.Bool("kafka-tls", false, "connect to --brokers over TLS (Kafka's SSL or SASL_SSL); implied by the other --kafka-tls flags")
			f.String("kafka-tls-ca", "", "PEM file of the certificate authorities to check the brokers' certificates against (default: the system's)")
			f.String("kafka-tls-cert", "", "PEM client certificate, for a cluster that authenticates clients by TLS (with --kafka-tls-key)")
			f.String("kafka-tls-key", "", "PEM key of --kafka-tls-cert")
			f.String("kafka-sasl-mechanism", "", "SASL mechanism for --brokers: PLAIN (it sends the password as it is: use it with --kafka-tls), SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (with --kafka-oauth-token-url) or AWS_MSK_IAM (Amazon MSK; credentials from the AWS SDK's chain, region from the broker host or AWS_REGION; implies --kafka-tls)")
			f.String("kafka-sasl-user", "", "SASL user name (with --kafka-sasl-mechanism); with OAUTHBEARER, the OAuth client id")
			f.String("kafka-sasl-password-env", kafkaconn.DefaultPasswordEnv, "environment variable holding the SASL password, with OAUTHBEARER the OAuth client secret (never a flag, which ps would show)")
			f.String("kafka-oauth-token-url", "", "OAUTHBEARER: the OAuth 2.0 token endpoint tokens are asked from (client credentials grant)")
			f.String("kafka-oauth-scope", "", "OAUTHBEARER: the scope to ask for, names separated by spaces or commas (default: none, the identity provider's default)")
			f.String("kafka-oauth-extensions", "", "OAUTHBEARER: SASL extensions sent with the token, key=value pairs separated by commas (e.g. Confluent Cloud's logicalCluster=lkc-…,identityPoolId=pool-…)")
		}
		addKafkaSecurityFlags(c)
	}
}

// useKafkaSecurity reads cmd's --kafka-tls… and --kafka-sasl… flags, when
// it has them, and makes every client use them (kafkaconn.Use). They need
// a cluster named by --brokers: the embedded broker speaks plaintext.
func useKafkaSecurity(cmd *cobra.Command) error {
	f := cmd.Flags()
	if f.Lookup("kafka-tls") == nil {
		return nil
	}
	str := func(name string) string { v, _ := f.GetString(name); return v }
	tlsOn, _ := f.GetBool("kafka-tls")
	c := kafkaconn.Config{TLS: tlsOn, CAFile: str("kafka-tls-ca"), CertFile: str("kafka-tls-cert"), KeyFile: str("kafka-tls-key"),
		Mechanism: str("kafka-sasl-mechanism"), User: str("kafka-sasl-user"), TokenURL: str("kafka-oauth-token-url"), Scope: str("kafka-oauth-scope"), Extensions: str("kafka-oauth-extensions")}
	if f.Changed("kafka-sasl-password-env") {
		c.PasswordEnv = str("kafka-sasl-password-env")
	}
	if c.Zero() {
		return nil
	}
	if b := f.Lookup("brokers"); b.DefValue == "" && !b.Changed {
		return errors.New("--kafka-tls…, --kafka-sasl… and --kafka-oauth-… are for a Kafka cluster named by --brokers: the embedded broker speaks plaintext on loopback")
	}
	return kafkaconn.Use(c)
}

// refuseUnknownSubcommands makes every command that only groups others
// (workflow, deadletter, search, …) refuse an argument that names none of
// them: cobra printed the group's help and exited 0 for `chronicle
// workflow bogus`, so a script's typo passed as success (found by a new
// user's walkthrough). Without an argument the group still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usage(fmt.Errorf("unknown command %q for %q (its commands: run %s --help)", args[0], c.CommandPath(), c.CommandPath()))
				}
				return c.Help()
			}
		}
		refuseUnknownSubcommands(c)
	}
}

// refuseUnknownHelpTopics makes `chronicle help TOPIC` exit 1 naming a
// TOPIC that is no command: cobra's help command printed "Unknown help
// topic" and the usage, and exited 0 (a CLI walkthrough, 2026-12-05). It
// adds cobra's help command now (Execute finds it and keeps it) and wraps
// its Run; a known topic prints its help as before.
func refuseUnknownHelpTopics(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		show := c.Run
		c.Run, c.Args = nil, cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if cmd, rest, err := c.Root().Find(args); cmd == nil || err != nil || len(rest) > 0 {
				return usage(fmt.Errorf("help: %q is not a command (run %s --help for the commands)", strings.Join(args, " "), c.Root().Name()))
			}
			show(c, args)
			return nil
		}
	}
}

// refuseStrayArgs makes every command that runs and declares no
// positional arguments (serve, demo, digest, replay, audit, inspect,
// deadletter list, …) refuse one: cobra's default takes any, so `chronicle
// digest ./asof` digested ./data, and `chronicle serve ./data2` served
// ./data, with no word that the argument was ignored (found by a new
// user's walkthrough). Commands that take arguments keep their own rule.
func refuseStrayArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.Args == nil && (c.Run != nil || c.RunE != nil) {
			c.Args = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usage(fmt.Errorf("%s takes no argument, got %q (every input is a flag: see %s --help)", c.CommandPath(), args[0], c.CommandPath()))
				}
				return nil
			}
		} else if check := c.Args; check != nil && c.Name() != "help" && c.Name() != "completion" {
			// cobra's "accepts 1 arg(s), received 0" named no argument
			// (`workflow state` without its ID: a CLI walkthrough,
			// 2026-12-05): say which, from the command's Use
			c.Args = func(c *cobra.Command, args []string) error {
				if err := check(c, args); err != nil {
					_, want, _ := strings.Cut(c.Use, " ")
					return usage(fmt.Errorf("%s takes %s, got %d argument(s) %q (%w; see %s --help)", c.CommandPath(), want, len(args), args, err, c.CommandPath()))
				}
				return nil
			}
		}
		refuseStrayArgs(c)
	}
}

// countFlags are the flags whose value is a count with a least value: a
// value below it is refused naming the flag, before anything starts.
// Before, --partitions 0 started with one partition while -1 failed as
// "broker: Config.Partitions: must be ≥ 1", and bench's --events 0 and
// --runs 0 silently meant their defaults (found by a new user's
// walkthrough).
var countFlags = map[string]int64{"partitions": 1, "events": 1, "runs": 1, "probes": 0}

// MaxPartitions is the most partitions --partitions takes (1024): each
// partition of each of Chronicle's ten topics is a directory of the
// embedded broker's log, and a Kafka broker is sized for a few thousand
// partitions in all. Before, --partitions 100000 started without a word
// and left 900,001 directories, 7 GB (an SRE's walkthrough, 2026-11-30).
const MaxPartitions = 1024

// MinDecayInterval is the shortest --decay-interval other than 0 (no
// decay), 1 s: each interval writes a clock.tick.v1 to chronicle.memories
// and decays every memory, so 1ns wrote 93,138 ticks in 15 s (an SRE's
// walkthrough, 2026-11-30). The design's decay is daily.
const MinDecayInterval = time.Second

// MinStallAfter is the shortest --stall-after other than 0 (the default,
// 30 s), 1 s: the stall clock runs from a partition's last committed
// batch, so under load 1ns or 10ms made /healthz answer 503 "stalled"
// between two batches (a time walkthrough, 2026-12-04).
const MinStallAfter = time.Second

// checkFlags checks, before the command starts anything, the count
// flags it has (countFlags), its durations (none negative), that
// --kafka-listen is host:port and that --brokers, when given, names at
// least one host:port; each error names the flag.
func checkFlags(cmd *cobra.Command, _ []string) error {
	if err := useKafkaSecurity(cmd); err != nil {
		return err
	}
	for name, least := range countFlags {
		f := cmd.Flags().Lookup(name)
		if f == nil || (f.Value.Type() != "int" && f.Value.Type() != "int32") {
			continue
		}
		n, err := strconv.ParseInt(f.Value.String(), 10, 64)
		if err == nil && n < least {
			return fmt.Errorf("--%s: %d, must be ≥ %d", name, n, least)
		}
		if err == nil && name == "partitions" && n > MaxPartitions {
			return fmt.Errorf("--partitions: %d, must be ≤ %d (each partition of each of the ten topics is a directory of the log, and a Kafka broker holds a few thousand partitions in all)", n, MaxPartitions)
		}
	}
	// durations: a negative one silently meant the default or turned the
	// feature off (--decay-interval -1s stopped memory decay, --stall-after
	// -1s meant 30 s); 0 keeps its documented meaning
	for _, name := range []string{"decay-interval", "stall-after", "session-timeout", "group-min-session-timeout"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Value.Type() == "duration" {
			if d, err := time.ParseDuration(f.Value.String()); err == nil && d < 0 {
				return fmt.Errorf("--%s: %v, must not be negative (%s)", name, d, f.Usage)
			}
		}
	}
	if f := cmd.Flags().Lookup("decay-interval"); f != nil && f.Value.Type() == "duration" {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 && d < MinDecayInterval {
			return fmt.Errorf("--decay-interval: %v, must be 0 (no decay) or at least %v: each interval writes a clock tick and decays every memory", d, MinDecayInterval)
		}
	}
	if f := cmd.Flags().Lookup("stall-after"); f != nil && f.Value.Type() == "duration" {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 && d < MinStallAfter {
			return fmt.Errorf("--stall-after: %v, must be 0 (the default, 30s) or at least %v: /healthz says \"stalled\" when a partition is behind with no batch committed for this long, and batches are committed one after the other, not continuously", d, MinStallAfter)
		}
	}
	// a wait bound: 0 or less gave up at once, after the work was done
	// (demo --timeout -1s imported every event, then failed naming no
	// flag: an SRE's walkthrough, 2026-11-30)
	if f := cmd.Flags().Lookup("timeout"); f != nil && f.Value.Type() == "duration" {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d <= 0 {
			return fmt.Errorf("--timeout: %v, must be positive (%s)", d, f.Usage)
		}
	}
	// every --data defaults to ./data; given empty (a script's unset
	// variable), serve and demo ran on ./data without a word, broker wrote
	// its log into ./log, and digest looked for ./projections (a CLI
	// walkthrough, 2026-12-05)
	if f := cmd.Flags().Lookup("data"); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
		return fmt.Errorf("--data: %q names no directory (leave the flag out for %s)", f.Value.String(), f.DefValue)
	}
	// a rate of calls: 0, a negative number, NaN or +Inf was refused only
	// once the data directory and the embedded broker were made, and
	// named as -1 whatever was given (llm turned 0 into -1 for
	// LLMConfig.Validate: a CLI walkthrough, 2026-12-05)
	if f := cmd.Flags().Lookup("llm-rate"); f != nil && f.Changed && f.Value.Type() == "float64" {
		if r, err := strconv.ParseFloat(f.Value.String(), 64); err == nil && (!(r > 0) || math.IsInf(r, 1)) {
			return fmt.Errorf("--llm-rate: %v, must be a finite number > 0 (%s)", f.Value.String(), f.Usage)
		}
	}
	if f := cmd.Flags().Lookup("kafka-listen"); f != nil && f.Changed {
		host, port, err := net.SplitHostPort(f.Value.String())
		if err != nil {
			return fmt.Errorf("--kafka-listen: %q is not host:port (%v)", f.Value.String(), err)
		}
		// port 0: a free port; the embedded broker listens on loopback
		// only (both were refused later, naming broker.Config's fields)
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("--kafka-listen: %q: the port must be 0 (a free one) to 65535", f.Value.String())
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--kafka-listen: %q: the embedded broker listens on a loopback address only (127.0.0.1, [::1], localhost); a Kafka cluster other machines reach is named by --brokers", f.Value.String())
		}
	}
	if f, k := cmd.Flags().Lookup("brokers"), cmd.Flags().Lookup("kafka-listen"); f != nil && f.Changed && k != nil && k.Changed {
		// the embedded broker's listener: with --brokers there is none,
		// and the flag was ignored silently (an SRE's walkthrough)
		return fmt.Errorf("--kafka-listen %s: the embedded broker's address, and --brokers names a Kafka cluster instead: give one of them", k.Value.String())
	}
	if err := checkTopicReplicas(cmd); err != nil {
		return err
	}
	if f := cmd.Flags().Lookup("weaviate"); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
		// given empty (a script's unset variable) it ran on the embedded
		// store without a word, and --weaviate-grpc with it said to give
		// --weaviate (a Weaviate walkthrough, 2026-12-03)
		return fmt.Errorf("--weaviate: %q names no host:port (leave the flag out for the embedded vector store)", f.Value.String())
	}
	if err := checkFlagNeeds(cmd); err != nil {
		return err
	}
	if err := checkKeyEnvs(cmd); err != nil {
		return err
	}
	if f := cmd.Flags().Lookup("brokers"); f != nil && f.Changed {
		if strings.Trim(f.Value.String(), ", ") == "" {
			return fmt.Errorf("--brokers: %q names no host:port (leave the flag out to start the embedded broker)", f.Value.String())
		}
		if err := checkBrokers(f.Value.String()); err != nil {
			return err
		}
	}
	return nil
}

// flagNeeds lists the flags that mean nothing without another one of the
// same command: given alone they were accepted and ignored (--llm-rate
// without --llm-url, --weaviate-grpc without --weaviate, demo --http
// without --serve: a walkthrough's finding). checkFlagNeeds refuses them.
// A command with the flag unless checks these itself (search: only
// --proposer llm calls a model, whatever --llm-url says).
var flagNeeds = []struct{ flag, needs, unless, what string }{
	{"llm-rate", "llm-url", "proposer", "the rate of calls to the model"},
	{"llm-key-env", "llm-url", "proposer", "where the model's API key is read"},
	{"weaviate-grpc", "weaviate", "", "the gRPC port of the Weaviate server"},
	{"weaviate-api-key-env", "weaviate", "", "where the Weaviate server's API key is read"},
	{"http", "serve", "", "the address the HTTP API is served on afterwards"},
}

// checkFlagNeeds refuses a flag of flagNeeds given on a command that has
// its prerequisite too, when the prerequisite is not given (left out,
// empty, or false).
func checkFlagNeeds(cmd *cobra.Command) error {
	for _, n := range flagNeeds {
		f, need := cmd.Flags().Lookup(n.flag), cmd.Flags().Lookup(n.needs)
		if f == nil || need == nil || !f.Changed || n.unless != "" && cmd.Flags().Lookup(n.unless) != nil {
			continue
		}
		if v := need.Value.String(); need.Changed && v != "" && v != "false" {
			continue
		}
		return fmt.Errorf("--%s %s: %s, which means nothing without --%s: give --%s too, or leave --%s out", n.flag, f.Value.String(), n.what, n.needs, n.needs, n.flag)
	}
	return nil
}

// keyEnvFlags name the environment variable an API key is read from.
// Left out, an unset default variable means no key (a local model,
// anonymous Weaviate access); given, the variable must be set.
var keyEnvFlags = []struct{ flag, needs, what string }{
	{"llm-key-env", "llm-url", "the model would be called without an API key"},
	{"weaviate-api-key-env", "weaviate", "the Weaviate server would be called anonymously"},
}

// checkKeyEnvs refuses --llm-key-env or --weaviate-api-key-env given with
// its prerequisite when it names no variable, or one that is unset or
// empty: before, a mistyped name started, and every model call failed 401
// three times and was dead-lettered. A command whose --proposer is not llm
// calls no model, which search says itself.
func checkKeyEnvs(cmd *cobra.Command) error {
	for _, k := range keyEnvFlags {
		f, need := cmd.Flags().Lookup(k.flag), cmd.Flags().Lookup(k.needs)
		if f == nil || need == nil || !f.Changed || !need.Changed || need.Value.String() == "" {
			continue
		}
		if p := cmd.Flags().Lookup("proposer"); p != nil && p.Value.String() != "llm" {
			continue
		}
		name := f.Value.String()
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("--%s: %q names no environment variable (leave the flag out: %s)", k.flag, name, f.DefValue)
		}
		if os.Getenv(name) == "" {
			return fmt.Errorf("--%s %s: the environment variable %s is unset or empty, so %s: set it, or leave --%s out", k.flag, name, name, k.what, k.flag)
		}
	}
	return nil
}

// checkTopicReplicas checks --replication-factor and
// --min-insync-replicas, when the command has them: -1 or ≥ 1, and 0 or
// ≥ 1, no more in sync than replicas, and only with --brokers (the
// embedded broker is one broker, whose topics have one replica).
func checkTopicReplicas(cmd *cobra.Command) error {
	rf, mi := cmd.Flags().Lookup("replication-factor"), cmd.Flags().Lookup("min-insync-replicas")
	if rf == nil || mi == nil || !rf.Changed && !mi.Changed {
		return nil
	}
	r, _ := cmd.Flags().GetInt16("replication-factor")
	m, _ := cmd.Flags().GetInt16("min-insync-replicas")
	switch {
	case r == 0 || r < -1:
		return fmt.Errorf("--replication-factor: %d, must be -1 (the cluster's default) or ≥ 1", r)
	case m < 0:
		return fmt.Errorf("--min-insync-replicas: %d, must be 0 (the cluster's) or ≥ 1", m)
	case r > 0 && m > r:
		return fmt.Errorf("--min-insync-replicas: %d is above --replication-factor %d: every write would be refused (acks=all needs that many replicas in sync)", m, r)
	}
	if b := cmd.Flags().Lookup("brokers"); b == nil || !b.Changed {
		changed := "--replication-factor"
		if !rf.Changed {
			changed = "--min-insync-replicas"
		}
		return fmt.Errorf("%s: for the topics created on a Kafka cluster named by --brokers; the embedded broker is one broker, whose topics have one replica", changed)
	}
	return nil
}

// checkBrokers refuses a --brokers entry that is not host:port with a
// port from 1 to 65535, naming the flag: franz-go dials a bare host on
// Kafka's default 9092, so "--brokers 127.0.0.1" read whatever listened
// there, and "foo" or "127.0.0.1:99999" failed later naming an internal
// field or the topic creation (an operator's walkthrough, 2026-11-30).
// Empty entries (a trailing comma) are skipped, as the clients skip them.
func checkBrokers(list string) error {
	for _, b := range strings.Split(list, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if err := hostPort(b); err != nil {
			return fmt.Errorf("--brokers: %q is not host:port, e.g. 127.0.0.1:9092 (%v)", b, err)
		}
	}
	return nil
}
