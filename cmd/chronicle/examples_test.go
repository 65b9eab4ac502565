package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// exampleCommands are the commands a user reaches first: each has an
// Example section in its help. No command had one (a CLI walkthrough,
// 2026-12-05).
var exampleCommands = []string{
	"serve", "demo", "ingest", "replay", "audit", "digest", "inspect", "bench", "eval",
	"deadletter list", "deadletter redrive", "token create",
	"workflow", "workflow list", "workflow state", "workflow history", "workflow at", "workflow resume", "workflow answer",
	"mcp",
}

// Each command of exampleCommands has an Example, and every command line
// of every Example in the tree is one the CLI takes as written: its
// command exists, its flags are the command's (a flag renamed or removed
// fails here), their values parse, its positional arguments are as many
// as the command takes, and the checks every command runs before it
// starts (checkFlags: bounds, flags that need or exclude another) pass.
func TestExamplesParse(t *testing.T) {
	root := newRoot()
	for _, path := range exampleCommands {
		c, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) > 0 || c.CommandPath() != "chronicle "+path {
			t.Errorf("chronicle %s: no such command (%v, %v)", path, err, rest)
			continue
		}
		if len(exampleLines(c.Example)) == 0 {
			t.Errorf("chronicle %s: no Example with a chronicle command line", path)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range exampleLines(c.Example) {
			if err := checkExample(line); err != nil {
				t.Errorf("%s: its Example line %q: %v", c.CommandPath(), strings.Join(line, " "), err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// checkExample says why args, an example's command line after
// "chronicle", would be refused before the command runs, on a fresh
// command tree (a tree's flags keep the values of a line parsed before).
func checkExample(args []string) error {
	cmd, rest, err := newRoot().Find(args)
	if err != nil {
		return err
	}
	if cmd.HasSubCommands() || !cmd.Runnable() {
		return fmt.Errorf("%s is a group of commands, which prints its help: name one of them", cmd.CommandPath())
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	positional := cmd.Flags().Args()
	if err := cmd.ValidateArgs(positional); err != nil {
		return err
	}
	return checkFlags(cmd, positional)
}

// exampleLines are the command lines of an Example: on each line that is
// no comment, the words from "chronicle" on (after an environment
// assignment or a pipe's left side), up to a shell operator (a pipe, a
// redirection, a comment), quotes removed.
func exampleLines(example string) [][]string {
	var out [][]string
	for _, line := range strings.Split(example, "\n") {
		words := shellWords(line)
		for i, w := range words {
			if w == "#" {
				break
			}
			if w != "chronicle" {
				continue
			}
			end := i + 1
			for end < len(words) && !isShellOperator(words[end]) {
				end++
			}
			out = append(out, words[i+1:end])
			break
		}
	}
	return out
}

// shellOperators end a command's words in an example line.
const shellOperators = "|<>;&#"

// isShellOperator reports whether w is an operator shellWords split off.
func isShellOperator(w string) bool {
	return len(w) == 1 && strings.Contains(shellOperators, w)
}

// shellWords splits line as a POSIX shell would for the simple lines of an
// example: words separated by blanks, single and double quotes grouping
// and removed; an unquoted |, <, >, ;, & or # is a word of its own.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	end := func() {
		if inWord {
			words, inWord = append(words, w.String()), false
			w.Reset()
		}
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			end()
		case strings.ContainsRune(shellOperators, r):
			end()
			words = append(words, string(r))
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words
}

// The example parser itself: what it takes from a line, and that a line
// with a flag the command does not have, or an argument too many, is
// refused (so an example made wrong fails TestExamplesParse).
func TestExampleLineChecks(t *testing.T) {
	for line, want := range map[string]string{
		"  chronicle serve --data ./data   # the default":        "serve --data ./data",
		"cat events.jsonl | chronicle ingest - --brokers k:9092": "ingest - --brokers k:9092",
		`chronicle token create --name a --read '*'`:             "token create --name a --read *",
		"# chronicle demo":                  "",
		"chronicle ingest - < events.jsonl": "ingest -",
	} {
		got := ""
		if l := exampleLines(line); len(l) > 0 {
			got = strings.Join(l[0], " ")
		}
		if got != want {
			t.Errorf("exampleLines(%q) = %q, want %q", line, got, want)
		}
	}
	for _, bad := range []string{
		"serve --listen 127.0.0.1:8080",     // no such flag
		"digest ./data",                     // no argument
		"workflow state",                    // its ID missing
		"replay --data d --partitions 0",    // a bound
		"demo --kafka-listen 10.0.0.1:9092", // not loopback
		"workflow",                          // a group
		"bogus",
	} {
		if err := checkExample(strings.Fields(bad)); err == nil {
			t.Errorf("chronicle %s: taken, want a refusal", bad)
		}
	}
	if err := checkExample(strings.Fields("workflow resume w1 --api http://127.0.0.1:8081")); err != nil {
		t.Errorf("a good line refused: %v", err)
	}
}
