// Command chronicle is Chronicle's CLI: the service (serve), the demo on
// the bundled tau-bench sessions, ingest and import into the log, and the
// analyst's tools — replay, digest and audit.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "chronicle",
		Short:         "An auditable memory for AI-agent systems: every decision an event in Kafka, projections rebuilt by replay",
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
	refuseUnknownSubcommands(root)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "chronicle:", err)
		var ec exitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
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
					return fmt.Errorf("unknown command %q for %q (its commands: run %s --help)", args[0], c.CommandPath(), c.CommandPath())
				}
				return c.Help()
			}
		}
		refuseUnknownSubcommands(c)
	}
}
