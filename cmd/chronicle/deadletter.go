package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/rivo/uniseg"
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
		Example: `  # the letters in a stopped service's log
  chronicle deadletter list --data ./data

  # a running service's, through its embedded broker, as JSON
  chronicle deadletter list --brokers 127.0.0.1:9092 --json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			brokers, stop, err := logBrokers(ctx, cmd, &c)
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
			return printLetters(os.Stdout, ls)
		},
	}
	c.registerLog(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of letters")
	return cmd
}

// noLetters is deadletter list's answer when the dead-letter topic holds
// no letter: a header without rows read as output cut short (a
// walkthrough, 2026-12-07).
var noLetters = "no dead letters: " + string(events.TopicDeadLetter) + " is empty\n"

// printLetters writes deadletter list's table of ls to w, or noLetters
// when ls is empty.
func printLetters(w io.Writer, ls []deadletter.Letter) error {
	if len(ls) == 0 {
		_, err := io.WriteString(w, noLetters)
		return err
	}
	rows := [][]string{{"ID", "HANDLER", "KEY", "EVENT ID", "TYPE", "REDRIVEN TO", "REASON"}}
	for _, l := range ls {
		to := l.RedrivenTo
		if to == "" {
			to = "-"
		}
		reason := strings.ReplaceAll(l.Reason, "\n", " ")
		// the engine's reason starts "at <its position>: ", the ID column
		// already (a producer's walkthrough, 2026-12-06: every reason
		// began with it, pushing the useful text right)
		reason = strings.TrimPrefix(reason, "at "+l.ID+": ")
		if l.Pointer != "" && !strings.Contains(reason, l.Pointer) {
			reason += " (at " + l.Pointer + ")"
		}
		row := []string{l.ID, l.Handler, l.Key, l.EventID, l.EventType, to, reason}
		for i := range row {
			row[i] = terminalText(row[i])
		}
		rows = append(rows, row)
	}
	return writeColumns(w, rows)
}

// writeColumns writes rows as a table: every column but the last padded
// to its widest cell plus two spaces, widths measured as a terminal shows
// them (uniseg.StringWidth: a CJK character or an emoji takes two
// columns). text/tabwriter counts characters, which misaligned every row
// holding wide ones.
func writeColumns(w io.Writer, rows [][]string) error {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], uniseg.StringWidth(cell))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-uniseg.StringWidth(cell)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// terminalText is s as a terminal should be shown it: s itself, or, when
// s holds a control character (C0, C1: terminal escapes, tabs, newlines),
// a bidi control (U+202E RIGHT-TO-LEFT OVERRIDE, the isolates, the marks)
// or bytes that are not UTF-8, s quoted with those escaped
// (strconv.QuoteToGraphic). Text in any script, emoji sequences joined by
// U+200D included, is left as it is.
func terminalText(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
		return strconv.QuoteToGraphic(s)
	}
	return s
}

// someIDsMax is how many ids a redrive's "skipped" lines list (10); the
// rest are counted ("and N more"): `deadletter list` lists them all, and
// a line of thousands of ids told nothing more.
const someIDsMax = 10

// someIDs lists the first someIDsMax of ids and counts the rest.
func someIDs(ids []string) string {
	if len(ids) <= someIDsMax {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more (chronicle deadletter list shows them)", strings.Join(ids[:someIDsMax], ", "), len(ids)-someIDsMax)
}

// nothingToRedrive is redrive --all's note when it re-produces nothing:
// the dead-letter topic holds no letter (letters 0), or each of the
// skipped records its letters name was skipped, as the lines before say.
func nothingToRedrive(letters, skipped int) string {
	if letters == 0 {
		return "nothing to redrive: " + string(events.TopicDeadLetter) + " holds no dead letters"
	}
	if skipped == 1 {
		return "nothing to redrive: the one record dead-lettered in " + string(events.TopicDeadLetter) + " was skipped (see above)"
	}
	return fmt.Sprintf("nothing to redrive: each of the %d records dead-lettered in %s was skipped (see above)", skipped, events.TopicDeadLetter)
}

func deadletterRedriveCmd() *cobra.Command {
	var c commonFlags
	var ids []string
	var all, again, asJSON bool
	cmd := &cobra.Command{
		Use:   "redrive (--id TOPIC:PARTITION:OFFSET ... | --all) [--again] [--data DIR | --brokers HOST:PORT] [--json]",
		Short: "Re-produce dead-lettered records to their original topics with their original keys, as their producers sent them",
		Example: `  # one letter's record (its id as deadletter list shows it), on a running service
  chronicle deadletter redrive --id chronicle.sessions:0:42 --brokers 127.0.0.1:9092

  # every letter waiting for a redrive, in a stopped service's log
  chronicle deadletter redrive --all --data ./data`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all && len(ids) > 0 {
				// it said "--id or --all: give one" to a caller who gave both
				return usage(fmt.Errorf("--id and --all: give one of them, not both (--all redrives every letter waiting for a redrive, --id the letters named)"))
			}
			if !all && len(ids) == 0 {
				return usage(fmt.Errorf("--id or --all: give one (ids as `deadletter list` prints them)"))
			}
			for _, id := range ids {
				// a malformed id is the flag's own error, said before the
				// log is read (it was "no dead letter has this id": a
				// walkthrough, 2026-12-06)
				if u, err := processors.ParseUntil(id); err != nil || u.Pos == nil {
					return usage(fmt.Errorf("--id %q: not TOPIC:PARTITION:OFFSET, a letter's id as `chronicle deadletter list` prints it (e.g. chronicle.sessions:0:42)", id))
				}
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			brokers, stop, err := logBrokers(ctx, cmd, &c)
			if err != nil {
				return err
			}
			defer stop()
			ls, err := deadletter.List(ctx, brokers)
			if err != nil {
				return err
			}
			byID := map[string][]deadletter.Letter{}
			var order []string
			for _, l := range ls {
				if byID[l.ID] == nil {
					order = append(order, l.ID)
				}
				byID[l.ID] = append(byID[l.ID], l)
			}
			if !all {
				order = nil
				for _, id := range ids {
					if byID[id] == nil {
						return fmt.Errorf("--id %s: no dead letter has this id (see `chronicle deadletter list`)", id)
					}
					order = append(order, id)
				}
			}
			// an id whose letters have all been redriven is done: --all
			// skips it and --id refuses it, unless --again; --all skips a
			// redriven record refused again for the same reasons too
			// (deadletter.RefusedAgain), unless --again
			var again2 map[string]bool
			if all && !again {
				again2 = deadletter.RefusedAgain(ls)
			}
			var pick []deadletter.Letter
			var done, refused []string
			for _, id := range order {
				if again2[id] {
					refused = append(refused, id)
					continue
				}
				var pending []deadletter.Letter
				for _, l := range byID[id] {
					if l.Pending() {
						pending = append(pending, l)
					}
				}
				switch {
				case len(pending) > 0:
					pick = append(pick, pending...)
				case again:
					pick = append(pick, byID[id]...)
				default:
					done = append(done, id)
				}
			}
			if !all && len(done) > 0 {
				l := byID[done[0]][len(byID[done[0]])-1]
				return fmt.Errorf("--id %s: already redriven (to %s at %s); --again re-produces it once more", done[0], l.RedrivenTo, l.RedrivenAt)
			}
			if len(done) > 0 {
				fmt.Fprintf(os.Stderr, "skipped %d already redriven (--again re-produces them once more): %s\n", len(done), someIDs(done))
			}
			if len(refused) > 0 {
				fmt.Fprintf(os.Stderr, "skipped %d whose record was a redrive refused again for the same reasons (--again, or --id, re-produces them once more): %s\n", len(refused), someIDs(refused))
			}
			if all && len(pick) == 0 {
				// said on stderr, as the skips are: stdout holds the
				// positions (--json: the empty array); before, nothing
				// was said, as if the command had not run (a walkthrough,
				// 2026-12-07)
				fmt.Fprintln(os.Stderr, nothingToRedrive(len(ls), len(done)+len(refused)))
			}
			out, err := deadletter.Redrive(ctx, brokers, pick)
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
	cmd.Flags().BoolVar(&all, "all", false, "redrive every letter waiting for a redrive (each original record once), but a record that was a redrive refused again for the same reasons")
	cmd.Flags().BoolVar(&again, "again", false, "also re-produce records already redriven (by default --all skips them and --id refuses them)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of the new positions")
	return cmd
}
