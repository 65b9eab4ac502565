package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
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

// readers holds one sessionlog.Reader per broker list (joined by ","),
// kept for the life of the process: a Reader is a long-lived client, so a
// request costs no connection or consumer setup.
var readers sync.Map

func readerFor(brokers []string) (*sessionlog.Reader, error) {
	k := strings.Join(brokers, ",")
	if r, ok := readers.Load(k); ok {
		return r.(*sessionlog.Reader), nil
	}
	r, err := sessionlog.NewReader(brokers)
	if err != nil {
		return nil, err
	}
	if prev, loaded := readers.LoadOrStore(k, r); loaded {
		r.Close()
		return prev.(*sessionlog.Reader), nil
	}
	return r, nil
}

// ReadIndexedSession reads the records of the session with key
// (events.EntityKey) at the positions of the sessionlog index (no scan:
// sessionlog.Reader.Fetch), keeping those whose own scope attribute is scope. ok
// is false when the index holds nothing for the key (not yet indexed, or
// a data directory older than the index): the caller falls back to a scan.
func ReadIndexedSession(ctx context.Context, brokers []string, store *projections.Store, key, scope string) (SessionRecords, bool, error) {
	rec := SessionRecords{Events: []PositionedEvent{}, Evaluations: []PositionedEvent{}, Memories: []PositionedEvent{}, PairContexts: []PositionedEvent{}}
	byKind, err := sessionlog.Entries(store, key)
	if err != nil || len(byKind) == 0 {
		return rec, false, err
	}
	var pos []projections.Position
	for _, es := range byKind {
		for _, e := range es {
			pos = append(pos, e.Position)
		}
	}
	rd, err := readerFor(brokers)
	if err != nil {
		return rec, true, err
	}
	got, err := rd.Fetch(ctx, pos)
	if err != nil {
		return rec, true, err
	}
	lists := map[string]*[]PositionedEvent{sessionlog.KindEvent: &rec.Events, sessionlog.KindEvaluation: &rec.Evaluations,
		sessionlog.KindMemory: &rec.Memories, sessionlog.KindPairContext: &rec.PairContexts}
	for kind, es := range byKind {
		l := lists[kind]
		if l == nil {
			continue
		}
		for _, e := range es {
			r, ok := got[e.Position]
			if !ok {
				continue
			}
			raw, err := events.StructuredJSON(r)
			if err != nil || recordScope(raw) != scope {
				continue
			}
			*l = append(*l, PositionedEvent{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Position: e.Position.String(), Event: raw})
		}
	}
	return rec, true, nil
}

// indexedSessionEvents answers GET /v1/sessions/{id}/events from the
// sessionlog index; it returns false, having written nothing, when the
// index holds nothing for the session. ctx bounds it (SessionEventsTimeout).
func (s *Server) indexedSessionEvents(ctx context.Context, w http.ResponseWriter, key string) bool {
	scope, id, _ := events.SplitEntityKey(key)
	type read struct {
		rec SessionRecords
		ok  bool
	}
	got, err := processors.Within(ctx, SessionEventsTimeout, "read the session's records", func(ctx context.Context) (read, error) {
		rec, ok, err := ReadIndexedSession(ctx, s.P.Broker.Addrs(), s.P.Store, key, scope)
		return read{rec, ok}, err
	})
	rec, ok := got.rec, got.ok
	switch {
	case err != nil:
		writeErr(w, http.StatusServiceUnavailable, "%v", events.ExplainBrokerError(err))
		return true
	case !ok:
		return false
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": id, "scope": scope, "source": "index", "events": rec.Events,
		"evaluations": rec.Evaluations, "memories": rec.Memories, "pair_contexts": rec.PairContexts})
	return true
}
