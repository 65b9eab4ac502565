package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The workflow routes: a LangGraph-style checkpointer surface over the
// workflows projection. Reads are scoped like sessions (?scope=, else the
// one readable scope holding the id; 404 for another scope's workflow).
// Writes that may start a workflow (updates, checkpoints, commands,
// decision requests, completion) go to ?scope=, else to the one readable
// scope holding the id (several: 409), else to the caller's default write
// scope, where they start one; writes that need the workflow's past
// (answers, resume, fork) resolve it like reads, among writable (fork:
// readable) scopes. On a cluster the scopes holding the id are asked of
// every member (writeToHeldScope). Every write waits
// until the workflows processor applied the event and answers with the
// new state (202 when the processor did not get to it within 5 s).

// workflowPath splits /v1/workflows/<escaped id>/<sub...>: the id is the
// first segment, percent-decoded.
func workflowPath(r *http.Request) (id string, sub []string, err error) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v1/workflows/")
	segs := strings.Split(rest, "/")
	if id, err = url.PathUnescape(segs[0]); err != nil {
		return "", nil, fmt.Errorf("workflow id: %v", err)
	}
	for _, s := range segs[1:] {
		u, err := url.PathUnescape(s)
		if err != nil {
			return "", nil, fmt.Errorf("path: %v", err)
		}
		sub = append(sub, u)
	}
	return id, sub, nil
}

func (s *Server) workflowService() *workflows.Service {
	return &workflows.Service{Store: s.P.Store, Producer: s.P.Producer, MaxStateBytes: s.WorkflowStateMax}
}

// workflowGet serves GET /v1/workflows/{id}, /{id}/checkpoints (the
// history, oldest first) and /{id}/checkpoints/{checkpoint id} (the state
// as of that checkpoint: time travel).
func (s *Server) workflowGet(w http.ResponseWriter, r *http.Request) {
	id, sub, err := workflowPath(r)
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	if len(sub) > 2 || len(sub) > 0 && sub[0] != "checkpoints" {
		writeErr(w, http.StatusNotFound, "no such route: GET %s (GET /v1/workflows/{id}[/checkpoints[/{checkpoint_id}]])", r.URL.Path)
		return
	}
	key, ok := entityKey(w, r, "workflow", id, workflows.Scopes, s.P.Store, CallerOf(r).CanRead, nil)
	if !ok {
		return
	}
	st, ok, err := workflows.Get(s.P.Store, key)
	switch {
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	case !ok:
		entityNotFound(w, r, "workflow", id)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	switch len(sub) {
	case 0:
		v := workflows.View{State: st}
		if st.Checkpoint != nil {
			if v.CheckpointID, err = s.checkpointIDOf(ctx, key, st.Checkpoint.EventID); err != nil {
				s.writeLogErr(w, r, err)
				return
			}
		}
		writeState(w, http.StatusOK, v)
	case 1:
		limit, cursor, ok := checkpointPage(w, r)
		if !ok {
			return
		}
		// the page from the rows: only its checkpoints are read
		if h, next, found, rows, err := workflows.HistoryPage(s.P.Store, key, st.Checkpoints, cursor, limit, CheckpointsPageBytes); err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return
		} else if rows {
			if !found {
				writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("%q is not a checkpoint_id of workflow %q (a next_cursor of this list)", cursor, id))
				return
			}
			if h == nil {
				h = []workflows.HistoryEntry{}
			}
			writeState(w, http.StatusOK, map[string]any{"workflow_id": id, "scope": st.Scope, "checkpoints": h, "next_cursor": next})
			return
		}
		// checkpoints applied by an older Chronicle have no id row: the
		// whole history, read from the log, then paged
		h, err := workflows.History(ctx, s.brokers(), s.P.Store, key)
		if err != nil {
			s.writeLogErr(w, r, err)
			return
		}
		if cursor != "" {
			i := slices.IndexFunc(h, func(e workflows.HistoryEntry) bool { return e.CheckpointID == cursor })
			if i < 0 {
				writeParamErr(w, http.StatusBadRequest, "cursor", fmt.Sprintf("%q is not a checkpoint_id of workflow %q (a next_cursor of this list)", cursor, id))
				return
			}
			h = h[i+1:]
		}
		next := ""
		if limit > 0 && len(h) > limit {
			h = h[:limit]
			next = h[limit-1].CheckpointID
		}
		// about CheckpointsPageBytes a page, with or without limit: each
		// checkpoint holds its whole state, and the list without limit
		// was 180 MB in one body for a walkthrough's workflow (four such
		// reads took serve from 0.2 to 2.4 GB)
		size := 0
		for i, e := range h {
			b, err := json.Marshal(e)
			if err != nil {
				writeErr(w, http.StatusInternalServerError, "%v", err)
				return
			}
			if size += len(b); i > 0 && size > CheckpointsPageBytes {
				h, next = h[:i], h[i-1].CheckpointID
				break
			}
		}
		if h == nil {
			h = []workflows.HistoryEntry{}
		}
		writeState(w, http.StatusOK, map[string]any{"workflow_id": id, "scope": st.Scope, "checkpoints": h, "next_cursor": next})
	case 2:
		cp, ok := s.checkpointAt(ctx, w, r, key, sub[1], false)
		if ok {
			writeState(w, http.StatusOK, workflows.HistoryEntry{CheckpointID: sub[1], Checkpoint: cp})
		}
	}
}

// CheckpointsPageBytes bounds a page of GET /v1/workflows/{id}/checkpoints:
// it ends before the checkpoint that would take it past this many bytes
// (about: the checkpoints' JSON), holding at least one, with its
// next_cursor — with or without limit (a variable for tests).
var CheckpointsPageBytes = 4 << 20

// checkpointPage reads GET /v1/workflows/{id}/checkpoints' limit (1 to
// 500; absent: every checkpoint within CheckpointsPageBytes) and cursor (a
// next_cursor: the checkpoint_id the previous page ended with), answering
// 400 naming the parameter for a bad limit. Each checkpoint carries its
// whole state, so a long-running workflow's list is read in pages (a
// walkthrough's single checkpoint was 1.78 MB, and ?limit was ignored).
func checkpointPage(w http.ResponseWriter, r *http.Request) (limit int, cursor string, ok bool) {
	q := r.URL.Query()
	if l := q.Get("limit"); l != "" || q.Has("limit") {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			writeParamErr(w, http.StatusBadRequest, "limit", fmt.Sprintf("%q is not an integer from 1 to 500", l))
			return 0, "", false
		}
		limit = n
	}
	return limit, q.Get("cursor"), true
}

// checkpointIDOf is the log position of the checkpoint event eventID of
// the workflow ("" when the log does not show it): the id the processor
// recorded when it applied the checkpoint; for one applied before it
// recorded ids, one fetch for a checkpoint these routes wrote, else one
// scan of its partition (workflows.CheckpointIDOf).
func (s *Server) checkpointIDOf(ctx context.Context, key, eventID string) (string, error) {
	return workflows.CheckpointIDOf(ctx, s.brokers(), s.P.Store, key, WorkflowSource(key), eventID)
}

// brokers are the addresses of the broker the log is read from: none on a
// read-only server (chronicle inspect starts no broker), where the
// workflow reads answer from the projection alone and a read that needs
// the log fails with workflows.ErrNoLog (writeLogErr).
func (s *Server) brokers() []string {
	if s.P.Broker == nil {
		return nil
	}
	return s.P.Broker.Addrs()
}

// writeLogErr answers a workflow read's failure to read the log: 503, on
// a read-only server naming read-only mode and why the read needs the log
// (workflows.ErrNoLog: a checkpoint whose id the projection does not hold).
func (s *Server) writeLogErr(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, workflows.ErrNoLog) {
		writeErr(w, http.StatusServiceUnavailable, "%s: %s reads the Kafka log, and inspect starts no broker: %v", ReadOnlyMessage, r.URL.Path, err)
		return
	}
	writeErr(w, http.StatusServiceUnavailable, "%v", err)
}

// checkpointAt resolves a checkpoint id of the workflow; it answers 400
// for a malformed id, 404 for one that is no checkpoint of the workflow.
// The 400 of an id from the body (resume's and fork's checkpoint_id)
// names /checkpoint_id and the reason, as the routes' other 400s (it had
// neither: a walkthrough, 2026-11-30; fromBody); an id from the path has
// no pointer.
func (s *Server) checkpointAt(ctx context.Context, w http.ResponseWriter, r *http.Request, key, cid string, fromBody bool) (workflows.Checkpoint, bool) {
	pos, err := workflows.ParseCheckpointID(cid)
	if err != nil {
		reason := strings.TrimPrefix(err.Error(), "no such checkpoint: checkpoint_id ")
		if fromBody {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: "checkpoint_id: " + reason, Pointer: "/checkpoint_id", Reason: reason})
			return workflows.Checkpoint{}, false
		}
		// the path's id, named as the path parameter (it read "no such
		// checkpoint: …", a 404's words, in a 400: a workflows
		// walkthrough, 2026-12-06)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "checkpoint_id (the path's): " + reason, Parameter: "checkpoint_id", Reason: reason})
		return workflows.Checkpoint{}, false
	}
	cp, err := workflows.CheckpointAt(ctx, s.brokers(), s.P.Store, key, pos)
	switch {
	case errors.Is(err, workflows.ErrNoCheckpoint) && fromBody:
		// the body's member, named as the 400 names it (this 404 had no
		// pointer: a workflows walkthrough, 2026-12-06)
		writeJSON(w, http.StatusNotFound, errorBody{Error: "checkpoint_id: " + err.Error(), Pointer: "/checkpoint_id", Reason: "no checkpoint of this workflow"})
		return cp, false
	case errors.Is(err, workflows.ErrNoCheckpoint):
		writeErr(w, http.StatusNotFound, "%v", err)
		return cp, false
	case err != nil:
		s.writeLogErr(w, r, err)
		return cp, false
	}
	return cp, true
}

// WorkflowSource is the CloudEvents source of the events the workflow
// routes write for the workflow with entity key key (scope/id):
// "chronicle/api/workflows/<scope>/<id>". Events written before it (source
// "chronicle/api") keep theirs; a retry of such a write under the new
// source is a new write.
func WorkflowSource(key string) string { return "chronicle/api/workflows/" + key }

// workflowBody is the union of the write routes' bodies; each route reads
// its fields.
type workflowBody struct {
	EventID           string                     `json:"event_id"`
	Layer             int                        `json:"layer"`
	Channel           string                     `json:"channel"`
	Update            json.RawMessage            `json:"update"`
	ProcessedCommands []string                   `json:"processed_commands"`
	CommandID         string                     `json:"command_id"`
	Command           string                     `json:"command"`
	Args              json.RawMessage            `json:"args"`
	By                string                     `json:"by"`
	DecisionID        string                     `json:"decision_id"`
	Kind              string                     `json:"kind"`
	Question          string                     `json:"question"`
	Options           []string                   `json:"options"`
	Answer            string                     `json:"answer"`
	Comment           string                     `json:"comment"`
	CheckpointID      string                     `json:"checkpoint_id"`
	WorkflowID        string                     `json:"workflow_id"`
	Updates           map[string]json.RawMessage `json:"updates"`
	Outcome           string                     `json:"outcome"`
	Output            json.RawMessage            `json:"output"`
}

// workflowFields are the body fields of each write route (decisions/{id}
// is "answer"), as openapi.json describes them.
var workflowFields = map[string][]string{
	"updates":     {"event_id", "layer", "channel", "update"},
	"checkpoints": {"event_id", "layer", "processed_commands"},
	"commands":    {"event_id", "command", "args", "by", "command_id"},
	"decisions":   {"event_id", "kind", "question", "options", "layer", "decision_id"},
	"answer":      {"event_id", "answer", "by", "comment"},
	"resume":      {"event_id", "checkpoint_id"},
	"fork":        {"event_id", "checkpoint_id", "workflow_id", "updates"},
	"complete":    {"event_id", "outcome", "output"},
}

// workflowRequired are the members each write route requires, as
// openapi.json's request schemas list them (the fork's, and a decision's
// answer, which a decision without options may leave out, are checked
// where the route reads them).
var workflowRequired = map[string][]string{
	"updates":   {"channel", "update"},
	"commands":  {"command"},
	"decisions": {"kind", "question"},
	"complete":  {"outcome"},
}

// workflowPost serves the write routes:
//
//	POST /v1/workflows/{id}/updates            {layer, channel, update}: a reducer update
//	POST /v1/workflows/{id}/checkpoints        {layer, processed_commands}: a layer checkpoint; answers its checkpoint_id
//	POST /v1/workflows/{id}/commands           {command, args, by, command_id?}: enqueue a command (replan_dag: see replanArgs)
//	POST /v1/workflows/{id}/decisions          {kind agent|human, question, options, layer, decision_id?}: a decision point (interrupt)
//	POST /v1/workflows/{id}/decisions/{did}    {answer, by, comment}: answer it (resume with the answer)
//	POST /v1/workflows/{id}/resume             {checkpoint_id?}: back to a checkpoint (default the state's: the last saved or resumed to), e.g. after a crash
//	POST /v1/workflows/{id}/fork               {checkpoint_id, workflow_id, updates{channel: update}}: a new workflow from a checkpoint
//	POST /v1/workflows/{id}/complete           {outcome, output}
//
// Every body may name its event_id (a retry with the same id is applied
// once); without one the server makes one up.
func (s *Server) workflowPost(w http.ResponseWriter, r *http.Request) {
	id, sub, err := workflowPath(r)
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	if err := events.CheckID(id); err != nil {
		writeErr(w, http.StatusBadRequest, "workflow id: %v", err)
		return
	}
	action := ""
	if len(sub) > 0 {
		action = sub[0]
	}
	known := map[string]int{"updates": 1, "checkpoints": 1, "commands": 1, "decisions": 1, "resume": 1, "fork": 1, "complete": 1}
	if known[action] == 0 || len(sub) > 2 || len(sub) == 2 && action != "decisions" {
		writeErr(w, http.StatusNotFound, "no such route: POST %s (updates, checkpoints, commands, decisions[/{decision_id}], resume, fork, complete)", r.URL.Path)
		return
	}
	var b workflowBody
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		err = bodyError(err)
		writeBodyErr(w, err, "")
		return
	}
	if err := decodeRead(body, &b); err != nil {
		writeBodyErr(w, err, "")
		return
	}
	// workflowBody is every route's fields: one route's field sent to
	// another was silently dropped (an answer sent to /decisions); each
	// route takes its own, as openapi.json says
	route := action
	if len(sub) == 2 {
		route = "answer"
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) == nil {
		for name := range members {
			if !slices.Contains(workflowFields[route], name) {
				// with its pointer and reason, as every other 400 of the
				// route (a walkthrough, 2026-11-30: this one had neither)
				reason := fmt.Sprintf("not a field of POST %s (its fields: %s)", r.URL.Path, strings.Join(workflowFields[route], ", "))
				writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("body: %q is %s", name, reason), Pointer: "/" + pointerToken(name), Reason: reason})
				return
			}
		}
	}
	// a required member left out is said so, with its pointer: it was
	// refused by the event's schema as the empty value, so a missing
	// channel read "channel: value must be one of …" (a workflows
	// walkthrough, 2026-12-06); what openapi.json requires of each body
	for _, name := range workflowRequired[route] {
		if _, ok := members[name]; !ok {
			writeFieldErr(w, name, "/"+name, fmt.Sprintf("required by POST %s", r.URL.Path))
			return
		}
	}
	if b.EventID == "" {
		b.EventID = "wf-" + uuid.NewString()
	}
	c := CallerOf(r)
	// the workflow the write names
	var key string
	switch {
	case action == "fork":
		k, ok := entityKey(w, r, "workflow", id, workflows.Scopes, s.P.Store, c.CanRead, nil)
		if !ok {
			return
		}
		key = k
	case action == "resume" || len(sub) == 2:
		// resume answers from the last checkpoint, an answer from the
		// pending decision: a scope the caller reads and writes
		// (readsAndWrites)
		k, ok := entityKey(w, r, "workflow", id, workflows.Scopes, s.P.Store, readsAndWrites(r), nil)
		if !ok {
			return
		}
		key = k
	default:
		sc := r.URL.Query().Get("scope")
		if sc == "" {
			// the workflow the same URL reads: the one scope the caller
			// reads that holds the id (several: 409, as a read answers; a
			// scope it reads but may not write: the 403 below). Only an
			// id the caller sees nowhere starts a workflow in its default
			// write scope. Before, every write without ?scope= went to
			// the default write scope, so a write to a workflow of
			// another of the caller's scopes silently started a second
			// one there, and the reads of the id turned into 409s.
			held, err := workflows.Scopes(s.P.Store, id)
			if err != nil {
				writeErr(w, http.StatusInternalServerError, "%v", err)
				return
			}
			held = slices.DeleteFunc(held, func(x string) bool { return !c.CanRead(x) })
			switch len(held) {
			case 0:
				if parts := s.restoring(string(events.TopicWorkflows)); len(parts) > 0 && !oneScope(c) {
					// the workflow may be in another of the caller's
					// scopes, in a record not restored yet: the default
					// write scope would start a second one
					writeRestoring(w, fmt.Sprintf("no scope you may read holds workflow %q yet", id), string(events.TopicWorkflows), parts)
					return
				}
				sc = c.DefaultWriteScope()
			case 1:
				sc = held[0]
			default:
				writeErr(w, http.StatusConflict, "workflow %q exists in several scopes you may access (%s): add ?scope=", id, strings.Join(held, ", "))
				return
			}
		}
		if sc == "" {
			sc = events.DefaultScope
		}
		if !events.ValidScope(sc) {
			writeParamErr(w, http.StatusBadRequest, "scope", events.ScopeReason(sc))
			return
		}
		if !c.CanWrite(sc) {
			if r.URL.Query().Get("scope") == "" && len(c.Write) == 0 {
				// it named no scope: say why none applies, as POST
				// /v1/memories does, not the default's name (a read-only
				// token was told "may not write org:default": a walkthrough)
				writeErr(w, http.StatusForbidden, "scope: this token writes no scope (token %q is read-only)", c.Name)
				return
			}
			writeErr(w, http.StatusForbidden, "scope: this token may not write %s", sc)
			return
		}
		key = events.EntityKey(sc, id)
		// on a cluster the owner of the workflow's partition holds its
		// state: a write without ?scope= is sent on to it with the scope
		// resolved. toOwner resolves it across the members first
		// (writeToHeldScope: this store holds only the partitions this
		// member owns); this is the fallback when it could not ask them
		// (the group view changed in between). Before, it was answered
		// from this store, without the workflow: complete said 404 for a
		// workflow the same URL reads, and the other writes waited 5 s for
		// an apply made elsewhere (found by a cluster walkthrough).
		if r.URL.Query().Get("scope") == "" && r.Header.Get(ForwardedHeader) == "" {
			if v, owner, p, known := s.awaitOwner(r.Context(), events.TopicWorkflows, key); !known {
				s.noOwner(w, v, string(events.TopicWorkflows), p, "the write")
				return
			} else if owner != "" {
				s.forwardWrite(w, r, body, sc, v, owner, p)
				return
			}
		}
	}
	scope, _, _ := events.SplitEntityKey(key)
	st, exists, err := workflows.Get(s.P.Store, key)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// a retry of a write the workflow applied (its event_id, sent again)
	// is answered as the first write was (the service answers its
	// position, or 409 naming /event_id for other content under the id),
	// whatever the state says now: an answered decision is no longer
	// pending, a completed workflow takes no more events and a fork's new
	// workflow exists, and these checks answered 404 and 409 to a client
	// retrying after a lost answer (found by a new user's walkthrough)
	retryKey := key
	if action == "fork" && events.CheckID(b.WorkflowID) == nil {
		retryKey = events.EntityKey(scope, b.WorkflowID)
	}
	retry, err := workflows.Applied(s.P.Store, retryKey, b.EventID)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// completing a workflow that does not exist is a mistyped id, not a
	// new workflow born completed (it was: 200 and an empty completed
	// workflow; found by a walkthrough)
	if !exists && action == "complete" && !retry {
		writeErr(w, http.StatusNotFound, "workflow %q not found in %s: complete ends a workflow that exists (a write to /updates starts one)", id, scope)
		return
	}
	if !exists && !retry && action != "fork" && id == reservedWorkflowID {
		writeErr(w, http.StatusBadRequest, "workflow id %q: %s", id, reservedWorkflowWhy)
		return
	}
	// a success while a decision is still pending would leave it
	// unanswerable for good (a completed workflow takes no answer): the
	// route refuses it; failure and aborted end the workflow with the
	// question open, as they say. The processor does not refuse it, so a
	// log written before replays as it did (a workflows walkthrough,
	// 2026-11-30: a human approval pending, complete success answered 200)
	if exists && !retry && action == "complete" && b.Outcome == "success" && st.Status != workflows.StatusCompleted && len(st.PendingDecisions) > 0 {
		ids := make([]string, 0, len(st.PendingDecisions))
		for _, d := range st.PendingDecisions {
			ids = append(ids, d.DecisionID)
		}
		pending := " (" + strings.Join(ids, ", ") + ")"
		if !c.CanRead(scope) {
			pending = "" // the state, which a write-only caller may not read
		}
		writeJSON(w, http.StatusConflict, errorBody{Error: fmt.Sprintf("outcome: success while decisions are pending%s: answer them first (POST …/decisions/{decision_id}), or complete with failure or aborted", pending), Pointer: "/outcome", Reason: "decisions pending"})
		return
	}
	if exists && st.Status == workflows.StatusCompleted && action != "fork" && !retry {
		if !c.CanRead(scope) {
			// the outcome is the workflow's state, which a write-only
			// caller may not read
			writeErr(w, http.StatusConflict, "workflow %q completed: it takes no more events", id)
			return
		}
		// a fork starts from one of the workflow's checkpoints: one that
		// saved none cannot be forked (the hint said "fork it" of a fork
		// that had saved none: a workflows walkthrough, 2026-12-06)
		how := "fork it from one of its checkpoints to go on"
		switch {
		case st.Checkpoints == 0 && st.Parent != nil:
			how = fmt.Sprintf("it saved no checkpoint to fork from; fork its parent %q from %s to go on", st.Parent.WorkflowID, st.Parent.CheckpointID)
		case st.Checkpoints == 0:
			how = "it saved no checkpoint, so it cannot be forked either; start another workflow"
		}
		writeErr(w, http.StatusConflict, "workflow %q completed (%s): it takes no more events; %s", id, st.Outcome, how)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var typ events.Type
	var data any
	var next *int
	var cpID string
	switch action {
	case "updates":
		typ, data = events.WorkflowReducerApplied, events.ReducerAppliedData{WorkflowID: id, Layer: b.Layer, Channel: b.Channel, Update: b.Update}
	case "checkpoints":
		typ, data = events.WorkflowCheckpointSaved, events.CheckpointSavedData{WorkflowID: id, Layer: b.Layer, ProcessedCommands: b.ProcessedCommands}
	case "commands":
		if b.CommandID == "" {
			b.CommandID = b.EventID
		}
		if b.Command == events.CommandReplanDAG {
			if !c.CanRead(scope) {
				// the plan is computed from the running DAG and pending
				// commands, and its errors name them (a pending replan's
				// id, the tools of a cycle): like resume, a write the
				// caller must read the workflow for; the read's 404
				// whether it exists or not (tenant-isolation review)
				entityNotFound(w, r, "workflow", id)
				return
			}
			args, ok := s.replanArgs(w, r, scope, st, b.Args)
			if !ok {
				return
			}
			b.Args = args
		}
		typ, data = events.WorkflowCommandEnqueued, events.CommandEnqueuedData{WorkflowID: id, CommandID: b.CommandID, Command: b.Command, Args: b.Args, By: b.By}
	case "decisions":
		if len(sub) == 2 {
			did := sub[1]
			i := slices.IndexFunc(st.PendingDecisions, func(d workflows.Decision) bool { return d.DecisionID == did })
			if i < 0 && !retry {
				// answered already: the decision exists and takes one
				// answer, a 409 as a search resumed twice (before, a 404
				// "not pending", as for a decision never asked)
				if d, ok := answeredDecision(st, did); ok {
					writeErr(w, http.StatusConflict, "decision %q of workflow %q was answered already (%q by %q at %s): a decision takes one answer", did, id, d.Answer, d.By, d.AnsweredAt)
					return
				}
				writeErr(w, http.StatusNotFound, "decision %q: not pending in workflow %q, nor answered", did, id)
				return
			}
			// a decision that offered options takes one of them
			if i >= 0 && len(st.PendingDecisions[i].Options) > 0 && !slices.Contains(st.PendingDecisions[i].Options, b.Answer) {
				opts := st.PendingDecisions[i].Options
				reason := fmt.Sprintf("%q is not one of the decision's options %q", b.Answer, opts)
				if b.Answer == "" {
					reason = fmt.Sprintf("required: one of the decision's options %q", opts)
				}
				writeJSON(w, http.StatusBadRequest, errorBody{Error: "answer: " + reason, Pointer: "/answer", Reason: reason})
				return
			}
			// who answered is the caller, as who resumed a search
			// (resumeBy): before, any by was recorded, "token:admin" from
			// a project:a token included, and an absent one as "" (a
			// workflows walkthrough's finding)
			if b.By, err = resumeBy(b.By, c, s.Tokens != nil); err != nil {
				writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error(), Pointer: "/by", Reason: "must be the authenticated caller"})
				return
			}
			typ, data = events.WorkflowDecisionAnswered, events.DecisionAnsweredData{WorkflowID: id, DecisionID: did, Answer: b.Answer, By: b.By, Comment: b.Comment}
			break
		}
		if b.DecisionID == "" {
			b.DecisionID = b.EventID
		}
		typ, data = events.WorkflowDecisionRequested, events.DecisionRequestedData{WorkflowID: id, DecisionID: b.DecisionID, Kind: b.Kind, Layer: b.Layer, Question: b.Question, Options: b.Options}
	case "resume":
		cid := b.CheckpointID
		var cp workflows.Checkpoint
		if cid == "" {
			if st.Checkpoint == nil {
				writeErr(w, http.StatusNotFound, "workflow %q has no checkpoint to resume from", id)
				return
			}
			// the checkpoint the state stands on, as GET names it (the
			// last saved, or the one a resume went back to since: the
			// last saved undid a rewind; a walkthrough, 2026-12-06), from
			// the projection (its row and the id the processor
			// recorded), not from a scan of the partition: before, this
			// read the whole partition back, so a resume took longer the
			// more any workflow of the partition wrote
			last, found, err := workflows.CurrentCheckpoint(ctx, s.brokers(), s.P.Store, key, WorkflowSource(key))
			if err != nil {
				writeErr(w, http.StatusServiceUnavailable, "%v", err)
				return
			}
			if !found {
				writeErr(w, http.StatusNotFound, "workflow %q has no checkpoint in the log", id)
				return
			}
			cid, cp = last.CheckpointID, last.Checkpoint
		} else {
			var ok bool
			if cp, ok = s.checkpointAt(ctx, w, r, key, cid, true); !ok {
				return
			}
			// a retried checkpoint's later copy resolves to its first
			// copy's checkpoint, and the resume names that one, as GET
			// /v1/workflows/{id} and the checkpoint history do (it named
			// the copy's position: a workflows walkthrough's finding)
			if first, err := s.checkpointIDOf(ctx, key, cp.EventID); err == nil && first != "" {
				cid = first
			}
		}
		if cp.Layer == math.MaxInt {
			// next_layer would wrap to the smallest integer (a walkthrough
			// saw -9223372036854775808; openapi.json says minimum 0)
			writeErr(w, http.StatusConflict, "checkpoint_id: the checkpoint's layer is %d, the largest integer: there is no next layer to resume at", cp.Layer)
			return
		}
		n := cp.Layer + 1
		next, cpID = &n, cid
		typ, data = events.WorkflowResumed, events.ResumedData{WorkflowID: id, CheckpointID: cid, CheckpointEventID: cp.EventID}
	case "fork":
		// each refusal names its member, pointer and reason, as the
		// route's other 400s (these had neither: a walkthrough, 2026-11-30)
		if b.WorkflowID == "" {
			writeFieldErr(w, "workflow_id", "/workflow_id", "required: the new workflow's id")
			return
		}
		if b.CheckpointID == "" {
			writeFieldErr(w, "checkpoint_id", "/checkpoint_id", "required: the parent's checkpoint the fork starts from")
			return
		}
		if err := events.CheckID(b.WorkflowID); err != nil {
			writeFieldErr(w, "workflow_id", "/workflow_id", err.Error())
			return
		}
		if b.WorkflowID == reservedWorkflowID && !retry {
			writeErr(w, http.StatusBadRequest, "workflow_id: %q: %s", b.WorkflowID, reservedWorkflowWhy)
			return
		}
		if !c.CanWrite(scope) {
			writeErr(w, http.StatusForbidden, "scope: this token may not write %s, the scope of the fork", scope)
			return
		}
		// in a cluster the new workflow's partition may be another
		// member's: the fork is written there, where its idempotency key,
		// the new workflow's rows and the processor's dry run are, and
		// that member reads the parent's checkpoint from here (issue 15).
		// Before, this member wrote it and asked the other whether the id
		// was taken: a retry of the fork found it taken and answered 409
		// (its idempotency key is not in this store)
		childKey := events.EntityKey(scope, b.WorkflowID)
		v, owner, p, known := s.awaitOwner(ctx, events.TopicWorkflows, childKey)
		if !known {
			s.noOwner(w, v, string(events.TopicWorkflows), p, "the fork into "+strconv.Quote(b.WorkflowID))
			return
		}
		if owner != "" {
			if r.Header.Get(forkHopHeader) != "" {
				// sent on by the parent's owner while the partition moved
				// (a rebalance), or the header set by a client: only the
				// new workflow's owner writes a fork, where its
				// idempotency key is, so a retry after the move is
				// answered as the first write
				w.Header().Set("Retry-After", "1")
				why := "the partition moved while the fork was sent on to its owner: retry the fork"
				if r.Header.Get(ForwardedHeader) == "" {
					why = "a request carrying " + forkHopHeader + " is written only by that partition's owner: send it without the header"
				}
				writeErr(w, http.StatusServiceUnavailable, "workflow_id: this member (%s) does not own partition %d of %s, where %q goes (%s does); %s", v.self, p, events.TopicWorkflows, b.WorkflowID, owner, why)
				return
			}
			s.forwardFork(w, r, body, scope, v, owner, p)
			return
		}
		if _, taken, err := workflows.Get(s.P.Store, childKey); err != nil {
			writeErr(w, http.StatusInternalServerError, "workflow_id: %q: %v", b.WorkflowID, err)
			return
		} else if taken && !retry {
			writeErr(w, http.StatusConflict, "workflow_id: %q already exists in %s", b.WorkflowID, scope)
			return
		}
		cp, ok := s.forkCheckpoint(ctx, w, r, key, id, b.CheckpointID)
		if !ok {
			return
		}
		raw, err := json.Marshal(cp.State)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return
		}
		raw = events.UnescapeHTML(raw) // markup as sent, not six times its size
		key = childKey
		typ, data = events.WorkflowForked, events.ForkedData{WorkflowID: b.WorkflowID, ParentWorkflowID: id, ParentCheckpointID: b.CheckpointID, State: raw, Update: b.Updates}
	case "complete":
		typ, data = events.WorkflowCompleted, events.WorkflowCompletedData{WorkflowID: id, Outcome: b.Outcome, Output: b.Output}
	}
	// the source names the workflow: the idempotency key is (source, id),
	// so an event_id is the workflow's own — the same id in another
	// workflow or another scope is another write, not a conflict (with
	// one source for every workflow, one tenant's ids blocked another's
	// and the 409 told which ids it had used)
	env, err := events.NewVerbatim(typ, WorkflowSource(key), b.EventID, time.Now(), data)
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	// no time attribute: the record's timestamp stands in (CloudEvents
	// time is optional), so a retry with the same event_id has the same
	// content and is a plain duplicate; a stamped time made every retry a
	// conflicting duplicate, dead-lettered
	env.Time = ""
	env.Scope = scope
	if typ == events.WorkflowCheckpointSaved {
		// a retry of a checkpoint already saved: its id is its first position
		if done, err := workflows.Applied(s.P.Store, key, env.ID); err == nil && done {
			if cpID, err = s.checkpointIDOf(ctx, key, env.ID); err != nil {
				writeErr(w, http.StatusServiceUnavailable, "%v", err)
				return
			}
		}
	}
	svc := s.workflowService()
	err = svc.Check(env) // the processor's reason now, before anything is written
	var pos projections.Position
	if err == nil {
		pos, err = svc.Submit(ctx, env)
	}
	var ve *events.ValidationError
	var refusal *workflows.Refusal
	switch {
	case errors.As(err, &refusal):
		code := http.StatusBadRequest
		if errors.Is(err, workflows.ErrCompleted) || errors.Is(err, workflows.ErrNotPending) || errors.Is(err, workflows.ErrDuplicateID) {
			code = http.StatusConflict // the write is well formed; the workflow's state refuses it
		}
		if errors.Is(err, workflows.ErrStateTooLarge) {
			code = http.StatusRequestEntityTooLarge // as an event above the limit: no retry makes it fit
		}
		msg, ptr := refusalMessage(route, refusal)
		if errors.Is(err, workflows.ErrCompleted) && refusal.Written == "" {
			// completed between the route's own check and the dry run: the
			// route's words, not the processor's naming its event type
			// (two answers to one race read differently: a walkthrough)
			msg = fmt.Sprintf("workflow %q completed: it takes no more events; fork it to go on", id)
			refusal.Reason = workflows.ErrCompleted.Error()
		}
		writeJSON(w, code, errorBody{Error: msg, Pointer: ptr, Reason: refusal.Reason})
		return
	case errors.As(err, &ve):
		code := http.StatusBadRequest
		if errors.Is(err, events.ErrEventTooLarge) {
			code = http.StatusRequestEntityTooLarge // as POST /v1/events: no retry makes it fit
		}
		msg, ptr := requestPointer(route, ve.Error(), ve.Pointer, ve.Reason)
		if route == "fork" && errors.Is(err, events.ErrEventTooLarge) {
			// a 70-byte request: what is too large is the parent's state,
			// which the fork's event carries (a walkthrough, 2026-11-30)
			msg = "the fork's event carries the parent's state at the checkpoint, and " + msg + ": fork from an earlier checkpoint, or keep large values out of the workflow's state"
		}
		writeJSON(w, code, errorBody{Error: msg, Pointer: ptr, Reason: ve.Reason})
		return
	case errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge):
		writeErr(w, http.StatusRequestEntityTooLarge, "the broker refused the event as too large (its max.message.bytes is below Chronicle's %d-byte event limit): %v", events.MaxEventBytes, err)
		return
	case errors.Is(err, workflows.ErrIDReused):
		writeJSON(w, http.StatusConflict, errorBody{Error: err.Error(), Pointer: "/event_id", Reason: workflows.ErrIDReused.Error()})
		return
	case errors.Is(err, workflows.ErrRejected):
		writeErr(w, http.StatusConflict, "%v", err)
		return
	case errors.Is(err, workflows.ErrNotProcessed):
		writeJSON(w, http.StatusAccepted, map[string]any{"event_id": env.ID, "position": pos.String(), "status": err.Error()})
		return
	case writeRefused(w, err, "the event was not written"):
		return
	case errors.Is(err, events.ErrNotAcknowledged):
		// the broker may have written it all the same (a cluster
		// walkthrough, 2026-11-30: a complete answered 503 and the
		// workflow ended completed): the same event_id makes a retry safe
		w.Header().Set("Retry-After", "5")
		writeErr(w, http.StatusServiceUnavailable, "the event may still be written (its outcome is unknown): retry with \"event_id\": %q, which applies it once: %v", env.ID, err)
		return
	case err != nil:
		writeErr(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	res := workflows.WriteResult{EventID: env.ID, Position: pos.String(), NextLayer: next, CheckpointID: cpID}
	if typ == events.WorkflowCheckpointSaved && cpID == "" {
		res.CheckpointID = pos.String()
	}
	if ks, _, _ := events.SplitEntityKey(key); !c.CanRead(ks) {
		// a caller that writes the scope but may not read it (a
		// write-only producer) gets what it wrote — event_id, position,
		// checkpoint_id — and not the workflow's state, which GET
		// /v1/workflows/{id} refuses it (before, every write answered the
		// whole state, context secrets included; found by a
		// tenant-isolation review)
		writeJSON(w, http.StatusOK, workflowWriteAck{EventID: res.EventID, Position: res.Position, CheckpointID: res.CheckpointID, NextLayer: res.NextLayer})
		return
	}
	after, _, err := workflows.Get(s.P.Store, key)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	res.State = workflows.View{State: after}
	if after.Checkpoint != nil {
		// as GET /v1/workflows/{id} names it (the write's answer had no
		// state checkpoint_id: a workflows walkthrough, 2026-12-06). The
		// write is done: an id the log must name and cannot now (an older
		// directory without cpid/ rows, the broker away) is left out, not
		// answered as a failed write, which a client would retry
		res.State.CheckpointID, _ = s.checkpointIDOf(ctx, key, after.Checkpoint.EventID)
	}
	writeState(w, http.StatusOK, res)
}

// workflowWriteAck is a workflow write's answer to a caller that may not
// read the workflow's scope: workflows.WriteResult without the state.
type workflowWriteAck struct {
	EventID      string `json:"event_id"`
	Position     string `json:"position"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	NextLayer    *int   `json:"next_layer,omitempty"`
}

// requestPointer names the request's member for an error about the
// event the route writes for one of route's bodies (workflowFields): the
// schema's and the processor's pointers are the event's, so "/id" is the
// request's "/event_id" (an event_id of 257 characters was answered at
// /id, a member the request does not have), and "/data/<member>…" is the
// body's "/<member>…" when the body has that member (events.BodyPointer)
// — fork's "updates" being the event's "update" (a null update on the
// context channel was answered at /data/update, a member no request body
// has; both found by new users' walkthroughs). Other pointers (the path's
// workflow id, what the server fills in) stay the event's.
func requestPointer(route, msg, ptr, reason string) (string, string) {
	if ptr == "/id" {
		return "event_id: " + reason, "/event_id"
	}
	members := map[string]string{}
	for _, f := range workflowFields[route] {
		members[f] = f
	}
	if route == "fork" {
		members["update"] = "updates"
	}
	if route == "answer" {
		// the decision answered is the path's /decisions/{decision_id}:
		// named by its name, as the ask's body names it (two answers
		// racing were told /data/decision_id, a member of no body: a
		// walkthrough, 2026-11-30)
		members["decision_id"] = "decision_id"
	}
	if p, ok := events.BodyPointer(ptr, members); ok {
		return strings.TrimPrefix(p, "/") + ": " + reason, p
	}
	return msg, ptr
}

// refusalMessage is the error text and pointer of a workflow write's
// Refusal: requestPointer's, and for a write that raced another and was
// rejected from the log, its position first — requestPointer's "member:
// reason" dropped it, so such a write read as one refused before anything
// was written (a walkthrough, 2026-11-30: four concurrent asks under one
// decision id).
func refusalMessage(route string, refusal *workflows.Refusal) (msg, ptr string) {
	msg, ptr = requestPointer(route, refusal.Error(), refusal.Pointer, refusal.Reason)
	if refusal.Written != "" && !strings.HasPrefix(msg, "written at ") {
		msg = workflows.WrittenPrefix(refusal.Written) + msg
	}
	return msg, ptr
}

// answeredDecision is the decision did of st's decisions channel (the
// answered ones, in log order), the last when a layer re-run asked it again.
func answeredDecision(st workflows.State, did string) (workflows.Decision, bool) {
	for i := len(st.Decisions) - 1; i >= 0; i-- {
		var d workflows.Decision
		if json.Unmarshal(st.Decisions[i], &d) == nil && d.DecisionID == did {
			return d, true
		}
	}
	return workflows.Decision{}, false
}

// replanArgs computes the plan of a replan_dag command of a workflow of
// scope (st its state, empty for one not started) before it is
// written (suggest.Replan over the workflow's running DAG), so the event
// carries the tool choice and the processor only applies it when a
// checkpoint names the command processed. args.requirement runs the
// hybrid tool search over the tool graph of the workflow's scope (and the
// bundled catalogue), which the caller reads; args.tools names the tools
// and needs no search. It answers 400 naming the field, 409 while another
// replan is pending (its plan was computed on the DAG this one would
// change), 422 {error, cycle} when the merged DAG has a cycle.
func (s *Server) replanArgs(w http.ResponseWriter, r *http.Request, scope string, st workflows.State, raw json.RawMessage) (json.RawMessage, bool) {
	var a workflows.ReplanArgs
	if len(raw) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			// with the pointer into args and the reason, as the route's
			// other refusals of args (this one had the text alone: a
			// workflows walkthrough, 2026-12-06)
			err = bodyError(err)
			const takes = " (replan_dag takes requirement, k, or tools)"
			msg := "args: " + strings.TrimPrefix(err.Error(), "body: ") + takes
			if fe := (*fieldError)(nil); errors.As(err, &fe) {
				writeJSON(w, http.StatusBadRequest, errorBody{Error: msg, Pointer: "/args" + strings.TrimSuffix(fe.pointer, "/"), Reason: fe.reason + takes})
				return nil, false
			}
			writeErr(w, http.StatusBadRequest, "%s", msg)
			return nil, false
		}
		// k left out is the default; k sent out of range (0 included, as
		// on /v1/workflows/suggest) is a 400 naming args.k, checked before
		// the token's scopes (a k of 11 was a 403 for a token that does not
		// read *, a k of 0 a 400; found by a new user's walkthrough)
		var sent struct {
			K *int `json:"k"`
		}
		if json.Unmarshal(raw, &sent) == nil && sent.K != nil && (*sent.K < 1 || *sent.K > 10) {
			writeFieldErr(w, "args.k", "/args/k", suggest.KReason(*sent.K))
			return nil, false
		}
	}
	// A requirement's search reads the tool graph of the workflow's own
	// scope, which the caller reads (checked before this call), and the
	// catalogue: no token that reads * is needed. Before, it was, from
	// when the search read every scope's graph, so an agent could not
	// replan its own workflow by requirement, and the 403 said "this view
	// aggregates every scope" of a command write (a workflows
	// walkthrough, 2026-12-06).
	for _, c := range st.PendingCommands {
		if c.Command == events.CommandReplanDAG {
			// with its pointer and reason, as the route's other refusals
			// (a workflows walkthrough, 2026-12-06)
			writeJSON(w, http.StatusConflict, errorBody{Error: fmt.Sprintf("command: replan_dag %q is pending: a checkpoint must process it before another replan", c.CommandID),
				Pointer: "/command", Reason: "another replan_dag is pending"})
			return nil, false
		}
	}
	var current []string
	if st.DAG != nil {
		current = st.DAG.Tools
	}
	// args.tools are checked against the tool graphs of the scopes the
	// caller reads, as every graph route answers (before, every scope's:
	// a 200 for another tenant's tool and a 400 for a made-up one told a
	// tenant which tools the others have; a walkthrough)
	graphs := everyGraph()
	if c := CallerOf(r); !c.ReadsAll() {
		graphs = graphsOf(c.Read...) // none: the empty graph
	}
	if len(a.Tools) == 0 && a.Requirement != "" {
		// the search picks tools into this workflow's state, which its
		// scope's readers see: only its scope's tool graph (and the
		// catalogue). Before, every scope's: an admin's replan of a
		// project:b workflow wrote project:a's private tools into it (a
		// workflows walkthrough, 2026-11-30)
		graphs = graphsOf(scope) // st.Scope is empty for a workflow not started
	}
	g, err := s.toolGraphIn(graphs)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return nil, false
	}
	cat, err := dagCatalog()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return nil, false
	}
	s.suggestMu.Lock() // the Suggester caches vectors
	defer s.suggestMu.Unlock()
	sg := &s.suggester
	sg.Graph, sg.Catalog = g, cat
	if len(a.Tools) == 0 && a.Requirement != "" {
		if sg.Embedder, err = suggestEmbedder(); err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return nil, false
		}
	}
	plan, err := sg.Replan(r.Context(), current, a)
	var ce *dag.CycleError
	var fe *suggest.FieldError
	switch {
	case errors.As(err, &ce):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "args: the replanned DAG: " + err.Error(), "cycle": ce.Cycle})
		return nil, false
	case errors.As(err, &fe):
		// the command's args, named as the command's (the text was the
		// suggestion route's "invalid suggestion request: ..."; found by
		// a walkthrough)
		writeSuggestErr(w, fe)
		return nil, false
	case errors.Is(err, suggest.ErrInvalid):
		writeErrOf(w, http.StatusBadRequest, err)
		return nil, false
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return nil, false
	}
	a.Plan = &plan
	out, err := json.Marshal(a)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return nil, false
	}
	return out, true
}

// reservedWorkflowID is the one workflow id a write may not start:
// /v1/workflows/suggest is the suggestion route (POST), and a path that is
// a route's is matched before the {id} template (OpenAPI 3.1 path
// matching, as the router's Allow follows it), so GET
// /v1/workflows/suggest is that route's 405, never the workflow's state. A
// workflow "suggest" written to Kafka by a producer is still projected and
// listed; its other routes (…/suggest/updates, /checkpoints) serve it.
const reservedWorkflowID = "suggest"

const reservedWorkflowWhy = "reserved: /v1/workflows/suggest is the suggestion route, so GET /v1/workflows/suggest could never read this workflow's state; choose another id"

// forkHopHeader marks a fork the parent's owner sent on to the owner of
// the new workflow's partition (forwardFork): that member writes it, and
// sends it nowhere else. A member that does not own that partition (it
// moved meanwhile, or a client set the header) answers 503 with
// Retry-After instead of writing the fork where its idempotency key does
// not live.
const forkHopHeader = "Chronicle-Fork-Hop"

// forwardFork sends a fork (its body, with ?scope= set to the parent's
// scope) to the member that owns the new workflow's partition, which
// writes it as a local fork (reading the parent's checkpoint from here,
// forkCheckpoint), and answers with that member's answer: the write's
// own, so a retry is answered there as the first write was (its
// position; 409 naming /event_id for another fork under the id), from
// the idempotency key only that member's store holds. Bounded as a
// forwarded write (ForwardTimeout plus ImproveWait); a member that does
// not answer: 503/504 naming it.
func (s *Server) forwardFork(w http.ResponseWriter, r *http.Request, body []byte, scope string, v *groupView, owner string, p int32) {
	s.forwardWrite(w, r, body, scope, v, owner, p, forkHopHeader, "1")
}

// forwardWrite forwards a write on chronicle.workflows whose body the
// handler has read already to owner (partition p), with ?scope= set to
// scope unless it is "" and hdr's name/value pairs added; bounded as a
// forwarded write (ForwardTimeout plus ImproveWait).
func (s *Server) forwardWrite(w http.ResponseWriter, r *http.Request, body []byte, scope string, v *groupView, owner string, p int32, hdr ...string) {
	fr := r.Clone(r.Context())
	fr.Body, fr.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if scope != "" {
		q := fr.URL.Query()
		q.Set("scope", scope)
		fr.URL.RawQuery = q.Encode()
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		fr.Header.Set(hdr[i], hdr[i+1])
	}
	s.forward(w, fr, v, owner, string(events.TopicWorkflows), p, s.forwardTimeout()+s.improveWait())
}

// forkCheckpoint is the checkpoint cid of the parent workflow id (entity
// key key) a fork starts from: from this store, or, when another member
// owns the parent's partition (a fork sent on to this member, the new
// workflow's owner), from that member's GET
// /v1/workflows/{id}/checkpoints/{cid}, whose refusals (400, 404) are
// answered as it gave them. It answers w when it fails.
func (s *Server) forkCheckpoint(ctx context.Context, w http.ResponseWriter, r *http.Request, key, id, cid string) (workflows.Checkpoint, bool) {
	owner := s.remoteOwner(ctx, events.TopicWorkflows, key)
	if owner == "" {
		return s.checkpointAt(ctx, w, r, key, cid, true)
	}
	scope, _, _ := events.SplitEntityKey(key)
	code, body, err := s.getFrom(ctx, r, owner, "/v1/workflows/"+url.PathEscape(id)+"/checkpoints/"+url.PathEscape(cid)+"?scope="+url.QueryEscape(scope))
	var h workflows.HistoryEntry
	switch {
	case err != nil || code >= 500:
		writeErr(w, http.StatusServiceUnavailable, "checkpoint_id: the owner (%s) of the parent workflow's partition did not answer: %v %s", owner, err, bytes.TrimSpace(body))
	case code != http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(body)
	case json.Unmarshal(body, &h) != nil:
		writeErr(w, http.StatusBadGateway, "checkpoint_id: the owner (%s) of the parent workflow's partition answered an unreadable checkpoint", owner)
	default:
		return h.Checkpoint, true
	}
	return workflows.Checkpoint{}, false
}
