package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Key prefixes of the layout described in the package doc.
const (
	prefixProjection = "p/"
	prefixOffset     = "m/offset/"
	prefixIdk        = "m/idk/"   // idempotency keys (IDHash: scope, record key, source, id)
	prefixIdem       = "m/idem/"  // idempotency keys without the record key (scopedIDHash), read only
	prefixDedup      = "m/dedup/" // idempotency keys without the scope (legacyIDHash), read only
	prefixOutbox     = "m/outbox/"
	prefixCache      = "x/"
)

// GetCache reads a cache entry: data derived from projections that is not
// part of them (embedding vectors), outside the digest. ok is false when
// absent.
func (s *Store) GetCache(key string) ([]byte, bool, error) {
	return s.getRaw([]byte(prefixCache + key))
}

// getRaw reads the value of a raw Pebble key (a copy); ok is false when
// absent.
func (s *Store) getRaw(key []byte) ([]byte, bool, error) {
	return getValue(s.db, key)
}

// getValue reads key from db (a copy); ok is false when absent. A value
// that cannot be read (a blob file failing its checksum: a byte changed
// on disk) is an error naming the key: Pebble's Get returns an empty
// value then and the error from its closer's Close, which was dropped, so
// GET /v1/sessions answered "unexpected end of JSON input" (a disk
// walkthrough).
func getValue(db *pebble.DB, key []byte) ([]byte, bool, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := bytes.Clone(v)
	if err := closer.Close(); err != nil {
		return nil, false, unreadableRow(key, err)
	}
	return out, true, nil
}

// SetCache writes a cache entry (see GetCache). On a store opened
// ReadOnly it writes nothing and returns nil: the cache is an
// optimisation outside the projections, so a read-only reader (chronicle
// inspect) recomputes what it misses instead of failing.
func (s *Store) SetCache(key string, val []byte) error {
	if s.opts.ReadOnly {
		return nil
	}
	return s.write(func() error { return s.db.Set([]byte(prefixCache+key), val, s.writeOpts()) })
}

// DeleteCachePrefix deletes every cache entry (see GetCache) whose key
// starts with prefix, in one range deletion; when there is none it writes
// nothing. On a store opened ReadOnly it deletes nothing and returns nil.
func (s *Store) DeleteCachePrefix(prefix string) error {
	if s.opts.ReadOnly {
		return nil
	}
	lo, hi := []byte(prefixCache+prefix), upper(prefixCache+prefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	found := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil || !found {
		return err
	}
	return s.write(func() error { return s.db.DeleteRange(lo, hi, s.writeOpts()) })
}

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("projections: store closed")

// Options configures Open. Zero fields take the documented defaults.
type Options struct {
	// ReadOnly opens the store without writing anything (digest, audit of
	// a stopped service). Default false. One exception: a store written by
	// Pebble v1 at its default format (every data directory of a Chronicle
	// before the store moved to Pebble v2, 2026-11-30), which Pebble v2
	// cannot open, is upgraded in place first, read-only or not: its
	// format files are rewritten, its keys and values (and so its digest)
	// are not. On a read-only filesystem that fails with an error saying
	// to copy the directory to a writable disk.
	ReadOnly bool
	// Sync makes every Apply commit fsync the write-ahead log. Default
	// false: commits are atomic and reach the OS before Apply returns, so
	// they survive a killed process; after a power loss the last commits
	// may be missing, together with their offsets, and are re-applied from
	// the log.
	Sync bool
	// FS is the filesystem (default vfs.Default, the OS). Tests inject
	// failing filesystems through it.
	FS vfs.FS
	// OnFatal is called when Pebble cannot go on (a write-ahead-log write
	// or sync failed: disk full, I/O error). It must not return. Default:
	// print the error to stderr and exit with status 70, so a supervisor
	// restarts the process, which resumes from the offsets of the last
	// committed batches. Never a panic: Watermill's Recoverer would turn it
	// into a processing error and dead-letter a healthy event.
	OnFatal func(msg string)
	// CacheSize is Pebble's block cache in bytes, filled as blocks are
	// read (a small store uses little of it). Default 256 MiB (Pebble's own
	// default is 8 MiB). Chosen on BenchmarkPerEventCost (200,000 events
	// through the sessions processor, process CPU per event of the last
	// 20,000 against the first 20,000): ×1.81–1.94 (82–106 µs) with 64 MiB,
	// ×1.06–1.36 (43–53 µs) with 256 MiB on a quiet machine, ×1.16–1.34 with
	// 512 MiB (64 MiB memtables each): past ~100k events the
	// idempotency-key and session-row reads go to sstables, and a small
	// cache re-reads their index, filter and data blocks.
	CacheSize int64
	// MemTableSize is the size of each memtable in bytes. Default 64 MiB
	// (Pebble's: 4 MiB; Pebble starts a store's first memtable small and
	// doubles it up to this): fewer, larger flushes while events arrive in
	// bursts; with a 256 MiB cache, ×1.19–1.44 with 32 MiB memtables against
	// ×1.06–1.36 with 64 MiB (BenchmarkPerEventCost, as above). Each
	// write-ahead log file is preallocated on disk to 1.1 × this (Pebble's
	// rule): about 70 MB at the default, several such files before the
	// first flush.
	MemTableSize uint64
	// BloomBitsPerKey is the bloom filter of every level's tables, in bits
	// per key. Default 10 (about 1% false positives); negative disables the
	// filters. An idempotency-key lookup is a point read of a random
	// SHA-256 key that is almost never there: without filters it searches
	// every level.
	BloomBitsPerKey int
	// BlobMinSize is the smallest value, in bytes, that Pebble keeps in a
	// blob file next to the sstables instead of inside them (Pebble v2's
	// value separation): a compaction then rewrites a reference, not the
	// value. Default 1024; negative keeps every value in the sstables. A
	// session's trace rows (the events' data, three quarters of what the
	// store holds; those of 1 KiB or more hold 63% of the trace's bytes)
	// are written once and read at completion, yet every compaction of
	// their level used to rewrite them; the rows every event rewrites (a
	// session's s/ row: 6 of 579 are 1 KiB or more) stay in the sstables.
	// 256 and 512 measured alike on BenchmarkPerEventCost (README,
	// "Values compaction does not rewrite"). Blob files whose values are
	// 20% garbage and at least 5 minutes old are rewritten (Pebble's
	// TargetGarbageRatio and RewriteMinimumAge); an sstable references at
	// most 10 overlapping blob files (MaxBlobReferenceDepth).
	BlobMinSize int
}

// defaultCacheSize is Options.CacheSize's default: 256 MiB.
const defaultCacheSize = 256 << 20

// pebbleOptions are the Pebble options for o (see the defaults above).
func (o Options) pebbleOptions() *pebble.Options {
	cacheSize, memtable, bits, blob := o.CacheSize, o.MemTableSize, o.BloomBitsPerKey, o.BlobMinSize
	if cacheSize == 0 {
		cacheSize = defaultCacheSize
	}
	if memtable == 0 {
		memtable = 64 << 20
	}
	if bits == 0 {
		bits = 10
	}
	if blob == 0 {
		blob = 1024
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if !o.ReadOnly && o.OnFatal != nil {
		fs = walGuardFS{FS: fs, onFatal: o.OnFatal}
	}
	po := &pebble.Options{
		ReadOnly:     o.ReadOnly,
		Logger:       fatalLogger{onFatal: o.OnFatal},
		FS:           fs,
		Cache:        pebble.NewCache(cacheSize),
		MemTableSize: memtable,
	}
	if bits > 0 {
		for i := range po.Levels {
			po.Levels[i].FilterPolicy = bloom.FilterPolicy(bits)
			po.Levels[i].FilterType = pebble.TableFilter
		}
	}
	// The newest format: value separation (BlobMinSize) needs
	// FormatValueSeparation. A store opened for writing is ratcheted to it.
	po.FormatMajorVersion = pebble.FormatNewest
	po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		if blob < 0 {
			return pebble.ValueSeparationPolicy{Enabled: false}
		}
		return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: blob, MaxBlobReferenceDepth: 10, RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.2}
	}
	po.EnsureDefaults()
	return po
}

// Store is the Pebble database of one data directory. It is safe for
// concurrent use; Apply calls of one processor are serialised.
type Store struct {
	db   *pebble.DB
	dir  string
	opts Options

	mu      sync.Mutex
	offsets map[string]int64 // offset key → next offset
	procMu  map[string]*sync.Mutex
	outSeq  uint64 // next outbox sequence number
	// outbox holds the outbox rows this process committed and has not
	// acknowledged yet, by sequence number, so that PendingOutbox, which
	// the relay calls for every round over every pending row, does not
	// decode them again; rows of an earlier process are decoded, and so
	// are the rows committed while the cache held outboxCacheBytes
	// (outboxBytes counts what it holds).
	outbox      map[uint64]OutboxRecord
	outboxBytes int
	notify      chan struct{}
	hooks       []CommitHook
	rowAccess   RowAccess // OnRowAccess
	upgraded    bool      // UpgradedFormat
	// lastCommit is when a processor's batch last committed (Unix ns).
	lastCommit atomic.Int64
	// keys tells idempotency keys that are certainly not stored (nil for
	// a read-only store); filled is closed when its background fill ends.
	keys   *keyFilter
	filled chan struct{}
	// hasLegacyDedup: the store holds idempotency keys under m/dedup/
	// (written before the scope was part of them), which lookups consult
	// after m/idk/ and m/idem/; a store created since has none.
	hasLegacyDedup bool
	// hasLegacyIdem: the store holds idempotency keys under m/idem/
	// (written before the record key was part of them), which lookups
	// consult after m/idk/; a store created since has none.
	hasLegacyIdem bool
	closing       atomic.Bool
	// metricsMu keeps Close from closing the DB under a Metrics call
	// (Pebble's DB.Metrics has no check of its own).
	metricsMu sync.RWMutex

	closeOnce sync.Once
	closeErr  error

	// outboxLen counts the outbox rows (OutboxLen).
	outboxLen atomic.Int64
	// rebuild is set by Rebuilding: commits keep no outbox rows.
	rebuild atomic.Bool
}

// SinceCommit is how long ago a processor's batch last committed (a large
// duration when none has since the store opened). Background work (the
// search index's embedding) waits for the processors to be idle with it.
func (s *Store) SinceCommit() time.Duration {
	last := s.lastCommit.Load()
	if last == 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Since(time.Unix(0, last))
}

// CommitHook is told, after a processor's batch committed, which rows of
// its projection the batch wrote or deleted (keys relative to the
// projection). It runs on the applying goroutine: keep it short.
type CommitHook func(projection string, keys []string)

// OnCommit registers h. Register hooks before processors start.
func (s *Store) OnCommit(h CommitHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, h)
}

// lockHeld reports whether err, from pebble.Open, is the lock of the
// directory's LOCK file held elsewhere: fcntl's EAGAIN or EACCES (another
// process), or Pebble's own "lock held by current process". An error of a
// file the open could not create, read or write (a full or read-only disk:
// an *os.PathError) is not, though a read-only one may be EACCES too.
func lockHeld(err error) bool {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "lock held")
}

// readOnlyFS is the FS of a store opened ReadOnly: Pebble takes its LOCK
// file even then, creating and opening it for writing, which a read-only
// filesystem refuses (EROFS), so inspect, digest and audit could not read a
// snapshot mounted read-only (an SRE drill: "open …/LOCK: read-only file
// system"). On such a filesystem nothing can write the store through this
// mount, so the lock is skipped there; elsewhere it is taken as before.
type readOnlyFS struct{ vfs.FS }

func (f readOnlyFS) Lock(name string) (io.Closer, error) {
	c, err := f.FS.Lock(name)
	if err != nil && errors.Is(err, syscall.EROFS) {
		return io.NopCloser(nil), nil
	}
	return c, err
}

// Open opens (creating if needed) the store in dir. It fails with a clear
// error when another process holds the directory.
func Open(dir string, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.OnFatal == nil {
		opts.OnFatal = exitOnFatal
	}
	if !opts.ReadOnly {
		if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("projections: create %s: %w", dir, err)
		}
	} else if err := holdsStore(opts.FS, dir); err != nil {
		return nil, err
	}
	upgraded := false
	if legacyFormat(opts.FS, dir) {
		if err := upgradeLegacy(opts.FS, dir, opts.OnFatal); err != nil {
			return nil, err
		}
		upgraded = true
	}
	if !opts.ReadOnly && opts.FS == vfs.Default {
		if err := roomToOpen(dir); err != nil {
			return nil, err
		}
	}
	po := opts.pebbleOptions()
	if opts.ReadOnly {
		po.FS = readOnlyFS{po.FS}
	}
	db, err := pebble.Open(dir, po)
	po.Cache.Unref() // the DB holds its own reference
	if err != nil {
		if lockHeld(err) {
			return nil, fmt.Errorf("projections: open %s (is another chronicle process using it?): %w", dir, err)
		}
		if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("projections: open %s: %w", dir, err)
		}
		// a table or manifest missing, cut short or corrupt: the store
		// cannot be read, and the log it was built from rebuilds it. It
		// was Pebble's error alone, to which digest and audit added that
		// a service might be running (an SRE's walkthrough)
		return nil, &UnreadableError{Dir: dir, Err: err}
	}
	s := &Store{db: db, dir: dir, opts: opts, offsets: map[string]int64{}, procMu: map[string]*sync.Mutex{}, notify: make(chan struct{}, 1), upgraded: upgraded}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	s.filled = make(chan struct{})
	if opts.ReadOnly {
		close(s.filled)
	} else {
		s.keys = newKeyFilter()
		go s.fillKeys()
	}
	return s, nil
}

// UnreadableError is Open's error for a store Pebble cannot open for
// another reason than its lock, a read-only filesystem, permissions or a
// full disk: a table or manifest missing, cut short or corrupt. The log is
// the source of truth: `chronicle replay --data DIR --into NEW` rebuilds
// every projection from it.
type UnreadableError struct {
	Dir string
	Err error // Pebble's
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("projections: open %s: the store cannot be read (%v): if it is damaged, rebuild it from the log into a new directory (chronicle replay --data <data dir> --into <new dir>; the log is the source of truth) and use that one", e.Dir, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// fillKeys adds every stored idempotency key to s.keys and marks it ready
// (at once for a store without any). Keys committed after its iterator was
// opened were added by their batches. It stops early when the store closes.
func (s *Store) fillKeys() {
	defer close(s.filled)
	n := 0
	for _, prefix := range []string{prefixDedup, prefixIdem, prefixIdk} {
		if prefix == prefixDedup && !s.hasLegacyDedup || prefix == prefixIdem && !s.hasLegacyIdem {
			continue
		}
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: upper(prefix)})
		if err != nil {
			return // never ready: every check reads the store, as without a filter
		}
		for it.First(); it.Valid(); it.Next() {
			if n++; n%4096 == 0 && s.closing.Load() {
				it.Close()
				return
			}
			s.keys.add(it.Key())
		}
		if err := it.Close(); err != nil {
			return
		}
	}
	s.keys.ready.Store(true)
}

func (s *Store) load() error {
	legacy, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixDedup), UpperBound: upper(prefixDedup)})
	if err != nil {
		return err
	}
	s.hasLegacyDedup = legacy.First()
	if err := legacy.Close(); err != nil {
		return err
	}
	idem, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixIdem), UpperBound: upper(prefixIdem)})
	if err != nil {
		return err
	}
	s.hasLegacyIdem = idem.First()
	if err := idem.Close(); err != nil {
		return err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixOffset), UpperBound: upper(prefixOffset)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		val, err := rowValue(it)
		if err == nil && len(val) != 8 {
			err = fmt.Errorf("projections: offset row %q holds %d bytes, not 8", it.Key(), len(val))
		}
		if err != nil {
			it.Close()
			return err
		}
		s.offsets[string(it.Key())] = int64(binary.BigEndian.Uint64(val))
	}
	if err := it.Close(); err != nil {
		return err
	}
	// The next outbox number follows the last pending entry; once the relay
	// has drained the outbox, numbering may start again from 0.
	ob, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixOutbox), UpperBound: upper(prefixOutbox)})
	if err != nil {
		return err
	}
	if ob.Last() {
		s.outSeq = binary.BigEndian.Uint64(ob.Key()[len(prefixOutbox):]) + 1
	}
	n := int64(0)
	for ob.First(); ob.Valid(); ob.Next() {
		n++
	}
	s.outboxLen.Store(n)
	return ob.Close()
}

// Close closes the database. A second call returns the first call's
// error and does nothing else (Pebble itself panics on a second Close).
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		<-s.filled
		s.metricsMu.Lock()
		defer s.metricsMu.Unlock()
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// Flush writes the memtables to sstables and waits until that is done
// (Pebble's DB.Flush), so the writes committed so far owe no more
// flushing; BenchmarkPerEventCost uses it to charge a window of events the
// flush of its own writes. Errors are Pebble's.
func (s *Store) Flush() error { return s.db.Flush() }

// WriteMetrics are the bytes Pebble wrote for a store since it opened: the
// write amplification of its rows (see Store.WriteMetrics).
type WriteMetrics struct {
	// Flushes and FlushedBytes count the memtables written to sstables.
	Flushes      int64
	FlushedBytes uint64
	// Compactions and CompactedBytes count the compactions that rewrote
	// sstables into a lower level (moves, which rewrite nothing, are in
	// Compactions only).
	Compactions    int64
	CompactedBytes uint64
}

// WriteMetrics returns what Pebble wrote since the store opened.
// BenchmarkPerEventCost reports the bytes compacted per event with it: that
// figure grows with history when hot writes land among cold rows.
func (s *Store) WriteMetrics() WriteMetrics {
	m := s.db.Metrics()
	w := WriteMetrics{Flushes: m.Flush.Count, FlushedBytes: m.Levels[0].TableBytesFlushed + m.Levels[0].BlobBytesFlushed, Compactions: m.Compact.Count}
	for i := range m.Levels {
		w.CompactedBytes += m.Levels[i].TableBytesCompacted + m.Levels[i].BlobBytesCompacted
	}
	return w
}

// Dir is the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

func (s *Store) writeOpts() *pebble.WriteOptions {
	if s.opts.Sync {
		return pebble.Sync
	}
	return pebble.NoSync
}

func offsetKey(processor, topic string, partition int32) string {
	return prefixOffset + processor + "/" + topic + "/" + strconv.Itoa(int(partition))
}

// NextOffset is the next offset processor must consume from topic/partition
// and whether one is stored (false: start at the beginning of the log).
func (s *Store) NextOffset(processor, topic string, partition int32) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.offsets[offsetKey(processor, topic, partition)]
	return o, ok
}

// Offsets returns a copy of every stored next offset, keyed
// processor/topic/partition.
func (s *Store) Offsets() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.offsets))
	for k, v := range s.offsets {
		out[k[len(prefixOffset):]] = v
	}
	return out
}

func (s *Store) lockProcessor(name string) func() {
	s.mu.Lock()
	m, ok := s.procMu[name]
	if !ok {
		m = &sync.Mutex{}
		s.procMu[name] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Get reads projection row key of projection proj; ok is false when absent.
func (s *Store) Get(proj, key string) (val []byte, ok bool, err error) {
	return getValue(s.db, []byte(prefixProjection+proj+"/"+key))
}

// GetJSON reads a projection row into v; ok is false when absent.
func (s *Store) GetJSON(proj, key string, v any) (bool, error) {
	b, ok, err := s.Get(proj, key)
	if err != nil || !ok {
		return ok, err
	}
	return true, json.Unmarshal(b, v)
}

// UpgradedFormat reports whether the Open that returned s upgraded its
// directory in place from a Pebble v1 store (a data directory of a
// Chronicle before 2026-11-30; see Options.ReadOnly): true on that one
// open, false on every later one. Such a directory can no longer be
// opened by an older Chronicle, so serve says so on stderr (before, the
// upgrade was silent: an upgrade walkthrough, 2026-12-07).
func (s *Store) UpgradedFormat() bool { return s.upgraded }

// Scan calls fn for each row of projection proj whose key starts with
// prefix, after the key after (exclusive, "" for the first: a page's last
// key resumes the scan) in key order, until fn returns false or an error.
// key is relative to proj; val is valid only during fn (the iterator's
// buffer) and must not be modified: copy it to keep it. (The comment named
// the parameter start, and said nothing of val: a new contributor's
// walkthrough.)
func (s *Store) Scan(proj, prefix, after string, fn func(key string, val []byte) (bool, error)) error {
	base := prefixProjection + proj + "/"
	lower := []byte(base + prefix)
	if after != "" {
		lower = append([]byte(base+after), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper(base + prefix)})
	if err != nil {
		return err
	}
	return scanRows(it, len(base), fn)
}

// scanRows calls fn for every row of it (keys with their first strip bytes
// removed) until fn returns false or an error, and closes it.
func scanRows(it *pebble.Iterator, strip int, fn func(key string, val []byte) (bool, error)) error {
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		val, err := rowValue(it)
		if err != nil {
			return err
		}
		more, err := fn(string(it.Key()[strip:]), val)
		if err != nil || !more {
			return err
		}
	}
	return it.Error()
}

// rowValue is the value of it's current row, or an error naming the row
// when it cannot be read (a value kept in a blob file that fails its
// checksum: a byte changed on disk). Pebble's Value gives nil then and
// keeps the error for the iterator's end, so callers handed a nil value
// on: GET /v1/sessions answered "unexpected end of JSON input" and audit
// called a present row absent (a disk walkthrough).
func rowValue(it *pebble.Iterator) ([]byte, error) {
	val, err := it.ValueAndErr()
	if err != nil {
		return nil, unreadableRow(it.Key(), err)
	}
	return val, nil
}

// unreadableRow is the error of a row whose value cannot be read: it names
// the row and Pebble's error, and says to rebuild the store from the log.
func unreadableRow(key []byte, err error) error {
	return fmt.Errorf("projections: row %q cannot be read (%w): the store is damaged; rebuild it from the log into a new directory (chronicle replay --data <data dir> --into <new dir>; the log is the source of truth) and use that one", key, err)
}

// upper is the smallest key greater than every key with prefix p.
func upper(p string) []byte {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return b[:i+1]
		}
	}
	return nil
}

// OwnRow reports whether key, a row found by a scan of prefix (an
// entity's rows: "<kind>/<entity key>/"), is that entity's own: the rest
// after prefix holds no '/'. Ids may hold '/', so the rows of entity
// "mx/child" sort under "mx"'s prefix too; a scan that took them in mixed
// two entities' signals, changes and checkpoints.
func OwnRow(prefix, key string) bool {
	return !strings.Contains(key[len(prefix):], "/")
}

// dedupKey is the idempotency key of an event for processor: the prefix,
// the processor's name and the event's IDHash.
func dedupKey(processor string, idSum []byte) []byte {
	return dedupKeyIn(prefixIdk, processor, idSum)
}

// dedupKeyIn is the idempotency key of idSum under prefix: prefixIdk
// (IDHash), prefixIdem (scopedIDHash) or prefixDedup (legacyIDHash).
func dedupKeyIn(prefix, processor string, idSum []byte) []byte {
	k := make([]byte, 0, len(prefix)+len(processor)+1+len(idSum))
	return append(append(append(append(k, prefix...), processor...), '/'), idSum...)
}

// legacyDedup looks up env's idempotency key of processor in the layouts
// a store written before holds: under m/idem/ (before the record key was
// part of the key), then under m/dedup/ (before the scope was); not found
// in a store that has none there.
func (s *Store) legacyDedup(processor string, env *events.Envelope) (prev []byte, found bool, err error) {
	if s.hasLegacyIdem {
		k := dedupKeyIn(prefixIdem, processor, scopedIDHash(env))
		if !s.keys.absent(k) {
			if prev, found, err = s.getRaw(k); err != nil || found {
				return prev, found, err
			}
		}
	}
	if !s.hasLegacyDedup {
		return nil, false, nil
	}
	k := dedupKeyIn(prefixDedup, processor, legacyIDHash(env))
	if s.keys.absent(k) {
		return nil, false, nil
	}
	return s.getRaw(k)
}

func putOffset(b *pebble.Batch, key string, next int64) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(next))
	return b.Set([]byte(key), v[:], nil)
}

// fatalLogger silences Pebble's informational logs and hands fatal errors
// to Options.OnFatal.
type fatalLogger struct{ onFatal func(string) }

func (fatalLogger) Infof(string, ...any)  {}
func (fatalLogger) Errorf(string, ...any) {}
func (l fatalLogger) Fatalf(format string, args ...any) {
	l.onFatal(fmt.Sprintf(format, args...))
}

// write runs one Pebble write. Pebble panics when it cannot append to its
// write-ahead log (disk full, I/O error: (*DB).commitWrite; a failed sync
// goes to the Logger's Fatalf instead), and its state is then unusable,
// so the panic goes to Options.OnFatal as a fatal error does: the process
// stops naming the cause (exit 70 by default) instead of crashing with a
// Go panic, and the batch's offset never advanced, so a restart consumes
// its events again. Found by a walkthrough that filled the disk.
func (s *Store) write(fn func() error) error {
	defer func() {
		if r := recover(); r != nil {
			s.opts.OnFatal(fmt.Sprintf("projections: write failed: %v", r))
		}
	}()
	return fn()
}

func exitOnFatal(msg string) {
	fmt.Fprintln(os.Stderr, "chronicle: projections store failed, exiting so a restart resumes from the last committed offsets:", msg)
	os.Exit(70)
}
