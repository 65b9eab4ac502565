package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// StoppedFile is the file in the embedded broker's DataDir that Close
// writes once the broker has persisted its state, and that Start removes:
// a DataDir without it was last left by a process that did not stop (kill
// -9, a power cut), and Start aborts the transactions that process left
// open (abortDangling) before anything else writes.
const StoppedFile = "STOPPED"

// abortDangling writes an abort marker for every transactional id of the
// embedded broker that has no transaction in progress, on every partition
// of every topic.
//
// Why: the embedded broker (kfake) loads a log whose last process was
// killed inside a transaction — a worker's output or a fenced relay's, see
// processors.WorkerTransactionalID — by aborting that transaction in
// memory only: no marker is written. The log then says two things at once.
// Live consumers skip the dangling batch, but the next load of the same
// log reads it as part of the next transaction the same producer id
// commits (the worker takes its id over after the restart), so a replay
// or `audit` applies a record live never saw (found by a crash walkthrough,
// 2026-11-30: `audit` failed in 3 of 6 runs with kill -9 and 4
// partitions); and a load that finds the producer's later batches still
// "in transaction" hides records live had applied. A real Kafka
// coordinator writes the abort markers itself when it recovers.
//
// An abort marker for a producer id with nothing open on a partition
// changes nothing on load or live (no batch of that id is between its last
// marker and this one); right after the crash load nothing is open but
// the dangling batches, so each of them is closed by its own producer id's
// marker, which every later load reads as the live broker decided. An id
// in the middle of a transaction (Ongoing, as the log restored it) is
// left alone. No client can begin one meanwhile: dial is the client's
// dialer, the connGate's, which serves no other client until Start has
// opened it after this call.
func abortDangling(ctx context.Context, addrs []string, dial func(ctx context.Context, network, host string) (net.Conn, error)) error {
	cl, err := kafkaconn.NewClient(addrs, kgo.Dialer(dial))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("list transactions: %w", err)
	}
	if len(listed) == 0 {
		return nil
	}
	described, err := adm.DescribeTransactions(ctx, listed.TransactionalIDs()...)
	if err != nil {
		return fmt.Errorf("describe transactions: %w", err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	if err := topics.Error(); err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	all := kadm.TopicsSet{}
	for _, td := range topics.Sorted() {
		for _, p := range td.Partitions.Numbers() {
			all.Add(td.Topic, p)
		}
	}
	var markers []kadm.TxnMarkers
	for _, d := range described.Sorted() {
		if d.Err != nil {
			return fmt.Errorf("describe transaction %s: %w", d.TxnID, d.Err)
		}
		if d.State == "Ongoing" {
			continue
		}
		markers = append(markers, kadm.TxnMarkers{ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, Topics: all})
	}
	if len(markers) == 0 {
		return nil
	}
	if testBeforeMarkers != nil {
		testBeforeMarkers(addrs)
	}
	resp, err := adm.WriteTxnMarkers(ctx, markers...)
	if err != nil {
		return fmt.Errorf("write abort markers: %w", err)
	}
	var errs []error
	resp.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
		if p.Err != nil {
			errs = append(errs, fmt.Errorf("abort marker of producer id %d on %s/%d: %w", p.ProducerID, p.Topic, p.Partition, p.Err))
		}
	})
	return errors.Join(errs...)
}

// testBeforeMarkers, set by a test only, runs between the description of
// the transactions and the markers.
var testBeforeMarkers func(addrs []string)

// stoppedCleanly reports whether dir holds StoppedFile, and removes it:
// from here on the log is written, and only Close says again that it
// stopped.
func stoppedCleanly(dir string) (bool, error) {
	path := filepath.Join(dir, StoppedFile)
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, os.Remove(path)
}

// markStopped writes StoppedFile into dir (and syncs it), once the
// broker's Close has persisted the log.
func markStopped(dir string) error {
	f, err := os.Create(filepath.Join(dir, StoppedFile))
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
