package main

import (
	"fmt"
	"os"
	"time"

	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/spf13/cobra"
)

func brokerCmd() *cobra.Command {
	var c commonFlags
	var minSession time.Duration
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run only the embedded Kafka-protocol broker on DATA/log (for kcat or other clients)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			b, err := broker.Start(ctx, broker.Config{DataDir: pipeline.LogDir(c.data), Listen: c.kafkaListen, Partitions: c.partitions, GroupMinSessionTimeout: minSession,
				OnPartitionsDiffer: warnPartitionsDiffer(cmd, c.partitions), OnFiniteRetention: warnFiniteRetention, OnSmallMessageLimit: warnSmallMessageLimit, OnLogRepaired: warnLogRepaired}) // as serve warns (it was silent: an SRE's walkthrough)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "chronicle: embedded Kafka broker on %v\n", b.Addrs())
			fmt.Println(b.Addrs()[0])
			<-ctx.Done()
			b.Close()
			return b.CloseError()
		},
	}
	// not c.register: the broker is the log, --brokers would name another
	// one and be ignored (an unknown flag says so)
	cmd.Flags().StringVar(&c.data, "data", "./data", "data directory: the broker's log is DATA/log")
	cmd.Flags().Int32Var(&c.partitions, "partitions", 1, "partitions of each topic created at start (1 keeps derived events in one order: see README)")
	c.registerKafkaListen(cmd)
	cmd.Flags().DurationVar(&minSession, "group-min-session-timeout", 0, "shortest session timeout a consumer group member may ask for (Kafka's group.min.session.timeout.ms); 0: Kafka's 6s")
	return cmd
}
