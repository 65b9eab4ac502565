package processortest_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/processortest"
)

// claimsPerKey is toolCalls claiming processors.KeyedState, which it does
// not keep: its rows are per tool, and calls of one tool come from many
// sessions (the record key).
type claimsPerKey struct{ toolCalls }

func (claimsPerKey) StatePerKey() bool { return true }

// CheckStatePerKey (and so CheckReplay) fails for a processor that claims
// StatePerKey but shares a row between record keys, naming the processor,
// the row and both keys; it passes for the same processor without the
// claim, and a replay with one partition could not tell: its digest
// matches.
func TestCheckStatePerKey(t *testing.T) {
	publish := func(p processors.Processor) *processortest.Tester {
		tt := processortest.New(t, []processors.Processor{p}, processortest.InMemory(), processortest.Partitions(4))
		for i, tool := range []string{"refund", "search", "refund"} {
			env := call(t, "c"+strconv.Itoa(i), tool)
			env.SessionID = "s" + strconv.Itoa(i)
			if _, err := tt.Publish(env); err != nil {
				t.Fatal(err)
			}
		}
		return tt
	}
	processortest.CheckReplay(t, publish(toolCalls{"calls"}))

	bad := publish(claimsPerKey{toolCalls{"calls"}})
	rec := &errorsTB{TB: t}
	processortest.CheckStatePerKey(rec, bad)
	if len(rec.errs) != 2 { // the Get and the Set of row "refund" by s2's call
		t.Fatalf("CheckStatePerKey: %q; want the refund row's two accesses by a second key", rec.errs)
	}
	for _, want := range []string{`processor "calls" claims StatePerKey`, `row "refund"`, `"org:default/s0"`, `"org:default/s2"`} {
		if !strings.Contains(rec.errs[0], want) {
			t.Fatalf("CheckStatePerKey: %q does not say %s", rec.errs[0], want)
		}
	}
	rec = &errorsTB{TB: t}
	processortest.CheckReplay(rec, bad)
	if len(rec.errs) != 2 {
		t.Fatalf("CheckReplay: %q; want CheckStatePerKey's errors alone (the digests agree)", rec.errs)
	}
}
