package projections

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/chronicle-dev/chronicle/events"
)

// Item is one consumed record handed to ApplyBatch.
type Item struct {
	// Pos is where the record sits in the log. Every item of one
	// ApplyBatch call is on the same topic partition, in offset order.
	Pos Position
	// Env is the parsed, validated event; nil when the record did not parse
	// (Err says why).
	Env *events.Envelope
	// Err is why the record is not an event of its topic (it does not
	// parse, does not validate, or its type belongs on another topic). The
	// item is never given to the ApplyFunc; it is dead-lettered.
	Err error
	// Control marks a transaction marker (a Kafka control record, kept by
	// kgo.KeepControlRecords): never given to the ApplyFunc, it only moves
	// the offset past itself, so a partition that ends with one is caught
	// up (Result Marker).
	Control bool
	// Skip marks an event of a type the processor does not handle
	// (processors.TypedProcessor): it is not given to the ApplyFunc and no
	// idempotency key is written for it; only the offset moves past it
	// (Result Ignored). An item with Err is never skipped.
	Skip bool
	// Sum is ContentHash(Env) when the caller computed it once for every
	// processor of the record's topic; nil: ApplyBatch computes it.
	Sum []byte
	// IDSum is IDHash(Env) when the caller computed it once for every
	// processor of the record's topic; nil: ApplyBatch computes it.
	IDSum []byte
	// DeadLetter, when set, builds the dead-letter record written to the
	// outbox, in the same batch as the offset that moves past the item,
	// when the item is rejected. Nil: a rejected item only advances the
	// offset (another processor of the topic dead-letters a record that does
	// not parse, so it is dead-lettered once, not once per processor).
	DeadLetter func(reason error) OutboxRecord
	// QuietConflict marks an item whose conflicting duplicate another
	// processor of the topic dead-letters: rejected as a conflicting
	// duplicate, it only advances the offset (Result DeadLettered, Err
	// ErrConflictingDuplicate, no record from DeadLetter), so the record is
	// dead-lettered once, not once per processor that had applied the
	// event its id first named. Other rejections are dead-lettered as
	// DeadLetter says.
	QuietConflict bool
}

// Lettered reports whether ApplyBatch wrote a dead-letter record for it
// with outcome o: a DeadLettered item with DeadLetter set whose rejection
// is not a conflicting duplicate another processor dead-letters
// (QuietConflict).
func (it Item) Lettered(o Outcome) bool {
	return o.Result == DeadLettered && !o.Quiet && it.DeadLetter != nil && !(it.QuietConflict && errors.Is(o.Err, ErrConflictingDuplicate))
}

// prefixLettered holds one empty row per record position some processor
// dead-lettered (m/lettered/<topic>/<partition>/<offset>): the processors
// of a topic refuse a record each for its own reason (sessionlog a
// conflicting duplicate, sessions "already started"), and the first to
// commit its refusal writes the record's one letter; the others see the
// row and write none (Outcome.Quiet). Before, each wrote its own, so one
// record had two letters (a concurrency walkthrough, 2026-12-03; issue 11
// item 8 asks for one letter per record). Outside the digest (p/ only).
const prefixLettered = "m/lettered/"

// letteredKey is the prefixLettered row of the record at pos.
func letteredKey(pos Position) string {
	return prefixLettered + pos.Topic + "/" + strconv.FormatInt(int64(pos.Partition), 10) + "/" + strconv.FormatInt(pos.Offset, 10)
}

// claimLetter reports whether the record at pos is to be dead-lettered by
// this run: no processor has claimed it (in the store or in ws), and the
// claim is then written into ws. The first claim of a run takes the
// letters lock of pos's topic partition (a processor's ApplyBatch locks
// only its own partition) and hands its release to *release, which the
// run calls once its batch is committed or dropped, so two processors
// never both see the record unclaimed.
func (s *Store) claimLetter(ws *writeSet, pos Position, release *func()) (bool, error) {
	if *release == nil {
		*release = s.lockProcessor("letters/" + pos.Topic + "/" + strconv.FormatInt(int64(pos.Partition), 10))
	}
	key := letteredKey(pos)
	_, found, err := ws.get(key)
	if err != nil || found {
		return false, err
	}
	ws.setUnscanned(key, []byte{})
	return true, nil
}

// Outcome is what ApplyBatch did with one item.
type Outcome struct {
	Result Result
	// Err is the rejection of a DeadLettered item: a *RejectedError (the
	// processor refused it), ErrConflictingDuplicate, or the item's own Err.
	Err error
	// Quiet marks a DeadLettered item whose record another processor of its
	// topic had dead-lettered already (for its own reason): no second
	// letter is written for it (claimLetter).
	Quiet bool
}

// ApplyBatch applies items, consecutive records of one topic partition, for
// processor and commits them in as few Pebble batches as it can: normally
// one, holding every item's projection changes, derived events (outbox),
// idempotency key and dead-letter record, and the offset after the last
// item. Exactly-once holds as for Apply: a crash keeps a whole batch or
// none of it.
//
// A rejection (the ApplyFunc returned an error, a conflicting duplicate, an
// item with Err) costs no neighbour: a rejected ApplyFunc call's partial
// writes cannot be taken out of a Pebble batch, so the batch is discarded,
// the items before the rejected one are applied again and committed (Apply
// is deterministic), the rejected item is dead-lettered alone (its
// DeadLetter record and its offset in one batch), and the rest continue in
// a new batch. The returned outcomes have one entry per item.
//
// The error is a store failure (transient: the caller retries the call;
// items committed before it are AlreadyApplied then). Calls for different
// partitions of one processor may run concurrently: the caller makes sure
// that the processor's state is per key then (a processor whose rows span
// keys serialises its partitions itself).
func (s *Store) ApplyBatch(processor string, items []Item, fn ApplyFunc) ([]Outcome, error) {
	out := make([]Outcome, len(items))
	if len(items) == 0 {
		return out, nil
	}
	first := items[0].Pos
	for _, it := range items {
		if it.Pos.Topic != first.Topic || it.Pos.Partition != first.Partition {
			return out, fmt.Errorf("projections: ApplyBatch: items of %s and %s: one topic partition per call", first, it.Pos)
		}
	}
	unlock := s.lockPartition(processor, first.Topic, first.Partition)
	defer unlock()
	okey := offsetKey(processor, first.Topic, first.Partition)
	i, limit := 0, len(items)
	for i < len(items) {
		n, failAt, err := s.applyRun(processor, okey, items[i:limit], out[i:limit], fn, true)
		if err != nil {
			return out, err
		}
		if failAt > 0 {
			// item i+failAt was rejected: apply the good prefix on its own
			limit = i + failAt
			continue
		}
		i += n
		limit = len(items)
	}
	return out, nil
}

// applyRun applies items in one batch. It returns how many items it
// consumed (committed), or, when the ApplyFunc rejected item j > 0, failAt
// = j and nothing committed: the caller applies items[:j] alone first. A
// rejection of item 0 is dead-lettered (when deadLetter is set; else
// returned as the error with nothing written) and counts as one consumed
// item.
func (s *Store) applyRun(processor, okey string, items []Item, out []Outcome, fn ApplyFunc, deadLetter bool) (n, failAt int, err error) {
	ws := newWriteSet(s.db)
	rebuild := s.rebuild.Load()
	access := s.rowAccessFunc()
	next, hasNext := s.NextOffset(processor, items[0].Pos.Topic, items[0].Pos.Partition)
	var (
		outbox  []OutboxRecord
		touched []string
		moved   bool   // the offset moves in this batch
		letters func() // releases the letters lock (claimLetter) once the batch is committed or dropped
	)
	defer func() {
		if letters != nil {
			letters()
		}
	}()
	advance := func(pos Position) {
		next, hasNext, moved = pos.Offset+1, true, true
	}
	reject := func(j int, it Item, why error) error {
		out[j] = Outcome{Result: DeadLettered, Err: why}
		if it.Lettered(out[j]) {
			first, err := s.claimLetter(ws, it.Pos, &letters)
			if err != nil {
				return err
			}
			if first {
				outbox = append(outbox, withSource(it, it.DeadLetter(why))...)
			} else {
				out[j].Quiet = true
			}
		}
		advance(it.Pos)
		return nil
	}
	for j, it := range items {
		if hasNext && it.Pos.Offset < next {
			out[j] = Outcome{Result: AlreadyApplied}
			continue
		}
		if it.Control {
			out[j] = Outcome{Result: Marker}
			advance(it.Pos)
			continue
		}
		if it.Skip && it.Err == nil {
			out[j] = Outcome{Result: Ignored}
			advance(it.Pos)
			continue
		}
		if it.Err != nil {
			if !deadLetter {
				return 0, -1, it.Err
			}
			if err := reject(j, it, it.Err); err != nil {
				return 0, -1, err
			}
			continue
		}
		idSum := it.IDSum
		if idSum == nil {
			idSum = IDHash(it.Env)
		}
		dk := dedupKey(processor, idSum)
		dks := string(dk)
		sum := it.Sum
		if sum == nil {
			sum = ContentHash(it.Env)
		}
		var (
			prev  []byte
			found bool
			gerr  error
		)
		if !s.keys.absent(dk) {
			prev, found, gerr = ws.get(dks)
		}
		if !found && gerr == nil {
			prev, found, gerr = s.legacyDedup(processor, it.Env)
		}
		wasRefused, sameRefused := false, false
		if found && gerr == nil {
			if wasRefused, sameRefused = refused(prev, sum); sameRefused {
				found = false // a retry or redrive of a refused record: the processor judges it again
			}
		}
		switch {
		case gerr != nil:
			return 0, -1, gerr
		case found:
			// values written before content hashes were kept hold the offset only
			if wasRefused || !sameContent(prev, it.Env, sum) {
				did := "applied"
				if wasRefused {
					did = "refused" // by this processor; the id is taken all the same
				}
				cerr := fmt.Errorf("%w: (source %q, id %q) was %s before with other content", ErrConflictingDuplicate, it.Env.Source, it.Env.ID, did)
				if !deadLetter {
					return 0, -1, cerr
				}
				if err := reject(j, it, cerr); err != nil {
					return 0, -1, err
				}
				continue
			}
			out[j] = Outcome{Result: Duplicate}
			advance(it.Pos)
			continue
		}
		tx := &Tx{ws: ws, proj: processor, cause: it.Env, pos: it.Pos, rebuild: rebuild, access: access}
		if ferr := safeApply(fn, tx, it.Env); ferr != nil {
			if tx.err != nil { // a store failure inside the call, not a rejection
				return 0, -1, tx.err
			}
			rerr := &RejectedError{Err: ferr}
			if !deadLetter {
				return 0, -1, rerr
			}
			if j > 0 {
				return 0, j, nil
			}
			// the call's partial writes are in ws: start a clean write set
			ws = newWriteSet(s.db)
			outbox, touched = nil, nil
			if err := reject(0, it, rerr); err != nil {
				return 0, -1, err
			}
			// the id is taken by this content here too (refusedVersion)
			s.keys.add(dk)
			ws.setUnscanned(dks, refusedValue(it.Pos.Offset, sum))
			return s.commitRun(ws, okey, next, outbox, touched, processor, 1)
		}
		if tx.err != nil {
			return 0, -1, tx.err
		}
		outbox = append(outbox, withSource(it, tx.out...)...)
		touched = append(touched, tx.touched...)
		s.keys.add(dk) // before the commit: the filter never misses a stored key
		ws.setUnscanned(dks, dedupValue(it.Pos.Offset, sum))
		out[j] = Outcome{Result: Applied}
		advance(it.Pos)
	}
	if !moved {
		return len(items), -1, nil
	}
	return s.commitRun(ws, okey, next, outbox, touched, processor, len(items))
}

// withSource stamps recs with the position of the record that wrote them.
func withSource(it Item, recs ...OutboxRecord) []OutboxRecord {
	for i := range recs {
		p := it.Pos
		recs[i].Source = &p
	}
	return recs
}

// commitRun writes the run's rows, the outbox rows and the offset into one
// Pebble batch, commits it and runs the commit hooks; it reports n
// consumed items.
func (s *Store) commitRun(ws *writeSet, okey string, next int64, outbox []OutboxRecord, touched []string, processor string, n int) (int, int, error) {
	if s.rebuild.Load() {
		outbox = nil // see Rebuilding
	}
	vals := make([][]byte, len(outbox))
	size := 12 + ws.size() + batchRecordMax + len(okey) + 8 // the batch header, the rows, the offset
	for i, rec := range outbox {
		val, err := events.Marshal(rec)
		if err != nil {
			return 0, -1, err
		}
		vals[i] = val
		size += batchRecordMax + len(prefixOutbox) + 8 + len(val)
	}
	b := s.db.NewBatchWithSize(size)
	defer b.Close()
	if err := ws.writeTo(b); err != nil {
		return 0, -1, err
	}
	seq := s.reserveOutbox(len(outbox))
	for _, val := range vals {
		if err := b.Set(outboxKey(seq), val, nil); err != nil {
			return 0, -1, err
		}
		seq++
	}
	if err := putOffset(b, okey, next); err != nil {
		return 0, -1, err
	}
	if err := s.commit(b, okey, next, len(outbox) > 0); err != nil {
		return 0, -1, err
	}
	s.cacheOutbox(seq-uint64(len(outbox)), outbox)
	s.outboxLen.Add(int64(len(outbox)))
	if len(touched) > 0 {
		s.mu.Lock()
		hooks := s.hooks
		s.mu.Unlock()
		for _, h := range hooks {
			h(processor, touched)
		}
	}
	return n, -1, nil
}

// lockPartition serialises the ApplyBatch, Apply and Skip calls of one
// processor on one topic partition.
func (s *Store) lockPartition(processor, topic string, partition int32) func() {
	return s.lockProcessor(offsetKey(processor, topic, partition))
}

// safeApply calls fn, turning a panic into its error: a processor that
// panics on an event panics on it again (it is a function of the log), so
// the event is rejected and dead-lettered like any rejection instead of
// taking the service down.
func safeApply(fn ApplyFunc, tx *Tx, env *events.Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("processor panicked: %v", r)
		}
	}()
	if err := fn(tx, env); err != nil {
		return err
	}
	return tx.invalid // a bad row the processor went on after
}
