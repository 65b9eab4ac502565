package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
)

// Digest is a SHA-256 over each projection's sorted keys and values, and
// one over all of them. Offsets, idempotency keys and the outbox are left
// out: they describe how far the store got, not what it knows.
type Digest struct {
	// Projections maps projection name → hex SHA-256 of its rows.
	Projections map[string]string `json:"projections"`
	// Rows maps projection name → number of rows.
	Rows map[string]int `json:"rows"`
	// All is the hex SHA-256 over every projection row.
	All string `json:"all"`
}

// String renders the digest one projection per line, then "all".
func (d Digest) String() string {
	names := make([]string, 0, len(d.Projections))
	for n := range d.Projections {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%-24s %s  (%d rows)\n", n, d.Projections[n], d.Rows[n])
	}
	fmt.Fprintf(&b, "%-24s %s\n", "all", d.All)
	return b.String()
}

func writeLV(h hash.Hash, b []byte) {
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], uint64(len(b)))
	h.Write(l[:])
	h.Write(b)
}

// Digest computes the digest of the store's projections.
func (s *Store) Digest() (Digest, error) {
	d := Digest{Projections: map[string]string{}, Rows: map[string]int{}}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixProjection), UpperBound: upper(prefixProjection)})
	if err != nil {
		return d, err
	}
	defer it.Close()
	all := sha256.New()
	var cur string
	var h hash.Hash
	flush := func() {
		if h != nil {
			d.Projections[cur] = hex.EncodeToString(h.Sum(nil))
		}
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		name := string(k[len(prefixProjection):])
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
		if name != cur || h == nil {
			flush()
			cur, h = name, sha256.New()
		}
		val, err := rowValue(it) // a damaged value says to replay (a disk walkthrough)
		if err != nil {
			return d, err
		}
		writeLV(h, k)
		writeLV(h, val)
		writeLV(all, k)
		writeLV(all, val)
		d.Rows[name]++
	}
	flush()
	d.All = hex.EncodeToString(all.Sum(nil))
	return d, it.Error()
}

// Difference is the first projection row where two stores differ.
type Difference struct {
	Key         string // full key, p/<projection>/<row>
	Left, Right []byte // nil when the row is absent on that side
}

func (d *Difference) String() string {
	// the values around their first differing byte: both cut at byte 200
	// showed two equal excerpts of values that differed near their end
	// (an upgrade walkthrough, 2026-11-30)
	at := 0
	for at < len(d.Left) && at < len(d.Right) && d.Left[at] == d.Right[at] {
		at++
	}
	from := 0
	if d.Left != nil && d.Right != nil && at > 80 {
		from = at - 80
		// from a character's first byte: the rows are equal before at,
		// so Left's bytes stand for both
		for from > 0 && !utf8.RuneStart(d.Left[from]) {
			from--
		}
	}
	show := func(b []byte) string {
		if b == nil {
			return "<absent>"
		}
		s, pre := b[min(from, len(b)):], ""
		if from > 0 {
			pre = fmt.Sprintf("…(%d bytes)", from)
		}
		if len(s) > 200 {
			// cut before a character's first byte, not inside it
			cut := 200
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			return pre + string(s[:cut]) + "…"
		}
		return pre + string(s)
	}
	where := ""
	if d.Left != nil && d.Right != nil {
		where = fmt.Sprintf(" (the values differ from byte %d)", at)
	}
	return fmt.Sprintf("first difference at key %q%s:\n  live:   %s\n  replay: %s", d.Key, where, show(d.Left), show(d.Right))
}

// rfc3339 matches an RFC 3339 date-time as JSON rows hold one.
var rfc3339 = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)

// utcTimes returns b with every RFC 3339 time in it written as
// time.RFC3339Nano in UTC.
func utcTimes(b []byte) []byte {
	return rfc3339.ReplaceAllFunc(b, func(m []byte) []byte {
		t, err := time.Parse(time.RFC3339Nano, string(m))
		if err != nil {
			return m
		}
		return []byte(t.UTC().Format(time.RFC3339Nano))
	})
}

// TimesOnly reports whether both rows are present and differ only in how
// their RFC 3339 times are written, each naming the same instant
// ("13:00:34+02:00" on one side, "11:00:34Z" on the other). A Chronicle
// before 2026-12-06 (750d093, Envelope.TimeUTC) kept an event's time as
// it was sent; later builds keep it in UTC, so a store written by the
// older build differs from a replay by the newer one in exactly this way
// (an upgrade walkthrough, 2026-12-07).
func (d *Difference) TimesOnly() bool {
	return d.Left != nil && d.Right != nil && !bytes.Equal(d.Left, d.Right) && bytes.Equal(utcTimes(d.Left), utcTimes(d.Right))
}

// Diff compares the projection rows of two stores in key order and returns
// the first difference, or nil when they are equal.
func Diff(a, b *Store) (*Difference, error) {
	opts := &pebble.IterOptions{LowerBound: []byte(prefixProjection), UpperBound: upper(prefixProjection)}
	ia, err := a.db.NewIter(opts)
	if err != nil {
		return nil, err
	}
	defer ia.Close()
	ib, err := b.db.NewIter(opts)
	if err != nil {
		return nil, err
	}
	defer ib.Close()
	ia.First()
	ib.First()
	for ia.Valid() || ib.Valid() {
		// a value that cannot be read is an error, never a difference
		// (audit called such a row absent: a disk walkthrough)
		var va, vb []byte
		if ia.Valid() {
			if va, err = rowValue(ia); err != nil {
				return nil, fmt.Errorf("%s: %w", a.dir, err)
			}
		}
		if ib.Valid() {
			if vb, err = rowValue(ib); err != nil {
				return nil, fmt.Errorf("%s: %w", b.dir, err)
			}
		}
		switch {
		case !ib.Valid() || (ia.Valid() && bytes.Compare(ia.Key(), ib.Key()) < 0):
			return &Difference{Key: string(ia.Key()), Left: bytes.Clone(va)}, nil
		case !ia.Valid() || bytes.Compare(ia.Key(), ib.Key()) > 0:
			return &Difference{Key: string(ib.Key()), Right: bytes.Clone(vb)}, nil
		case !bytes.Equal(va, vb):
			return &Difference{Key: string(ia.Key()), Left: bytes.Clone(va), Right: bytes.Clone(vb)}, nil
		}
		ia.Next()
		ib.Next()
	}
	if err := ia.Error(); err != nil {
		return nil, fmt.Errorf("projections: %s: %w", a.dir, err)
	}
	if err := ib.Error(); err != nil {
		return nil, fmt.Errorf("projections: %s: %w", b.dir, err)
	}
	return nil, nil
}
