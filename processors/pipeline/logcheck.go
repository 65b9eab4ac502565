package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
)

// ErrForeignLog is wrapped by the start-up error of a data directory whose
// projections were not built from the log the pipeline is connected to: a
// stored offset beyond the log's end (a replayed directory served without
// its log, a log deleted or replaced), or a topic with another topic id.
// Serving it would apply new events at offsets the store believes applied,
// and relay its outbox into a log that is not its own.
var ErrForeignLog = errors.New("the data directory does not match its log")

// ErrPartitionsChanged is wrapped by the start-up error of a data
// directory whose log's topic has another partition count than when the
// store began to follow it: a key's partition is its hash modulo the
// count, so once partitions were added the records written before sit on
// partitions their keys no longer hash to, new events of a key land on
// another partition than its state's, and a replay dead-letters the old
// records. Before, serve went on after an operator added partitions: new
// sessions answered 404 for minutes, and audit failed after a restart (a
// Kafka platform review, 2026-12-01).
var ErrPartitionsChanged = errors.New("a topic's partition count changed")

// checkLog refuses a store that does not follow the log behind adm: every
// stored next offset must be at most the end offset of its partition, and
// every topic must keep the topic id the store first saw (recorded at the
// first start, or by the replay that built it: projections.Store.TopicID).
//
// dataDir is the directory of the embedded broker's log and the store,
// empty with an external cluster: a store ahead of its embedded log is
// typically a backup copied while the service ran (DATA/log before
// DATA/projections), and the error then says how to rebuild its
// projections from that log.
func checkLog(ctx context.Context, adm *kadm.Client, store *projections.Store, dataDir string) error {
	hint := "(a replayed or copied directory is read with digest and audit, not served)"
	if dataDir != "" {
		// before, only the hint above: an operator restoring a backup
		// taken while serving had no way to serve it (a disk walkthrough)
		hint = fmt.Sprintf("(the store holds records its log does not: a directory copied while the service ran, its log before its projections, or a store replayed from another log. The log is the source of truth: rebuild the projections from it, chronicle replay --data %s --into NEW, then put NEW/projections in place of %s; a copy taken after a clean stop, or of the projections before the log, starts as it is)", dataDir, ProjectionsDir(dataDir))
	}
	return verifyLog(ctx, adm, store, true, hint)
}

// CheckLog is checkLog for the offline tools (audit): it refuses, with
// an error wrapping ErrForeignLog, a store that does not follow the log
// of brokers (a stored next offset beyond its partition's end, a
// partition the log lacks, a topic with another id than the one the
// store recorded), and writes nothing: a topic id the store has not
// recorded (a directory from before ids were kept) is not adopted.
// Waits at most as long as ctx and the client's request timeouts allow.
func CheckLog(ctx context.Context, brokers []string, store *projections.Store) error {
	cl, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return err
	}
	defer cl.Close()
	return verifyLog(ctx, kadm.NewClient(cl), store, false, "(this log is not the one the store was built from: give the directory its own log, or audit a store replayed from this one)")
}

// CheckLogPresent refuses, before an embedded broker creates an empty log
// in dataDir, a store that has applied records when dataDir holds no log
// directory (a replayed or copied directory, its log deleted): started,
// the broker would create a new, empty log, which the store then no
// longer matches, and which replay, audit and deadletter would read as
// the directory's log (an analyst's walkthrough).
func CheckLogPresent(dataDir string, store *projections.Store) error {
	if _, err := os.Stat(LogDir(dataDir)); !os.IsNotExist(err) {
		return nil
	}
	if n := len(store.Offsets()); n > 0 {
		return fmt.Errorf("pipeline: %w: the store in %s holds offsets of %d processor partitions, but %s holds no log (a replayed or copied directory, or its log deleted): serve it with the log it was built from; digest and inspect read it without one", ErrForeignLog, ProjectionsDir(dataDir), n, dataDir)
	}
	return nil
}

func verifyLog(ctx context.Context, adm *kadm.Client, store *projections.Store, adopt bool, beyondHint string) error {
	offsets := store.Offsets() // processor/topic/partition → next offset
	topics := map[string]bool{}
	for k := range offsets {
		parts := strings.Split(k, "/")
		if len(parts) == 3 {
			topics[parts[1]] = true
		}
	}
	details, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("pipeline: list topics: %w", err)
	}
	for name, td := range details {
		if strings.HasPrefix(name, "__") {
			continue
		}
		id := td.ID.String()
		prev, ok, err := store.TopicID(name)
		if err != nil {
			return err
		}
		switch {
		case !ok && !adopt:
		case !ok:
			if err := store.SetTopicID(name, id); err != nil {
				return err
			}
		case prev != id:
			return fmt.Errorf("pipeline: %w: topic %s of this log has id %s, but the store was built from a topic %s with id %s: another log of the same name (recreated, or another service's). Serve the directory with the log it was built from, or rebuild its projections from this log (chronicle replay --into a new directory, then swap its projections in)", ErrForeignLog, name, id, name, prev)
		}
		if td.Err != nil || !strings.HasPrefix(name, "chronicle.") {
			continue
		}
		count, ok, err := store.TopicPartitions(name)
		switch {
		case err != nil:
			return err
		case !ok && adopt:
			if err := store.SetTopicPartitions(name, len(td.Partitions)); err != nil {
				return err
			}
		case ok && count != len(td.Partitions):
			return fmt.Errorf("pipeline: %w: topic %s has %d partitions, but it had %d when this store began to follow it: keys hash to other partitions now, so the records written before sit where their keys no longer lead, and a replay dead-letters them. Chronicle does not follow a changed partition count: give the topic its %d partitions back (recreate it and copy its records, keeping each record's partition), or start over with a new log (README \"A secured cluster, and what the service account needs\")", ErrPartitionsChanged, name, len(td.Partitions), count, count)
		}
	}
	if err := checkStarts(ctx, adm, details, offsets); err != nil {
		return err
	}
	if len(topics) == 0 {
		return nil
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return fmt.Errorf("pipeline: end offsets: %w", err)
	}
	for k, next := range offsets {
		parts := strings.Split(k, "/")
		if len(parts) != 3 {
			continue
		}
		p, err := strconv.ParseInt(parts[2], 10, 32)
		if err != nil {
			continue
		}
		end, ok := ends.Lookup(parts[1], int32(p))
		if !ok || end.Err != nil {
			return fmt.Errorf("pipeline: %w: processor %s reads %s partition %d, which the log does not have", ErrForeignLog, parts[0], parts[1], p)
		}
		if next > end.Offset {
			return fmt.Errorf("pipeline: %w: processor %s, %s partition %d: stored next offset %d is beyond the log's end offset %d %s",
				ErrForeignLog, parts[0], parts[1], p, next, end.Offset, beyondHint)
		}
	}
	return nil
}

// checkStarts refuses a store that would have to read records its log no
// longer holds: a partition of a Chronicle topic that starts past offset 0
// (retention, a deletion of records) where no processor of the store has
// read up to that start, or one has stopped before it. Before, an empty
// store (a new instance, projections rebuilt) read from the log's start,
// and one left behind skipped the removed range, each building a state
// without those records and saying nothing (a re-test, 2026-12-01);
// replay and audit refuse such a log too (processors.ErrLogTruncated).
func checkStarts(ctx context.Context, adm *kadm.Client, details kadm.TopicDetails, offsets map[string]int64) error {
	var names []string
	for name := range details {
		if strings.HasPrefix(name, "chronicle.") && details[name].Err == nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("pipeline: start offsets: %w", err)
	}
	var refusal error
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 || refusal != nil {
			return
		}
		read := false
		for k, next := range offsets {
			parts := strings.Split(k, "/")
			if len(parts) != 3 || parts[1] != o.Topic || parts[2] != strconv.Itoa(int(o.Partition)) {
				continue
			}
			if next < o.Offset {
				refusal = fmt.Errorf("pipeline: %w: processor %s, %s partition %d: stored next offset %d, but the log starts at offset %d now: the records between were removed (the topic's retention or a deletion of records), so this store cannot follow it", processors.ErrLogTruncated, parts[0], o.Topic, o.Partition, next, o.Offset)
				return
			}
			read = true
		}
		if !read {
			refusal = fmt.Errorf("pipeline: %w: %s partition %d starts at offset %d, and no processor of this store has read it: the state cannot be built from what is left (a new instance or rebuilt projections read it from the start)", processors.ErrLogTruncated, o.Topic, o.Partition, o.Offset)
		}
	})
	return refusal
}
