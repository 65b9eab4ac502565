package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/client"
	"github.com/spf13/cobra"
)

// workflowCmd is `chronicle workflow`: the workflow routes of a running
// serve from the command line (processors/workflows/client), each printing
// the service's JSON answer.
func workflowCmd() *cobra.Command {
	var api, tokenEnv, scope string
	newClient := func() *client.Client {
		c := client.New(api, strings.TrimSpace(os.Getenv(tokenEnv))) // a token file's newline cannot go in a header
		c.Scope = scope
		return c
	}
	print := func(c *cobra.Command) func(v any, err error) error {
		return func(v any, err error) error {
			var ce *client.Error
			if errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
				// say where the token comes from (a new user's walkthrough:
				// "HTTP 401: access: missing or unknown bearer token" alone)
				if strings.TrimSpace(os.Getenv(tokenEnv)) == "" {
					return fmt.Errorf("%w: $%s is empty; set it to a token of the service's tokens file (chronicle token create), or name another variable with --token-env", err, tokenEnv)
				}
				return fmt.Errorf("%w: the token in $%s is not one of the service's", err, tokenEnv)
			}
			if err != nil {
				return cliScopeHint(err)
			}
			enc := json.NewEncoder(c.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
	}
	cmd := &cobra.Command{
		Use:   "workflow list|state|history|at|resume|answer [ID ...]",
		Short: "The workflows of a running chronicle serve: list them; a workflow's state, checkpoint history, state as of a checkpoint; resume it, answer its decision",
		Example: `  # against a chronicle serve on 127.0.0.1:8080, the token in $CHRONICLE_TOKEN
  chronicle workflow list --all
  chronicle workflow state w1
  chronicle workflow history w1
  chronicle workflow at w1 chronicle.workflows:0:16
  chronicle workflow resume w1
  chronicle workflow answer w1 d1 approve

  # another service, one scope of the token's
  chronicle workflow state w1 --api http://10.0.0.5:8080 --scope project:a`,
	}
	var limit int
	var cursor string
	var all bool
	list := &cobra.Command{Use: "list", Short: "the workflows the token reads (--scope: one scope), in key order (scope, then id), a page at a time: {workflows, next_cursor}",
		Example: `  # every workflow the token in $CHRONICLE_TOKEN reads, all pages
  chronicle workflow list --all

  # one scope's, 20 at a time: the next page is --cursor and the answer's next_cursor
  chronicle workflow list --scope project:a --limit 20
  chronicle workflow list --scope project:a --limit 20 --cursor project:a/w20`,
		Long: "Lists the workflows of the scopes the token reads, each with its status, current layer, event and checkpoint counts, last update time and checkpoint id, in key order (<scope>/<workflow id>). " +
			"A page holds --limit workflows (1 to 500; 0: the server's default, 50); pass its next_cursor as --cursor for the next one, or --all to follow every page (printed as one page).",
		Args: cobra.NoArgs, RunE: func(c *cobra.Command, _ []string) error {
			if limit < 0 || limit > 500 {
				return usage(fmt.Errorf("--limit: %d is not from 1 to 500 (0: the server's default, 50)", limit))
			}
			cl := newClient()
			page, err := cl.List(c.Context(), limit, cursor)
			for all && err == nil && page.NextCursor != "" {
				var next workflows.ListPage
				if next, err = cl.List(c.Context(), limit, page.NextCursor); err == nil {
					page.Workflows, page.NextCursor = append(page.Workflows, next.Workflows...), next.NextCursor
				}
			}
			return print(c)(page, err)
		}}
	list.Flags().IntVar(&limit, "limit", 0, "workflows per page, 1 to 500 (0: the server's default, 50)")
	list.Flags().StringVar(&cursor, "cursor", "", "the next_cursor of the previous page (<scope>/<workflow id>)")
	list.Flags().BoolVar(&all, "all", false, "follow next_cursor to the last page and print every workflow")
	cmd.AddCommand(list)
	cmd.PersistentFlags().StringVar(&api, "api", "http://127.0.0.1:8080", "URL of a running chronicle serve")
	cmd.PersistentFlags().StringVar(&tokenEnv, "token-env", "CHRONICLE_TOKEN", "environment variable holding the API token, if the service uses tokens")
	cmd.PersistentFlags().StringVar(&scope, "scope", "", "the workflow's scope, when the token holds several")
	cmd.AddCommand(
		&cobra.Command{Use: "state ID", Short: "the workflow's state", Example: "  chronicle workflow state w1\n  chronicle workflow state w1 --scope project:a --token-env AGENT_A_TOKEN", Args: cobra.ExactArgs(1), RunE: func(c *cobra.Command, a []string) error {
			return print(c)(newClient().State(c.Context(), a[0]))
		}},
		&cobra.Command{Use: "history ID", Short: "its checkpoints, oldest first, each with its id (log position)", Example: "  chronicle workflow history w1", Args: cobra.ExactArgs(1), RunE: func(c *cobra.Command, a []string) error {
			return print(c)(newClient().History(c.Context(), a[0]))
		}},
		&cobra.Command{Use: "at ID CHECKPOINT_ID", Short: "its state as of a checkpoint (= replay --until the checkpoint id)", Example: "  # a checkpoint id as workflow history shows it\n  chronicle workflow at w1 chronicle.workflows:0:16", Args: cobra.ExactArgs(2), RunE: func(c *cobra.Command, a []string) error {
			return print(c)(newClient().StateAt(c.Context(), a[0], a[1]))
		}},
		&cobra.Command{Use: "resume ID [CHECKPOINT_ID]", Short: "back to a checkpoint (default the state's: the last saved, or the one last resumed to), e.g. after a crash", Example: "  # from the checkpoint its state names, or from another one of its history\n  chronicle workflow resume w1\n  chronicle workflow resume w1 chronicle.workflows:0:16", Args: cobra.RangeArgs(1, 2), RunE: func(c *cobra.Command, a []string) error {
			cp := ""
			if len(a) == 2 {
				cp = a[1]
			}
			return print(c)(newClient().Resume(c.Context(), a[0], cp))
		}},
		answerCmd(newClient, print, &tokenEnv),
	)
	return cmd
}

// answerCmd is `chronicle workflow answer`. The answer's by is the
// caller: with a token the member is left out, and the service records
// token:<name> (a service with tokens refuses any other name, 403 naming
// /by); without one it is human:$USER (human:cli when $USER is empty),
// which a service without tokens keeps. --by sends a name of the caller's
// choosing. Before, human:$USER was always sent, so the command was
// refused by every service with tokens (a workflows walkthrough,
// 2026-12-06).
func answerCmd(newClient func() *client.Client, print func(*cobra.Command) func(any, error) error, tokenEnv *string) *cobra.Command {
	var by string
	cmd := &cobra.Command{Use: "answer ID DECISION_ID ANSWER", Short: "answer a pending decision (a human's approval)",
		Long: "Answers decision DECISION_ID of workflow ID (its state lists the pending ones). The answer is recorded as given by the caller: " +
			"with a token (the variable --token-env names), by token:<its name>, which the service sets; without one, by human:$USER. " +
			"--by names another (a service with tokens accepts only token:<name> of the token sent).",
		Example: "  # decision d1 of workflow w1, by token:<name> of the token in $CHRONICLE_TOKEN\n  chronicle workflow answer w1 d1 approve\n\n  # a service without tokens: by human:$USER, or a name of your choosing\n  chronicle workflow answer w1 d1 approve --by human:alice",
		Args:    cobra.ExactArgs(3), RunE: func(c *cobra.Command, a []string) error {
			who := by
			if who == "" && strings.TrimSpace(os.Getenv(*tokenEnv)) == "" {
				user := os.Getenv("USER")
				if user == "" {
					user = "cli"
				}
				who = "human:" + user
			}
			return print(c)(newClient().Answer(c.Context(), a[0], a[1], a[2], who))
		}}
	cmd.Flags().StringVar(&by, "by", "", "who answers (default: token:<name> of the token, which the service sets; without a token human:$USER)")
	return cmd
}

// cliScopeHint is err with the API's "add ?scope=" said as the command's
// flag: a CLI user was told to add a query parameter (a walkthrough,
// 2026-11-30).
func cliScopeHint(err error) error {
	if msg := err.Error(); strings.HasSuffix(msg, ": add ?scope=") {
		return fmt.Errorf("%s: add --scope with one of them", strings.TrimSuffix(msg, ": add ?scope="))
	}
	return err
}
