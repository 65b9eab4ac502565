package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/deadletter"
	"github.com/chronicle-dev/chronicle/processors/sessionlog"
	"github.com/chronicle-dev/chronicle/projections"
)

// PositionedEvent is a record read back from the log with its position
// ("topic:partition:offset" in Position).
type PositionedEvent struct {
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Position  string          `json:"position"`
	Event     json.RawMessage `json:"event"`
	// DeadLettered, on GET /v1/sessions/{id}/events' events only, names
	// the letters of a record a processor or worker refused (a second
	// completion, a completion before the start): the log keeps such a
	// record, the handler named did not apply it. Absent for a record applied
	// as evidence. Before, a refused event was listed exactly like an
	// applied one (an analyst's walkthrough, 2026-12-07).
	DeadLettered []DeadLetterMark `json:"dead_lettered,omitempty"`
}

// DeadLetterMark is one letter of a listed record (deadletter.Entry's
// essentials): the Handler that refused it (processor@topic or
// worker@topic), the Reason, the JSON Pointer of the member the reason
// names (when it names one), the Letter's own position
// ("chronicle.deadletter:<partition>:<offset>"), when the log received it
// (DeadLetteredAt, RFC 3339) and, once `chronicle deadletter redrive`
// re-produced the record, where (RedrivenTo). The record's own position
// is the letter's id in GET /v1/deadletters and `chronicle deadletter`.
type DeadLetterMark struct {
	Handler        string `json:"handler"`
	Reason         string `json:"reason"`
	Pointer        string `json:"pointer,omitempty"`
	Letter         string `json:"letter"`
	DeadLetteredAt string `json:"dead_lettered_at"`
	RedrivenTo     string `json:"redriven_to,omitempty"`
}

// markDeadLettered sets DeadLettered on each of evs (records of the
// session with key on chronicle.sessions) that store holds a letter of
// (deadletter.OfKey: one scan of the scope's letters, none when evs is
// empty). In a cluster the letters of a session's records are on the
// dead-letter partition of the session's number (they are keyed by the
// record's key), which the co-partitioned group gives the member that owns
// the session, the one that answers this route; an as-of store (chronicle
// inspect) holds only the letters applied up to its positions.
func markDeadLettered(store *projections.Store, key string, evs []PositionedEvent) error {
	if len(evs) == 0 {
		return nil
	}
	letters, err := deadletter.OfKey(store, key, string(events.TopicSessions))
	if err != nil || len(letters) == 0 {
		return err
	}
	for i := range evs {
		for _, l := range letters[evs[i].Position] {
			evs[i].DeadLettered = append(evs[i].DeadLettered, DeadLetterMark{Handler: l.Handler, Reason: l.Reason, Pointer: l.Pointer,
				Letter: fmt.Sprintf("%s:%d:%d", events.TopicDeadLetter, l.DeadLetterPartition, l.DeadLetterOffset), DeadLetteredAt: l.DeadLetteredAt, RedrivenTo: l.RedrivenTo})
		}
	}
	return nil
}

// SessionRecords is a session's records read at the positions the
// sessionlog index holds for it, each list in log order: its events
// (chronicle.sessions), its evaluations (chronicle.evaluations), the
// memory records distilled from it or recorded for it
// (memory.recorded.v1 with its source_session, distillation.completed.v1;
// chronicle.memories) and its PAIR contexts (chronicle.learned).
type SessionRecords struct {
	Events       []PositionedEvent `json:"events"`
	Evaluations  []PositionedEvent `json:"evaluations"`
	Memories     []PositionedEvent `json:"memories"`
	PairContexts []PositionedEvent `json:"pair_contexts"`
}

// maxReaders is how many broker lists keep a sessionlog.Reader open at
// once (8). A serve process has one broker list; a process that reads
// several clusters one after the other (a test binary starting a broker
// per test: a few dozen) used to keep a franz-go client per list for its
// whole life, each one reconnecting to a broker long gone.
const maxReaders = 8

// readerCache holds one sessionlog.Reader per broker list (joined by
// ","), so a request costs no connection or consumer setup. Past
// maxReaders lists, the least recently used reader is closed once its
// last request has released it.
type readerCache struct {
	mu      sync.Mutex
	entries map[string]*readerEntry
	tick    uint64 // use counter, for least recently used
	// close closes an evicted reader (nil: Reader.Close; tests record it)
	close func(*sessionlog.Reader)
}

type readerEntry struct {
	r       *sessionlog.Reader
	refs    int    // requests using r
	used    uint64 // readerCache.tick at the last use
	evicted bool   // out of the cache: closed when refs drops to 0
}

var readers = readerCache{entries: map[string]*readerEntry{}}

// get returns brokers' reader and the function that releases it; every
// get must be released.
func (c *readerCache) get(brokers []string) (*sessionlog.Reader, func(), error) {
	k := strings.Join(brokers, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	e, ok := c.entries[k]
	if !ok {
		r, err := sessionlog.NewReader(brokers)
		if err != nil {
			return nil, nil, err
		}
		e = &readerEntry{r: r, used: c.tick}
		c.entries[k] = e
		c.evict()
	}
	e.refs++
	e.used = c.tick
	return e.r, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		e.refs--
		if e.evicted && e.refs == 0 {
			c.closeReader(e.r)
		}
	}, nil
}

// evict takes the least recently used entries out while the cache holds
// more than maxReaders, closing those no request uses. c.mu is held.
func (c *readerCache) evict() {
	for len(c.entries) > maxReaders {
		var (
			oldK string
			old  *readerEntry
		)
		for k, e := range c.entries {
			if old == nil || e.used < old.used {
				oldK, old = k, e
			}
		}
		delete(c.entries, oldK)
		old.evicted = true
		if old.refs == 0 {
			c.closeReader(old.r)
		}
	}
}

func (c *readerCache) closeReader(r *sessionlog.Reader) {
	if c.close != nil {
		c.close(r)
		return
	}
	r.Close()
}

// open is how many readers the cache holds (for tests).
func (c *readerCache) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// ReadIndexedSession reads the records of the session with key
// (events.EntityKey) at the positions of the sessionlog index (no scan:
// sessionlog.Reader.Fetch), keeping those whose own scope attribute is scope. ok
// is false when the index holds nothing for the key (not yet indexed, or
// a data directory older than the index): the caller falls back to a scan.
func ReadIndexedSession(ctx context.Context, brokers []string, store *projections.Store, key, scope string) (SessionRecords, bool, error) {
	rec, _, ok, err := readIndexedSessionPage(ctx, brokers, store, key, scope, -1, -1, 0, 0, nil)
	return rec, ok, err
}

// errCursorPartition is the error of a cursor naming another partition
// than the session's (a 400 naming cursor).
var errCursorPartition = errors.New("cursor")

// sessionEventsChunk is how many of a page's events are fetched at a time,
// so that a page bounded by bytes reads little more than it answers.
const sessionEventsChunk = 16

// readIndexedSessionPage is ReadIndexedSession reading only the session's
// events at offsets from after on (-1: from the first), at most limit of
// them (0: all) and, with maxBytes > 0, those before the event that would
// take their bytes past maxBytes (at least one): next is the offset of the
// first event left for a later page, -1 when none is. The events are
// fetched sessionEventsChunk at a time, so a page reads about what it
// answers (a re-test: the route fetched 500 events of about 1 MB for a 4
// MiB page, 547 MB of RSS for one request, 2.6 GB for six). Evaluations,
// memories and PAIR contexts are read whole. With bound (a read-only
// state's positions: Server.asOfBound), an indexed record past it is left
// out, as if the index did not hold it.
func readIndexedSessionPage(ctx context.Context, brokers []string, store *projections.Store, key, scope string, after int64, part int32, limit, maxBytes int, bound logBound) (rec SessionRecords, next int64, ok bool, err error) {
	rec = SessionRecords{Events: []PositionedEvent{}, Evaluations: []PositionedEvent{}, Memories: []PositionedEvent{}, PairContexts: []PositionedEvent{}}
	next = -1
	byKind, err := sessionlog.Entries(store, key)
	if err != nil || len(byKind) == 0 {
		return rec, next, false, err
	}
	if bound != nil {
		// a stopped service's index may be ahead of another processor's
		// position (AsOfPosition.AheadTo): what the state as a whole holds
		// is listed, nothing after
		for kind, es := range byKind {
			if es = slices.DeleteFunc(es, func(e sessionlog.Entry) bool { return !bound.holds(e.Position) }); len(es) > 0 {
				byKind[kind] = es
			} else {
				delete(byKind, kind)
			}
		}
		if len(byKind) == 0 {
			return rec, next, false, nil
		}
	}
	evs := byKind[sessionlog.KindEvent]
	if part >= 0 && len(evs) > 0 && evs[0].Position.Partition != part {
		// a cursor of another session's partition: its offsets are not
		// this session's (they were taken as such: a re-test)
		return rec, next, true, fmt.Errorf("%w: names partition %d; the session's events are on partition %d", errCursorPartition, part, evs[0].Position.Partition)
	}
	slices.SortFunc(evs, func(a, b sessionlog.Entry) int { return cmp.Compare(a.Position.Offset, b.Position.Offset) })
	evs = slices.DeleteFunc(evs, func(e sessionlog.Entry) bool { return e.Position.Offset < after })
	if limit > 0 && len(evs) > limit {
		next = evs[limit].Position.Offset
		evs = evs[:limit]
	}
	delete(byKind, sessionlog.KindEvent)
	rd, release, err := readers.get(brokers)
	if err != nil {
		return rec, next, true, err
	}
	defer release()
	// read appends the records of es that hold scope to the list into
	// names for each, in order; bounded, it counts their bytes in size
	// and stops before the one that takes size past maxBytes, answering
	// its index in es (-1: all fit)
	size := 0
	read := func(es []sessionlog.Entry, into func(sessionlog.Entry) *[]PositionedEvent, bounded bool) (int, error) {
		pos := make([]projections.Position, len(es))
		for i, e := range es {
			pos[i] = e.Position
		}
		got, err := rd.Fetch(ctx, pos)
		if err != nil {
			return -1, err
		}
		for i, e := range es {
			r, ok := got[e.Position]
			l := into(e)
			if !ok || l == nil {
				continue
			}
			raw, err := events.StructuredJSON(r)
			if err != nil || !utf8.Valid(raw) || recordScope(raw) != scope {
				continue // no event (see readSessionLog)
			}
			if bounded {
				if maxBytes > 0 && len(*l) > 0 && size+len(raw) > maxBytes {
					return i, nil
				}
				size += len(raw)
			}
			*l = append(*l, PositionedEvent{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Position: e.Position.String(), Event: raw})
		}
		return -1, nil
	}
	lists := map[string]*[]PositionedEvent{sessionlog.KindEvaluation: &rec.Evaluations,
		sessionlog.KindMemory: &rec.Memories, sessionlog.KindPairContext: &rec.PairContexts}
	var others []sessionlog.Entry
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		others = append(others, byKind[kind]...)
	}
	if len(others) > 0 {
		if _, err := read(others, func(e sessionlog.Entry) *[]PositionedEvent { return lists[e.Kind] }, false); err != nil {
			return rec, next, true, err
		}
	}
	intoEvents := func(sessionlog.Entry) *[]PositionedEvent { return &rec.Events }
	for start := 0; start < len(evs); start += sessionEventsChunk {
		chunk := evs[start:min(start+sessionEventsChunk, len(evs))]
		cut, err := read(chunk, intoEvents, true)
		if err != nil {
			return rec, next, true, err
		}
		if cut >= 0 {
			return rec, chunk[cut].Position.Offset, true, nil
		}
	}
	return rec, next, true, nil
}

// SessionEventsMaxLimit is the most events one page of GET
// /v1/sessions/{id}/events holds (limit 1 to it; absent: it), and
// SessionEventsPageBytes about the most bytes of them: a page ends before
// the event that would take it past (a page holds at least one event).
// Before, the route answered every event in one body: one session of 250
// events of 100 KB was 25 MB, built in memory (an analyst's walkthrough,
// 2026-11-30; serve's RSS reached 383 MB). The evaluations, memories and
// PAIR contexts come whole on every page.
const SessionEventsMaxLimit = 500

// SessionEventsPageBytes: see SessionEventsMaxLimit (a variable for tests).
var SessionEventsPageBytes = 4 << 20

// sessionEventsPage reads GET /v1/sessions/{id}/events' limit and cursor
// (a next_cursor: "chronicle.sessions:<partition>:<offset>", the first
// event of the page), writing the 400 naming the parameter.
func sessionEventsPage(w http.ResponseWriter, r *http.Request) (after int64, part int32, limit int, ok bool) {
	q := r.URL.Query()
	limit = SessionEventsMaxLimit
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > SessionEventsMaxLimit {
			writeParamErr(w, http.StatusBadRequest, "limit", fmt.Sprintf("%q is not an integer from 1 to %d (absent: %d)", q.Get("limit"), SessionEventsMaxLimit, SessionEventsMaxLimit))
			return 0, 0, 0, false
		}
		limit = n
	}
	after, part = -1, -1
	if c := q.Get("cursor"); c != "" {
		topic, rest, _ := strings.Cut(c, ":")
		ps, off, _ := strings.Cut(rest, ":")
		p, perr := strconv.ParseInt(ps, 10, 32)
		o, oerr := strconv.ParseInt(off, 10, 64)
		if topic != string(events.TopicSessions) || perr != nil || oerr != nil || p < 0 || o < 0 {
			writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("%q is not a next_cursor of this route (%s:<partition>:<offset>)", c, events.TopicSessions))
			return 0, 0, 0, false
		}
		after, part = o, int32(p)
	}
	return after, part, limit, true
}

// pageEvents cuts evs (a page's events, in log order) before the event
// that takes it past SessionEventsPageBytes (keeping at least one), and
// answers the next cursor: the first event cut, else next (the first
// event past the page's limit, -1 none).
func pageEvents(evs []PositionedEvent, next int64) ([]PositionedEvent, string) {
	size := 0
	for i, e := range evs {
		size += len(e.Event)
		if i > 0 && size > SessionEventsPageBytes {
			return evs[:i], e.Position
		}
	}
	if next < 0 || len(evs) == 0 {
		return evs, ""
	}
	return evs, fmt.Sprintf("%s:%d:%d", events.TopicSessions, evs[0].Partition, next)
}

// scanOnly makes GET /v1/sessions/{id}/events answer every session by the
// scan, as for a session the index does not hold (tests set it).
var scanOnly atomic.Bool

// indexedSessionEvents answers GET /v1/sessions/{id}/events from the
// sessionlog index; it returns false, having written nothing, when the
// index holds nothing for the session. ctx bounds it (SessionEventsTimeout).
func (s *Server) indexedSessionEvents(ctx context.Context, w http.ResponseWriter, key string, after int64, part int32, limit int) bool {
	if scanOnly.Load() {
		return false
	}
	scope, id, _ := events.SplitEntityKey(key)
	type read struct {
		rec  SessionRecords
		next int64
		ok   bool
	}
	got, err := processors.Within(ctx, SessionEventsTimeout, "read the session's records", func(ctx context.Context) (read, error) {
		rec, next, ok, err := readIndexedSessionPage(ctx, s.logAddrs(), s.P.Store, key, scope, after, part, limit, SessionEventsPageBytes, s.asOfBound())
		return read{rec, next, ok}, err
	})
	rec, ok := got.rec, got.ok
	switch {
	case errors.Is(err, errCursorPartition):
		writeParamErr(w, http.StatusBadRequest, "cursor", strings.TrimPrefix(err.Error(), "cursor: "))
		return true
	case err != nil:
		writeErr(w, http.StatusServiceUnavailable, "%v", events.ExplainBrokerError(err))
		return true
	case !ok:
		return false
	}
	page, next := pageEvents(rec.Events, got.next)
	if err := markDeadLettered(s.P.Store, key, page); err != nil {
		writeErr(w, http.StatusInternalServerError, "mark the session's dead-lettered events: %v", err)
		return true
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": id, "scope": scope, "source": "index", "events": page,
		"evaluations": rec.Evaluations, "memories": rec.Memories, "pair_contexts": rec.PairContexts, "next_cursor": next})
	return true
}
