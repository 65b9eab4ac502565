package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/treesearch/game24"
	"github.com/spf13/cobra"
)

func solverCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "solver", Short: "Frozen solvers: lock files of what a successful search used"}
	var c commonFlags
	var scope, out string
	lock := &cobra.Command{
		Use:   "lock SEARCH_ID",
		Short: "Write the lock file of a solved search (hashes of its prompts, config, model, proposer and evaluator versions) and a solver.locked.v1 event",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := events.CheckID(args[0]); err != nil {
				return fmt.Errorf("SEARCH_ID: %w", err)
			}
			if !events.ValidScope(scope) {
				return usage(fmt.Errorf("--scope: %s", events.ScopeReason(scope)))
			}
			if len(c.brokerList()) == 0 {
				// the search is in a log: without --brokers, the embedded
				// broker's under --data, which Start would create empty
				if _, err := os.Stat(pipeline.LogDir(c.data)); err != nil {
					return fmt.Errorf("--data %s: no log at %s, so no search to lock (give the --data of the serve or search game24 that ran it, or --brokers): %w", c.data, pipeline.LogDir(c.data), err)
				}
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			p, err := pipeline.Start(ctx, pipeline.Config{DataDir: c.data, Brokers: c.brokerList(), KafkaListen: c.kafkaListen, Partitions: c.partitions,
				Processors: []processors.Processor{treesearch.Processor{}}, Embedder: noEmbedder{}, OnRelayError: logRelayError})
			if err != nil {
				return err
			}
			defer p.Close()
			if err := p.WaitCaughtUp(ctx, nil); err != nil {
				return err
			}
			key := events.EntityKey(scope, args[0])
			s, ok, err := treesearch.Get(p.Store, key)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("search %s not found in %s", key, c.data)
			}
			prop, eval, ok := game24.Components(s.Proposer.Name)
			if !ok {
				return fmt.Errorf("search %s ran proposer %q, which this binary does not build in", key, s.Proposer.Name)
			}
			r, err := treesearch.NewRunner(p.Store, p.Producer, prop, eval)
			if err != nil {
				return err
			}
			l, err := r.Lock(ctx, key)
			if err != nil {
				return err
			}
			if out == "" {
				out = strings.ReplaceAll(args[0], "/", "_") + ".lock.json"
			}
			b, _ := json.MarshalIndent(l, "", "  ")
			if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
				return err
			}
			fmt.Printf("locked %s: %s (lock_sha256 %s)\n", key, out, l.LockSHA256)
			return nil
		},
	}
	c.register(lock)
	c.registerKafkaListen(lock)
	lock.Flags().StringVar(&scope, "scope", events.DefaultScope, "scope of the search")
	lock.Flags().StringVar(&out, "out", "", "lock file to write (default SEARCH_ID.lock.json, '/' as '_')")
	cmd.AddCommand(lock)
	return cmd
}

// readLock reads a lock file written by `chronicle solver lock`.
func readLock(path string) (events.SolverLockedData, error) {
	var l events.SolverLockedData
	b, err := os.ReadFile(path)
	if err != nil {
		return l, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("--lock %s: not a lock file of chronicle solver lock: %w", path, err)
	}
	if err := treesearch.CheckLock(l); err != nil {
		return l, fmt.Errorf("--lock %s: not a lock file of chronicle solver lock: %w", path, err)
	}
	return l, nil
}
