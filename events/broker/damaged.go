package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ErrLogDamaged is wrapped by Start's error for a log that is shorter than
// the broker left it when it last stopped cleanly: a segment file cut
// short or gone. Such a log has lost acknowledged records; the embedded
// broker (kfake) would replay what is left silently, and the store's
// offsets then read as "beyond the log's end", which said to use another
// log or a copied directory (an SRE's walkthrough, 2026-12-03: a
// truncated segment), and a replay from it built a shorter state
// without a word.
var ErrLogDamaged = errors.New("broker: the log is damaged")

// checkSegments compares, in a log last stopped cleanly (StoppedFile),
// every partition's segment files with the sizes its snapshot.json
// recorded then (kfake's persistence: partitions/<topic>-<n>/snapshot.json,
// segments <base offset>.dat): a file smaller than recorded, or missing,
// is ErrLogDamaged naming it and both sizes. A snapshot that cannot be
// read is left to the broker, which replays the segments then.
func checkSegments(dir string) error {
	parts, err := os.ReadDir(filepath.Join(dir, "partitions"))
	if err != nil {
		return nil // no partitions yet, or unreadable: the broker says
	}
	for _, p := range parts {
		pdir := filepath.Join(dir, "partitions", p.Name())
		b, err := os.ReadFile(filepath.Join(pdir, "snapshot.json"))
		if err != nil {
			continue
		}
		var snap struct {
			HighWatermark int64 `json:"high_watermark"`
			Segments      []struct {
				BaseOffset int64 `json:"base_offset"`
				Size       int64 `json:"size"`
			} `json:"segments"`
		}
		if json.Unmarshal(b, &snap) != nil {
			continue
		}
		for _, s := range snap.Segments {
			name := filepath.Join(pdir, strconv.FormatInt(s.BaseOffset, 10)+".dat")
			fi, err := os.Stat(name)
			switch {
			case errors.Is(err, os.ErrNotExist):
				return fmt.Errorf("%w: %s is missing; it held %d bytes when the broker last stopped cleanly (the partition's high watermark was %d): restore the data directory from a copy (nothing rebuilds lost records; a replay from this log would build a shorter state)", ErrLogDamaged, name, s.Size, snap.HighWatermark)
			case err != nil:
				continue
			case fi.Size() < s.Size:
				return fmt.Errorf("%w: %s holds %d bytes, %d when the broker last stopped cleanly (the partition's high watermark was %d): records were lost after that stop; restore the data directory from a copy (nothing rebuilds lost records; a replay from this log would build a shorter state)", ErrLogDamaged, name, fi.Size(), s.Size, snap.HighWatermark)
			}
		}
	}
	return nil
}
