package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// LearnedKeepAlive is how often GET /v1/learned/stream writes an SSE
// comment (": keep-alive") while no event arrives, so proxies keep the
// connection open and the server notices a client that went away.
var LearnedKeepAlive = 15 * time.Second

// LearnedBrokerWait bounds how long GET /v1/learned/stream waits for a
// broker that stopped answering (no fetch and no ping succeeded): after it
// the stream ends with an "event: error" whose data names the error; the
// client resumes from its Last-Event-ID once the broker is back. The
// broker is asked every LearnedBrokerWait/3 while no record arrives,
// independently of LearnedKeepAlive.
var LearnedBrokerWait = 30 * time.Second

// LearnedFetchBytes bounds one fetch of GET /v1/learned/stream's consumer
// (256 KiB; a quarter of it a partition; a record batch larger than that
// still comes whole, as Kafka answers): what a stream holds while it
// catches up, one fetch and its SSE lines at a time.
var LearnedFetchBytes int32 = 256 << 10

// LearnedWriteTimeout bounds each write of GET /v1/learned/stream to its
// client (events, a keep-alive, the last event at shutdown): a client
// that stops reading is cut after it, and its stream's broker client
// freed. Before, a client that never read held its stream, its broker
// connections and its goroutines for as long as it stayed connected, and
// held serve's shutdown up for the whole 10 s grace (a walkthrough,
// 2026-11-30).
var LearnedWriteTimeout = 30 * time.Second

// LearnedMaxStreams is how many GET /v1/learned/stream may be open at once
// on one server (each has its own broker client: about 19 goroutines and
// 7 broker connections, and some 18 MB while it catches up, measured by a
// walkthrough, 2026-11-30); one more is answered 503 with Retry-After.
// Default 64.
var LearnedMaxStreams int64 = 64

// LearnedMaxStreamsPerToken is how many of those one API token may hold
// at once; one more is answered 503 with Retry-After, naming the token's
// share. A server without tokens (one tenant, loopback) has no share: its
// streams count against LearnedMaxStreams only. Default 16. Before, one
// tenant that opened 64 streams and kept reading them left every other
// tenant's stream a 503 for as long as it stayed connected (a tenant-
// isolation walkthrough, 2026-11-30).
var LearnedMaxStreamsPerToken = 16

// LearnedCursor is the position of a learned-stream client in
// chronicle.learned: per partition, the next offset to deliver. Its text
// form, the SSE id of every event and the value of Last-Event-ID or
// ?after=, is "<partition>:<next offset>" joined by commas in partition
// order, e.g. "0:13,1:7": resuming from the id of the last event received
// delivers exactly the events after it, with no gap and no repeat, however
// the partitions interleaved.
type LearnedCursor map[int32]int64

// String is the cursor's text form.
func (c LearnedCursor) String() string {
	parts := make([]int32, 0, len(c))
	for p := range c {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", p, c[p])
	}
	return b.String()
}

// ParseLearnedCursor parses a cursor's text form. Errors name the part,
// or the partition a cursor names twice.
func ParseLearnedCursor(s string) (LearnedCursor, error) {
	c := LearnedCursor{}
	for _, part := range strings.Split(s, ",") {
		ps, os, ok := strings.Cut(strings.TrimSpace(part), ":")
		p, perr := strconv.ParseInt(ps, 10, 32)
		o, oerr := strconv.ParseInt(os, 10, 64)
		if !ok || perr != nil || oerr != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%q is not <partition>:<next offset>", part)
		}
		if _, dup := c[int32(p)]; dup {
			// no stream gives one; the last silently won before
			return nil, fmt.Errorf("partition %d is named twice", p)
		}
		c[int32(p)] = o
	}
	return c, nil
}

// learnedFilter decides which learned records a stream shows.
type learnedFilter struct {
	caller access.Caller
	scope  string // a full scope ("project:x"), a kind ("project"), or "" for every readable scope
	types  map[events.Type]bool
}

var scopeKinds = map[string]bool{"project": true, "team": true, "org": true}

// show reports whether the event env passes the filter: a learned type,
// of a scope the caller reads and the filter names. The tool graph's
// events belong to the scope whose graph they describe (the tool graph is
// kept per scope), like every other learned event.
func (f learnedFilter) show(env *events.Envelope) (events.Type, bool) {
	ti, ok := events.Lookup(env.Type)
	if !ok || ti.Topic != events.TopicLearned || (f.types != nil && !f.types[env.Type]) {
		return "", false
	}
	sc := env.Scope
	if sc == "" {
		sc = events.DefaultScope
	}
	if !f.caller.CanRead(sc) {
		return "", false
	}
	switch {
	case f.scope == "":
	case scopeKinds[f.scope]:
		if !strings.HasPrefix(sc, f.scope+":") {
			return "", false
		}
	case sc != f.scope:
		return "", false
	}
	return env.Type, true
}

// learnedStream serves GET /v1/learned/stream: chronicle.learned as
// Server-Sent Events (text/event-stream). Each event is
//
//	id: <LearnedCursor after it>
//	event: <CloudEvents type>
//	data: <the structured CloudEvent JSON, one line>
//
// Query: after= (or the Last-Event-ID header, which wins) resumes after a
// position; from=start (default) or from=end says where a stream without
// one starts; scope= a full scope ("project:x") or a kind ("project"),
// default every scope the token reads (403 for a scope it does not read);
// types= a comma-separated list of learned types (repeatable: every
// value counts); follow=false ends the stream at the end the topic had
// when the request came (catch up and close), with a last position block
// (LearnedPositionEvent) holding the position reached (endCatchUp). after, from, scope
// and follow take one value: a repeat is a 400 naming it (queryShape).
// The stream opens with a position block holding its starting position,
// so a client that reconnects before its first event resumes there, not
// at from= again. Every LearnedKeepAlive without an event a ": keep-alive"
// comment is written (followed by a position block when records were
// skipped since the last id); a broker that does not answer for LearnedBrokerWait
// ends the stream with "event: error". It reads with a plain franz-go
// consumer of assigned partitions (no consumer group: nothing is
// committed; the position is the client's), read_committed: a record of
// an aborted transaction (a fenced zombie's) is never shown.
func (s *Server) learnedStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// types= is a list (repeats count); a repeat of the others is refused
	// before (the router's queryShape)
	f := learnedFilter{caller: CallerOf(r), scope: q.Get("scope")}
	if f.scope == search.ScopeAll {
		f.scope = "" // every scope the token reads, as on the searches and GET /v1/sessions
	}
	if f.scope != "" && !scopeKinds[f.scope] {
		if !events.ValidScope(f.scope) {
			writeParamErr(w, http.StatusBadRequest, "scope", events.ScopeFilterReason(f.scope))
			return
		}
		if !f.caller.CanRead(f.scope) {
			writeParamErr(w, http.StatusForbidden, "scope", "this token may not read "+f.scope)
			return
		}
	}
	// types= comma-separated, and repeated (types=a&types=b, as many
	// HTTP clients send a list): every value counts (only the first did)
	if ts := strings.Join(q["types"], ","); ts != "" {
		f.types = map[events.Type]bool{}
		for _, t := range strings.Split(ts, ",") {
			ti, ok := events.Lookup(events.Type(t))
			if !ok || ti.Topic != events.TopicLearned {
				writeParamErr(w, http.StatusBadRequest, "types", fmt.Sprintf("%q is not a type of %s (%s)", t, events.TopicLearned, events.TypeList(events.LearnedTypes)))
				return
			}
			f.types[events.Type(t)] = true
		}
	}
	follow := true
	if fs := q.Get("follow"); fs != "" {
		b, err := strconv.ParseBool(fs)
		if err != nil {
			writeParamErr(w, http.StatusBadRequest, "follow", fmt.Sprintf("%q is not true or false", fs))
			return
		}
		follow = b
	}
	from := q.Get("from")
	if from != "" && from != "start" && from != "end" {
		writeParamErr(w, http.StatusBadRequest, "from", fmt.Sprintf("%q is not start or end", from))
		return
	}
	var cur LearnedCursor
	// the cursor's refusals name where it came from, the header (which
	// wins) or the query parameter, as parameter and reason, as this
	// route's other parameters do (they had the text alone: a subscriber
	// walkthrough, 2026-12-06)
	after, afterParam := q.Get("after"), "after"
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		after, afterParam = h, "Last-Event-ID"
	}
	if after != "" {
		c, err := ParseLearnedCursor(after)
		if err != nil {
			writeParamErr(w, http.StatusBadRequest, afterParam, err.Error())
			return
		}
		cur = c
	}

	if s.Tokens != nil {
		if !s.takeTokenStream(f.caller.Name) {
			streamRetryLater(w, r, cur, "this token holds the most streams it may", fmt.Errorf("this token has %d learned streams open on this server, the most one token may hold at once (httpapi.LearnedMaxStreamsPerToken): close one, or retry later", LearnedMaxStreamsPerToken))
			return
		}
		defer s.releaseTokenStream(f.caller.Name)
	}
	if n := s.openStreams.Add(1); n > LearnedMaxStreams {
		s.openStreams.Add(-1)
		streamRetryLater(w, r, cur, "this server serves the most streams it may", fmt.Errorf("%d learned streams are open on this server, the most it serves at once (httpapi.LearnedMaxStreams): retry later, or read chronicle.learned with a Kafka client", LearnedMaxStreams))
		return
	}
	defer s.openStreams.Add(-1)
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	go func() {
		select {
		case <-s.streamsStopped():
			stop()
		case <-ctx.Done():
		}
	}()
	topic := string(events.TopicLearned)
	cl, err := kafkaconn.NewClient(s.logAddrs(), kgo.DisableFetchSessions(), // see kafkapubsub: avoids a race in franz-go's Close
		// a fenced relay writes the learned events in transactions: never
		// an aborted record, and the markers kept so that the position
		// passes them (the topic's end offset is after the last marker)
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		// a stream catching up holds one fetch and its lines at a time:
		// with franz-go's defaults (1 MiB a partition, 50 MiB a fetch), 30
		// streams from the start of the demo's 3 MB topic raised the
		// server's peak RSS by 134–207 MB, with this bound by 62–65 MB
		kgo.FetchMaxBytes(LearnedFetchBytes), kgo.FetchMaxPartitionBytes(LearnedFetchBytes/4), kgo.MaxConcurrentFetches(1))
	if err != nil {
		streamUnavailable(w, r, cur, err)
		return
	}
	defer cl.Close()
	octx, ocancel := context.WithTimeout(ctx, LearnedBrokerWait)
	ends, err := kadm.NewClient(cl).ListEndOffsets(octx, topic)
	ocancel()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		streamUnavailable(w, r, cur, fmt.Errorf("end offsets of %s: %w", topic, err))
		return
	}
	end := LearnedCursor{}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	bound := s.asOfBound()
	if bound != nil {
		// chronicle inspect --brokers: the stream ends where the state
		// does (its positions of chronicle.learned, which the sessionlog
		// and PAIR processors read), though the log given may hold later
		// records, and never follows: a read-only state learns nothing
		// more. Before, inspect answered this route 503 whatever it was
		// given (an analyst's walkthrough, 2026-12-07)
		end = boundLearnedEnd(end, bound)
		follow = false
	}
	if cur == nil {
		cur = LearnedCursor{}
	}
	for p, e := range end {
		if _, ok := cur[p]; !ok {
			if from == "end" {
				cur[p] = e
			} else {
				cur[p] = 0
			}
		}
	}
	for p, o := range cur {
		e, ok := end[p]
		if !ok {
			writeParamErr(w, http.StatusBadRequest, afterParam, fmt.Sprintf("%s has no partition %d", topic, p))
			return
		}
		if o > e {
			// a cursor no stream handed out: resuming there would skip
			// the events written between the end and it, silently
			asOf := ""
			if bound != nil {
				asOf = " as of this read-only state (GET /healthz as_of)"
			}
			writeParamErr(w, http.StatusBadRequest, afterParam, fmt.Sprintf("%d:%d is beyond the end of %s partition %d%s (%d): not a position this stream gave", p, o, topic, p, asOf, e))
			return
		}
	}
	start := map[int32]kgo.Offset{}
	for p, o := range cur {
		start[p] = kgo.NewOffset().At(o)
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: start})

	rc := http.NewResponseController(w)
	// a stream outlives the server's write timeout; each write has its own
	// (LearnedWriteTimeout), so a client that stops reading is cut
	due := func() { _ = rc.SetWriteDeadline(time.Now().Add(LearnedWriteTimeout)) }
	due()
	startEventStream(w)
	fmt.Fprintf(w, ": chronicle.learned from %s\nretry: 2000\n\n", cur)
	// the starting position as a position block (it sets the client's
	// last event ID; LearnedPositionEvent): an EventSource never sees the
	// comment above, so a
	// client that lost its connection before its first event reconnected
	// without Last-Event-ID and started again at from= — with from=end,
	// past every event learned while it was away (a subscriber's
	// walkthrough, 2026-12-06: a confidence change written during a 3 s
	// drop never arrived)
	sentID := cur.String()
	if sentID != "" {
		fmt.Fprint(w, positionBlock(sentID))
	}
	if err := rc.Flush(); err != nil {
		return
	}
	caughtUp := func() bool {
		for p, e := range end {
			if cur[p] < e {
				return false
			}
		}
		return true
	}
	if !follow && caughtUp() {
		endCatchUp(w, rc, cur, sentID)
		return
	}
	// The broker's liveness is checked on its own clock, not the
	// keep-alive's: every poll ends by the next keep-alive, the next probe
	// (LearnedBrokerWait/3 after the last one) or the deadline (the last
	// answer + LearnedBrokerWait), whichever comes first; a poll without
	// records is followed by a ping bounded by the deadline. So the stream
	// ends at most a ping's return after LearnedBrokerWait without an
	// answer, whatever LearnedKeepAlive is.
	wait, keepAlive := LearnedBrokerWait, LearnedKeepAlive
	probe := wait / 3
	lastOK := time.Now()    // the broker's last answer: the end offsets above
	lastWrite := time.Now() // the comment above
	for {
		now := time.Now()
		deadline := lastOK.Add(wait)
		wake := earliest(lastWrite.Add(keepAlive), now.Add(probe), deadline)
		pctx, pcancel := context.WithDeadline(ctx, wake)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			s.endStream(w, rc, cur)
			return
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		var buf bytes.Buffer
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < cur[rec.Partition] || bound != nil && rec.Offset >= end[rec.Partition] {
				return // before the position, or past a read-only state's end
			}
			cur[rec.Partition] = rec.Offset + 1
			if rec.Attrs.IsControl() { // a transaction marker: not an event
				return
			}
			raw, err := events.StructuredJSON(rec)
			if err != nil {
				return
			}
			// only what the engine applies: a valid event (its data
			// valid against its type's schema) on the partition its key
			// belongs to. A record written straight to the topic that
			// breaks its schema is dead-lettered by the processors that
			// read the topic; the stream showed it as learned (a
			// subscriber's walkthrough: a forged memory.created.v1
			// without a title, listed in GET /v1/deadletters and sent
			// here alike)
			env, key, err := events.FromRecordKey(rec)
			if err != nil || (len(end) > 1 && events.Partition(topic, key, len(end)) != rec.Partition) {
				return
			}
			typ, ok := f.show(&env)
			if !ok {
				return
			}
			var line bytes.Buffer
			if json.Compact(&line, raw) != nil {
				return
			}
			sentID = cur.String()
			fmt.Fprintf(&buf, "id: %s\nevent: %s\ndata: %s\n\n", sentID, typ, line.Bytes())
		})
		due()
		switch {
		case buf.Len() > 0:
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			lastWrite = time.Now()
		case time.Since(lastWrite) >= keepAlive:
			// nothing written for the keep-alive interval: say so (a
			// client that went away is noticed here), with the position
			// reached when records were skipped since the last id (another
			// scope's, another type's): a reconnect resumes after them
			// rather than scanning them again
			ka := ": keep-alive\n\n"
			if id := cur.String(); id != sentID {
				ka += positionBlock(id)
				sentID = id
			}
			if _, err := fmt.Fprint(w, ka); err != nil {
				return
			}
			lastWrite = time.Now()
		}
		if err := rc.Flush(); err != nil {
			return
		}
		switch {
		case fs.NumRecords() > 0:
			lastOK = time.Now()
		case ferr == nil:
			// an empty poll says nothing of the broker: ask it
			ferr = pingBy(ctx, cl, lastOK.Add(wait))
			if ctx.Err() != nil {
				s.endStream(w, rc, cur)
				return
			}
			if ferr == nil {
				lastOK = time.Now()
			}
		}
		if time.Since(lastOK) >= wait {
			if ferr == nil {
				ferr = context.DeadlineExceeded
			}
			due()
			b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("the broker did not answer for %s: %v", wait, ferr), "resume": cur.String()})
			writeStreamError(w, cur, b)
			_ = rc.Flush()
			return
		}
		if !follow && caughtUp() {
			endCatchUp(w, rc, cur, sentID)
			return
		}
	}
}

// boundLearnedEnd is end (the topic's end offsets, per partition) cut at
// a read-only state's positions (bound): the offset after the last record
// of chronicle.learned the state read, 0 on a partition it read none of.
func boundLearnedEnd(end LearnedCursor, bound logBound) LearnedCursor {
	out := LearnedCursor{}
	for p, e := range end {
		last, ok := bound[topicPartition{string(events.TopicLearned), p}]
		out[p] = 0
		if ok {
			out[p] = min(e, last+1)
		}
	}
	return out
}

// endCatchUp ends a follow=false stream with the position it reached as
// a position block (LearnedPositionEvent: "id: 0:13,1:7", no learned
// event): it sets the client's last event ID. So a catch-up client whose filter matched
// nothing, or nothing after its last event, resumes (Last-Event-ID) after
// everything this stream scanned rather than from where it started (from
// 0:0 on every poll, a rescan of the whole topic). The position names
// offsets only, as every event's id does; the records skipped to reach it
// are those of the topic, and a resumed stream applies its own caller's
// scopes and filter to what follows. Not written when it is the id of
// the last id written (sentID).
func endCatchUp(w http.ResponseWriter, rc *http.ResponseController, cur LearnedCursor, sentID string) {
	if id := cur.String(); id != "" && id != sentID {
		fmt.Fprint(w, positionBlock(id))
		_ = rc.Flush()
	}
}

// StopStreams ends every open GET /v1/learned/stream: each sends a last
// event, "event: error" with {"error", "resume"} (the cursor to resume
// from with Last-Event-ID), and returns. serve calls it when it shuts
// down (http.Server.RegisterOnShutdown), so an open stream does not hold
// the shutdown up. Safe to call more than once.
func (s *Server) StopStreams() {
	s.streamsStopped() // make the channel
	s.stopStreams.Do(func() { close(s.streamsStop) })
}

// takeTokenStream counts one more stream of the token named name, unless
// it holds LearnedMaxStreamsPerToken already (false).
func (s *Server) takeTokenStream(name string) bool {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.tokenStreams[name] >= LearnedMaxStreamsPerToken {
		return false
	}
	if s.tokenStreams == nil {
		s.tokenStreams = map[string]int{}
	}
	s.tokenStreams[name]++
	return true
}

// releaseTokenStream counts one stream of the token named name less.
func (s *Server) releaseTokenStream(name string) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.tokenStreams[name]--; s.tokenStreams[name] <= 0 {
		delete(s.tokenStreams, name)
	}
}

func (s *Server) streamsStopped() <-chan struct{} {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streamsStop == nil {
		s.streamsStop = make(chan struct{})
	}
	return s.streamsStop
}

// endStream tells a stream's client that the server is stopping, when it
// is (a client that went away gets nothing).
func (s *Server) endStream(w http.ResponseWriter, rc *http.ResponseController, cur LearnedCursor) {
	select {
	case <-s.streamsStopped():
	default:
		return
	}
	// a client that does not read gets a second, not the shutdown's grace
	_ = rc.SetWriteDeadline(time.Now().Add(time.Second))
	b, _ := json.Marshal(map[string]string{"error": "the server is shutting down", "resume": cur.String()})
	writeStreamError(w, cur, b)
	_ = rc.Flush()
}

// writeStreamError writes a stream's last event, "event: error" with data
// {"error", "resume"}, and with an id: line holding the resume cursor, so
// an EventSource's own reconnect resumes there (its Last-Event-ID). Before,
// the cursor rode in data only: a client that had received no event yet
// (from=end, or a filter that matched nothing) reconnected from the new
// end or from its start (a Node.js integrator's walkthrough, 2026-12-01).
func writeStreamError(w http.ResponseWriter, cur LearnedCursor, data []byte) {
	if id := cur.String(); id != "" {
		fmt.Fprintf(w, "id: %s\n", id)
	}
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
}

// LearnedRetry is the reconnection time, in milliseconds, a stream tells
// an SSE client (the event stream's "retry:" field) when it could not
// start because the broker did not answer (streamUnavailable).
const LearnedRetry = 5000

// streamUnavailable answers a stream that could not start because the
// broker did not answer (err). A client that asked for text/event-stream
// (an EventSource does) gets a 200 event stream that says "retry:
// LearnedRetry" and ends at once with "event: error" ({"error", "resume"},
// with an id: line holding its cursor when it gave one), so it reconnects
// by itself a few seconds later and resumes where it was: an SSE client
// fails for good on any answer but a 200 (WHATWG HTML, "event stream
// interpretation"), and the 503 it got left every EventSource closed after
// a broker outage longer than its reconnect delay, also once the broker was
// back (a subscriber's walkthrough, 2026-12-01). Any other client gets a
// 503 with Retry-After: 5, as before but with the header.
func streamUnavailable(w http.ResponseWriter, r *http.Request, cur LearnedCursor, err error) {
	streamRetryLater(w, r, cur, "the broker did not answer", err)
}

// streamRetryLater answers a stream that cannot start now but may in a few
// seconds (why, for the stream's comment line; err, its error) as
// streamUnavailable describes: to an EventSource a 200 event stream with
// "retry: LearnedRetry" that ends at once with "event: error", to any
// other client a 503 with Retry-After: 5. The stream caps
// (LearnedMaxStreamsPerToken, LearnedMaxStreams) answer so too: their 503
// closed an EventSource for good, so a page that opened one stream too
// many never got it, even once another closed (a walkthrough's finding).
func streamRetryLater(w http.ResponseWriter, r *http.Request, cur LearnedCursor, why string, err error) {
	if !acceptsEventStream(r) {
		w.Header().Set("Retry-After", "5")
		writeErr(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	startEventStream(w)
	fmt.Fprintf(w, ": chronicle.learned unavailable: %s; reconnect in %d ms\nretry: %d\n\n", why, LearnedRetry, LearnedRetry)
	b, _ := json.Marshal(map[string]string{"error": err.Error(), "resume": cur.String()})
	writeStreamError(w, cur, b)
}

// startEventStream writes a stream's 200 and its headers: the SSE media
// type, no caching, and no buffering by a proxy (nginx's
// X-Accel-Buffering).
func startEventStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// acceptsEventStream reports whether r's Accept header names
// text/event-stream (an EventSource sends it).
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// pingBy asks the broker whether it answers, waiting until deadline at the
// latest: franz-go's Ping waits for a request it has written to be
// answered past its context's end, so on a broker that stopped (SIGSTOP)
// a stream noticed it up to 50 s after it stopped where 30 to 40 were
// documented (a subscriber's walkthrough, 2026-12-01). The ping goes on in
// the background until franz-go gives up on it (or the client closes).
func pingBy(ctx context.Context, cl *kgo.Client, deadline time.Time) error {
	pctx, cancel := context.WithDeadline(ctx, deadline)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- cl.Ping(pctx)
	}()
	select {
	case err := <-done:
		return err
	case <-pctx.Done():
		return pctx.Err()
	}
}

// earliest is the earliest of ts.
func earliest(ts ...time.Time) time.Time {
	e := ts[0]
	for _, t := range ts[1:] {
		if t.Before(e) {
			e = t
		}
	}
	return e
}

// LearnedPositionEvent is the SSE event name of a position block: the
// stream's position with no learned event, as
//
//	id: 0:13,1:7
//	event: position
//	data: {"position":"0:13,1:7"}
//
// where the stream starts, in a keep-alive once records were skipped, and
// at the end of a follow=false stream. It sets a client's last event ID,
// so a reconnect resumes there; its data is no CloudEvent, and an
// EventSource's onmessage never sees it (a named event). It was an
// id-only block (no event, no data), which the WHATWG standard has set
// the last event ID too, but the npm eventsource package (v3, which the
// README names for tokens) records the id of a dispatched event only, and
// dispatches none without data (a subscriber's re-test, 2026-12-06).
const LearnedPositionEvent = "position"

// positionBlock is the SSE block of LearnedPositionEvent at cursor id.
func positionBlock(id string) string {
	return fmt.Sprintf("id: %s\nevent: %s\ndata: {\"position\":%q}\n\n", id, LearnedPositionEvent, id)
}
