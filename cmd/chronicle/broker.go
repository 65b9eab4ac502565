package main

import (
	"fmt"
	"os"

	"github.com/chronicle-dev/chronicle/events/broker"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/spf13/cobra"
)

func brokerCmd() *cobra.Command {
	var c commonFlags
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run only the embedded Kafka-protocol broker on DATA/log (for kcat or other clients)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			b, err := broker.Start(ctx, broker.Config{DataDir: pipeline.LogDir(c.data), Listen: c.kafkaListen, Partitions: c.partitions})
			if err != nil {
				return err
			}
			defer b.Close()
			fmt.Fprintf(os.Stderr, "chronicle: embedded Kafka broker on %v\n", b.Addrs())
			fmt.Println(b.Addrs()[0])
			<-ctx.Done()
			return nil
		},
	}
	c.register(cmd)
	return cmd
}
