package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/memories"
	"github.com/chronicle-dev/chronicle/processors/passes"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
	"github.com/chronicle-dev/chronicle/processors/workflows"
)

// Forwarding reads to the partition's owner (issue 15, item 4). Every
// entity route whose entity is keyed on a partitioned topic finds the
// partition of the entity's key (events.EntityKey(scope, id), hashed as
// the producer hashes it), the group member that owns it, and, when that
// is another instance, proxies the request to the member's advertised URL
// (AdvertisingBalancer) with the caller's headers, Authorization included:
// the owner authenticates and authorises the caller again where the data
// is read. The forwarding instance checks first what it can without the
// data (the token, the id, and that the caller may access ?scope=), so a
// request it would refuse is refused before any forward.

// ForwardTimeout bounds a forwarded read, and each member's answer to a
// fan-out (5 s); a forwarded write gets ImproveWait (20 s) more, the
// longest a write route waits for its event to be applied. A member that does not answer within it: 504 (deadline)
// or 503 (refused, reset), with a ForwardError naming the member.
const ForwardTimeout = 5 * time.Second

// ForwardedHeader marks a request forwarded by another instance; its value
// is the forwarding member's id. A request carrying it is answered from
// the local store and never forwarded again (the loop guard).
const ForwardedHeader = "Chronicle-Forwarded-By"

// FanOutHeader marks a forwarded read sent to every member to find the
// scope of an id: the member answers only from the partitions it owns
// (a previous owner's leftover copy is not an answer).
const FanOutHeader = "Chronicle-Fan-Out"

// ServedByHeader names the member id of the instance that read the data,
// on every answer of a forwarded or fanned-out route.
const ServedByHeader = "Chronicle-Served-By"

// ForwardError is the body of a 503/504 when the owner of a partition (or
// a member asked in a fan-out) did not answer.
type ForwardError struct {
	Error     string `json:"error"`
	Member    string `json:"member"`
	URL       string `json:"url"`
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
}

// RebalanceError is the body of a 503 (with Retry-After: 1) answered on a
// cluster when no member is known to own the partition a request needs,
// so this instance cannot tell the answer from its own store alone: the
// group is rebalancing and this instance has not seen it Stable yet (it
// just started), or the partition is between owners (its previous owner
// left the group and the rebalance has not given it to another yet).
// Answering locally instead said 404 for existing entities and 200 with a
// partial list. Topic and partition name the partition when the request
// has one.
type RebalanceError struct {
	Error string `json:"error"`
	// GroupState is the processors' group's state as the coordinator
	// described it (PreparingRebalance, CompletingRebalance, Stable).
	GroupState string `json:"group_state"`
	Topic      string `json:"topic,omitempty"`
	Partition  *int32 `json:"partition,omitempty"`
}

// noOwner answers 503 with Retry-After: 1 (a rebalance takes seconds;
// the directory is described again after DirectoryTTL) and a
// RebalanceError: v is blind, or partition p of topic (p < 0: some
// partition of topic, for a fan-out) has no owner in v.
func (s *Server) noOwner(w http.ResponseWriter, v *groupView, topic string, p int32, what string) {
	e := RebalanceError{GroupState: v.state, Topic: topic}
	where := "partition " + topic
	if p >= 0 {
		e.Partition = &p
		where = fmt.Sprintf("%s/%d", topic, p)
	}
	if v.blind {
		e.Error = fmt.Sprintf("the processors' group %s is rebalancing (%s) and this member (%s) has not seen its assignment yet: no member is known to own %s, so %s is not answered from this store alone; retry",
			s.groupName(), v.state, v.self, where, what)
	} else {
		e.Error = fmt.Sprintf("no member of the processors' group %s owns %s (group %s): a rebalance is moving it, so %s is not answered from this store alone; retry",
			s.groupName(), where, v.state, what)
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, e)
}

// ownerRoute says where the entity of a request lives.
type ownerRoute struct {
	// topic is the topic keying the entity (by sub-route suffix).
	topic func(suffix string) events.Topic
	// split returns the entity id and the sub-route of the request.
	split func(r *http.Request) (id, suffix string, err error)
	// kind names the entity in errors ("session").
	kind string
	// scopes lists the scopes whose projection holds an id here.
	scopes scopesOfID
	// write: the route writes (the scope is resolved among write scopes).
	write bool
	// budget, when set, is how long the owner may take to answer a read of
	// the sub-route (by suffix), beyond ForwardTimeout: the forward waits
	// for it (a session's log: SessionEventsTimeout).
	budget func(suffix string) time.Duration
	// writeScope, on a write route that resolves a request without
	// ?scope= among the scopes holding the id (the workflow writes), is
	// the request's rule: such a write asks every member first
	// (writeToHeldScope).
	writeScope func(r *http.Request) (scopeRule, bool)
}

// forwardClient sends forwarded requests and fan-out requests; each
// request carries its own ForwardTimeout deadline.
var forwardClient = &http.Client{Transport: http.DefaultTransport}

// toOwner wraps an entity route: it serves the request here when this
// instance owns the key's partition (or is alone, or the request was
// forwarded to it), else forwards it to the owner; for a read whose scope
// it cannot determine (no ?scope=, a caller that reads several scopes) it
// asks every member and answers from the one that holds the id; a
// workflow write in that case asks every member which scope holds the id
// and is written there (writeToHeldScope).
func (s *Server) toOwner(rt ownerRoute, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.P == nil || s.P.Runner == nil {
			next(w, r)
			return
		}
		next := s.restoreAware(rt, next) // every local answer below
		if r.Header.Get(ForwardedHeader) == "" {
			// only a member's fan-out asks for scopes (writeToHeldScope): a
			// client's probe header, copied into a read's fan-out, made the
			// other members answer a scope list for the entity (a review)
			r.Header.Del(ScopeProbeHeader)
			// nor sends a fan-out: a client's copy reached the owner
			// through the forward and had it answer as to a member
			// (heldScopeHeader included; a review)
			r.Header.Del(FanOutHeader)
		}
		if r.Header.Get(ForwardedHeader) != "" {
			if r.Header.Get(FanOutHeader) != "" && r.URL.Query().Get("scope") == "" {
				if r.Header.Get(ScopeProbeHeader) != "" && r.Method == http.MethodGet {
					s.answerScopes(rt)(w, r)
					return
				}
				s.restoreAware(rt, s.ownedOnly(rt, next))(w, r)
				return
			}
			next(w, r)
			return
		}
		id, suffix, err := rt.split(r)
		if err != nil || events.CheckID(id) != nil {
			next(w, r) // the handler answers 400
			return
		}
		v, err := s.settledView(r.Context(), string(rt.topic(suffix)))
		if err != nil && brokersAway(err) && s.dir.wasCluster() {
			// the brokers have been away longer than a session timeout:
			// the local store is all there is, and its "not found" may be
			// another member's data (a false 404: an SRE's walkthrough).
			// Writes too: a feedback or a workflow's complete for an
			// entity another member holds was answered 404 "not found",
			// and a client drops a write so answered (a cluster
			// walkthrough, 2026-11-30); what this store holds is written
			// as before (the producer's bounded wait, then 503)
			s.localOrUnknown(rt, id, next)(w, r)
			return
		}
		if err != nil || !(v.blind || v.forwarding()) {
			next(w, r) // alone: the local store is all there is
			return
		}
		topic := string(rt.topic(suffix))
		n := v.parts[topic]
		c := CallerOf(r)
		allowed, scopes := c.CanRead, c.Read
		if rt.write {
			allowed, scopes = c.CanWrite, c.Write
		}
		sc := r.URL.Query().Get("scope")
		if sc == "" && n > 1 && rt.writeScope != nil && !oneScope(c) {
			if rule, ok := rt.writeScope(r); ok {
				// the scope holding the id may be on any member: ask them all
				if v.blind {
					s.noOwner(w, v, topic, -1, "the write (which scope holds the "+rt.kind+"?)")
					return
				}
				s.writeToHeldScope(w, r, v, rt, id, suffix, rule, next)
				return
			}
		}
		switch {
		case sc != "":
			if !events.ValidScope(sc) || !allowed(sc) {
				next(w, r) // 400 / 404, checked before any forward
				return
			}
		case n == 1:
			// a single-partition topic (chronicle.memories): the owner of
			// partition 0 holds every scope
		case len(scopes) == 1 && scopes[0] != "*":
			sc = scopes[0]
		case rt.write:
			next(w, r) // a write names its scope to be forwarded (README)
			return
		default:
			if v.blind {
				// no member's URL is known to ask: answer for the
				// partitions this engine holds, 503 for the rest
				// (ownedOnly); before, 503 for them all, though a token of
				// one scope read the same sessions here with 200
				s.restoreAware(rt, s.ownedOnly(rt, next))(w, r)
				return
			}
			s.fanOutEntity(w, r, v, topic, rt.kind, id, s.restoreAware(rt, s.ownedOnly(rt, next)))
			return
		}
		p := partitionOf(topic, events.EntityKey(sc, id), n)
		owner := v.owner[tp{topic, p}]
		if (v.blind || v.ownerless(topic, p)) && !s.ownsLocally(topic, p) {
			// no owner known: this store's answer (404, an old copy)
			// may be false; one this engine holds now is as good as ever
			s.noOwner(w, v, topic, p, "the "+rt.kind)
			return
		}
		if owner == "" || owner == v.self || s.ownsLocally(topic, p) || v.urls[owner] == "" {
			// a topic the group does not read, ours, or a member without a URL
			next(w, r)
			return
		}
		timeout := s.forwardTimeout()
		if rt.write {
			// a write answers after its event is applied: the owner's own
			// wait (at most ImproveWait, 20 s) comes on top
			timeout += s.improveWait()
		} else if rt.budget != nil {
			// a read that may take the owner longer: its own bound on top
			// (a session's log read by a member was cut at 5 s with a 504,
			// where the owner takes up to 30 s; found by an operator's
			// walkthrough)
			timeout += rt.budget(suffix)
		}
		s.forward(w, r, v, owner, topic, p, timeout)
	}
}

// localOrUnknown answers r from the local store (next), but its 404 for
// the entity (not a 404 of no route) as a 503 with Retry-After: once the
// brokers have been away longer than the group's session timeout, a
// member of a cluster routes nothing (it cannot know the owners), and
// another member may hold what this store lacks. Before, that was a 404,
// "not found", for data that exists (an SRE's walkthrough, 2026-11-30:
// seven reads of existing sessions 11 s into a broker outage with a 10 s
// session timeout). What the store holds is answered as before.
func (s *Server) localOrUnknown(rt ownerRoute, id string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next(rec, r)
		if rec.Code == http.StatusNotFound && rec.Header().Get(NoRouteHeader) == "" {
			w.Header().Set("Retry-After", "1")
			writeErr(w, http.StatusServiceUnavailable, "%s %q is not in this member's store, and the brokers have not answered for longer than the processors' group's session timeout (%v), so which member holds it is unknown: retry once they answer",
				rt.kind, id, s.sessionTimeout())
			return
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}
}

func (s *Server) forwardTimeout() time.Duration {
	if s.ForwardTimeout > 0 {
		return s.ForwardTimeout
	}
	return ForwardTimeout
}

// toTopicOwner wraps a route over a whole single-partition topic (memory
// search over chronicle.memories, whose only partition's owner indexes
// every memory): it forwards to the owner of partition 0 unless that is
// this instance (or alone, or the request was forwarded to it). The
// caller's token and scopes are checked by the owner, which reads the
// data; this instance has none of it to check against. wait is how long
// the owner's handler may wait for its write to be applied (POST
// /v1/memories answers the memory the recording is in, up to
// memories.DefaultRecordWait): it is added to the forward timeout.
func (s *Server) toTopicOwner(topic events.Topic, wait time.Duration, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" || s.P == nil || s.P.Runner == nil {
			next(w, r)
			return
		}
		v, err := s.settledView(r.Context(), string(topic))
		if err != nil && brokersAway(err) && s.dir.wasCluster() && !s.ownsLocally(string(topic), 0) {
			// the brokers have been away longer than a session timeout and
			// this member does not hold the topic: its store's answer (a
			// memory search) would be another member's data as of whenever
			// this one last copied it, or nothing, answered 200 (a
			// cluster walkthrough, 2026-11-30: a search missed the memory
			// just recorded, and on another member found none at all)
			w.Header().Set("Retry-After", "1")
			writeErr(w, http.StatusServiceUnavailable, "this member does not hold %s, which answers this request, and the brokers have not answered for longer than the processors' group's session timeout (%v), so which member holds it is unknown: retry once they answer",
				topic, s.sessionTimeout())
			return
		}
		if err != nil || !(v.blind || v.forwarding()) || v.parts[string(topic)] != 1 {
			next(w, r)
			return
		}
		owner := v.owner[tp{string(topic), 0}]
		if (v.blind || v.ownerless(string(topic), 0)) && !s.ownsLocally(string(topic), 0) {
			s.noOwner(w, v, string(topic), 0, "the request")
			return
		}
		if owner == "" || owner == v.self || s.ownsLocally(string(topic), 0) || v.urls[owner] == "" {
			next(w, r)
			return
		}
		s.forward(w, r, v, owner, string(topic), 0, s.forwardTimeout()+wait)
	}
}

// RestoringError is the body of a 503 (with Retry-After: 1) that a read
// of an entity gets instead of a 404 while this instance restores a
// partition of the entity's topic from the log (after a start, a crash or
// a rebalance that gave it the partition): the entity may be in a record
// not applied yet, so "not found" would be false. Partitions lists each
// restoring partition with the records it has yet to apply.
type RestoringError struct {
	Error      string               `json:"error"`
	Topic      string               `json:"topic"`
	Partitions []RestoringPartition `json:"partitions"`
}

// RestoringPartition is a partition being restored and the records of
// its restore not applied yet (processors.OwnedPartition.RestoreRemaining).
type RestoringPartition struct {
	Partition int32 `json:"partition"`
	Remaining int64 `json:"remaining_records"`
}

// restoreAware wraps a request answered from this instance's store: while
// the engine restores a partition of the entity's topic, a 404 becomes a
// 503 RestoringError with Retry-After: 1 (any other answer passes; an
// entity already restored is found as ever). Before, an instance that
// had just started answered 404 for sessions it had applied before a
// crash, for the half second its restore took (a walkthrough with kill
// -9 on an external broker). Writes are wrapped too: a retried decision
// answer or a workflow's complete right after a restart was a 404
// "workflow not found" (or "decision not pending, nor answered") for an
// entity the restore had not reached yet, and a client drops a write so
// answered (a crash walkthrough, 2026-11-30); a write's 404 wrote nothing.
func (s *Server) restoreAware(rt ownerRoute, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, suffix, err := rt.split(r)
		if err != nil {
			h(w, r)
			return
		}
		topic := string(rt.topic(suffix))
		restoring := s.restoring(topic)
		if len(restoring) == 0 {
			h(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h(rec, r)
		if rec.Code != http.StatusNotFound {
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		writeRestoring(w, "the "+rt.kind+" is not found yet", topic, restoring)
	}
}

// restoring lists the partitions of topic this instance's engine is
// restoring, with the records each has yet to apply (none: nil).
func (s *Server) restoring(topic string) []RestoringPartition {
	if s.P == nil || s.P.Runner == nil {
		return nil
	}
	var out []RestoringPartition
	for _, op := range s.P.Runner.Ownership().Partitions {
		if op.Topic == topic && op.RestoreRemaining() > 0 {
			out = append(out, RestoringPartition{Partition: op.Partition, Remaining: op.RestoreRemaining()})
		}
	}
	return out
}

// writeRestoring answers 503 RestoringError with Retry-After: 1: what
// (e.g. "the session is not found yet") cannot be told while parts of
// topic are restoring.
func writeRestoring(w http.ResponseWriter, what, topic string, parts []RestoringPartition) {
	var left int64
	for _, p := range parts {
		left += p.Remaining
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, RestoringError{
		Error: fmt.Sprintf("%s, but this instance is restoring %d partition(s) of %s from the log (%d records to go; /healthz says restoring): retry",
			what, len(parts), topic, left),
		Topic: topic, Partitions: parts})
}

// ownedOnly answers a fanned-out read from the partitions this instance
// owns: among the scopes the caller may read that hold the id here, those
// whose key's partition it owns (ownedScopes); one: the read with ?scope=
// set to it (and heldScopeHeader naming it); none: 404; several: the
// handler's 409; none while this instance knows no owner (blind): 503.
func (s *Server) ownedOnly(rt ownerRoute, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, suffix, err := rt.split(r)
		if err != nil || events.CheckID(id) != nil || rt.scopes == nil {
			next(w, r)
			return
		}
		v, err := s.groupView(r.Context())
		if err != nil {
			// no view of the group (the brokers away): what this store
			// holds is answered, and the scopes it reads the id in named
			// to the member that asked, as a member with a view names
			// them. Before, the 200 named none, and the asker counted each
			// member's such 200 as one more scope: a 409 "exists in
			// several scopes … the scope held by member …" for an id in
			// one scope (an operator's walkthrough, 2026-11-30)
			if r.Header.Get(FanOutHeader) != "" {
				if all, serr := rt.scopes(s.P.Store, id); serr == nil {
					var mine []string
					for _, sc := range all {
						if CallerOf(r).CanRead(sc) {
							mine = append(mine, sc)
						}
					}
					if len(mine) > 0 {
						w.Header().Set(heldScopeHeader, strings.Join(mine, ","))
					}
				}
			}
			next(w, r)
			return
		}
		held, err := s.ownedScopes(rt, v, id, suffix, CallerOf(r).CanRead)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return
		}
		if len(held) == 0 && v.blind {
			// not among the partitions this engine holds, and no owner of
			// the others known: a 404 may be false
			s.noOwner(w, v, string(rt.topic(suffix)), -1, "the "+rt.kind)
			return
		}
		switch len(held) {
		case 0:
			topic := string(rt.topic(suffix))
			if p, ok := s.claimedNotHeld(v, topic); ok {
				// the view names this member the owner of a partition its
				// engine does not hold: assigned and taken away again
				// before it restored it (a cooperative rebalance's second
				// round, after a broker restart), its store may lack the
				// rows, so a 404 here may be false (an operator's
				// walkthrough, 2026-11-30: 404s for sessions acknowledged
				// minutes before, 3 broker restarts of 4)
				e := RebalanceError{GroupState: v.state, Topic: topic, Partition: &p,
					Error: fmt.Sprintf("the processors' group's view names this member (%s) the owner of %s/%d, which its engine does not hold now (a rebalance is moving it): the %s is not found in this store, which may lack that partition's rows; retry", v.self, topic, p, rt.kind)}
				w.Header().Set("Retry-After", "1")
				writeJSON(w, http.StatusServiceUnavailable, e)
				return
			}
			entityNotFound(w, r, rt.kind, id)
		case 1:
			r2 := r.Clone(r.Context())
			q := r2.URL.Query()
			q.Set("scope", held[0])
			r2.URL.RawQuery = q.Encode()
			if r.Header.Get(FanOutHeader) != "" { // for the member that asked, not for a client
				w.Header().Set(heldScopeHeader, held[0])
			}
			next(w, r2)
		default:
			if r.Header.Get(FanOutHeader) != "" {
				// the handler's 409 names them too; the member that
				// asked adds the other members' (fanOutEntity)
				w.Header().Set(heldScopeHeader, strings.Join(held, ","))
			}
			next(w, r)
		}
	}
}

// ownedScopes lists the scopes that hold id here, among those allowed
// says, whose key's partition this instance owns, the group view says it
// owns (while the group rebalances: the last Stable view, whose owner
// still holds the rows it gave up) or no member owns (a topic the group
// does not read): what this member answers for in a fan-out. A blind view
// names no owner: only the partitions this engine holds count.
func (s *Server) ownedScopes(rt ownerRoute, v *groupView, id, suffix string, allowed func(string) bool) ([]string, error) {
	topic := string(rt.topic(suffix))
	all, err := rt.scopes(s.P.Store, id)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, sc := range all {
		if !allowed(sc) {
			continue
		}
		p := partitionOf(topic, events.EntityKey(sc, id), v.parts[topic])
		if o := v.owner[tp{topic, p}]; s.ownsLocally(topic, p) || (!v.blind && (o == "" || o == v.self)) {
			held = append(held, sc)
		}
	}
	return held, nil
}

// claimedNotHeld returns a partition of topic that v names this member
// the owner of and its engine does not hold now, if there is one.
func (s *Server) claimedNotHeld(v *groupView, topic string) (int32, bool) {
	if v.blind {
		return 0, false
	}
	for p := int32(0); p < int32(v.parts[topic]); p++ {
		if v.owner[tp{topic, p}] == v.self && !s.ownsLocally(topic, p) {
			return p, true
		}
	}
	return 0, false
}

// ownsLocally reports whether the engine holds topic/partition now.
func (s *Server) ownsLocally(topic string, p int32) bool {
	for _, op := range s.P.Runner.Ownership().Partitions {
		if op.Topic == topic && op.Partition == p {
			return true
		}
	}
	return false
}

// forward proxies r to member owner (httputil.ReverseProxy), bounded by
// timeout: the forward timeout (ForwardTimeout, 5 s), plus the owner's
// own wait (ImproveWait, 20 s) for a write.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, v *groupView, owner, topic string, p int32, timeout time.Duration) {
	target, err := url.Parse(v.urls[owner])
	if err != nil {
		s.metrics().memberRequest(memberForward, err, 0, false)
		writeJSON(w, http.StatusServiceUnavailable, ForwardError{Error: fmt.Sprintf("owner %s of %s/%d advertises an invalid URL %q: %v", owner, topic, p, v.urls[owner], err),
			Member: owner, URL: v.urls[owner], Topic: topic, Partition: &p})
		return
	}
	// the owner holds the body, not this member, unless it was read here
	// already (releaseForwarded)
	held := releaseForwarded(r)
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(ForwardedHeader, v.self)
			pr.Out.Header.Del(BodyHeldHeader)
			if held {
				pr.Out.Header.Set(BodyHeldHeader, "1")
			}
			s.signMember(pr.Out)
		},
		Transport: forwardClient.Transport,
		ModifyResponse: func(resp *http.Response) error {
			// the owner refused this member's forward, or has no route at
			// its URL: no answer about the data (memberAnswer.failed), so
			// a 503 naming it, not a 401 or 404 relayed to the client
			if err := ownerRefusal(resp); err != nil {
				return err
			}
			if resp.Header.Get(ServedByHeader) == "" {
				resp.Header.Set(ServedByHeader, owner)
			}
			s.metrics().memberRequest(memberForward, nil, resp.StatusCode, false)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			code, what := http.StatusServiceUnavailable, "did not answer"
			var refused errOwnerRefused
			if errors.As(err, &refused) {
				what = "could not serve the request"
			}
			s.metrics().memberRequest(memberForward, err, 0, errors.As(err, &refused))
			if errors.Is(err, context.DeadlineExceeded) {
				code, what = http.StatusGatewayTimeout, fmt.Sprintf("did not answer within %v (the forward timeout)", timeout)
			}
			// an owner that stopped or was killed stays in the group
			// until it leaves or its session times out, and then the
			// rebalance gives its partitions to another: retry. Not
			// said of a write that timed out: its outcome is unknown,
			// and a write without an event_id would be made twice
			if code == http.StatusServiceUnavailable || r.Method == http.MethodGet || r.Method == http.MethodHead {
				w.Header().Set("Retry-After", "1")
			}
			what += v.keptWhy("routed")
			writeJSON(w, code, ForwardError{Error: fmt.Sprintf("owner %s (%s) of %s/%d %s: %v", owner, v.urls[owner], topic, p, what, err),
				Member: owner, URL: v.urls[owner], Topic: topic, Partition: &p})
		},
	}
	rp.ServeHTTP(w, r.WithContext(ctx))
}

// ownerRefusal is forward's error for an owner's answer that is none: a
// 401 to this member's forward, with the owner's reason (a signature
// dated outside MemberAuthWindow of its clock, or another member_secret;
// before, every 401 asked only about the member_secret, an SRE's time
// walkthrough), or a 404 of no route. nil for any other answer.
func ownerRefusal(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		var e struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &e) == nil && strings.Contains(e.Error, "clocks must agree") {
			return errOwnerRefused{"answered 401, refusing this member's forward: " + e.Error}
		}
		return errOwnerRefused{"answered 401, refusing this member's forward (do the members share one tokens file and member_secret?)"}
	case resp.StatusCode == http.StatusNotFound && resp.Header.Get(NoRouteHeader) != "":
		return errOwnerRefused{"has no route at its URL (check its --advertise: scheme, host and port only)"}
	}
	return nil
}

// errOwnerRefused is forward's error for an owner's answer that is none
// about the data: a 401 to this member's forward, a 404 of no route.
type errOwnerRefused struct{ why string }

func (e errOwnerRefused) Error() string { return "it " + e.why }

// memberAnswer is one member's answer to a fan-out.
type memberAnswer struct {
	member, url string
	code        int
	header      http.Header
	body        []byte
	err         error
}

// fanOut sends r (a GET) to every member with a URL, with the loop guard
// and the caller's headers, and answers it for this instance with local;
// each answer is bounded by ForwardTimeout. The answers come in member id
// order.
func (s *Server) fanOut(r *http.Request, v *groupView, local http.HandlerFunc, fanOutMark bool) []memberAnswer {
	out := make([]memberAnswer, len(v.members))
	var wg sync.WaitGroup
	for i, m := range v.members {
		out[i] = memberAnswer{member: m, url: v.urls[m]}
		if m != v.self && v.urls[m] == "" {
			out[i].err = errors.New("publishes no URL")
			continue
		}
		wg.Add(1)
		go func(a *memberAnswer) {
			defer wg.Done()
			if a.member == v.self {
				rec := httptest.NewRecorder()
				lr := r.Clone(r.Context())
				lr.Header.Set(ForwardedHeader, v.self)
				if fanOutMark {
					lr.Header.Set(FanOutHeader, "1") // as the other members' requests: ownedOnly names its scope (heldScopeHeader)
				}
				local(rec, lr)
				a.code, a.header, a.body = rec.Code, rec.Header(), rec.Body.Bytes()
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), s.forwardTimeout())
			defer cancel()
			u := strings.TrimSuffix(a.url, "/") + r.URL.RequestURI()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				a.err = err
				return
			}
			for _, h := range []string{"Authorization", "Accept", ScopeProbeHeader} {
				if x := r.Header.Get(h); x != "" {
					req.Header.Set(h, x)
				}
			}
			req.Header.Set(ForwardedHeader, v.self)
			if fanOutMark {
				req.Header.Set(FanOutHeader, "1")
			}
			s.signMember(req)
			resp, err := forwardClient.Do(req)
			if err != nil {
				a.err = err
				return
			}
			defer resp.Body.Close()
			a.body, a.err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			a.code, a.header = resp.StatusCode, resp.Header
		}(&out[i])
	}
	wg.Wait()
	for _, a := range out {
		if a.member != v.self {
			refused := a.err == nil && a.failed() && a.code < http.StatusInternalServerError
			s.metrics().memberRequest(memberFanOut, a.err, a.code, refused)
		}
	}
	return out
}

// failed reports a fan-out answer that is no answer: no response, a 5xx
// (the member cannot say whether it holds the data), a 401 (the member
// refused this member's forward: another member_secret or tokens file; the
// client's token was accepted here, and relaying the 401 told the client
// its credentials were bad), or a 404 that says no route serves the path
// (NoRouteHeader: the member was reached at a wrong URL, and relaying it
// answered "not found" for data the member holds). The last two were
// found by an SRE's walkthrough, 2026-11-30.
func (a memberAnswer) failed() bool {
	return a.err != nil || a.code >= 500 || a.code == http.StatusUnauthorized ||
		a.code == http.StatusNotFound && a.header.Get(NoRouteHeader) != ""
}

// memberDown answers 503/504 naming the first member of answers that did
// not answer, with Retry-After (the member's own on its 503, else 1 s: a
// member that is gone leaves the group or times out, and the rebalance
// moves its partitions); fan-outs are reads.
func (s *Server) memberDown(w http.ResponseWriter, v *groupView, answers []memberAnswer) bool {
	for _, a := range answers {
		if !a.failed() {
			continue
		}
		code, why := http.StatusServiceUnavailable, fmt.Sprintf("answered %d: %s", a.code, bytes.TrimSpace(a.body))
		switch {
		case a.code == http.StatusUnauthorized && !bytes.Contains(a.body, []byte("clocks must agree")):
			why += " (it refused this member's forward: do the members share one tokens file and member_secret?)"
		case a.code == http.StatusNotFound:
			why += " (no route at its URL: check its --advertise, which names scheme, host and port only)"
		}
		if a.err != nil {
			why = "did not answer: " + a.err.Error()
			if errors.Is(a.err, context.DeadlineExceeded) {
				code, why = http.StatusGatewayTimeout, fmt.Sprintf("did not answer within %v (the forward timeout): %v", s.forwardTimeout(), a.err)
			}
		}
		retry := "1" // a member that is gone leaves the group (or times out), and the rebalance moves its partitions
		if ra := a.header.Get("Retry-After"); a.code == http.StatusServiceUnavailable && ra != "" {
			retry = ra // the member said when (e.g. restoring)
		}
		w.Header().Set("Retry-After", retry)
		why += v.keptWhy("asked")
		writeJSON(w, code, ForwardError{Error: fmt.Sprintf("member %s (%s) %s", a.member, a.url, why), Member: a.member, URL: a.url})
		return true
	}
	return false
}

// relay writes a member's answer.
func relay(w http.ResponseWriter, a memberAnswer) {
	if ct := a.header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set(ServedByHeader, a.member)
	w.WriteHeader(a.code)
	_, _ = w.Write(a.body)
}

// heldScopeHeader names, on a member's 200 to a fan-out (ownedOnly), the
// scope it read the entity in: two members answering for the same key
// (the previous owner and the new one, in the cache window of a
// rebalance) are one entity, not the id in two scopes. On a member's 409
// (several of the caller's scopes hold the id on its partitions) it lists
// them, comma-separated. It names only scopes the caller reads.
const heldScopeHeader = "Chronicle-Held-Scope"

// fanOutEntity answers a read whose scope is not known here (the entity
// id, on topic): every member resolves the id among the caller's scopes
// in its own store. One 200: its answer; several for one scope (a
// partition between owners): the view's owner's, else the first. The id
// in several scopes (200s for different scopes, or a member's 409 and
// another's 200): 409 asking for ?scope=, naming the scopes as one
// instance does (heldScopeHeader; before, it named the members that held
// them, found by a tenant-isolation review). None: a member that
// did not answer makes it 503/504 (it may hold the id); else the first
// other refusal (400, 409), else 404, or a 503 (noOwner) when a partition
// of topic has no owner in v: its rows may be on no member that answered.
func (s *Server) fanOutEntity(w http.ResponseWriter, r *http.Request, v *groupView, topic, kind, id string, local http.HandlerFunc) {
	answers := s.fanOut(r, v, local, true)
	var ok []memberAnswer
	c := CallerOf(r)
	held := map[string]bool{} // the scopes the members read the id in
	var unnamed []string      // members that answered 200 without naming the scope (an older Chronicle)
	for _, a := range answers {
		if a.failed() || (a.code != http.StatusOK && a.code != http.StatusConflict) {
			continue
		}
		if a.code == http.StatusOK {
			ok = append(ok, a)
		}
		named := false
		for _, sc := range strings.Split(a.header.Get(heldScopeHeader), ",") {
			if sc != "" && c.CanRead(sc) { // a member names no other, but this answer is the caller's
				held[sc], named = true, true
			}
		}
		if !named && a.code == http.StatusOK {
			unnamed = append(unnamed, a.member)
		}
	}
	if len(ok) > 1 {
		if a, same := oneEntity(ok, v, topic, id); same && len(held) <= 1 {
			relay(w, a)
			return
		}
	}
	if len(held) > 1 || (len(ok) > 1 && len(held)+len(unnamed) > 0) {
		scopes := make([]string, 0, len(held))
		for sc := range held {
			scopes = append(scopes, sc)
		}
		sort.Strings(scopes)
		for _, m := range unnamed {
			// a member of an older Chronicle names no scope
			scopes = append(scopes, "the scope held by member "+m)
		}
		writeErr(w, http.StatusConflict, "%s %q exists in several scopes you may access (%s): add ?scope=", kind, id, strings.Join(scopes, ", "))
		return
	}
	if len(ok) == 1 {
		relay(w, ok[0])
		return
	}
	if s.memberDown(w, v, answers) {
		return
	}
	var self *memberAnswer
	for i, a := range answers {
		if a.member == v.self {
			self = &answers[i]
		} else if a.code != http.StatusNotFound {
			relay(w, a)
			return
		}
	}
	if self != nil && self.code != http.StatusNotFound {
		relay(w, *self)
		return
	}
	if !v.complete(topic) {
		s.noOwner(w, v, topic, -1, "a 404 for "+r.URL.Path)
		return
	}
	if self != nil {
		relay(w, *self)
		return
	}
	writeErr(w, http.StatusNotFound, "%s not found", r.URL.Path)
}

// oneEntity reports whether the 200s of a fan-out all read the id in one
// scope (heldScopeHeader), and picks the answer of the member v says owns
// that key's partition (else the first).
func oneEntity(ok []memberAnswer, v *groupView, topic, id string) (memberAnswer, bool) {
	sc := ok[0].header.Get(heldScopeHeader)
	for _, a := range ok {
		if sc == "" || a.header.Get(heldScopeHeader) != sc {
			return memberAnswer{}, false
		}
	}
	owner := v.owner[tp{topic, partitionOf(topic, events.EntityKey(sc, id), v.parts[topic])}]
	for _, a := range ok {
		if a.member == owner {
			return a, true
		}
	}
	return ok[0], true
}

// sortStrings sorts ss in place.
func sortStrings(ss []string) { sort.Strings(ss) }

// listSessions serves GET /v1/sessions. Alone, or asked by another
// member, it lists the local store; in a cluster it asks every member
// (each holds its own partitions) with the same query, merges their pages
// in key order (scope, then id: events.EntityKey order, as one store
// lists them), keeps a key's copy from its partition's owner when a
// previous owner still holds an older one, and cuts the page at limit. next_cursor is the last key of
// the page: every member continues after it, so pages are stable while the
// data does not change. A member that does not answer within
// ForwardTimeout makes the whole list 503/504 naming it (no partial
// pages: a page without a member's sessions would skip them for good).
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(ForwardedHeader) != "" || s.P == nil || s.P.Runner == nil {
		s.listSessionsLocal(w, r)
		return
	}
	topic := string(events.TopicSessions)
	v, err := s.settledView(r.Context(), topic)
	if err == nil && v.blind {
		s.noOwner(w, v, topic, -1, "the list")
		return
	}
	if s.listInOutage(w, err, topic) {
		return
	}
	if err != nil || !v.forwarding() {
		s.listSessionsLocal(w, r)
		return
	}
	// refuse bad parameters once, here
	rec := httptest.NewRecorder()
	if _, _, ok := listParams(rec, r); !ok {
		relay(w, memberAnswer{member: v.self, code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()})
		return
	}
	if !v.complete(topic) {
		// a partition between owners: its sessions may be on no member
		s.noOwner(w, v, topic, -1, "the list")
		return
	}
	_, limit, _ := listParams(nil, r)
	answers := s.fanOut(r, v, s.listSessionsLocal, false)
	if s.memberDown(w, v, answers) {
		return
	}
	list, next, ok := mergePages(w, v, topic, "sessions", answers, limit, func(raw json.RawMessage) string {
		var id struct {
			ID    string `json:"id"`
			Scope string `json:"scope"`
		}
		_ = json.Unmarshal(raw, &id)
		return events.EntityKey(id.Scope, id.ID)
	})
	if !ok {
		return
	}
	w.Header().Set(ServedByHeader, strings.Join(v.members, ","))
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list, "next_cursor": next})
}

// listInOutage answers a list 503 with Retry-After: 1 when this member
// was last seen in a group with others and the brokers have been away
// longer than the group's session timeout (brokersAway), and reports
// whether it did: its store holds only the partitions of topic it owned,
// and the other members cannot be found to ask for theirs. Before, it
// answered its own part as the whole page, 200: a paging reader got 101
// of 200 sessions in 20 pages during a 20 s broker outage, while the
// same member answered a single session's read with 503 (a cluster
// walkthrough, 2026-11-30; found by a review before, and left so).
func (s *Server) listInOutage(w http.ResponseWriter, err error, topic string) bool {
	if err == nil || !brokersAway(err) || !s.dir.wasCluster() {
		return false
	}
	w.Header().Set("Retry-After", "1")
	writeErr(w, http.StatusServiceUnavailable, "the list: this member's store holds only the partitions of %s it owned, and the brokers have not answered for longer than the processors' group's session timeout (%v), so the other members cannot be asked for theirs: retry once they answer",
		topic, s.sessionTimeout())
	return true
}

// mergePages merges the members' pages of a list route (GET /v1/sessions,
// GET /v1/workflows): each 200 answer's body holds field, an array of
// entities whose key (events.EntityKey) keyOf reads, and next_cursor. It
// keeps a key's copy from its partition's owner when a previous owner
// still holds an older one, orders the union by key and cuts it at limit:
// every member answered its first limit keys after the cursor, so the
// union's first limit keys are the first limit after the cursor overall,
// and next is the page's last key when a member had more ("" on the last
// page). A member's answer that is not a 200 is relayed, an unreadable one
// is a 502 naming the member; ok is false then (the answer is written).
func mergePages(w http.ResponseWriter, v *groupView, topic, field string, answers []memberAnswer, limit int, keyOf func(json.RawMessage) string) (list []json.RawMessage, next string, ok bool) {
	type item struct {
		key, from string
		raw       json.RawMessage
	}
	byKey := map[string]item{}
	more := false
	for _, a := range answers {
		if a.code != http.StatusOK {
			relay(w, a)
			return nil, "", false
		}
		var page map[string]json.RawMessage
		var entities []json.RawMessage
		var cursor string
		err := json.Unmarshal(a.body, &page)
		if err == nil {
			err = json.Unmarshal(page[field], &entities)
		}
		if err == nil && page["next_cursor"] != nil {
			err = json.Unmarshal(page["next_cursor"], &cursor)
		}
		if err != nil {
			writeJSON(w, http.StatusBadGateway, ForwardError{Error: fmt.Sprintf("member %s (%s) answered an unreadable list of %s: %v", a.member, a.url, field, err), Member: a.member, URL: a.url})
			return nil, "", false
		}
		more = more || cursor != ""
		for _, raw := range entities {
			key := keyOf(raw)
			prev, seen := byKey[key]
			owner := v.owner[tp{topic, partitionOf(topic, key, v.parts[topic])}]
			if !seen || (prev.from != owner && a.member == owner) {
				byKey[key] = item{key: key, from: a.member, raw: raw}
			}
		}
	}
	items := make([]item, 0, len(byKey))
	for _, it := range byKey {
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	if len(items) > limit || (more && len(items) == limit) {
		items = items[:limit]
		next = items[limit-1].key
	}
	list = make([]json.RawMessage, len(items))
	for i, it := range items {
		list[i] = it.raw
	}
	return list, next, true
}

// The entity routes that forward to their partition's owner, by the topic
// keying their entity. A session's sub-routes (its log, its PAIR loop)
// follow chronicle.sessions: the session row resolves the id there. The
// PAIR loop's own rows come from chronicle.evaluations and
// chronicle.learned, whose partitions the group assigns independently of
// chronicle.sessions' (README "Running as a cluster": not co-partitioned).
func sessionsRoute(write bool) ownerRoute {
	return ownerRoute{kind: "session", topic: fixedTopic(events.TopicSessions), scopes: sessions.Scopes, write: write, split: func(r *http.Request) (string, string, error) {
		return pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/sessions/"), "events", "improvement", "improve")
	}, budget: func(suffix string) time.Duration {
		if suffix == "events" {
			return SessionEventsTimeout // the owner reads the log
		}
		return 0
	}}
}

var reasoningRoute = ownerRoute{kind: "reasoning task", topic: fixedTopic(events.TopicReasoning), scopes: passes.Scopes, split: func(r *http.Request) (string, string, error) {
	return pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/reasoning/"), "history")
}}

// memoriesRoute: chronicle.memories has one partition (events.SinglePartition),
// so its owner holds every memory of every scope.
func memoriesRoute(write bool) ownerRoute {
	return ownerRoute{kind: "memory", topic: fixedTopic(events.TopicMemories), scopes: memories.Scopes, write: write, split: func(r *http.Request) (string, string, error) {
		return pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/memories/"), "history", "feedback")
	}}
}

func workflowsRoute(write bool) ownerRoute {
	rt := ownerRoute{kind: "workflow", topic: fixedTopic(events.TopicWorkflows), scopes: workflows.Scopes, write: write, split: func(r *http.Request) (string, string, error) {
		id, _, err := workflowPath(r)
		return id, "", err
	}}
	if write {
		rt.writeScope = workflowWriteRule
	}
	return rt
}

func searchesRoute(write bool) ownerRoute {
	return ownerRoute{kind: "search", topic: fixedTopic(events.TopicSearches), scopes: treesearch.Scopes, write: write, split: func(r *http.Request) (string, string, error) {
		return pathID(strings.TrimPrefix(r.URL.EscapedPath(), "/v1/searches/"), "nodes", "resume", "panel")
	}}
}

func fixedTopic(t events.Topic) func(string) events.Topic {
	return func(string) events.Topic { return t }
}

// remoteOwner is the advertised URL of the member that owns key's
// partition on topic when that is another member; "" when it is this
// instance, nobody, a member without a URL, or the request was itself
// forwarded... (the caller then reads its own store).
func (s *Server) remoteOwner(ctx context.Context, topic events.Topic, key string) string {
	v, owner, _ := s.ownerElsewhere(ctx, topic, key)
	if owner == "" {
		return ""
	}
	return v.urls[owner]
}

// ownerElsewhere is remoteOwner's member: the group view, the member id
// of the owner of key's partition on topic (with a URL) and the
// partition, for a forward; owner "" as remoteOwner answers "".
func (s *Server) ownerElsewhere(ctx context.Context, topic events.Topic, key string) (v *groupView, owner string, p int32) {
	if s.P == nil || s.P.Runner == nil {
		return nil, "", 0
	}
	v, err := s.groupView(ctx)
	if err != nil || v.blind || !v.forwarding() {
		return nil, "", 0 // a blind view knows no owner: answered here (toOwner answers most such reads 503 first; the policy routes and a fork's child key go on locally, as before)
	}
	p = partitionOf(string(topic), key, v.parts[string(topic)])
	owner = v.owner[tp{string(topic), p}]
	if owner == "" || owner == v.self || s.ownsLocally(string(topic), p) || v.urls[owner] == "" {
		return nil, "", 0
	}
	return v, owner, p
}

// ownerWait bounds how long a request whose topic has a partition
// without an owner in the group view waits for a view that names one
// (settledView, awaitOwner): the view is described again every
// DirectoryTTL, and a cooperative rebalance gives a moved partition its
// new owner in the round after.
const ownerWait = 3 * time.Second

// awaitOwner is ownerElsewhere for a write that must be made by the owner
// of key's partition on topic, on a settled view (settledView: at most
// ownerWait); ok false, with the view and partition for noOwner's 503,
// when that partition still has no owner and this member does not hold
// it. Before, the fork route took such a partition for its
// own: it wrote the fork from a member whose store never applies it and
// answered 202 "not yet processed after 5s", and a retry then found no
// idempotency key there (a flaky cluster test,
// TestForkRetryInACluster: the view it read was described while the
// rebalance moved the new workflow's partition). A blind view goes on
// locally, as ownerElsewhere does.
func (s *Server) awaitOwner(ctx context.Context, topic events.Topic, key string) (v *groupView, owner string, p int32, ok bool) {
	view, err := s.settledView(ctx, string(topic))
	if err == nil && !view.blind && view.forwarding() {
		p = partitionOf(string(topic), key, view.parts[string(topic)])
		if view.ownerless(string(topic), p) && !s.ownsLocally(string(topic), p) {
			return view, "", p, false
		}
	}
	v, owner, p = s.ownerElsewhere(ctx, topic, key)
	return v, owner, p, true
}

// settledView is groupView for a request on topic: while the view names
// no owner for some partition of topic (a rebalance moving it; the
// coordinator can describe the group Stable between a cooperative
// rebalance's two rounds), it asks again, at most ownerWait, and returns
// the last view. Before, such a view answered 503 at once: cluster tests
// failed so under load, a write-only token's resume answered 503 where
// the test waited for 404 (TestWriteOnlyResumeInACluster) seconds after
// the group had settled. Blind views, errors and members alone are
// returned at once.
func (s *Server) settledView(ctx context.Context, topic string) (*groupView, error) {
	deadline := time.Now().Add(ownerWait)
	for {
		v, err := s.groupView(ctx)
		if err != nil || v.blind || !v.forwarding() || v.complete(topic) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(DirectoryTTL / 4):
		}
	}
}

// getFrom sends GET path to the member at base with r's Authorization and
// the loop guard (and hdr, name/value pairs), bounded by the forward
// timeout.
func (s *Server) getFrom(ctx context.Context, r *http.Request, base, path string, hdr ...string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.forwardTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set(ForwardedHeader, s.P.Runner.MemberID())
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	s.signMember(req)
	resp, err := forwardClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, err
}
