package events

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordType is the type of the event in r without parsing or validating
// it: the ce_type header of a binary-mode record, else the "type" member
// of the structured-mode value. ok is false when it cannot be read (no
// such header or member, or a value that is no JSON object); FromRecord
// says what is wrong with such a record. Consumers that act on a few
// types skip the others with it (processors.TypedWorker).
func RecordType(r *kgo.Record) (t Type, ok bool) {
	if structuredMode(r) { // as structuredJSON reads it
		v, isStr, _, _ := dataMember(r.Value, "type")
		return Type(v), isStr && v != ""
	}
	binary, typ, found := false, []byte(nil), false
	for _, h := range r.Headers {
		k := strings.ToLower(h.Key)
		if !strings.HasPrefix(k, binaryPrefix) {
			continue
		}
		binary = true
		if k == binaryPrefix+"type" {
			// the last one, as FromRecord reads a repeated header; the
			// first made a worker act on a type the parse did not give
			typ, found = h.Value, true
		}
	}
	if binary {
		return Type(typ), found && len(typ) > 0
	}
	v, isStr, _, _ := dataMember(r.Value, "type")
	return Type(v), isStr && v != ""
}
