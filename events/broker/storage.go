package broker

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// storageLog is the embedded broker's kfake.Logger: it keeps the last
// failure to write the log (kfake's warnings and errors whose message
// starts with "persist": a segment, its index, the groups' or producers'
// logs, the state files at a stop), which kfake otherwise only answers
// to a producer as UNKNOWN_SERVER_ERROR. Every other message is dropped,
// as kfake's default logger does.
//
// While Start loads the log (loading), it also keeps kfake's warnings
// that it repaired what it loaded (repairs: corrupt bytes cut from a
// segment's end, a malformed control batch read as an abort, corrupt
// entries of pids.log or groups.log dropped), for Config.OnLogRepaired.
type storageLog struct {
	mu      sync.Mutex
	err     error
	at      time.Time
	loading bool
	repairs []string
}

// repairWords are in each of kfake's load-time warnings that it changed
// or dropped part of the log it loaded (persist.go: "truncating %d
// corrupt bytes", "treating as abort", "discarding %d corrupt trailing
// bytes", "skipping corrupt entry", "corrupt, ignoring").
var repairWords = []string{"truncating", "treating as abort", "discarding", "skipping corrupt", "corrupt, ignoring"}

// Logf implements kfake.Logger.
func (l *storageLog) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level > kfake.LogLevelWarn || level == kfake.LogLevelNone {
		return
	}
	if !strings.HasPrefix(msg, "persist") {
		l.mu.Lock()
		if l.loading {
			for _, w := range repairWords {
				if strings.Contains(msg, w) {
					l.repairs = append(l.repairs, fmt.Sprintf(msg, args...))
					break
				}
			}
		}
		l.mu.Unlock()
		return
	}
	err := fmt.Errorf("embedded broker: "+msg, args...)
	l.mu.Lock()
	l.err, l.at = err, time.Now()
	l.mu.Unlock()
}

// loaded ends the load: it returns the repairs kept since the
// storageLog was made with loading set, and keeps no more.
func (l *storageLog) loaded() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loading = false
	r := l.repairs
	l.repairs = nil
	return r
}

func (l *storageLog) last() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at, l.err
}

// StorageFailure returns when the embedded broker last failed to write
// its log and that failure (e.g. "embedded broker: persist batch chronicle.sessions-0: write
// DATA/log/partitions/chronicle.sessions-0/0.dat: no space left on
// device"), or a nil error when no write failed since Start
// or the broker is an external cluster. A failed write is not
// acknowledged: the producer gets UNKNOWN_SERVER_ERROR and the record is
// not in the log. It is the value of events.ProducerConfig.StorageFailure
// for producers of this broker, so their errors name the cause.
func (b *Broker) StorageFailure() (time.Time, error) {
	if b.storage == nil {
		return time.Time{}, nil
	}
	return b.storage.last()
}
