package broker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
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
			if err := checkBatches(name, s.Size); err != nil {
				return fmt.Errorf("%w: %w (the partition's high watermark was %d at the last clean stop): restore the data directory from a copy; the broker would cut the file at that batch, dropping it and every record after it (nothing rebuilds lost records; a replay from this log would build a shorter state)", ErrLogDamaged, err, snap.HighWatermark)
			}
		}
	}
	return nil
}

// checkBatches reads the first size bytes of the segment file name, the
// record batches a clean stop left there, and reports the first one
// whose CRC-32C (Kafka's, over the batch from its attributes on) does not
// match: a byte changed after that stop (a bad disk, a damaged copy). The
// embedded broker (kfake) stops loading at such a batch and cuts the file
// there, so the records from it on, good ones included, were dropped
// without a word (a disk walkthrough: one byte changed in a 10 MB segment,
// the partition served offsets 0-77 of 137 and the file lost 5 MB). A
// file it cannot read is left to the broker.
func checkBatches(name string, size int64) error {
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	if int64(len(raw)) > size {
		raw = raw[:size]
	}
	for pos := 0; pos+21 <= len(raw); {
		first := int64(binary.BigEndian.Uint64(raw[pos : pos+8]))
		n := int(binary.BigEndian.Uint32(raw[pos+8 : pos+12]))
		end := pos + 12 + n
		if n < 9 || end > len(raw) {
			return fmt.Errorf("%s: the record batch at byte %d (offset %d) has a length of %d bytes, past the %d the file held at the last clean stop", name, pos, first, n, len(raw))
		}
		if stored, got := binary.BigEndian.Uint32(raw[pos+17:pos+21]), crc32.Checksum(raw[pos+21:end], castagnoli); stored != got {
			return fmt.Errorf("%s: the record batch at byte %d (offset %d) does not match its checksum (stored %08x, computed %08x)", name, pos, first, stored, got)
		}
		pos = end
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
