package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
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
		// integral, but written with a fraction or an exponent: how to
		// write it (a re-test, 2026-12-01)
		{`{"k":1.0}`, `body: "k": got number 1.0, want integer: write it without a fraction or an exponent (1, not 1.0 or 1e0)`},
		{`{"k":3e0}`, `body: "k": got number 3e0, want integer: write it without a fraction or an exponent (1, not 1.0 or 1e0)`},
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

// A body error about one member carries its pointer and reason, which the
// route's 400 answers as POST /v1/events' does: an unknown field, also a
// nested one, and a value of the wrong type (before, only the message
// named them: a new user's walkthrough, 2026-11-30).
func TestBodyErrorsNameTheirMember(t *testing.T) {
	type target struct {
		Title string   `json:"title"`
		Tags  []string `json:"tags"`
		Inner struct {
			B int `json:"b"`
		} `json:"inner"`
		Items []struct {
			N int `json:"n"`
		} `json:"items"`
	}
	for body, want := range map[string][2]string{
		`{"bogus":1}`:               {"/bogus", `unknown field "bogus"`},
		`{"inner":{"zz":1}}`:        {"/inner/zz", `unknown field "zz"`},
		`{"tags":"x"}`:              {"/tags", "got string, want array"},
		`{"inner":{"b":"x"}}`:       {"/inner/b", "got string, want integer"},
		`{"title":"a","title":"b"}`: {"/title", "appears twice"},
		`{"Title":"a"}`:             {"/Title", "member names are case-sensitive"},
		`null`:                      {"/", "got null, want object"},
		// a review: the first inexact member was named for another's
		// error, and an array's index was lost
		`{"Title":"x","bogus":1}`:              {"", `unknown field "bogus"`},
		`{"items":[{"n":1},{"n":"x"}]}`:        {"/items/1/n", "got string, want integer"},
		`{"items":[{"n":1}],"inner":{"b":[]}}`: {"/inner/b", "got array, want integer"},
		`{bad`:                                 {"/", "not valid JSON at byte"},
		``:                                     {"/", "empty, a JSON object expected"},
		`{"title":"a"} {}`:                     {"/", "found more after it"},
	} {
		err := decodeRead([]byte(body), &target{})
		w := httptest.NewRecorder()
		writeBodyErr(w, err, "")
		var got errorBody
		if jerr := json.Unmarshal(w.Body.Bytes(), &got); jerr != nil || w.Code != 400 || got.Pointer != want[0] || !strings.Contains(got.Reason, want[1]) || got.Error != err.Error() {
			t.Errorf("%s: %d %s, want 400 with pointer %s and a reason saying %s", body, w.Code, w.Body, want[0], want[1])
		}
	}
}
