package processors

import (
	"errors"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go v1.22's EndTransaction(TryCommit) aborts instead of committing
// when, by its own bookkeeping, no produce of the transaction succeeded
// but some were attempted, and then returns nil: the caller cannot tell
// the abort from a commit. It logs this line when it does.
//
// Found behind TestRejectContinuesSearchInServe's rare 25 s timeouts
// (after 21 to 351 runs in four of seven loops, sooner under load): the tree-search resume
// worker's first transaction on a partition produced its record (the
// produce response acknowledged offset 41), EndTransaction(TryCommit)
// logged this line, sent EndTxn with commit false and returned nil; the
// log held an abort marker after the record, so the engine (read
// committed) rightly never applied it, and the worker waited for it.
// The relay and the workers that commit an offset in their transactions
// were already safe: they confirm the committed offset afterwards
// (confirmOffset), and an aborted offset commit does not confirm.
const silentAbortLog = "no produce succeeded in this transaction but produces were attempted; issuing an abort to clear any server-side partition registrations"

// errSilentAbort is a transaction franz-go aborted although it was asked
// to commit and reported success (see silentAbortLog). Nothing of it is
// in the log: writing it again is safe.
var errSilentAbort = errors.New("processors: the transaction was aborted by the Kafka client although its records were acknowledged (franz-go's EndTransaction issued an abort and returned nil); nothing of it was written")

// abortWatch is the kgo.Logger of a worker's transactional producer: it
// notes franz-go's silent abort (silentAbortLog) and drops every line,
// as the producers had no logger before.
type abortWatch struct {
	aborted atomic.Bool
}

// Level implements kgo.Logger: info, where franz-go logs the silent abort.
func (w *abortWatch) Level() kgo.LogLevel { return kgo.LogLevelInfo }

// Log implements kgo.Logger.
func (w *abortWatch) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if msg == silentAbortLog {
		w.aborted.Store(true)
	}
}

// transactWatched is transact for a client whose logger is w: it fails
// with errSilentAbort when franz-go aborted the transaction it was asked
// to commit.
func transactWatched(w *abortWatch, run func() error) error {
	w.aborted.Store(false)
	if err := run(); err != nil {
		return err
	}
	if w.aborted.Load() {
		return errSilentAbort
	}
	return nil
}
