package projections

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// keyReplayIncomplete marks a store that a replay is rebuilding: set before
// the replay's first record, removed after its last. It is outside the
// projections (and the digest).
const keyReplayIncomplete = "m/replay-incomplete"

// ErrReplayIncomplete is returned by CheckComplete for a store whose replay
// did not finish (killed, or failed): its projections are a prefix of the
// log's, so its digest means nothing.
var ErrReplayIncomplete = errors.New("projections: the replay that built this store did not finish")

// MarkReplayStarted records, durably, that a replay into s has begun.
func (s *Store) MarkReplayStarted() error {
	return s.write(func() error { return s.db.Set([]byte(keyReplayIncomplete), []byte("1"), pebble.Sync) })
}

// MarkReplayFinished removes the mark of MarkReplayStarted, durably.
func (s *Store) MarkReplayFinished() error {
	return s.write(func() error { return s.db.Delete([]byte(keyReplayIncomplete), pebble.Sync) })
}

// CheckComplete returns an error wrapping ErrReplayIncomplete, naming the
// directory, when s was built by a replay that did not finish.
func (s *Store) CheckComplete() error {
	_, closer, err := s.db.Get([]byte(keyReplayIncomplete))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	closer.Close()
	return fmt.Errorf("%s: %w; replay it again into an empty directory", s.dir, ErrReplayIncomplete)
}
