package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/spf13/cobra"
)

// deadletterCmd is `chronicle deadletter list|redrive` (issue 11, item 8).
func deadletterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deadletter",
		Short: "List the dead-letter topic's records and re-drive them to their original topics",
	}
	cmd.AddCommand(deadletterListCmd(), deadletterRedriveCmd())
	return cmd
}

// registerLog adds the flags that locate a log: --data (a stopped
// directory: its embedded broker is started on a free port) or --brokers
// (a running service's broker or a Kafka cluster).
func (c *commonFlags) registerLog(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.data, "data", "./data", "data directory of a stopped service (its log DATA/log is opened by an embedded broker on a free port)")
	cmd.Flags().StringVar(&c.brokers, "brokers", "", "comma-separated host:port of the running service's broker (e.g. 127.0.0.1:9092) or a Kafka cluster; overrides --data")
}

func deadletterListCmd() *cobra.Command {
	var c commonFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--data DIR | --brokers HOST:PORT] [--json]",
		Short: "List every dead letter: original topic, partition, offset, handler, reason, key and event id",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			brokers, stop, err := logBrokers(ctx, &c)
			if err != nil {
				return err
			}
			defer stop()
			ls, err := deadletter.List(ctx, brokers)
			if err != nil {
				return err
			}
			if asJSON {
				if ls == nil {
					ls = []deadletter.Letter{}
				}
				return json.NewEncoder(os.Stdout).Encode(ls)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tHANDLER\tKEY\tEVENT ID\tTYPE\tREASON")
			for _, l := range ls {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.Handler, l.Key, l.EventID, l.EventType, strings.ReplaceAll(l.Reason, "\n", " "))
			}
			return tw.Flush()
		},
	}
	c.registerLog(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of letters")
	return cmd
}

func deadletterRedriveCmd() *cobra.Command {
	var c commonFlags
	var ids []string
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "redrive (--id TOPIC:PARTITION:OFFSET ... | --all) [--data DIR | --brokers HOST:PORT] [--json]",
		Short: "Re-produce dead-lettered records to their original topics with their original keys, as their producers sent them",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all == (len(ids) > 0) {
				return fmt.Errorf("--id or --all: give one (ids as `deadletter list` prints them)")
			}
			ctx, cancel := signalContext()
			defer cancel()
			brokers, stop, err := logBrokers(ctx, &c)
			if err != nil {
				return err
			}
			defer stop()
			ls, err := deadletter.List(ctx, brokers)
			if err != nil {
				return err
			}
			if !all {
				byID := map[string][]deadletter.Letter{}
				for _, l := range ls {
					byID[l.ID] = append(byID[l.ID], l)
				}
				var pick []deadletter.Letter
				for _, id := range ids {
					if byID[id] == nil {
						return fmt.Errorf("--id %s: no dead letter has this id (see `chronicle deadletter list`)", id)
					}
					pick = append(pick, byID[id]...)
				}
				ls = pick
			}
			out, err := deadletter.Redrive(ctx, brokers, ls)
			if asJSON {
				if out == nil {
					out = []deadletter.Redriven{}
				}
				_ = json.NewEncoder(os.Stdout).Encode(out)
			} else {
				for _, r := range out {
					fmt.Printf("redriven %s -> %s:%d:%d\n", r.ID, r.Topic, r.Partition, r.Offset)
				}
			}
			return err
		},
	}
	c.registerLog(cmd)
	cmd.Flags().StringSliceVar(&ids, "id", nil, "id of a letter to redrive (topic:partition:offset of the original record; repeatable or comma-separated)")
	cmd.Flags().BoolVar(&all, "all", false, "redrive every letter (each original record once)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of the new positions")
	return cmd
}
