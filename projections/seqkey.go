package projections

import (
	"errors"
	"fmt"
	"strconv"
)

// SeqKey is the key part of sequence number n (≥ 0) of an entity's rows
// (its passes, checkpoints, changes, signals, retrievals, trace rows), so
// that a scan returns them in numeric order at any n:
//   - n < 1,000,000: six digits, zero-padded ("000042"), the layout these
//     rows always had, so stored rows keep their keys (no migration);
//   - n ≥ 1,000,000: '~' (after every digit), the number of digits as two
//     digits, then the digits ("~071000000" for 1,000,000).
//
// Before, every such key was fmt's %06d, and from 1,000,000 on a row
// sorted among the six-digit ones ("1000000" between "100000" and
// "100001"): a memory's history and its retrievals past a million
// signals, a session's trace past a million events, a task's passes past
// pass 999,999 were read out of order, and a memory's pending signals,
// which it re-reads to decide a consensus, too. A negative n (no caller
// has one) is %06d's, as before: it sorts before 0.
func SeqKey(n int) string {
	var b [24]byte
	return string(AppendSeqKey(b[:0], n))
}

// AppendSeqKey appends SeqKey(n) to b, for a key built in place (a
// session's trace row, written for every event).
func AppendSeqKey(b []byte, n int) []byte {
	if n < 0 {
		return fmt.Appendf(b, "%06d", n)
	}
	if n < 1_000_000 {
		for p := 100_000; p > n && p > 1; p /= 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, int64(n), 10)
	}
	var d [20]byte
	digits := strconv.AppendInt(d[:0], int64(n), 10)
	b = append(b, '~', byte('0'+len(digits)/10), byte('0'+len(digits)%10))
	return append(b, digits...)
}

// ErrSeqKey is wrapped by ParseSeqKey's error for a key part that is no
// SeqKey.
var ErrSeqKey = errors.New("not a sequence key")

// ParseSeqKey is the sequence number of a SeqKey, and an error wrapping
// ErrSeqKey, naming s, for anything SeqKey does not make (a key is taken
// only if SeqKey gives it back, which rules out other widths, signs and
// leading zeros).
func ParseSeqKey(s string) (int, error) {
	digits := s
	if len(s) > 3 && s[0] == '~' {
		digits = s[3:]
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || SeqKey(n) != s {
		return 0, fmt.Errorf("%q: %w", s, ErrSeqKey)
	}
	return n, nil
}
