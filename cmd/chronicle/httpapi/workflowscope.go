package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/events"
)

// Resolving a workflow write's scope across the cluster. A write without
// ?scope= goes where one instance sends it (workflowPost): the scope the
// caller may access that holds the workflow's id. On a cluster the member
// that receives the write holds only the partitions it owns, so it cannot
// see a workflow of another scope whose key another member owns: it used
// to write to the caller's default write scope, silently starting a
// second workflow of that id (the answer and the resume said 404). Now
// the member asks every member, as a read without ?scope= does
// (FanOutHeader), which scopes hold the id on the partitions it owns, and
// sends the write to that key's owner with ?scope= set.

// ScopeProbeHeader marks a fan-out that asks a member which of the
// caller's scopes hold an id on the partitions the member owns, without
// reading the entity: the member answers 200 {"id", "scopes"} (scopes the
// caller may read; the asking member applies the route's rule). Only
// scopes the caller reads: a client can send the header itself (with
// ForwardedHeader and FanOutHeader, which no member can tell from its own
// forward), and a probe that named the scopes the caller may write made
// a write-only token's GET an existence oracle for ids it may not read
// (found by a tenant-isolation review).
const ScopeProbeHeader = "Chronicle-Scope-Probe"

// scopeRule is how a write without ?scope= picks its scope among those
// holding the id, as one instance picks it (workflowPost).
type scopeRule int

const (
	// scopeStarts: updates, checkpoints, commands, decision requests,
	// complete. The one scope the caller reads that holds the id (403 when
	// it may not write it); several: 409; none: the default write scope,
	// where the write starts a workflow.
	scopeStarts scopeRule = iota + 1
	// scopeWritable: resume and decision answers. The one scope the
	// caller reads and writes that holds the id; several: 409; none: 404
	// (403 for a scope it reads but may not write); across the cluster
	// too, where the probe names only scopes the caller reads.
	scopeWritable
	// scopeReadable: fork. The one scope the caller reads that holds the
	// parent; several: 409; none: 404.
	scopeReadable
)

// workflowWriteRule is the scope rule of a workflow write route (false:
// no such route; the handler answers it).
func workflowWriteRule(r *http.Request) (scopeRule, bool) {
	_, sub, err := workflowPath(r)
	if err != nil {
		return 0, false
	}
	switch {
	case len(sub) == 1 && (sub[0] == "updates" || sub[0] == "checkpoints" || sub[0] == "commands" || sub[0] == "decisions" || sub[0] == "complete"):
		return scopeStarts, true
	case len(sub) == 1 && sub[0] == "resume", len(sub) == 2 && sub[0] == "decisions":
		return scopeWritable, true
	case len(sub) == 1 && sub[0] == "fork":
		return scopeReadable, true
	}
	return 0, false
}

// oneScope reports whether c reads and writes one and the same concrete
// scope and nothing else: its writes have no scope to resolve.
func oneScope(c access.Caller) bool {
	set := map[string]bool{}
	for _, sc := range c.Read {
		set[sc] = true
	}
	for _, sc := range c.Write {
		set[sc] = true
	}
	return len(set) == 1 && !set["*"]
}

// scopesAnswer is a member's answer to a ScopeProbeHeader fan-out.
type scopesAnswer struct {
	ID     string   `json:"id"`
	Scopes []string `json:"scopes"`
	// Scope is read from a member that answers the probe as a read (a
	// Chronicle before ScopeProbeHeader): the entity's view names it.
	Scope string `json:"scope,omitempty"`
}

// answerScopes answers a ScopeProbeHeader fan-out: the scopes the caller
// may read that hold the id on the partitions this member owns (never one
// it may only write: see ScopeProbeHeader);
// none while it restores a partition of the topic is a 503 RestoringError
// (the prober then writes nothing), since the id may be in a record not
// applied yet.
func (s *Server) answerScopes(rt ownerRoute) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, suffix, err := rt.split(r)
		if err == nil {
			err = events.CheckID(id)
		}
		if err != nil || rt.scopes == nil {
			writeErr(w, http.StatusBadRequest, "%s id: %v", rt.kind, err)
			return
		}
		v, err := s.groupView(r.Context())
		if err != nil {
			writeErr(w, http.StatusServiceUnavailable, "the group's assignment is not known here: %v", err)
			return
		}
		if v.blind {
			s.noOwner(w, v, string(rt.topic(suffix)), -1, "which scopes hold the "+rt.kind)
			return
		}
		c := CallerOf(r)
		held, err := s.ownedScopes(rt, v, id, suffix, c.CanRead)
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "%v", err)
			return
		}
		if len(held) == 0 {
			if parts := s.restoring(string(rt.topic(suffix))); len(parts) > 0 {
				// the workflow may be in a record not restored yet: "none
				// here" would let the write start a second one
				writeRestoring(w, "no scope holds the "+rt.kind+" here yet", string(rt.topic(suffix)), parts)
				return
			}
			held = []string{}
		}
		writeJSON(w, http.StatusOK, scopesAnswer{ID: id, Scopes: held})
	}
}

// writeToHeldScope sends a workflow write without ?scope= (rt's route,
// the entity id) where one instance would write it: it asks every member
// (ScopeProbeHeader, in parallel, each bounded by the forward timeout)
// which of the caller's scopes hold the id, picks the scope by rule, and
// serves the write here or forwards it to that key's owner, with ?scope=
// set either way. A member that does not answer makes the write a 503
// naming it (Retry-After: 1): nothing is written, since that member may
// hold the workflow and the default write scope would start a second one.
// So does a probe that finds no scope while a partition of the topic has
// no owner in v (noOwner): the workflow may be on that partition, whose
// rows no member answers for, and the write is sent to the key's owner
// in v (the last Stable view while the group rebalances).
func (s *Server) writeToHeldScope(w http.ResponseWriter, r *http.Request, v *groupView, rt ownerRoute, id, suffix string, rule scopeRule, next http.HandlerFunc) {
	probe := r.Clone(r.Context())
	probe.Method, probe.Body, probe.ContentLength = http.MethodGet, http.NoBody, 0
	u, err := url.Parse("/v1/workflows/" + url.PathEscape(id))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "%s id: %v", rt.kind, err)
		return
	}
	probe.URL, probe.RequestURI = u, ""
	probe.Header.Set(ScopeProbeHeader, "1")
	answers := s.fanOut(probe, v, s.answerScopes(rt), true)
	held := map[string]bool{}
	for _, a := range answers {
		var ans scopesAnswer
		switch {
		case a.failed():
			why := fmt.Sprintf("answered %d: %s", a.code, strings.TrimSpace(string(a.body)))
			if a.err != nil {
				why = "did not answer: " + a.err.Error()
				if errors.Is(a.err, context.DeadlineExceeded) {
					why = fmt.Sprintf("did not answer within %v (the forward timeout): %v", s.forwardTimeout(), a.err)
				}
			}
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, ForwardError{
				Error: fmt.Sprintf("member %s (%s) %s; it may hold %s %q in one of your scopes, so nothing was written: retry, or name the scope with ?scope=",
					a.member, a.url, why, rt.kind, id),
				Member: a.member, URL: a.url})
			return
		case a.code == http.StatusNotFound:
			// a member of an older Chronicle answered the probe as a read
		case a.code != http.StatusOK:
			relay(w, a) // the caller's own refusal (400, 403) or an older member's 409; a 401 to the forward is failed() above
			return
		case json.Unmarshal(a.body, &ans) != nil:
			// 503 as for a member that did not answer (openapi.json lists
			// no 502 for these routes)
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, ForwardError{Error: fmt.Sprintf("member %s (%s) answered an unreadable list of scopes; nothing was written: retry, or name the scope with ?scope=", a.member, a.url), Member: a.member, URL: a.url})
			return
		default:
			for _, sc := range ans.Scopes {
				held[sc] = true
			}
			if ans.Scopes == nil && ans.Scope != "" {
				held[ans.Scope] = true
			}
		}
	}
	c := CallerOf(r)
	keep := c.CanRead
	if rule == scopeWritable {
		// resume and decision answers: a scope the caller reads and
		// writes, as entityKey resolves them on one instance
		// (readsAndWrites)
		keep = func(sc string) bool { return c.CanRead(sc) && c.CanWrite(sc) }
	}
	var list []string
	for sc := range held {
		if keep(sc) {
			list = append(list, sc)
		}
	}
	sort.Strings(list)
	topic := string(rt.topic(suffix))
	if len(list) == 0 && !v.complete(topic) {
		s.noOwner(w, v, topic, -1, "the write (which scope holds the "+rt.kind+"?)")
		return
	}
	var sc string
	switch {
	case len(list) > 1:
		writeErr(w, http.StatusConflict, "%s %q exists in several scopes you may access (%s): add ?scope=", rt.kind, id, strings.Join(list, ", "))
		return
	case len(list) == 1:
		sc = list[0]
	case rule == scopeStarts:
		if sc = c.DefaultWriteScope(); sc == "" {
			sc = events.DefaultScope
		}
	default:
		var readOnly []string
		for h := range held {
			if c.CanRead(h) && !c.CanWrite(h) {
				readOnly = append(readOnly, h)
			}
		}
		if len(readOnly) > 0 {
			// as entityKey answers on one instance: the caller may see the
			// workflow there, so a 404 would only mislead
			sort.Strings(readOnly)
			writeErr(w, http.StatusForbidden, "%s %q is in %s, which this token may read but not write", rt.kind, id, strings.Join(readOnly, ", "))
			return
		}
		entityNotFound(w, r, rt.kind, id)
		return
	}
	if rule == scopeStarts && !c.CanWrite(sc) {
		writeErr(w, http.StatusForbidden, "scope: this token may not write %s", sc)
		return
	}
	r2 := r.Clone(r.Context())
	q := r2.URL.Query()
	q.Set("scope", sc)
	r2.URL.RawQuery = q.Encode()
	p := partitionOf(topic, events.EntityKey(sc, id), v.parts[topic])
	owner := v.owner[tp{topic, p}]
	if v.ownerless(topic, p) && !s.ownsLocally(topic, p) {
		s.noOwner(w, v, topic, p, "the write")
		return
	}
	if owner == "" || owner == v.self || s.ownsLocally(topic, p) || v.urls[owner] == "" {
		next(w, r2)
		return
	}
	s.forward(w, r2, v, owner, topic, p, s.forwardTimeout()+s.improveWait())
}
