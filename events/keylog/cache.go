package keylog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Cache holds what ScanCached found of a key, between calls:
// projections.Store's GetCache and SetCache (entries under x/, outside the
// projections and their digest; SetCache writes nothing on a read-only
// store, so chronicle inspect scans again).
type Cache interface {
	GetCache(key string) ([]byte, bool, error)
	SetCache(key string, val []byte) error
}

// CachePrefix starts the key of every cache entry ScanCached writes:
// keylog/<topic>/<topic id>/<partition>/<record key>.
const CachePrefix = "keylog/"

// cacheKey is the key of the entry of key's records on partition part of
// topic in the log whose topic has id topicID: an entry written while
// another log was read (a data directory restored next to a new cluster,
// a topic deleted and made again) is never found, as its topic id differs.
func cacheKey(topic, topicID string, part int32, key string) string {
	return CachePrefix + topic + "/" + topicID + "/" + strconv.Itoa(int(part)) + "/" + key
}

// cacheMu orders the read-compare-write of entries in this process: of two
// calls that scanned concurrently, the one that scanned further keeps its
// entry.
var cacheMu sync.Mutex

// entry is a cache entry: the key's committed records below offset to, in
// log order.
type entry struct {
	to   int64
	recs []*kgo.Record
}

// entryVersion starts an encoded entry; an entry of another version is
// read as none.
const entryVersion = 1

// encode is e as bytes: the version, to, the record count, then each
// record's offset, timestamp (Unix ns), value and headers, lengths as
// uvarints.
func (e entry) encode() []byte {
	b := []byte{entryVersion}
	b = binary.AppendUvarint(b, uint64(e.to))
	b = binary.AppendUvarint(b, uint64(len(e.recs)))
	bs := func(v []byte) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	for _, r := range e.recs {
		b = binary.AppendUvarint(b, uint64(r.Offset))
		b = binary.AppendVarint(b, r.Timestamp.UnixNano())
		bs(r.Value)
		b = binary.AppendUvarint(b, uint64(len(r.Headers)))
		for _, h := range r.Headers {
			bs([]byte(h.Key))
			bs(h.Value)
		}
	}
	return b
}

var errEntry = errors.New("malformed keylog cache entry")

// decodeEntry reads an entry encode wrote, giving its records topic,
// part and key; an error when b is not one (then the entry is ignored).
func decodeEntry(b []byte, topic string, part int32, key string) (entry, error) {
	if len(b) == 0 || b[0] != entryVersion {
		return entry{}, errEntry
	}
	r := bytes.NewReader(b[1:])
	u := func() uint64 {
		v, err := binary.ReadUvarint(r)
		if err != nil {
			panic(errEntry)
		}
		return v
	}
	bs := func() []byte {
		n := u()
		if n > uint64(r.Len()) {
			panic(errEntry)
		}
		v := make([]byte, n)
		_, _ = r.Read(v)
		return v
	}
	var e entry
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = errEntry
			}
		}()
		e.to = int64(u())
		n := u()
		if n > uint64(r.Len()) {
			return errEntry
		}
		e.recs = make([]*kgo.Record, 0, n)
		last := int64(-1)
		for range n {
			rec := &kgo.Record{Topic: topic, Partition: part, Key: []byte(key), Offset: int64(u())}
			ts, err := binary.ReadVarint(r)
			if err != nil {
				return errEntry
			}
			rec.Timestamp = time.Unix(0, ts)
			rec.Value = bs()
			for range u() {
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: string(bs()), Value: bs()})
			}
			if rec.Offset <= last || rec.Offset >= e.to {
				return errEntry
			}
			last = rec.Offset
			e.recs = append(e.recs, rec)
		}
		if r.Len() != 0 {
			return errEntry
		}
		return nil
	}()
	return e, err
}

// ScanCached is Scan with the key's records kept in cache between calls:
// the partition is read only from the offset the last call read up to, so
// a call costs the records that arrived since (and, for the first, the
// whole partition), and the key's earlier records come from the cache.
// fn sees the same records, in the same order, as Scan(ctx, brokers,
// topic, pl.Part, pl.End, key, fn): the committed records keyed key below
// pl.End (an end below the entry's reads only the cache). The entry is
// keyed by the topic's id (pl.TopicID, from Locate): with none, or a
// nil cache, this is Scan. Only a read that reached pl.End is cached, and
// it read committed, so no aborted or undecided record enters the cache.
// A cache that cannot be read or written does not fail the call: it
// scans as without one. Errors are Scan's.
func ScanCached(ctx context.Context, brokers []string, cache Cache, topic string, pl Place, key string, fn func(*kgo.Record)) error {
	if cache == nil || pl.TopicID == "" {
		return Scan(ctx, brokers, topic, pl.Part, pl.End, key, fn)
	}
	ck := cacheKey(topic, pl.TopicID, pl.Part, key)
	var e entry
	if b, ok, err := cache.GetCache(ck); err == nil && ok {
		if d, err := decodeEntry(b, topic, pl.Part, key); err == nil {
			e = d
		}
	}
	if pl.End > e.to {
		var fresh []*kgo.Record
		if err := scanFrom(ctx, brokers, topic, pl.Part, e.to, pl.End, key, func(r *kgo.Record) { fresh = append(fresh, r) }); err != nil {
			return err
		}
		e = entry{to: pl.End, recs: append(e.recs[:len(e.recs):len(e.recs)], fresh...)}
		store(cache, ck, e)
	}
	for _, r := range e.recs {
		if r.Offset >= pl.End {
			break
		}
		fn(r)
	}
	return nil
}

// store writes e under ck unless the entry there now reaches further (a
// concurrent call scanned more).
func store(cache Cache, ck string, e entry) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if b, ok, err := cache.GetCache(ck); err == nil && ok && len(b) > 1 && b[0] == entryVersion {
		if to, n := binary.Uvarint(b[1:]); n > 0 && int64(to) >= e.to {
			return
		}
	}
	_ = cache.SetCache(ck, e.encode()) // an optimisation: the answer stands without it
}
