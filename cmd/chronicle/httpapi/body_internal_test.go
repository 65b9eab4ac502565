package httpapi

import (
	"encoding/json"
	"testing"
)

// bodyError names the field and the reason; a number of the right kind
// that the field cannot hold is out of range, not of the wrong type (a
// walkthrough read "got number, want number" for 1e400).
func TestBodyErrorNamesTheReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"k":99999999999999999999}`, `body: "k": got number 99999999999999999999, out of the range of a 64-bit integer`},
		{`{"f":1e400}`, `body: "f": got number 1e400, out of the range of a 64-bit number`},
		{`{"k":1.5}`, `body: "k": got number 1.5, want integer`},
		{`{"k":"x"}`, `body: "k": got string, want integer`},
		{`{"s":1}`, `body: "s": got number, want string`},
	} {
		var v struct {
			K int     `json:"k"`
			F float64 `json:"f"`
			S string  `json:"s"`
		}
		if got := bodyError(json.Unmarshal([]byte(c.in), &v)); got == nil || got.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.in, got, c.want)
		}
	}
}
