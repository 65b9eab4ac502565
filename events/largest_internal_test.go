package events

import (
	"strings"
	"testing"
)

// An oversized event's refusal names the member to shorten: the largest,
// followed down while it holds more than half of its object; "/" when no
// member stands out (it was "/" always: a passes walkthrough, 2026-12-06).
func TestLargestMember(t *testing.T) {
	big := strings.Repeat("x", 1000)
	for _, c := range []struct {
		raw, want string
	}{
		{`{"id":"a","data":{"task_id":"t","output":"` + big + `"}}`, "/data/output"},
		{`{"id":"a","data":{"steps":["` + big + `","` + big + `"]}}`, "/data/steps"},           // an array ends it
		{`{"id":"a","data":{"a/b~c":{"x":"` + big + `"}}}`, "/data/a~1b~0c/x"},                 // tokens escaped
		{`{"id":"a","data":{"p":"` + big + `","q":"` + big + `","r":"` + big + `"}}`, "/data"}, // no member of data stands out
		{`{"a":"` + big + `","b":"` + big + `"}`, "/"},
		{`not json`, "/"},
	} {
		if got, _ := largestMember([]byte(c.raw)); got != c.want {
			t.Errorf("largestMember(%.60s…) = %s, want %s", c.raw, got, c.want)
		}
	}
	if _, n := largestMember([]byte(`{"data":{"output":"` + big + `"}}`)); n < 1000 || n > 1020 {
		t.Errorf("size %d, want about 1,000 bytes", n)
	}
}
