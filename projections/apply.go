package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/cockroachdb/pebble/v2"
	gojson "github.com/goccy/go-json"
)

// Position is where a consumed event sits in the log.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
}

func (p Position) String() string { return fmt.Sprintf("%s:%d:%d", p.Topic, p.Partition, p.Offset) }

// Result says what Apply did with an event.
type Result int

// Apply results.
const (
	// Applied: the processor ran and its changes committed.
	Applied Result = iota
	// AlreadyApplied: the offset is below the stored one (a redelivery after
	// a crash or a rebalance); nothing changed.
	AlreadyApplied
	// Duplicate: an event with the same idempotency key was applied before
	// at another offset; only the offset advanced.
	Duplicate
	// DeadLettered: the event was rejected (ApplyBatch only): its
	// dead-letter record, if any, went to the outbox and the offset moved
	// past it; nothing else changed.
	DeadLettered
	// Marker: a transaction marker (Item.Control), not an event; only the
	// offset moved past it.
	Marker
	// Ignored: an event of a type the processor does not handle
	// (Item.Skip); only the offset moved past it.
	Ignored
)

// String names r as its constant does ("Applied", "DeadLettered"), or
// "Result(n)" for a value outside them.
func (r Result) String() string {
	switch r {
	case Applied:
		return "Applied"
	case AlreadyApplied:
		return "AlreadyApplied"
	case Duplicate:
		return "Duplicate"
	case DeadLettered:
		return "DeadLettered"
	case Marker:
		return "Marker"
	case Ignored:
		return "Ignored"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// RejectedError is the error of an event its processor's ApplyFunc
// refused. Processors are deterministic functions of the log, so applying
// it again refuses it again: the live runner dead-letters it at once
// instead of retrying. Store failures are not RejectedErrors.
type RejectedError struct{ Err error }

func (e *RejectedError) Error() string { return e.Err.Error() }
func (e *RejectedError) Unwrap() error { return e.Err }

// Deterministic reports whether err is a rejection that retrying cannot
// change: a RejectedError, a conflicting duplicate, or an event that does
// not parse or validate (*events.ValidationError).
func Deterministic(err error) bool {
	var re *RejectedError
	var ve *events.ValidationError
	return errors.As(err, &re) || errors.As(err, &ve) || errors.Is(err, ErrConflictingDuplicate)
}

// ErrConflictingDuplicate is the processing error of an event whose
// idempotency key (source, id) was applied before with other content.
// CloudEvents lets a consumer drop it as a duplicate; Chronicle refuses it
// instead, so that it is counted and listed (dead-lettered with the reason)
// rather than silently lost. An exact repeat is still a Duplicate.
var ErrConflictingDuplicate = errors.New("conflicting duplicate")

// contentHashV1 is the first 16 bytes of the SHA-256 of env's canonical
// JSON (attributes in a fixed order, data compacted): two sends of one
// event hash alike whatever their whitespace. Idempotency keys written
// before contentHash existed hold it (a 24-byte value).
func contentHashV1(env *events.Envelope) []byte {
	raw, err := json.Marshal(env)
	if err != nil {
		raw = append([]byte(env.Type), env.Data...) // unreachable for a parsed event
	}
	h := sha256.Sum256(raw)
	return h[:16]
}

// ContentHash is the first 16 bytes of the SHA-256 of env's attributes in
// a fixed order, each followed by a 0 byte, and its data compacted: the
// same identity as contentHashV1 (whitespace does not count) without
// encoding the whole event, which cost as much as the processor's work.
// The time attribute does not count: CloudEvents makes (source, id) the
// identity of an event and lets a consumer treat a resend as a duplicate,
// and a resend often carries another time — the official Go SDK's
// default client stamps the time of each send, and a time-less event
// takes its record's timestamp. Before (contentHashV2) a resend with
// another time was dead-lettered as a conflicting duplicate, which a new
// user's walkthrough hit with the SDK's usual client.
//
// From dedup version 4 on, the scope counts as the event's effective
// scope: an event without the attribute is org:default's, so a resend that
// spells it out is the same event (it was a conflicting duplicate: a
// walkthrough with an admin token hit it). And the data counts in its
// canonical form (events.AppendCanonical): a resend whose encoder spells a
// string's escapes otherwise ("\u2019" for "’", as Python's json.dumps
// writes every non-ASCII character) is the same event (it was a
// conflicting duplicate: an upgrade walkthrough hit it re-sending a
// tau-bench session through Python).
//
// From dedup version 5 on, the datacontenttype does not count: every value
// Chronicle accepts says the data is JSON (application/json, in any case,
// with parameters), and one event's producers spell it differently — HTTP
// binary mode and the Go producer write application/json, a structured
// event usually leaves it out — so a retry in another content mode was
// answered 202 and then dead-lettered as a conflicting duplicate (found by
// a producer walkthrough).
//
// From dedup version 6 on, the data's author member (events.AuthorMember:
// a feedback's or retrieval's source, a memory's or session start's
// recorded_by, a resume's by) does not count: POST /v1/events sets it from
// the caller's token when the producer left it out, so one event sent
// twice — through two tokens (a token rotated between a send and its
// retry), or through `chronicle ingest` or Kafka and then HTTP — was
// answered 202 and then dead-lettered as a conflicting duplicate (found by
// a producer walkthrough). Such a resend is now a duplicate and changes
// nothing: the author the first copy recorded stands. Two events that
// differ only in their author are the same event, as their (source, id)
// says, whoever wrote them.
//
// It is what the idempotency key's value keeps to tell a duplicate from a
// conflicting duplicate; the engine computes it once per record
// (Item.Sum), not once per processor.
func ContentHash(env *events.Envelope) []byte {
	return contentHash(env, dedupVersion)
}

// contentHashV2 is ContentHash as idempotency keys of dedup version 2
// hold it: with the time the producer sent (a time from the record counts
// as empty), the scope as sent, the data compacted.
func contentHashV2(env *events.Envelope) []byte {
	return contentHash(env, 2)
}

// contentHashV3 is ContentHash as idempotency keys of dedup version 3
// hold it: the scope as sent, the data compacted.
func contentHashV3(env *events.Envelope) []byte {
	return contentHash(env, 3)
}

// contentHash is ContentHash as idempotency keys of dedup version v (2 to
// dedupVersion) hold it.
func contentHash(env *events.Envelope, v int) []byte {
	sent := ""
	if v == 2 && !env.TimeFromLog {
		sent = env.Time
	}
	scope := env.Scope
	if v >= 4 {
		scope = env.EffectiveScope()
	}
	dct := env.DataContentType
	if v >= 5 {
		dct = "" // every datacontenttype Chronicle accepts says JSON
	}
	attrs := [...]string{env.SpecVersion, env.ID, env.Source, string(env.Type), env.Subject, sent, dct,
		env.DataSchema, env.SessionID, scope, env.CausationID, env.CorrelationID}
	// one pooled hash, written piece by piece: copying the attributes and
	// the data into one buffer first allocated their size again for every
	// record
	h := sha256s.Get().(hash.Hash)
	defer sha256s.Put(h)
	h.Reset()
	for _, a := range attrs {
		h.Write(unsafe.Slice(unsafe.StringData(a), len(a)))
		h.Write(zeroByte[:])
	}
	// json.Compact only drops white space outside strings: data without
	// any is compact already (Chronicle's own producers write it so). The
	// canonical form differs from the compact one only where a string has
	// a \u or \/ escape (the other escapes are canonical already)
	author := ""
	if v >= 6 {
		author = events.AuthorMember(env.Type)
	}
	switch {
	case v >= 4 && uOrSlashEscape(env.Data):
		buf := canonBufs.Get().(*[]byte)
		out, err := events.AppendCanonical((*buf)[:0], env.Data)
		if err != nil {
			out = append(out[:0], env.Data...) // unreachable for a parsed event
		}
		*buf = writeData(h, out, author)
		canonBufs.Put(buf)
	case compactAlready(env.Data):
		writeData(h, env.Data, author)
	default:
		var buf bytes.Buffer
		if err := compact(&buf, env.Data); err != nil {
			buf.Reset()
			buf.Write(env.Data) // unreachable for a parsed event
		}
		writeData(h, buf.Bytes(), author)
	}
	var sum [sha256.Size]byte
	return h.Sum(sum[:0])[:16]
}

// writeData writes the compact data b to h, without its top-level member
// author when author is not "" (dedup version 6), and returns b (a pooled
// buffer the caller keeps).
func writeData(h hash.Hash, b []byte, author string) []byte {
	if author != "" {
		buf := canonBufs.Get().(*[]byte)
		if out, ok := events.WithoutMember((*buf)[:0], b, author); ok {
			h.Write(out)
			*buf = out
			canonBufs.Put(buf)
			return b
		}
		canonBufs.Put(buf)
	}
	h.Write(b)
	return b
}

// IDHash is IDHashKeyed of env and its record key (events.Key; when env
// has none, the key is left out, as for an event of no entity).
func IDHash(env *events.Envelope) []byte {
	key := ""
	if info, ok := events.Lookup(env.Type); ok && !events.SinglePartition[info.Topic] {
		if k, err := events.Key(env); err == nil {
			key = k
		}
	}
	return IDHashKeyed(env, key)
}

// IDHashKeyed is the SHA-256 (32 bytes) of env's effective scope, a 0
// byte, key (env's record key: events.Key), a 0 byte and its
// events.Envelope.DedupKey (source and id): the part of its idempotency
// keys that is the same for every processor (the engine computes it once
// per record, Item.IDSum, with the key it parsed).
//
// The scope is in it because an event only ever touches its own scope's
// entities: one tenant's (source, id) must not make another tenant's
// event a duplicate (it did until idempotency keys moved to m/idem/; see
// legacyIDHash). The record key is in it because an idempotency key is
// state, and state is per key, so partitions apply concurrently: without
// it, two events with one (source, id) for two entities on two partitions
// made whichever was applied second a conflicting duplicate, and which was
// second depended on timing, so live, replay and audit disagreed with
// --partitions 4 (a raw-Kafka walkthrough, 2026-11-30; m/idem/ holds the
// keys written before, scopedIDHash). A resend of an event has its key, so
// it is still a duplicate. An event of a single-partition topic
// (events.SinglePartition: chronicle.memories) and one of no registered
// type leave the key out: the topic is applied in one order, so an id
// stays unique across its entities there, as the memory bank's
// Idempotency-Key needs (a reuse with another body is another memory id,
// answered 422).
func IDHashKeyed(env *events.Envelope, key string) []byte {
	if info, ok := events.Lookup(env.Type); !ok || events.SinglePartition[info.Topic] {
		key = ""
	}
	scope := env.EffectiveScope()
	b := make([]byte, 0, len(scope)+len(key)+len(env.Source)+len(env.ID)+3)
	b = append(append(append(append(b, scope...), 0), key...), 0)
	b = append(append(append(b, env.Source...), 0), env.ID...)
	h := sha256.Sum256(b)
	return h[:]
}

// scopedIDHash is the hash of the idempotency keys under m/idem/, which a
// store written before the record key was part of them holds: the scope,
// source and id.
func scopedIDHash(env *events.Envelope) []byte {
	scope := env.EffectiveScope()
	b := make([]byte, 0, len(scope)+len(env.Source)+len(env.ID)+2)
	b = append(append(append(append(append(b, scope...), 0), env.Source...), 0), env.ID...)
	h := sha256.Sum256(b)
	return h[:]
}

// legacyIDHash is the hash of the idempotency keys under m/dedup/, which a
// store written before the scope was part of them holds: (source, id) only.
func legacyIDHash(env *events.Envelope) []byte {
	h := sha256.Sum256([]byte(env.DedupKey()))
	return h[:]
}

// uOrSlashEscape reports whether the valid JSON b has a \u or \/ escape in
// a string: one pass from backslash to backslash, each escape's second
// byte skipped (so an escaped backslash before a 'u' is no \u).
func uOrSlashEscape(b []byte) bool {
	for i := 0; ; {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 || i+k+1 >= len(b) {
			return false
		}
		i += k + 1
		if c := b[i]; c == 'u' || c == '/' {
			return true
		}
		i++
	}
}

// canonBufs pools ContentHash's buffers for canonical data.
var canonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// sha256s pools the SHA-256 hashes of ContentHash.
var sha256s = sync.Pool{New: func() any { return sha256.New() }}

var zeroByte [1]byte

// compactAlready reports whether the valid JSON b has no white space
// outside its strings, that is whether compact would return b unchanged
// (TestCompactAlready, FuzzCompactAsEncodingJSON).
func compactAlready(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			return false
		case '"':
			// a string: jump from quote to quote (most of an event's
			// bytes are in strings), past the ones a backslash escapes
			for {
				q := bytes.IndexByte(b[i+1:], '"')
				if q < 0 {
					return true // unterminated: not valid JSON, not for here
				}
				i += 1 + q
				n := 0
				for j := i - 1; b[j] == '\\'; j-- {
					n++
				}
				if n%2 == 0 {
					break
				}
			}
		}
	}
	return true
}

// compact is json.Compact's output by goccy/go-json's Compact, about 3×
// faster; TestCompactAsEncodingJSON holds them to the same bytes, which the
// stored content hashes depend on.
var compact = gojson.Compact

// dedupValue is the value of an idempotency key: the offset it was applied
// at, dedupVersion and contentHash.
func dedupValue(offset int64, sum []byte) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(sum)), uint64(offset))
	return append(append(v, dedupVersion), sum...)
}

// dedupVersion 6: ContentHash (no time, the effective scope, no
// datacontenttype, no author member); 5: contentHash(env, 5), the author member as sent; 4: contentHashV4; 3: contentHashV3; 2: contentHashV2.
const dedupVersion = 6

// refusedVersion is the version byte of an idempotency key written for an
// event the processor refused (ApplyBatch dead-lettered it): dedupVersion
// with the high bit set, then the event's ContentHash. The id is then taken
// by that content for this processor as for the processors of the topic
// that applied it: a later record with the id and other content is a
// conflicting duplicate here too, and one with the same content (a retry,
// a redrive) is given to the processor again, as before. Before, a refusal
// wrote no key, so when sessionlog applied a completion that sessions
// refused (the session had not started), a second completion with the id
// and other content was lettered as a conflicting duplicate by sessionlog
// and applied by sessions: the letter named a record the sessions
// projection held (a cluster walkthrough, 2026-12-03).
const refusedVersion = dedupVersion | 0x80

// refusedValue is the idempotency-key value of an event refused at offset
// with content hash sum.
func refusedValue(offset int64, sum []byte) []byte {
	v := dedupValue(offset, sum)
	v[8] = refusedVersion
	return v
}

// refused reports whether prev, an idempotency-key value, was written for
// an event the processor refused (refusedValue), and then whether that
// event had the content hash sum. No earlier layout has a version byte
// with the high bit set at this length (a 24-byte contentHashV1 value is
// one byte shorter).
func refused(prev, sum []byte) (was, same bool) {
	if len(prev) != 9+len(sum) || prev[8] != refusedVersion {
		return false, false
	}
	return true, bytes.Equal(prev[9:], sum)
}

// contentHashV4 is ContentHash as idempotency keys of dedup version 4 hold
// it: the datacontenttype as sent.
func contentHashV4(env *events.Envelope) []byte {
	return contentHash(env, 4)
}

// sameContent reports whether the stored idempotency-key value prev was
// written for an event with env's content. Values of every earlier layout
// are understood: offset only (no hash: the same), offset + contentHashV1,
// offset + version 2 + contentHashV2, offset + version 3 + contentHashV3,
// offset + version 4 + contentHashV4, offset + version 5 + contentHash(env, 5);
// a value of version 2 to 5 answers today's rules as far as its hash can
// (sameAsSpelled).
func sameContent(prev []byte, env *events.Envelope, sum []byte) bool {
	switch {
	case len(prev) == 9+len(sum) && prev[8] == dedupVersion:
		return bytes.Equal(prev[9:], sum)
	case len(prev) == 9+16 && prev[8] >= 2 && prev[8] <= 5:
		return sameAsSpelled(prev[9:], env, int(prev[8]))
	case len(prev) == 8+16:
		return bytes.Equal(prev[8:], contentHashV1(env))
	}
	return true
}

// jsonSpellings are the datacontenttype values of JSON data a key of
// dedup version 2 to 4 may hold (left out, what binary mode and the Go
// producer write, and the spellings with a charset or in capitals that
// structured mode accepted): version 5 counts none of them.
var jsonSpellings = [...]string{"", events.ContentTypeJSON, "application/json; charset=utf-8", "application/json; charset=UTF-8",
	"application/json;charset=utf-8", "application/json;charset=UTF-8", "Application/JSON", "APPLICATION/JSON"}

// sameAsSpelled reports whether sum, a content hash of dedup version v (2
// to 5), was written for env's content as today's rules see it, as far as
// such a hash can answer: it tries env as it is and then spelled the ways
// that version counted and today's does not — the datacontenttype
// (jsonSpellings; version 5), the default scope left out or spelled out
// (version 4), and for version 2 the time as if taken from the record
// (version 3: a time-less event resent with a time, as a dead-letter
// redrive writes it, is the same event; a time the first copy sent is not
// in the key, so a resend with another one stays a conflict there), and
// before version 4 the data with '<', '>' and '&' as json.Marshal's
// escapes (events.New, which the workflow routes and the memory tools used
// before events.NewVerbatim), and the data without its author member
// (version 6: the first copy was written without one, through Kafka or
// `chronicle ingest`, and this resend through HTTP has the caller's; an
// author the first copy named is not in the key, so a resend naming
// another one stays a conflict there). So a
// store upgraded across those versions decides as a replay does, up to
// the spellings listed.
func sameAsSpelled(sum []byte, env *events.Envelope, v int) bool {
	hash := func(e *events.Envelope) bool { return bytes.Equal(sum, contentHash(e, v)) }
	if hash(env) {
		return true
	}
	scopes := []string{env.Scope}
	if v < 4 && env.EffectiveScope() == events.DefaultScope {
		// version 4 hashes the effective scope already: both spellings
		// hash alike there
		if env.Scope == "" {
			scopes = append(scopes, events.DefaultScope)
		} else {
			scopes = append(scopes, "")
		}
	}
	fromLog := []bool{env.TimeFromLog}
	if v == 2 && !env.TimeFromLog {
		fromLog = append(fromLog, true)
	}
	datas := [][]byte{env.Data}
	if v < 4 && bytes.ContainsAny(env.Data, "<>&") {
		// before version 4 the data counted as written, and Chronicle's
		// own writers (the workflow routes, the memory tools) wrote
		// json.Marshal's \u003c escapes until events.NewVerbatim: a retry
		// of such a write is the same event for a replay (canonical data)
		var b bytes.Buffer
		json.HTMLEscape(&b, env.Data)
		datas = append(datas, b.Bytes())
	}
	if alt, ok := withoutAuthor(env, v); ok {
		datas = append(datas, alt.Data)
	}
	dcts := []string{env.DataContentType} // each spelling once
	for _, d := range jsonSpellings {
		if v >= 5 {
			break // version 5 hashes no datacontenttype
		}
		if !slices.Contains(dcts, d) {
			dcts = append(dcts, d)
		}
	}
	for i, data := range datas {
		for _, sc := range scopes {
			for _, tl := range fromLog {
				for _, dct := range dcts {
					if i == 0 && sc == env.Scope && tl == env.TimeFromLog && dct == env.DataContentType {
						continue // tried first
					}
					alt := *env
					alt.Data, alt.Scope, alt.TimeFromLog, alt.DataContentType = data, sc, tl, dct
					if hash(&alt) {
						return true
					}
				}
			}
		}
	}
	return false
}

// ApplyFunc is a processor's reaction to one event: read and write its
// projection and emit derived events through tx. It must be a deterministic
// function of the projection and the event (no wall clock, no randomness).
// An error discards every change of the call.
type ApplyFunc func(tx *Tx, env *events.Envelope) error

// Apply runs fn for the event env consumed by processor at pos, and
// commits in one batch: the projection changes, the derived events (into
// the outbox), the idempotency key and the next offset. Events below the
// stored offset and events whose (source, id) was applied before are not
// given to fn. On error nothing is written: a rejection by fn is a
// *RejectedError, a conflicting duplicate ErrConflictingDuplicate. The live
// engine and replay use ApplyBatch, which dead-letters rejections instead.
func (s *Store) Apply(processor string, pos Position, env *events.Envelope, fn ApplyFunc) (Result, error) {
	unlock := s.lockPartition(processor, pos.Topic, pos.Partition)
	defer unlock()
	out := make([]Outcome, 1)
	if _, _, err := s.applyRun(processor, offsetKey(processor, pos.Topic, pos.Partition), []Item{{Pos: pos, Env: env}}, out, fn, false); err != nil {
		return 0, err
	}
	return out[0].Result, nil
}

// Skip records that processor is done with pos without applying it: the
// event was dead-lettered. The offset advances and nothing else changes.
func (s *Store) Skip(processor string, pos Position) error {
	unlock := s.lockPartition(processor, pos.Topic, pos.Partition)
	defer unlock()
	okey := offsetKey(processor, pos.Topic, pos.Partition)
	if next, ok := s.NextOffset(processor, pos.Topic, pos.Partition); ok && pos.Offset < next {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := putOffset(b, okey, pos.Offset+1); err != nil {
		return err
	}
	return s.commit(b, okey, pos.Offset+1, false)
}

func (s *Store) commit(b *pebble.Batch, okey string, next int64, emitted bool) error {
	if err := s.write(func() error { return b.Commit(s.writeOpts()) }); err != nil {
		return fmt.Errorf("projections: commit: %w", err)
	}
	s.mu.Lock()
	s.offsets[okey] = next
	s.mu.Unlock()
	s.lastCommit.Store(time.Now().UnixNano())
	if emitted {
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

// reserveOutbox hands out n consecutive outbox sequence numbers. Numbers
// are unique across processors applying concurrently; a number reserved by
// a discarded batch is simply never used.
func (s *Store) reserveOutbox(n int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.outSeq
	s.outSeq += uint64(n)
	return seq
}

// Tx is one Apply call's view of the store: reads see the call's own
// writes; keys are relative to the processor's projection.
type Tx struct {
	ws      *writeSet
	proj    string
	cause   *events.Envelope
	pos     Position // where cause sits in the log
	out     []OutboxRecord
	err     error
	touched []string // rows written or deleted, for commit hooks
	// rebuild is the store's Rebuilding at the start of the call: the
	// outbox is dropped, so Emit does not encode the derived events.
	rebuild bool
	// invalid is the first ErrBadRow of the call (checkRow): the call
	// fails with it even if the processor went on.
	invalid error
	// access is the store's RowAccess, nil when none is registered.
	access RowAccess
}

func (t *Tx) key(k string) string { return prefixProjection + t.proj + "/" + k }

// Get reads a row (a copy, the caller's to keep); ok is false when absent.
func (t *Tx) Get(key string) (val []byte, ok bool, err error) {
	t.accessed(key)
	v, ok, err := t.ws.get(t.key(key))
	if !ok || err != nil {
		return nil, false, err
	}
	return append([]byte(nil), v...), true, nil
}

// Has reports whether a row exists (in the call's own writes or the
// store), without copying its value.
func (t *Tx) Has(key string) (bool, error) {
	t.accessed(key)
	_, ok, err := t.ws.get(t.key(key))
	return ok, err
}

// GetJSON reads a row into v; ok is false when absent.
func (t *Tx) GetJSON(key string, v any) (bool, error) {
	t.accessed(key)
	b, ok, err := t.ws.get(t.key(key))
	if err != nil || !ok {
		return false, err
	}
	// encoding/json's semantics, about twice as fast; it decodes from a
	// copy of its input, so b, which must not be modified, is not copied
	// first
	return true, gojson.Unmarshal(b, v)
}

// Set writes a row. Errors: ErrBadRow for an empty key or a value larger
// than MaxRowBytes (nothing written; the call fails with it).
func (t *Tx) Set(key string, val []byte) error {
	if err := t.checkRow("Set", key, len(val)); err != nil {
		return err
	}
	t.accessed(key)
	t.touched = append(t.touched, key)
	t.ws.set(t.key(key), append([]byte(nil), val...))
	return nil
}

// Put writes a row whose value the caller hands over: Set without the
// copy, for a value built for this row alone (a session's trace row is the
// event's data, about a kilobyte, which Set allocated and copied a second
// time). val must not be modified after the call. Errors: as Set's.
func (t *Tx) Put(key string, val []byte) error {
	if err := t.checkRow("Put", key, len(val)); err != nil {
		return err
	}
	t.accessed(key)
	t.touched = append(t.touched, key)
	t.ws.set(t.key(key), val)
	return nil
}

// SetJSON writes v as a JSON row, encoded as encoding/json encodes it
// (events.Marshal): map keys sorted, so equal values give equal bytes.
// Errors: v's encoding error; as Set's.
func (t *Tx) SetJSON(key string, v any) error {
	b, err := events.Marshal(v)
	if err != nil {
		return err
	}
	if err := t.checkRow("SetJSON", key, len(b)); err != nil {
		return err
	}
	t.accessed(key)
	t.touched = append(t.touched, key)
	t.ws.set(t.key(key), b) // b is fresh: no copy
	return nil
}

// Delete removes a row. Errors: ErrBadRow for an empty key.
func (t *Tx) Delete(key string) error {
	if err := t.checkRow("Delete", key, -1); err != nil {
		return err
	}
	t.accessed(key)
	t.touched = append(t.touched, key)
	t.ws.delete(t.key(key))
	return nil
}

// Scan calls fn for each row whose key starts with prefix, in key order,
// seeing the call's own writes, until fn returns false or an error. key
// is relative to the projection, as Get takes it. val is valid only during
// fn and must not be modified: it is the store's buffer or the call's own
// write itself (a val changed in fn changed the row this call commits: a
// new contributor's walkthrough); copy it to keep it, or use Get.
func (t *Tx) Scan(prefix string, fn func(key string, val []byte) (bool, error)) error {
	base := prefixProjection + t.proj + "/"
	if t.access != nil {
		inner := fn
		fn = func(key string, val []byte) (bool, error) {
			t.accessed(key)
			return inner(key, val)
		}
	}
	return t.ws.scan([]byte(base+prefix), upper(base+prefix), len(base), fn)
}

// Emit queues a derived event of type typ with data payload, caused by the
// event being applied. Its id is events.DerivedIDIn of the cause (scope, source, id), the type and
// the number of events of that type emitted so far by this call; its time,
// sessionid, scope and correlationid are the cause's; causationid is the
// cause's id.
//
// Where it is validated: an event of a type on events.TopicLearned (read by
// subscribers, by no processor) is validated against its schema here, and
// an invalid one fails the Apply call with the schema's reason. An event of
// any other type is validated once, where the engine reads its topic (issue
// 10: each record is parsed and validated once, not once by the writer and
// again by the reader): an invalid one is written and then dead-lettered by
// its readers, the letter's event_source naming the writer
// ("chronicle/<Name>"). processortest refuses it at once instead
// ("processortest: a derived event on … does not parse"), so a test of a
// processor finds what the live engine would dead-letter. A type that is
// not one of events.Types fails the call here.
//
// A processor that emits a type its own topics carry reads its own event
// back and, if it emits again, never stops: nothing bounds that chain in
// the live engine (processortest stops it after MaxRelayRounds).
//
// In a store being rebuilt by a replay (Rebuilding) the event is derived
// and validated and its topic and key are checked, so the call fails
// exactly as it did live, but it is not encoded: the outbox that would
// hold it is dropped. Its OutboxRecord then has the Type only (Emitted).
func (t *Tx) Emit(typ events.Type, payload any) error {
	n := 0
	for _, o := range t.out {
		if o.Type == typ {
			n++
		}
	}
	env, err := events.Derive(t.cause, "chronicle/"+t.proj, typ, n, payload)
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	if t.rebuild {
		topic, key, err := events.RecordTopic(&env)
		if err != nil {
			return err
		}
		t.out = append(t.out, OutboxRecord{Topic: string(topic), Key: key, Type: typ})
		return nil
	}
	rec, err := events.Record(&env)
	if err != nil {
		return err
	}
	t.out = append(t.out, OutboxRecord{Topic: rec.Topic, Key: string(rec.Key), Type: typ, Value: rec.Value})
	return nil
}

// EmitIn is Emit with the derived event's scope set to scope instead of the
// cause's: for a change of an entity of another scope than the causing
// event (decay of every memory at a clock tick), so its record key is the
// entity's events.EntityKey. A scope that is not project:<id>, team:<id>
// or org:<id> (events.ValidScope) fails the call naming it: its event
// would be dead-lettered by every reader.
func (t *Tx) EmitIn(scope string, typ events.Type, payload any) error {
	if !events.ValidScope(scope) {
		return fmt.Errorf("projections: EmitIn %s: scope: %s", typ, events.ScopeReason(scope))
	}
	cause := *t.cause
	cause.Scope = scope
	orig := t.cause
	t.cause = &cause
	defer func() { t.cause = orig }()
	return t.Emit(typ, payload)
}

// Position is where the event being applied sits in the log (topic,
// partition, offset): the same in the live engine and in a replay, so a
// processor may keep it in its rows (an index from an entity to its
// records) and stay a deterministic function of the log.
func (t *Tx) Position() Position { return t.pos }

// Emitted returns the derived events queued so far by this call (without
// their Value in a store being rebuilt: see Emit).
func (t *Tx) Emitted() []OutboxRecord { return t.out }

// AppliedContent reports whether processor applied an event with env's
// idempotency key (source, id) and, if so, whether with env's content —
// the check ApplyBatch makes before applying a repeat (a repeat with other
// content is a conflicting duplicate, dead-lettered). A route that writes
// an event and waits for its processor tells with it a retry (same
// content: a duplicate, the earlier result stands) from a reuse of the id
// for other content. Errors are Pebble's.
func (s *Store) AppliedContent(processor string, env *events.Envelope) (applied, same bool, err error) {
	_, applied, same, err = s.AppliedAt(processor, env)
	return applied, same, err
}

// AppliedAt is AppliedContent with the offset the processor applied the
// event at (in its partition: an event's repeats share its key, so its
// partition), -1 when not applied. A route that answers a retry with the
// write's position reads it here: the repeat's own record was dropped as
// a duplicate.
func (s *Store) AppliedAt(processor string, env *events.Envelope) (offset int64, applied, same bool, err error) {
	v, closer, err := s.db.Get(dedupKey(processor, IDHash(env)))
	if errors.Is(err, pebble.ErrNotFound) {
		var found bool
		if v, found, err = s.legacyDedup(processor, env); err != nil || !found {
			return -1, false, false, err
		}
	} else if err != nil {
		return -1, false, false, err
	} else {
		defer closer.Close()
	}
	if len(v) < 8 {
		return -1, false, false, fmt.Errorf("projections: idempotency key of %s for %s: %d-byte value", processor, env.ID, len(v))
	}
	sum := ContentHash(env)
	if was, _ := refused(v, sum); was {
		return -1, false, false, nil // refused, not applied (refusedVersion)
	}
	return int64(binary.BigEndian.Uint64(v)), true, sameContent(v, env, sum), nil
}

// Try runs fn on env against processor's rows as they are now and writes
// nothing: a *RejectedError with the processor's reason when fn rejects
// env, a store error, or nil. A route that writes an event and then waits
// for its processor calls it first, to answer a rejection with its reason
// before the event reaches the log; the processor's apply from the log
// stays the authority (the rows can change in between). env should carry
// what the log would give it (a time, for one).
func (s *Store) Try(processor string, env *events.Envelope, fn ApplyFunc) error {
	tx := &Tx{ws: newWriteSet(s.db), proj: processor, cause: env}
	if err := safeApply(fn, tx, env); err != nil {
		if tx.err != nil {
			return tx.err
		}
		return &RejectedError{Err: err}
	}
	return tx.err
}
