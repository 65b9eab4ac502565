package main

import (
	"os"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/cmd/chronicle/mcpserver"
	"github.com/spf13/cobra"
)

func mcpCmd() *cobra.Command {
	var api, tokenEnv, scope string
	cmd := &cobra.Command{
		Use:   "mcp [--api http://127.0.0.1:8080] [--scope project:a]",
		Short: "Serve the memory tools (memory_search, memory_record, memory_feedback), pair_improvement, search_get and search_resume over MCP on stdio, backed by a running chronicle serve",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			backend := &httpapi.Client{Base: api, Token: os.Getenv(tokenEnv)}
			// The service checks the token's scopes on every call; the
			// stdio side only picks where new memories go.
			caller := mcpserver.Caller{ReadScopes: []string{mcpserver.AllScopes}, WriteScopes: []string{mcpserver.AllScopes}, DefaultScope: scope}
			return mcpserver.ServeStdio(ctx, backend, mcpserver.Options{Name: "chronicle", Caller: caller, Improvement: backend.Improvement, Searches: backend})
		},
	}
	cmd.Flags().StringVar(&api, "api", "http://127.0.0.1:8080", "URL of a running chronicle serve")
	cmd.Flags().StringVar(&tokenEnv, "token-env", "CHRONICLE_TOKEN", "environment variable holding the API token, if the service uses tokens")
	cmd.Flags().StringVar(&scope, "scope", "org:default", "scope memory_record writes to")
	return cmd
}
