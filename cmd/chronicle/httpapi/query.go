package httpapi

import (
	"net/http"
	"net/url"
	"strings"
)

// singleValued answers 400 naming the first of names that q holds more
// than once (?follow=false&follow=true), and returns false then: a
// single-valued query parameter read with url.Values.Get would keep the
// first value silently, while a list parameter (types=a&types=b) counts
// every one, so a repeat is refused rather than guessed at.
func singleValued(w http.ResponseWriter, q url.Values, names ...string) bool {
	for _, n := range names {
		if vs := q[n]; len(vs) > 1 {
			writeErr(w, http.StatusBadRequest, "%s: given %d times (%s=%s): it takes one value", n, len(vs), n, strings.Join(vs, "&"+n+"="))
			return false
		}
	}
	return true
}
