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
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "chronicle:", err)
		var ec exitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}
