package httpapi

import (
	"errors"
	"fmt"
	"net/http"
)

// paramError is a refused query parameter: its name and the reason. Its
// text is "<name>: <reason>", as every refusal's, and writeErrOf answers
// it with the members parameter and reason too, so that a client reads
// which parameter and why without parsing the text, as pointer and
// reason name a body's member. Before, a list route's limit or cursor
// answered the text alone while the history routes added a reason (an
// OpenAPI walkthrough).
type paramError struct{ name, reason string }

func (e *paramError) Error() string { return e.name + ": " + e.reason }

// paramErr is a paramError for parameter name, its reason formatted.
func paramErr(name, format string, args ...any) error {
	return &paramError{name: name, reason: fmt.Sprintf(format, args...)}
}

// writeParamErr answers code (a 400, or a 403 for a scope the token may
// not read) naming the query parameter name and the reason:
// {"error": "<name>: <reason>", "parameter": name, "reason": reason}.
func writeParamErr(w http.ResponseWriter, code int, name, reason string) {
	writeJSON(w, code, errorBody{Error: name + ": " + reason, Parameter: name, Reason: reason})
}

// writeErrOf answers code with err's text, and with parameter and
// reason when err is (or wraps) a paramError.
func writeErrOf(w http.ResponseWriter, code int, err error) {
	if pe := (*paramError)(nil); errors.As(err, &pe) {
		writeJSON(w, code, errorBody{Error: err.Error(), Parameter: pe.name, Reason: pe.reason})
		return
	}
	writeJSON(w, code, errorBody{Error: err.Error()})
}
