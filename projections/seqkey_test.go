package projections_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chronicle-dev/chronicle/projections"
)

// SeqKey sorts as its numbers do, at every width, and is the %06d these
// rows always had below 1,000,000 (stored rows keep their keys). With
// %06d, 1,000,000 sorted between 100,000 and 100,001.
func TestSeqKeySortsNumerically(t *testing.T) {
	edges := []int{0, 1, 9, 10, 99_999, 100_000, 100_001, 999_998, 999_999, 1_000_000, 1_000_001, 9_999_999, 10_000_000,
		99_999_999, 100_000_000, 999_999_999, 1_000_000_000, math.MaxInt32, math.MaxInt64 - 1, math.MaxInt64}
	r := rand.New(rand.NewPCG(3, 4))
	nums := append([]int(nil), edges...)
	for range 2000 {
		nums = append(nums, r.IntN(1<<(1+r.IntN(62))))
	}
	for i, a := range nums {
		for _, b := range nums[max(0, i-50):i] {
			ka, kb := projections.SeqKey(a), projections.SeqKey(b)
			if (a < b) != (ka < kb) || (a == b) != (ka == kb) {
				t.Fatalf("SeqKey(%d) = %q, SeqKey(%d) = %q: not in numeric order", a, ka, b, kb)
			}
		}
		if a < 1_000_000 && projections.SeqKey(a) != fmt.Sprintf("%06d", a) {
			t.Fatalf("SeqKey(%d) = %q: not the stored layout %06d", a, projections.SeqKey(a), a)
		}
		if n, err := projections.ParseSeqKey(projections.SeqKey(a)); err != nil || n != a {
			t.Fatalf("ParseSeqKey(SeqKey(%d)) = %d, %v", a, n, err)
		}
	}
	for i := 1; i < len(edges); i++ {
		if a, b := projections.SeqKey(edges[i-1]), projections.SeqKey(edges[i]); a >= b {
			t.Errorf("SeqKey(%d) = %q sorts at or after SeqKey(%d) = %q", edges[i-1], a, edges[i], b)
		}
	}
	if got := projections.SeqKey(1_000_000); got != "~071000000" {
		t.Errorf("SeqKey(1000000) = %q, want ~071000000", got)
	}
}

// ParseSeqKey takes what SeqKey makes and nothing else, naming the input.
func TestParseSeqKeyRefuses(t *testing.T) {
	for _, s := range []string{"", "1", "00001", "0000001", "1000000", "~07100000", "~0801234567", "~06123456", "~071000000x", "~0x1000000", "00001x", "~", "~0", "-00001"} {
		if n, err := projections.ParseSeqKey(s); !errors.Is(err, projections.ErrSeqKey) {
			t.Errorf("ParseSeqKey(%q) = %d, %v; want ErrSeqKey", s, n, err)
		}
	}
}
