package projections

import (
	"bytes"

	"github.com/chronicle-dev/chronicle/events"
)

// withoutAuthor is env with its data's author member
// (events.AuthorMember) left out, compacted as a content hash of dedup
// version v reads it (canonical from version 4 on), and whether env's data
// held one: what a key of dedup version 2 to 5 holds for an event a
// producer wrote without author (through Kafka or `chronicle ingest`) that
// POST /v1/events resends with the caller's name set.
func withoutAuthor(env *events.Envelope, v int) (events.Envelope, bool) {
	name := events.AuthorMember(env.Type)
	if name == "" {
		return *env, false
	}
	var flat []byte
	if v >= 4 {
		c, err := events.AppendCanonical(nil, env.Data)
		if err != nil {
			return *env, false
		}
		flat = c
	} else {
		var buf bytes.Buffer
		if err := compact(&buf, env.Data); err != nil {
			return *env, false
		}
		flat = buf.Bytes()
	}
	data, ok := events.WithoutMember(nil, flat, name)
	alt := *env
	alt.Data = data
	return alt, ok
}
