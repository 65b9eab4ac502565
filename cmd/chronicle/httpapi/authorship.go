package httpapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
)

// Who a memory event comes from is the authenticated caller on every HTTP
// path (issue 11 item 4): the memory routes and MCP set it from the token,
// and POST /v1/events holds the memory bank's three author fields to the
// same rule, so that a token cannot write history under another author or
// make consensus alone by posing as several sources. A walkthrough showed
// one token lifting a memory's usage from 0 to 3 with three made-up
// sources and then applying a single signal without consensus, and a
// feedback written as "token:admin". Producers writing straight to Kafka
// are inside the cluster's perimeter and not checked.
//
//   - memory.feedback.v1 data.source, memory.retrieved.v1 data.source,
//     memory.recorded.v1 data.recorded_by and
//     coordination.session.started.v1 data.recorded_by: absent → set to
//     "token:<caller>"; equal to it → kept; anything else → 403 naming the
//     field. A session's recorded_by goes with the memories distilled
//     from it, so whole sessions one token wrote are one author of their
//     memories' usages: before, three such sessions whose memories merged
//     counted as three users and let the token's single signal apply
//     without consensus (a gap the last closing notes listed).
//   - search.resumed.v1 and workflow.decision.answered.v1 data.by: the
//     same rule, as POST /v1/searches/{id}/resume and POST
//     /v1/workflows/{id}/decisions/{did} apply it (resumeBy); on a
//     service without tokens a given by is kept as sent, an absent one
//     set to "token:local". Before, any name was recorded as the
//     decision's actor, "token:admin" from a project:a token included (an
//     agent-runtime developer's walkthrough for searches, a workflows
//     walkthrough for a workflow's human decision).
//   - memory.retrieved.v1 data.session_id → 403: a usage counted by
//     session is written by GET /v1/memories/search?session_id=, which
//     checks that the session exists in a scope the caller reads.
//   - memory.retrieved.v1 data.reader_scopes: absent → kept absent (the
//     query is then shown only to the token and to readers of every
//     scope); the token's own read scopes (memories.ReaderScopes, in any
//     order) → kept; anything else → 403: it decides who sees the query
//     in a memory's history (memories.Retrieval.QueryVisible).
//   - memory.feedback.v1 time: absent (the log's receive time is used) or
//     within FeedbackClockSkew of the server's clock; else 403 naming
//     /time. The memory bank counts votes by a feedback's time (one vote
//     per source and polarity per 7 days, consensus within 7 days), so a
//     backdated signal was never "within 7 days" of the same source's
//     applied one: one token pruned a memory four sources used with
//     backdated negative feedback (a downstream user's walkthrough).
//     A resend of a feedback the memory bank already applied (same source,
//     id and content; the time is no part of an event's identity, see
//     projections.ContentHash) is let through whatever its time: it is a
//     plain duplicate, answered 202 as any duplicate is and dropped by the
//     memory bank, so a client retrying a send it is unsure of with the
//     original time after FeedbackClockSkew got a 403 for a vote that
//     stood (a walkthrough's finding). Any other feedback out of the window
//     gets the 403, which says to resend without time or with the present.
//     Whether the memory bank applied it is read in the store of the
//     member that owns chronicle.memories: on a cluster, a member that
//     does not own it and holds no such feedback forwards the request to
//     the owner, which answers it (before, such a member answered the
//     late resend of an applied feedback 403, the owner 202).
//   - any event whose source starts with "chronicle/" (in any case) →
//     403 naming /source: Chronicle's own writers use those sources
//     (reservedSource).
//   - coordination.minute.recorded.v1 whose data.actor starts with
//     "chronicle/" (in any case) → 403: Chronicle's own workers write those minutes
//     (the pair worker's pair_improvement_completed, which GET
//     /v1/sessions/{id}/improvement reads as improved_by).

// FeedbackClockSkew is how far from the server's clock the time of a
// memory.feedback.v1 sent to POST /v1/events may be.
const FeedbackClockSkew = 5 * time.Minute

// reservedActor prefixes the actors of the minutes Chronicle's workers
// write (pair.MinuteActor).
const reservedActor = "chronicle/"

// reservedSource prefixes the source attribute of the events Chronicle
// writes itself: its processors' derived events ("chronicle/<processor>"),
// its workers' and its routes' ("chronicle/memory-tools",
// "chronicle/api/workflows/…"). An event's idempotency key is its scope,
// source and id, and some of those ids are derived from what a caller
// sends (POST /v1/memories' Idempotency-Key, memories.RecordEventID): a
// token that could write such a source through POST /v1/events could
// take another token's key first (a review's finding).
const reservedSource = "chronicle/"

// authorField is the data member naming the author of an event type, ""
// for types without one (events.AuthorMember).
func authorField(t events.Type) string { return events.AuthorMember(t) }

// stampAuthor applies the rule above to envs[i] for caller c; it returns
// an error body for a refused event (403) or nil, with the event's data
// rewritten when the author was absent. applied reports whether the memory
// bank applied an event with env's source and id, and whether with env's
// content (projections.Store.AppliedContent; nil: none was); it is asked
// only of a feedback whose time is out of the window, once its author is
// set.
func stampAuthor(envs []events.Envelope, c access.Caller, tokens bool, now time.Time, applied func(env *events.Envelope) (bool, bool, error)) *errorBody {
	for i := range envs {
		if eb := stampOne(envs, i, c, tokens); eb != nil {
			return eb
		}
		if env := &envs[i]; env.Type == events.MemoryFeedback && env.Time != "" {
			if eb := feedbackTime(i, env, now, applied); eb != nil {
				return eb
			}
		}
	}
	return nil
}

// feedbackTime checks the time of the feedback envs[i] (rule above): nil
// when it is the present, or when the event is a resend of one the memory
// bank applied with the same content.
func feedbackTime(i int, env *events.Envelope, now time.Time, applied func(env *events.Envelope) (bool, bool, error)) *errorBody {
	at, err := env.EventTime()
	d := now.Sub(at)
	if err == nil && d <= FeedbackClockSkew && d >= -FeedbackClockSkew {
		return nil
	}
	var seen, same bool
	if applied != nil {
		var aerr error
		if seen, same, aerr = applied(env); aerr != nil {
			idx := i
			return &errorBody{Error: fmt.Sprintf("event %d: /time: %q is not the present, and whether this feedback was accepted before could not be read: %v", i, env.Time, aerr),
				Index: &idx, Pointer: "/time", Reason: "not the present"}
		}
		if seen && same {
			return nil // a resend of an applied feedback: a plain duplicate
		}
	}
	idx := i
	why := fmt.Sprintf("a feedback's time is when the memory bank counts its vote, so it must be the present (within %s of this server's clock %s)", FeedbackClockSkew, now.UTC().Format(time.RFC3339))
	if seen {
		return &errorBody{Error: fmt.Sprintf("event %d: /time: %q: %s, and the feedback accepted under this source and id (%s, %s) has other content, so this is no resend of it: send a new feedback with a new id, and without time or with the present time", i, env.Time, why, env.Source, env.ID),
			Index: &idx, Pointer: "/time", Reason: "not the present; the id holds another feedback"}
	}
	return &errorBody{Error: fmt.Sprintf("event %d: /time: %q: %s; the memory bank holds no feedback with this source and id (%s, %s), so it is not taken for a resend: send it again without time (the log's receive time is used) or with the present time; should an earlier send have been written after all, that is a plain duplicate, since the time is no part of an event's identity", i, env.Time, why, env.Source, env.ID),
		Index: &idx, Pointer: "/time", Reason: reasonNotResent}
}

// reasonNotResent is the reason of feedbackTime's 403 for a feedback out
// of the window that the memory bank of this store never applied. On a
// cluster member that does not own chronicle.memories POST /v1/events
// then sends the request on to the owner (toTopicOwner), whose memory
// bank is the one that knows.
const reasonNotResent = "not the present, and no resend of an accepted feedback"

// stampOne applies the author rules to envs[i] for caller c; tokens says
// whether the service has tokens (without them every caller is "local":
// no identity to tell sessions apart by, so a session start is left as
// sent and its memories' merges count each session as before).
func stampOne(envs []events.Envelope, i int, c access.Caller, tokens bool) *errorBody {
	who := "token:" + c.Name
	env := &envs[i]
	if strings.HasPrefix(strings.ToLower(env.Source), reservedSource) {
		idx := i
		return &errorBody{Error: fmt.Sprintf("event %d: /source: %q: sources %s* are Chronicle's own writers' (its processors, workers and routes); a producer's event names its own source", i, env.Source, reservedSource),
			Index: &idx, Pointer: "/source", Reason: "reserved for Chronicle's writers"}
	}
	if env.Type == events.MinuteRecorded {
		var m struct {
			Actor string `json:"actor"`
		}
		if json.Unmarshal(env.Data, &m) == nil && strings.HasPrefix(strings.ToLower(m.Actor), reservedActor) {
			idx := i
			return &errorBody{Error: fmt.Sprintf("event %d: /data/actor: %q: actors %s* are Chronicle's own workers; a producer's minute names its own actor", i, m.Actor, reservedActor),
				Index: &idx, Pointer: "/data/actor", Reason: "reserved for Chronicle's workers"}
		}
		return nil
	}
	field := authorField(env.Type)
	if field == "" || env.Type == events.SessionStarted && !tokens {
		return nil
	}
	if (env.Type == events.SearchResumed || env.Type == events.WorkflowDecisionAnswered) && !tokens {
		// no identity to check a name against (resumeBy): a given one is
		// kept as sent; an absent one is set to token:local below
		var d struct {
			By string `json:"by"`
		}
		if json.Unmarshal(env.Data, &d) == nil && d.By != "" {
			return nil
		}
	}
	idx := i
	var data map[string]json.RawMessage
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return &errorBody{Error: fmt.Sprintf("event %d: /data: %v", i, err), Index: &idx, Pointer: "/data", Reason: "not a JSON object"}
	}
	if env.Type == events.MemoryRetrieved {
		if _, has := data["session_id"]; has {
			return &errorBody{Error: fmt.Sprintf("event %d: /data/session_id: a usage counted by session is written by GET /v1/memories/search?session_id=, which checks the session; an event of this route counts by its token (%s)", i, who),
				Index: &idx, Pointer: "/data/session_id", Reason: "not accepted on the HTTP API"}
		}
		// reader_scopes decides who sees the query in a memory's history
		// (memories.Retrieval.QueryVisible): only the token's own grants
		if raw, has := data["reader_scopes"]; has {
			var got []string
			own := memories.ReaderScopes(c.Read)
			if json.Unmarshal(raw, &got) != nil || !slices.Equal(memories.ReaderScopes(got), own) || len(got) != len(own) {
				want, _ := json.Marshal(own)
				return &errorBody{Error: fmt.Sprintf("event %d: /data/reader_scopes: %s are not this token's read scopes; leave it out (the query is then shown only to the token and to readers of every scope) or send %s", i, raw, want),
					Index: &idx, Pointer: "/data/reader_scopes", Reason: "must be the authenticated caller's read scopes"}
			}
		}
	}
	if raw, has := data[field]; has {
		var got string
		if json.Unmarshal(raw, &got) != nil || got != who {
			return &errorBody{Error: fmt.Sprintf("event %d: /data/%s: %s is not this token's identity; leave it out (it is set to %s) or send %s", i, field, raw, who, who),
				Index: &idx, Pointer: "/data/" + field, Reason: "must be the authenticated caller"}
		}
		return nil
	}
	data[field], _ = json.Marshal(who)
	raw, err := json.Marshal(data)
	if err != nil {
		return &errorBody{Error: fmt.Sprintf("event %d: /data: %v", i, err), Index: &idx, Pointer: "/data", Reason: "not re-encodable"}
	}
	env.Data = raw
	if err := events.Validate(env); err != nil {
		return &errorBody{Error: fmt.Sprintf("event %d: %v", i, err), Index: &idx, Pointer: "/data/" + field, Reason: "invalid with the author set"}
	}
	return nil
}
