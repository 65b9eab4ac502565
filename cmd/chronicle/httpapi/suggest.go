package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/workflows"
	"github.com/chronicle-dev/chronicle/processors/workflows/suggest"
	"github.com/chronicle-dev/chronicle/projections/embedder"
	"github.com/google/uuid"
)

// suggestEmbedder embeds intents and tool descriptions for
// POST /v1/workflows/suggest (USE lite, offline), loaded on first use.
var suggestEmbedder = sync.OnceValues(func() (embedder.Embedder, error) {
	u, err := embedder.NewUSELite()
	if err != nil {
		return nil, err
	}
	u.Workers = 1
	return u, nil
})

// postSuggest serves POST /v1/workflows/suggest {intent, context_tools, k,
// estimates?} (estimates: per-tool {cost_usd, seconds}, checked against the
// speculation limits, see suggest.Request):
// a DAG from the learned tool graph (of ?scope= alone, else of every
// scope; the route needs a token that reads *), the airline catalogue's schemas and
// the intent's meaning, with its confidence, mode, safety reasons and
// explanation (package suggest).
func (s *Server) postSuggest(w http.ResponseWriter, r *http.Request) {
	if needsAll(w, r) {
		return
	}
	var req suggest.Request
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		err = bodyError(err)
		writeBodyErr(w, err, "")
		return
	}
	if err := decodeRead(body, &req); err != nil {
		writeBodyErr(w, err, "")
		return
	}
	// k absent is the default (3); k sent as 0 is out of range, as
	// everywhere else in the API (suggest.Request keeps 0 for "absent"),
	// and 0 and 11 are answered alike, naming /k (11 was "invalid
	// suggestion request: k: 11 is not from 1 to 10" without a pointer;
	// found by a walkthrough)
	var sent struct {
		K *int `json:"k"`
	}
	if json.Unmarshal(body, &sent) == nil && sent.K != nil && (*sent.K < 1 || *sent.K > 10) {
		writeFieldErr(w, "k", "/k", suggest.KReason(*sent.K))
		return
	}
	// ?scope= names the policy and the tool graph: that scope's alone
	// (before, every scope's, so an admin's suggestion for project:b
	// offered project:a's private tools: a workflows walkthrough,
	// 2026-11-30); without it, every scope's (the org view of a token
	// that reads *) with org:default's policy
	graphs := everyGraph()
	if sc := r.URL.Query().Get("scope"); sc != "" && events.ValidScope(sc) {
		graphs = graphsOf(sc)
	}
	g, err := s.toolGraphIn(graphs)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	cat, err := dagCatalog()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	emb, err := suggestEmbedder()
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if req.Policy == "" {
		req.Policy = "default"
	}
	scope, ok := policyScope(w, r)
	if !ok {
		return
	}
	if err := events.CheckID(req.Policy); err != nil {
		writeFieldErr(w, "policy", "/policy", err.Error()) // with its pointer, as the route's other 400s (a walkthrough)
		return
	}
	if s.policyToOwner(w, r, body, events.EntityKey(scope, req.Policy)) {
		return
	}
	pol, err := workflows.GetPolicy(s.P.Store, events.EntityKey(scope, req.Policy))
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	req.SpeculationThreshold = pol.Threshold
	s.suggestMu.Lock() // the Suggester caches vectors
	defer s.suggestMu.Unlock()
	sg := &s.suggester
	sg.Graph, sg.Catalog, sg.Embedder = g, cat, emb
	// a context tool nobody knows is a typo, refused as a replan's
	// args.tools is (it was ignored: 200 with suggestions that did not
	// follow it; found by a walkthrough)
	if i := sg.Unknown(req.ContextTools); i >= 0 {
		writeFieldErr(w, fmt.Sprintf("context_tools[%d]", i), fmt.Sprintf("/context_tools/%d", i), fmt.Sprintf("%q is not a tool of the catalogue or the tool graph", req.ContextTools[i]))
		return
	}
	// so is an estimate of a tool nobody knows: it could never apply, and
	// the pick it was meant for then had none (accepted silently before;
	// found by a new user's walkthrough)
	named := slices.Sorted(maps.Keys(req.Estimates))
	if i := sg.Unknown(named); i >= 0 {
		fe := &suggest.FieldError{Path: []any{"estimates", named[i]}, Reason: fmt.Sprintf("%q is not a tool of the catalogue or the tool graph", named[i])}
		writeSuggestErr(w, fe)
		return
	}
	res, err := sg.Suggest(r.Context(), req)
	var fe *suggest.FieldError
	switch {
	case errors.As(err, &fe):
		writeSuggestErr(w, fe)
	case errors.Is(err, suggest.ErrInvalid):
		writeErrOf(w, http.StatusBadRequest, err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, "%v", err)
	default:
		// the id the feedback route counts one verdict per: new for every
		// answer (two callers asking the same intent get two suggestions)
		writeJSON(w, http.StatusOK, map[string]any{"suggestion_id": "sg-" + uuid.NewString(), "suggestion": res, "policy": pol})
	}
}

// policyToOwner sends a policy route's request (body: its body, read
// already) on to the member that owns the policy's partition of
// chronicle.workflows (key: the policy's events.EntityKey) and answers
// with that member's answer; false when this member owns it, runs alone,
// or the request was forwarded to it. The policy's threshold and its
// one-verdict-per-suggestion rows live in the owner's store only: on
// another member a suggestion read a stale threshold and a feedback waited
// 5 s for an apply that happened elsewhere, then answered 503 (found by a
// cluster walkthrough). Bounded as a forwarded write (forwardWrite), the
// suggestion too: it computes its answer there. While no member owns the
// partition (a rebalance moving it) it waits for one (awaitOwner, at most
// ownerWait), then answers 503 with Retry-After and returns true.
func (s *Server) policyToOwner(w http.ResponseWriter, r *http.Request, body []byte, key string) bool {
	if r.Header.Get(ForwardedHeader) != "" {
		return false
	}
	v, owner, p, known := s.awaitOwner(r.Context(), events.TopicWorkflows, key)
	if !known {
		s.noOwner(w, v, string(events.TopicWorkflows), p, "the policy's write")
		return true
	}
	if owner == "" {
		return false
	}
	s.forwardWrite(w, r, body, "", v, owner, p)
	return true
}

// policyScope is the scope of a policy: ?scope=, else org:default.
func policyScope(w http.ResponseWriter, r *http.Request) (string, bool) {
	sc := r.URL.Query().Get("scope")
	if sc == "" {
		return events.DefaultScope, true
	}
	if !events.ValidScope(sc) {
		// with its reason, as the route's other 400s (a walkthrough)
		writeParamErr(w, http.StatusBadRequest, "scope", events.ScopeReason(sc))
		return "", false
	}
	return sc, true
}

// postSuggestFeedback serves POST /v1/workflows/suggest/feedback
// {policy, suggestion_id, accepted, mode, confidence}: whether a
// suggestion was used, as workflow.suggestion.feedback.v1 in ?scope= (or
// org:default); it answers the policy's threshold after it. Like
// suggestions, it needs a token that reads every scope, and it must write
// the scope.
func (s *Server) postSuggestFeedback(w http.ResponseWriter, r *http.Request) {
	if needsAll(w, r) {
		return
	}
	var d events.SuggestionFeedbackData
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		err = bodyError(err)
		writeBodyErr(w, err, "")
		return
	}
	if err := decodeRead(body, &d); err != nil {
		writeBodyErr(w, err, "")
		return
	}
	// the verdict and the confidence it is about are the feedback: left
	// out, they counted as a rejection at confidence 0, moving the
	// threshold on nothing the caller said (the event schema requires both)
	var sent struct {
		Accepted   *bool    `json:"accepted"`
		Confidence *float64 `json:"confidence"`
		Mode       *string  `json:"mode"`
		Policy     *string  `json:"policy"`
	}
	_ = json.Unmarshal(body, &sent)
	if sent.Policy != nil && *sent.Policy == "" {
		// "" is no policy id (the description's minLength 1): it was read
		// as the default policy, as if left out (a mutation test)
		writeFieldErr(w, "policy", "/policy", `empty: name the policy, or leave the member out for "default"`)
		return
	}
	// every required field left out is named at once (one at a time, a
	// client fixed confidence only to learn that mode was missing too)
	// every missing member is said; the first is the pointer, as every
	// error of this route names the body's member (it had none here: a
	// README-claims walkthrough, 2026-11-30)
	var missing []string
	first, firstReason := "", ""
	need := func(name, reason string) {
		missing = append(missing, name+": "+reason)
		if first == "" {
			first, firstReason = name, reason
		}
	}
	if sent.Accepted == nil {
		need("accepted", "required (true: the suggested DAG was used; false: it was not)")
	}
	if sent.Confidence == nil {
		need("confidence", "required (the suggestion's confidence, from its answer)")
	}
	if sent.Mode == nil {
		need("mode", "required (the suggestion's mode, from its answer: explicit_required, suggestion or speculative_execution)")
	}
	if len(missing) > 0 {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: strings.Join(missing, "; "), Pointer: "/" + first, Reason: firstReason})
		return
	}
	if d.Policy == "" {
		d.Policy = "default"
	}
	scope, ok := policyScope(w, r)
	if !ok {
		return
	}
	if !CallerOf(r).CanWrite(scope) {
		writeErr(w, http.StatusForbidden, "scope: this token may not write %s", scope)
		return
	}
	if err := events.CheckID(d.Policy); err != nil {
		writeFieldErr(w, "policy", "/policy", err.Error())
		return
	}
	if s.policyToOwner(w, r, body, events.EntityKey(scope, d.Policy)) {
		return
	}
	id := "fb-" + uuid.NewString()
	if d.SuggestionID != "" {
		// one event per suggestion: a retry is the same event (a plain
		// duplicate, counted once), another verdict reuses its id (409)
		sum := sha256.Sum256([]byte(scope + "\x00" + d.Policy + "\x00" + d.SuggestionID))
		id = "fb-" + hex.EncodeToString(sum[:16])
	}
	// no time attribute: the record's timestamp stands in (CloudEvents
	// time is optional), so a retry has the same content
	env, err := events.New(events.WorkflowSuggestionFeedback, "chronicle/api", id, time.Now(), d)
	if err != nil {
		writeErrOf(w, http.StatusBadRequest, err)
		return
	}
	env.Time, env.Scope = "", scope
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	svc := s.workflowService()
	err = svc.Check(env) // a suggestion whose feedback another event gave: refused before writing
	if err == nil {
		_, err = svc.Submit(ctx, env)
	}
	var ve *events.ValidationError
	var refusal *workflows.Refusal
	switch {
	case errors.Is(err, workflows.ErrIDReused):
		// "verdict" read as accepted alone, when another mode or confidence
		// under the same accepted was refused too (a walkthrough)
		reason := "feedback already recorded for this suggestion with other values (accepted, mode or confidence): a suggestion takes one feedback; a retry sends the same values"
		writeJSON(w, http.StatusConflict, errorBody{Error: fmt.Sprintf("suggestion_id %q: %s", d.SuggestionID, reason), Pointer: "/suggestion_id", Reason: reason})
		return
	case errors.As(err, &refusal):
		code := http.StatusBadRequest
		if errors.Is(err, workflows.ErrDuplicateID) {
			code = http.StatusConflict
		}
		msg, ptr := feedbackPointer(refusal.Error(), refusal.Pointer, refusal.Reason)
		writeJSON(w, code, errorBody{Error: msg, Pointer: ptr, Reason: refusal.Reason})
		return
	case errors.As(err, &ve):
		msg, ptr := feedbackPointer(ve.Error(), ve.Pointer, ve.Reason)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: msg, Pointer: ptr, Reason: ve.Reason})
		return
	case err != nil:
		writeErr(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	pol, err := workflows.GetPolicy(s.P.Store, events.EntityKey(scope, d.Policy))
	if err != nil {
		writeErr(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, pol)
}

// feedbackPointer names the request's member for an error about the
// workflow.suggestion.feedback.v1 event the feedback route writes: the
// body is the event's data, so the event's "/data/<member>…" is the
// body's "/<member>…" (events.BodyPointer; a mode outside the enum was
// answered at /data/mode, a member the request does not have). Other
// pointers stay the event's.
func feedbackPointer(msg, ptr, reason string) (string, string) {
	if p, ok := events.BodyPointer(ptr, feedbackFields); ok {
		member, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		return member + ": " + reason, p
	}
	return msg, ptr
}

// feedbackFields are the feedback body's members, the event's data
// members of the same names.
var feedbackFields = map[string]string{"policy": "policy", "suggestion_id": "suggestion_id", "accepted": "accepted", "mode": "mode", "confidence": "confidence"}
