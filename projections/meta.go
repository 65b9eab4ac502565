package projections

import (
	"bytes"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// prefixMeta holds facts about the store itself (which log it follows),
// outside the projections and the digest.
const prefixMeta = "m/meta/"

// Meta reads the store fact key; ok is false when it was never set.
func (s *Store) Meta(key string) (val []byte, ok bool, err error) {
	v, closer, err := s.db.Get([]byte(prefixMeta + key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

// SetMeta writes the store fact key durably.
func (s *Store) SetMeta(key string, val []byte) error {
	return s.write(func() error { return s.db.Set([]byte(prefixMeta+key), val, pebble.Sync) })
}
