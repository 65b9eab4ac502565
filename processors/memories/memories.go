// Package memories is the memory-bank processor (ReasoningBank design): it
// records memories (explicit ones from producers, distilled ones from
// sessions), merges duplicates, and keeps each memory's confidence from
// feedback signals (with consensus while a memory is young), usage, decay on
// clock ticks and pruning. Every change is kept in the memory's history with
// the event that caused it.
//
// It consumes chronicle.memories, one totally ordered stream, so its state
// (which needs the order of events across memories: duplicates by content,
// decay of every memory at a tick) is a deterministic function of the log.
//
// Projection rows (under p/memories/):
//
//	m/<key>                       Memory
//	d/<scope>/<content address>   memory id of the first memory with that normalised title+content
//	i/<memory id>\x00<scope>      index from a bare memory id to the scopes that hold it (empty value)
//	h/<key>/<seq, 6 digits>       Change
//	s/<key>/<seq, 6 digits>       Pending signal
//	u/<key>/<usage identity hash> a source that used the memory (empty value)
//	r/<key>/<seq, 6 digits>       Retrieval: who retrieved the memory, when, at which log position
//
// <key> is the memory's events.EntityKey, scope "/" memory id: feedback or a
// retrieval in one scope never reaches a memory of another scope (it names
// a memory that does not exist there and is dead-lettered).
package memories

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/projections"
)

// Name is the processor's and projection's name.
const Name = "memories"

// Memory is the projected state of one memory.
type Memory struct {
	ID          string   `json:"id"`
	Scope       string   `json:"scope"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	Outcome     string   `json:"outcome"`
	Tags        []string `json:"tags,omitempty"`
	Source      string   `json:"source"`
	// SourceSessions are the last MaxSourceSessions sessions whose
	// recordings made or merged into the memory, in log order;
	// SourceSessionCount counts all of them (each also has a row
	// ms/<memory key>\x00<session id>), so a memory distilled from
	// thousands of sessions does not rewrite a growing list on every merge.
	SourceSessions     []string `json:"source_sessions,omitempty"`
	SourceSessionCount int      `json:"source_session_count,omitempty"`
	Evidence           int      `json:"evidence"` // recordings merged into this memory
	Confidence         float64  `json:"confidence"`
	// UsageCount counts the distinct sources that used the memory: the
	// sessions (else callers) whose searches returned it, the sources of
	// its signals and the sessions (else recorders) whose recordings
	// merged into it (see use and mergeSource). The single-signal rule
	// (Consensus) compares not this count but usageAuthors, the same
	// usages grouped by the caller who caused them.
	UsageCount int    `json:"usage_count"`
	CreatedAt  string `json:"created_at"`
	// LastDecayAt is when the confidence last decayed: CreatedAt until
	// the first decay (a walkthrough read it as a decay at creation).
	LastDecayAt string `json:"last_decay_at"`
	// DecayClock is the time (a clock.tick.v1's) from which the memory's
	// next decay counts; empty until the first tick after the memory
	// entered the bank. See decayAll for the time base.
	DecayClock string `json:"decay_clock,omitempty"`
	LastUsedAt string `json:"last_used_at,omitempty"`
	Pruned     bool   `json:"pruned"`
	PrunedAt   string `json:"pruned_at,omitempty"`
	Changes    int    `json:"changes"`
	Signals    int    `json:"signals"`
	// Retrievals counts the memory.retrieved.v1 events applied to it (its
	// r/ rows), every one, whoever retrieved it.
	Retrievals int `json:"retrievals,omitempty"`
}

// Change is one entry of a memory's history.
type Change struct {
	EventID string          `json:"event_id"`
	Type    events.Type     `json:"type"`
	Time    string          `json:"time"`
	Reason  string          `json:"reason"` // one of Reasons
	Old     float64         `json:"old"`
	New     float64         `json:"new"`
	Signals []AppliedSignal `json:"signals,omitempty"`
	// Position is where the causing event sits in the log,
	// "topic:partition:offset" (projections.Position).
	Position string `json:"position,omitempty"`
	// Author is who caused the change: a signal's source ("token:<name>",
	// "mcp:<client>", "session:<id>"), a recording's recorded_by, else
	// "session:" and the session it was distilled from, else the causing
	// event's CloudEvents source attribute; "clock" for decay.
	Author string `json:"author,omitempty"`
	// Comment is the feedback signal's comment, when it had one.
	Comment string `json:"comment,omitempty"`
}

// Retrieval is one memory.retrieved.v1 applied to a memory: a search
// (HTTP, MCP, PAIR retrieval) returned it.
type Retrieval struct {
	EventID  string `json:"event_id"`
	Time     string `json:"time"`
	Position string `json:"position"`
	// Source is who ran the search (token:<name>, mcp:<client>,
	// session:<id>); empty for an event written before sources existed.
	Source    string   `json:"source,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Query     string   `json:"query,omitempty"`
	Rank      int      `json:"rank,omitempty"`
	Relevance *float64 `json:"relevance,omitempty"`
	// ReaderScopes are the scopes the searcher could read when it searched
	// (memory.retrieved.v1's reader_scopes, ReaderScopes' form; "*" for
	// every scope); empty for an event written before the field existed
	// or by a writer that did not name them. See QueryVisible.
	ReaderScopes []string `json:"reader_scopes,omitempty"`
	// QueryWithheld is set, in an answer only (never in the projection),
	// when Query (and ReaderScopes) were left out because the reader may
	// not see them (QueryVisible).
	QueryWithheld bool `json:"query_withheld,omitempty"`
}

// ReaderScopes is the form memory.retrieved.v1's reader_scopes takes: the
// valid scopes (events.ValidScope) of scopes sorted and without repeats,
// only "*" when they hold it, nil for none. A grant that is no valid
// scope names no scope anything is stored in, so it is dropped.
func ReaderScopes(scopes []string) []string {
	if slices.Contains(scopes, "*") {
		return []string{"*"}
	}
	var out []string
	for _, sc := range scopes {
		if events.ValidScope(sc) {
			out = append(out, sc)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// QueryVisible reports whether a reader may see the retrieval's query: a
// query may carry anything its searcher could read (another tenant's
// data included), whichever scope the search was filtered to, so it is
// shown only to a reader that reads every scope (readsAll), to the
// searcher itself (source equal to r.Source) and to a reader that reads
// every one of r.ReaderScopes (canRead each; never when they hold "*").
// A retrieval without ReaderScopes (written before the field existed, or
// by a writer that did not name them) is shown only to the first two:
// who could read what when it searched is not known.
func (r Retrieval) QueryVisible(source string, readsAll bool, canRead func(scope string) bool) bool {
	switch {
	case readsAll:
		return true
	case r.Source != "" && r.Source == source:
		return true
	case len(r.ReaderScopes) == 0 || slices.Contains(r.ReaderScopes, "*"):
		return false
	}
	for _, sc := range r.ReaderScopes {
		if !canRead(sc) {
			return false
		}
	}
	return true
}

func retrievalKey(key string, n int) string { return "r/" + key + "/" + projections.SeqKey(n) }

// AppliedSignal is a signal whose delta moved confidence.
type AppliedSignal struct {
	EventID  string  `json:"event_id"`
	Signal   string  `json:"signal"`
	Positive bool    `json:"positive"`
	Delta    float64 `json:"delta"`
	Time     string  `json:"time,omitempty"`
}

// ErrUnknownMemory is the processing error of feedback or a retrieval for
// a memory that was never recorded (the event is dead-lettered).
var ErrUnknownMemory = errors.New("unknown memory")

// ErrUnknownSignal is the processing error of a signal kind without a
// delta.
var ErrUnknownSignal = errors.New("unknown signal")

// Processor is the memory-bank processor.
type Processor struct{}

// Name implements processors.Processor.
func (Processor) Name() string { return Name }

// Topics implements processors.Processor.
func (Processor) Topics() []events.Topic { return []events.Topic{events.TopicMemories} }

// NeedsTotalOrder implements processors.TotalOrder.
func (Processor) NeedsTotalOrder() bool { return true }

func memKey(key string) string { return "m/" + key }

// sourceKey is the row that records session sid as a source of the memory
// with key.
func sourceKey(key, sid string) string { return "ms/" + key + "\x00" + sid }

// MaxSourceSessions bounds Memory.SourceSessions.
const MaxSourceSessions = 100

// addSource records session sid as a source of m once: its ms/ row, the
// count and the bounded list of the last ones.
func addSource(tx *projections.Tx, m *Memory, sid string) error {
	if sid == "" {
		return nil
	}
	if _, seen, err := tx.Get(sourceKey(m.Key(), sid)); err != nil || seen {
		return err
	}
	if err := tx.Set(sourceKey(m.Key(), sid), nil); err != nil {
		return err
	}
	m.SourceSessionCount++
	m.SourceSessions = append(m.SourceSessions, sid)
	if n := len(m.SourceSessions); n > MaxSourceSessions {
		m.SourceSessions = append([]string(nil), m.SourceSessions[n-MaxSourceSessions:]...)
	}
	return nil
}

var idIndexKey = projections.IDIndexKey

// Key is the memory's events.EntityKey (scope "/" id), the key of its rows.
func (m Memory) Key() string              { return events.EntityKey(m.Scope, m.ID) }
func digestKey(scope, addr string) string { return "d/" + scope + "/" + addr }
func changeKey(id string, n int) string   { return "h/" + id + "/" + projections.SeqKey(n) }
func signalKey(id string, n int) string   { return "s/" + id + "/" + projections.SeqKey(n) }

// Apply implements processors.Processor.
func (Processor) Apply(tx *projections.Tx, env *events.Envelope) error {
	at, err := env.EventTime()
	if err != nil {
		return err
	}
	switch env.Type {
	case events.MemoryRecorded:
		var d events.MemoryRecordedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		return record(tx, env, d)
	case events.MemoryFeedback:
		var d events.MemoryFeedbackData
		if err := env.Decode(&d); err != nil {
			return err
		}
		return feedback(tx, env, at, d)
	case events.MemoryRetrieved:
		var d events.MemoryRetrievedData
		if err := env.Decode(&d); err != nil {
			return err
		}
		m, err := loadNamed(tx, events.EntityKey(env.EffectiveScope(), d.MemoryID))
		if err != nil {
			return err
		}
		who := d.Source
		if d.SessionID != "" {
			who = "session:" + d.SessionID
		}
		// a search as a session counts that session once, authored by
		// the caller who ran it (d.Source): see use and usageAuthors
		if err := use(tx, m, who, d.Source); err != nil {
			return err
		}
		if err := tx.SetJSON(retrievalKey(m.Key(), m.Retrievals), Retrieval{EventID: env.ID, Time: env.TimeUTC(), Position: tx.Position().String(),
			Source: d.Source, SessionID: d.SessionID, Query: d.Query, Rank: d.Rank, Relevance: d.Relevance, ReaderScopes: d.ReaderScopes}); err != nil {
			return err
		}
		m.Retrievals++
		m.LastUsedAt = env.TimeUTC()
		return save(tx, m)
	case events.ClockTick:
		return decayAll(tx, env, at)
	case events.DistillationCompleted:
		return distilled(tx, env)
	}
	return nil
}

// distilled parses the model answer carried by a distillation.completed
// event (never calling the model) and records each memory it holds. An
// answer that does not parse is a processing error: the event goes to the
// dead-letter topic with the reason.
func distilled(tx *projections.Tx, env *events.Envelope) error {
	var d struct {
		SessionID   string `json:"session_id"`
		RawResponse string `json:"raw_response"`
		RecordedBy  string `json:"recorded_by"`
	}
	if err := env.Decode(&d); err != nil {
		return err
	}
	mems, err := distill.ParseResponse(d.RawResponse)
	if err != nil {
		// named as the schema's refusals are (its dead letter had no pointer)
		return &events.ValidationError{Index: -1, Pointer: "/data/raw_response", Reason: fmt.Sprintf("session %s: the model's answer does not parse: %v", d.SessionID, err)}
	}
	for _, m := range mems {
		rec := events.MemoryRecordedData{
			MemoryID: distill.MemoryID(env.EffectiveScope(), m.Title, m.Content), Title: m.Title, Description: m.Description,
			Content: m.Content, Outcome: m.Outcome, Tags: m.Tags, Source: "distilled", SourceSession: d.SessionID,
			RecordedBy: d.RecordedBy,
		}
		if err := record(tx, env, rec); err != nil {
			return err
		}
	}
	return nil
}

// memberError is a rejection naming the member of the event at fault by
// its JSON pointer (MemberPointer, which the engine keeps in the dead
// letter's pointer).
type memberError struct {
	pointer string
	err     error
}

func (e *memberError) Error() string         { return e.err.Error() }
func (e *memberError) Unwrap() error         { return e.err }
func (e *memberError) MemberPointer() string { return e.pointer }

// loadNamed is load for the memory a feedback or retrieval names in its
// memory_id: ErrUnknownMemory points at /data/memory_id (its dead letter
// had no pointer: an analyst's walkthrough).
func loadNamed(tx *projections.Tx, key string) (*Memory, error) {
	m, err := load(tx, key)
	if errors.Is(err, ErrUnknownMemory) {
		return nil, &memberError{pointer: "/data/memory_id", err: err}
	}
	return m, err
}

// load reads the memory with key (events.EntityKey); a memory the scope
// does not hold is ErrUnknownMemory.
func load(tx *projections.Tx, key string) (*Memory, error) {
	var m Memory
	ok, err := tx.GetJSON(memKey(key), &m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("memory %s: %w", key, ErrUnknownMemory)
	}
	return &m, nil
}

func save(tx *projections.Tx, m *Memory) error { return tx.SetJSON(memKey(m.Key()), m) }

// addChange appends c to m's history, with the causing event's log
// position.
func addChange(tx *projections.Tx, m *Memory, c Change) error {
	c.Position = tx.Position().String()
	if err := tx.SetJSON(changeKey(m.Key(), m.Changes), c); err != nil {
		return err
	}
	m.Changes++
	return nil
}

// InitialConfidence of a new memory (ReasoningBank design): 0.8 explicit,
// 0.7 distilled success, 0.6 distilled failure. A memory.recorded.v1 that
// carries initial_confidence (events.MemoryRecordedData.InitialConfidence,
// Chronicle's own writers only: the PAIR improvement memory) starts at that
// value instead (see record).
func InitialConfidence(source, outcome string) float64 {
	switch {
	case source != "distilled":
		return distill.InitialExplicit
	case outcome == events.OutcomeSuccess:
		return distill.InitialDistilledSuccess
	default:
		return distill.InitialDistilledFailure
	}
}

// record creates a memory, or adds evidence to the memory of the same scope
// whose normalised title and content are equal. A new memory's confidence
// is d.InitialConfidence when set (clamped to [0, 1], 6 decimals), else
// InitialConfidence(source, outcome); evidence never changes confidence,
// so an initial_confidence on a merging event is ignored.
func record(tx *projections.Tx, env *events.Envelope, d events.MemoryRecordedData) error {
	scope := env.EffectiveScope()
	addr := distill.MemoryID(scope, d.Title, d.Content)
	existing, found, err := tx.Get(digestKey(scope, addr))
	if err != nil {
		return err
	}
	if !found {
		if _, taken, err := tx.Get(memKey(events.EntityKey(scope, d.MemoryID))); err != nil || taken {
			if err == nil {
				err = fmt.Errorf("memory id %s already holds other content", d.MemoryID)
			}
			return err
		}
		c := InitialConfidence(d.Source, d.Outcome)
		if d.InitialConfidence != nil {
			c = Clamp(*d.InitialConfidence)
		}
		m := &Memory{
			ID: d.MemoryID, Scope: scope, Title: d.Title, Description: d.Description, Content: d.Content,
			Outcome: d.Outcome, Tags: d.Tags, Source: d.Source, Evidence: 1, Confidence: c,
			CreatedAt: env.TimeUTC(), LastDecayAt: env.TimeUTC(),
		}
		if err := addSource(tx, m, d.SourceSession); err != nil {
			return err
		}
		if err := tx.Set(digestKey(scope, addr), []byte(m.ID)); err != nil {
			return err
		}
		if err := tx.Set(idIndexKey(m.ID, scope), nil); err != nil {
			return err
		}
		if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: ReasonCreated, Old: c, New: c, Author: recorder(env, d)}); err != nil {
			return err
		}
		if err := emitCreated(tx, env, d, m, ""); err != nil {
			return err
		}
		return save(tx, m)
	}
	m, err := load(tx, events.EntityKey(scope, string(existing)))
	if err != nil {
		return err
	}
	if d.Outcome != m.Outcome {
		// not evidence for it (ReasonIgnoredOutcome): in its history only
		if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: ReasonIgnoredOutcome, Old: m.Confidence, New: m.Confidence, Author: recorder(env, d)}); err != nil {
			return err
		}
		return save(tx, m)
	}
	m.Evidence++
	if err := use(tx, m, mergeSource(d), d.RecordedBy); err != nil {
		return err
	}
	if err := addSource(tx, m, d.SourceSession); err != nil {
		return err
	}
	if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: ReasonEvidence, Old: m.Confidence, New: m.Confidence, Author: recorder(env, d)}); err != nil {
		return err
	}
	if err := emitCreated(tx, env, d, m, m.ID); err != nil {
		return err
	}
	return save(tx, m)
}

// AnonymousRecorder is the usage source of a merged recording that names
// neither a source session nor a recorder (see mergeSource).
const AnonymousRecorder = "recording:anonymous"

// mergeSource is the source a recording merged into a memory counts as
// using it: its source session ("session:<id>"), else its recorder
// (recorded_by: "token:<name>", "mcp:<client>"), else AnonymousRecorder.
// So re-recording the same memory counts its caller once per memory: the
// merge used to give use no source, which counted as a new one each time,
// and one token that recorded a memory five times through POST
// /v1/memories lifted its usage to 4, after which a single feedback of that
// token applied without consensus. Merges that name no one cannot be told
// apart, so together they count as one source (the event's source
// attribute is the producer's claim, not an authenticated caller).
func mergeSource(d events.MemoryRecordedData) string {
	switch {
	case d.SourceSession != "":
		return "session:" + d.SourceSession
	case d.RecordedBy != "":
		return d.RecordedBy
	}
	return AnonymousRecorder
}

// recorder is the author of a recording: its recorded_by, else the
// session it was distilled from, else the event's source attribute.
func recorder(env *events.Envelope, d events.MemoryRecordedData) string {
	switch {
	case d.RecordedBy != "":
		return d.RecordedBy
	case d.SourceSession != "":
		return "session:" + d.SourceSession
	}
	return env.Source
}

// emitCreated emits memory.created.v1 for the recording d that entered
// the bank as memory m (mergedInto: m's id when d was merged into it, ""
// when it created m). Title, description and tags are m's, as its
// confidence and evidence are: a merged recording's own text differs
// (case, spacing, another description and tags), and a subscriber that
// upserted the memory from the event overwrote its text with the
// recording's (a subscriber walkthrough, 2026-12-06); the recording's
// text is in its memory.recorded.v1, recorded_event_id. Its id derives
// from the causing event, the type and the number of memories the event
// recorded before (projections.Tx.Emit), so a replay emits the same bytes
// and a subscriber drops a repeat by its (source, id).
func emitCreated(tx *projections.Tx, env *events.Envelope, d events.MemoryRecordedData, m *Memory, mergedInto string) error {
	return tx.Emit(events.MemoryCreated, events.MemoryCreatedData{
		MemoryID: d.MemoryID, MergedInto: mergedInto, Title: m.Title, Description: m.Description, Outcome: m.Outcome,
		Tags: m.Tags, Source: d.Source, SourceSession: d.SourceSession, Confidence: m.Confidence, Evidence: m.Evidence,
		RecordedEventID: env.ID, Pruned: m.Pruned,
	})
}

func feedback(tx *projections.Tx, env *events.Envelope, at time.Time, d events.MemoryFeedbackData) error {
	m, err := loadNamed(tx, events.EntityKey(env.EffectiveScope(), d.MemoryID))
	if err != nil {
		return err
	}
	delta, ok := Delta(d.Signal, d.Positive)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownSignal, d.Signal)
	}
	if m.Pruned {
		// pruned is final (the memory stays in history only): a later
		// signal is recorded as ignored and moves nothing — it used to
		// raise the confidence of a memory that stayed pruned, and
		// publish that change on the learned topic
		who := d.Source
		if who == "" && env.SessionID != "" {
			who = "session:" + env.SessionID
		}
		if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: ReasonIgnoredPruned, Old: m.Confidence, New: m.Confidence, Author: who, Comment: d.Comment}); err != nil {
			return err
		}
		return save(tx, m)
	}
	var stored []Pending
	sp := "s/" + m.Key() + "/"
	if err := tx.Scan(sp, func(k string, v []byte) (bool, error) {
		if !projections.OwnRow(sp, k) {
			return true, nil // a signal of a memory whose id extends this one's
		}
		var p Pending
		if err := gojson.Unmarshal(v, &p); err != nil {
			return false, err
		}
		stored = append(stored, p)
		return true, nil
	}); err != nil {
		return err
	}
	who := d.Source
	if who == "" && env.SessionID != "" {
		who = "session:" + env.SessionID
	}
	stored = append(stored, Pending{EventID: env.ID, Time: env.TimeUTC(), Signal: d.Signal, Positive: d.Positive, Delta: delta, Source: who,
		Comment: d.Comment, Position: tx.Position().String()})
	usage, err := usageAuthors(tx, m)
	if err != nil {
		return err
	}
	apply, repeats := Consensus(usage, stored, at)
	reason := ReasonSignal
	if usage < ConsensusUsage || len(apply) > 1 {
		reason = ReasonConsensus // with stored signals (Consensus)
	}
	if err := use(tx, m, who, who); err != nil {
		return err
	}
	m.LastUsedAt = env.TimeUTC()
	old := m.Confidence
	var applied []AppliedSignal
	sum := 0.0
	for _, i := range repeats {
		stored[i].Applied, stored[i].Repeat = true, true
		if i < len(stored)-1 {
			if err := tx.SetJSON(signalKey(m.Key(), i), stored[i]); err != nil {
				return err
			}
		}
	}
	for _, i := range apply {
		stored[i].Applied = true
		sum += stored[i].Delta
		applied = append(applied, AppliedSignal{EventID: stored[i].EventID, Signal: stored[i].Signal, Positive: stored[i].Positive, Delta: stored[i].Delta, Time: stored[i].Time})
		if i < len(stored)-1 {
			if err := tx.SetJSON(signalKey(m.Key(), i), stored[i]); err != nil {
				return err
			}
		}
	}
	if err := tx.SetJSON(signalKey(m.Key(), len(stored)-1), stored[len(stored)-1]); err != nil {
		return err
	}
	m.Signals = len(stored)
	if len(apply) == 0 {
		why := ReasonPending
		if stored[len(stored)-1].Repeat {
			why = ReasonRepeat
		}
		if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: why, Old: old, New: old, Author: author(env, who), Comment: d.Comment}); err != nil {
			return err
		}
		return save(tx, m)
	}
	return setConfidence(tx, env, m, Clamp(old+sum), reason, applied, author(env, who), d.Comment)
}

// author is who gave a signal: its source (who), else the event's
// source attribute.
func author(env *events.Envelope, who string) string {
	if who != "" {
		return who
	}
	return env.Source
}

// use counts a use of m by who (a source: "session:<id>", "token:<name>",
// …), caused by author (the caller whose request wrote the usage; "" or
// who itself when who is that caller): UsageCount grows only for a source
// not seen before on m (a u/ row remembers it). An event that names no
// source (who "") counts as a source of its own, as every use counted
// before sources existed, so older logs replay to the same counts.
//
// The u/ row of a session used on a caller's request (a search with
// session_id, a recording naming a source_session) holds that caller,
// the first one's: usageAuthors groups usages by it. Other rows stay
// empty, so a log without such usages projects the bytes it did.
func use(tx *projections.Tx, m *Memory, who, author string) error {
	if who == "" {
		m.UsageCount++
		return nil
	}
	k := usageKey(m.Key(), who)
	_, seen, err := tx.Get(k)
	if err != nil || seen {
		return err
	}
	var v []byte
	if author != "" && author != who {
		v = []byte(author)
	}
	if err := tx.Set(k, v); err != nil {
		return err
	}
	m.UsageCount++
	return nil
}

// usageKey is the u/ row of source who on the memory with key.
func usageKey(key, who string) string { return "u/" + key + "/" + usageHash(who) }

func usageHash(who string) string {
	h := sha256.Sum256([]byte(who))
	return hex.EncodeToString(h[:16])
}

// usageAuthors is the usage count Consensus compares with ConsensusUsage:
// m's usages grouped by who caused them. A usage's author is the caller
// its u/ row holds (use), else its source itself; a usage without a source
// is an author of its own. So three sessions one token started and
// searched as (GET /v1/memories/search?session_id=) are one author, and
// its single signal then still needs the consensus of 2 distinct sources:
// before, usage_count 3 from its own three sessions let that signal apply
// alone (issue 11 item 4, a gap the last closing note listed). Usages
// written by no caller — distilled merges naming their session, a
// producer's usage naming a session and no source, every usage of a log
// written before usages had sources — count each session as an author,
// as they counted before. The count is at most m.UsageCount and stops at
// ConsensusUsage; below it m.UsageCount is returned without a scan.
func usageAuthors(tx *projections.Tx, m *Memory) (int, error) {
	return usageAuthorsIn(tx.Scan, m)
}

// usageAuthorsIn is usageAuthors over the rows scan reads (a Tx's, or the
// store's as they are now: storeScan).
func usageAuthorsIn(scan func(prefix string, fn func(k string, v []byte) (bool, error)) error, m *Memory) (int, error) {
	if m.UsageCount < ConsensusUsage {
		return m.UsageCount, nil
	}
	prefix := "u/" + m.Key() + "/"
	authors := map[string]bool{}
	rows := 0
	anonymous := 0
	err := scan(prefix, func(k string, v []byte) (bool, error) {
		if !projections.OwnRow(prefix, k) {
			return true, nil // a usage of a memory whose id extends this one's
		}
		rows++
		if len(v) > 0 {
			authors[usageHash(string(v))] = true
		} else {
			authors[k[len(prefix):]] = true
		}
		return len(authors) < ConsensusUsage, nil
	})
	if err != nil {
		return 0, err
	}
	if len(authors) < ConsensusUsage {
		// usages without a source have no row: each is an author of its own
		anonymous = m.UsageCount - rows
	}
	return min(len(authors)+anonymous, m.UsageCount), nil
}

// History reasons (Change.Reason): every value the processor writes is one
// of these constants, listed in Reasons (openapi.json's MemoryHistory enum
// is checked against them).
const (
	// ReasonCreated is the first entry of a memory: its initial confidence.
	ReasonCreated = "created"
	// ReasonEvidence is a repeated recording of the same memory: more
	// evidence, confidence unchanged.
	ReasonEvidence = "evidence"
	// ReasonSignal is a signal applied at once (a memory used by
	// ConsensusUsage distinct sources or more).
	ReasonSignal = "signal"
	// ReasonConsensus is a confidence change made by agreeing stored
	// signals (Consensus).
	ReasonConsensus = "consensus"
	// ReasonPending is a signal stored, waiting for consensus: not applied.
	ReasonPending = "pending"
	// ReasonDecay is a confidence change made by the clock (decay).
	ReasonDecay = "decay"
	// ReasonPruned is the memory falling below PruneBelow.
	ReasonPruned = "pruned"
)

// Reasons lists every history reason the processor writes.
var Reasons = []string{ReasonCreated, ReasonEvidence, ReasonSignal, ReasonConsensus, ReasonPending, ReasonRepeat, ReasonIgnoredPruned, ReasonIgnoredOutcome, ReasonDecay, ReasonPruned}

// ReasonIgnoredOutcome is the history reason of a recording whose title and
// content are the memory's but whose outcome is the other one: recorded,
// not evidence (a failure report does not support a success strategy, nor
// the other way round). Before, it was merged as evidence, and its outcome,
// tags and description were dropped without a word (a walkthrough,
// 2026-11-30).
const ReasonIgnoredOutcome = "ignored: outcome differs"

// ReasonIgnoredPruned is the history reason of a signal that reached a
// pruned memory: recorded, not applied.
const ReasonIgnoredPruned = "ignored: pruned"

// ReasonRepeat is the history reason of a signal on a memory used by
// ConsensusUsage sources or more whose source already applied one of the
// same polarity within ConsensusWindow (Consensus): recorded, not applied.
const ReasonRepeat = "repeat"

// setConfidence records a confidence change (history + derived event) and
// prunes the memory when it falls below PruneBelow.
func setConfidence(tx *projections.Tx, env *events.Envelope, m *Memory, c float64, reason string, applied []AppliedSignal, by, comment string) error {
	old := m.Confidence
	m.Confidence = c
	if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: reason, Old: old, New: c, Signals: applied, Author: by, Comment: comment}); err != nil {
		return err
	}
	if c != old {
		if applied == nil {
			applied = []AppliedSignal{}
		}
		if err := tx.EmitIn(m.Scope, events.MemoryConfidenceChanged, map[string]any{
			"memory_id": m.ID, "old": old, "new": c, "signals_applied": applied, "reason": reason,
		}); err != nil {
			return err
		}
	}
	if c < PruneBelow && !m.Pruned {
		m.Pruned, m.PrunedAt = true, env.TimeUTC()
		if err := addChange(tx, m, Change{EventID: env.ID, Type: env.Type, Time: env.TimeUTC(), Reason: ReasonPruned, Old: c, New: c, Author: by}); err != nil {
			return err
		}
		if err := tx.EmitIn(m.Scope, events.MemoryPruned, map[string]any{"memory_id": m.ID, "confidence": c, "threshold": PruneBelow}); err != nil {
			return err
		}
	}
	return save(tx, m)
}

// decayAll applies decay at a clock.tick.v1 at time at to every memory
// not pruned.
//
// Time base (issue 11; the design says "−0.05 per month of age" without
// saying whose clock): age is counted on the clock of the ticks only,
// from the first tick a memory sees. At that first tick the memory's
// DecayClock is set to the tick's time and nothing is lost; at each later
// tick it loses Decay(DecayClock, tick time) and DecayClock moves to the
// tick. The time attribute of the event that recorded the memory — a
// producer's time, 2024 for the bundled tau-bench sessions — is never used,
// so importing old sessions does not make their memories old: the first
// tick of `serve` used to prune the whole demo bank (about 30 months ×
// 0.05). Ticks are events in the log, so decay stays a deterministic
// function of it; the cost is that a memory's first tick interval (at
// most --decay-interval, 24 h by default) is not decayed. A tick earlier
// than a memory's DecayClock changes nothing.
func decayAll(tx *projections.Tx, env *events.Envelope, at time.Time) error {
	var ids []string
	if err := tx.Scan("m/", func(k string, _ []byte) (bool, error) {
		ids = append(ids, k[2:])
		return true, nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		m, err := load(tx, id)
		if err != nil {
			return err
		}
		if m.Pruned {
			continue
		}
		if m.DecayClock == "" {
			m.DecayClock = env.TimeUTC()
			if err := save(tx, m); err != nil {
				return err
			}
			continue
		}
		from, err := time.Parse(time.RFC3339Nano, m.DecayClock)
		if err != nil {
			return fmt.Errorf("memory %s: decay_clock: %w", id, err)
		}
		loss := Decay(from, at)
		if loss == 0 {
			continue
		}
		c := Clamp(m.Confidence - loss)
		lost := m.Confidence - c
		if lost <= 0 {
			// the loss since the clock is below what a confidence of 6
			// decimals shows (ticks less than ~26 s apart): keep counting
			// from the clock. Moving it here dropped the loss, so under
			// `serve --decay-interval 20s` no memory ever decayed and every
			// tick wrote a "decay 0.8 → 0.8" history row per memory.
			continue
		}
		clock := env.TimeUTC()
		if math.Abs(lost-loss) > loss/100 {
			// the rounding moved more than 1% of this loss (short tick
			// intervals): the clock moves by the time the applied loss
			// stands for, so what the rounding kept or took is counted at
			// the next tick instead of being lost or taken twice. Ticks a
			// few minutes apart or more (24 h by default) move the clock
			// to the tick, as before.
			clock = from.Add(time.Duration(lost / DecayPerMonth * float64(Month))).UTC().Format(time.RFC3339Nano)
		}
		m.LastDecayAt, m.DecayClock = env.TimeUTC(), clock
		if err := setConfidence(tx, env, m, c, ReasonDecay, nil, "clock", ""); err != nil {
			return err
		}
	}
	return nil
}
