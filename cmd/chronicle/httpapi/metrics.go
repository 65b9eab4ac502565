package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Kinds of the requests one member sends another (the kind label of
// chronicle_member_requests_total and chronicle_member_request_failures_total).
const (
	// memberForward is a request forwarded to the owner of the entity's
	// partition (Server.forward).
	memberForward = "forward"
	// memberFanOut is one member's part of a request asked of every member
	// (a list, an entity whose owner is not known: Server.fanOut).
	memberFanOut = "fan_out"
)

// Reasons of chronicle_member_request_failures_total.
const (
	failTimeout     = "timeout"      // no answer within the forward timeout
	failUnreachable = "unreachable"  // no answer: refused connection, reset, no URL published or an invalid one
	failRefused     = "refused"      // a 401 to the member's request, or a 404 of no route (another member_secret, a wrong --advertise)
	failStatus      = "server_error" // a 5xx: the member could not say
)

// serverMetrics are the API's own series, registered on the pipeline's
// registry the first time the API serves (Server.metrics):
//
//   - chronicle_learned_streams_open (gauge): GET /v1/learned/stream
//     connections open on this member, bounded by LearnedMaxStreams;
//   - chronicle_member_requests_total{kind} (counter): requests this
//     member sent to another, kind forward or fan_out;
//   - chronicle_member_request_failures_total{kind,reason} (counter): those
//     that got no answer about the data, reason timeout, unreachable,
//     refused or server_error; the client got a 503 or 504 naming the
//     member (a fan-out's failure fails the whole request);
//   - chronicle_http_requests_total{route,code} (counter) and
//     chronicle_http_request_duration_seconds{route} (histogram): the
//     requests this member answered, by route and status (countRequests);
//   - chronicle_ingest_budget_held_bytes (gauge) and
//     chronicle_ingest_budget_limit_bytes (gauge): the request bodies'
//     room held now in the ingest budget, and its size (IngestBudget);
//   - chronicle_ingest_budget_rejections_total{route} (counter): the 429s
//     of a budget that stayed full, by route pattern (admitBody), at 0
//     for every route that reads a body.
//
// Before, none existed: an operator could not see the open subscriptions
// nor alert on a member that other members could not reach (the last
// closing note's gap). All exist at 0 from the first request served.
type serverMetrics struct {
	requests *prometheus.CounterVec
	failures *prometheus.CounterVec
	// httpRequests and httpDuration count and time the requests this
	// member answered (countRequests)
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	// budgetRefusals counts the ingest budget's 429s by route (admitBody)
	budgetRefusals *prometheus.CounterVec
}

// routeUnmatched is the route label of a request no route's pattern
// matches (a 404 or 405 of the router).
const routeUnmatched = "unmatched"

// metrics returns s's series, registering them once on s.P.Registry (a
// registry that has them already, another Server of the same pipeline,
// keeps its own: this Server's counts then go to those).
func (s *Server) metrics() *serverMetrics {
	s.metricsOnce.Do(func() {
		m := &serverMetrics{
			requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronicle_member_requests_total",
				Help: "Requests this member sent to another member: kind forward (to the owner of the entity's partition) or fan_out (one member's part of a request asked of every member)."}, []string{"kind"}),
			failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronicle_member_request_failures_total",
				Help: "Requests to another member that got no answer about the data, by kind and reason (timeout, unreachable, refused: a 401 or a 404 of no route, server_error: a 5xx); the client got a 503 or 504 naming the member."}, []string{"kind", "reason"}),
			httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronicle_http_requests_total",
				Help: "HTTP requests this member answered, by route (the route's pattern, e.g. \"GET /v1/sessions/{id...}\", never the path; unmatched for a path or method no route serves) and status code, refusals (400, 401, 403, 413, 429) and errors included."}, []string{"route", "code"}),
			httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chronicle_http_request_duration_seconds",
				Help:    "Time from a request's arrival to the end of its answer, by route (as chronicle_http_requests_total's); GET /v1/learned/stream's is the stream's whole connection.",
				Buckets: prometheus.DefBuckets}, []string{"route"}),
			budgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronicle_ingest_budget_rejections_total",
				Help: "Requests answered 429 because the ingest budget (chronicle_ingest_budget_limit_bytes) had no room for their body within IngestWait, by route (the route's pattern, e.g. \"POST /v1/memories\", never the path); nothing of them was written."}, []string{"route"}),
		}
		held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronicle_ingest_budget_held_bytes",
			Help: "Bytes of the ingest budget held now by the request bodies this member is reading or processing (each weighed by its Content-Length, at most MaxBodyBytes)."}, func() float64 { return float64(s.ingestHeld.Load()) })
		limit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronicle_ingest_budget_limit_bytes",
			Help: "Size of the ingest budget in bytes (IngestBudget, default 32 MiB): the request bodies of every route that reads one, held at once."}, func() float64 { _, _, _, l := s.ingestBudget(); return float64(l) })
		streams := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronicle_learned_streams_open",
			Help: "GET /v1/learned/stream connections open on this member."}, func() float64 { return float64(s.openStreams.Load()) })
		for _, k := range []string{memberForward, memberFanOut} {
			m.requests.WithLabelValues(k)
			for _, r := range []string{failTimeout, failUnreachable, failRefused, failStatus} {
				m.failures.WithLabelValues(k, r)
			}
		}
		if s.P != nil && s.P.Registry != nil {
			m.requests = register(s.P.Registry, m.requests)
			m.failures = register(s.P.Registry, m.failures)
			m.httpRequests = register(s.P.Registry, m.httpRequests)
			m.httpDuration = register(s.P.Registry, m.httpDuration)
			register(s.P.Registry, prometheus.Collector(streams))
			m.budgetRefusals = register(s.P.Registry, m.budgetRefusals)
			register(s.P.Registry, prometheus.Collector(held))
			register(s.P.Registry, prometheus.Collector(limit))
		}
		s.serverMetrics = m
	})
	return s.serverMetrics
}

// register registers c on reg, or returns the collector reg has already
// under its descriptors.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex
			}
		}
	}
	return c
}

// memberRequest counts one request to another member of kind, and its
// failure: err is the request's error (nil when an answer came), code the
// answer's status, refused whether the answer was a refusal of the
// member's request (memberAnswer.failed, errOwnerRefused).
func (m *serverMetrics) memberRequest(kind string, err error, code int, refused bool) {
	m.requests.WithLabelValues(kind).Inc()
	reason := ""
	switch {
	case errors.Is(err, context.Canceled):
		// the client went away before the member answered: no failure of
		// the member's
	case refused:
		reason = failRefused
	case errors.Is(err, context.DeadlineExceeded):
		reason = failTimeout
	case err != nil:
		reason = failUnreachable
	case code >= http.StatusInternalServerError:
		reason = failStatus
	}
	if reason != "" {
		m.failures.WithLabelValues(kind, reason).Inc()
	}
}

// countRequests counts and times every request h answers in
// chronicle_http_requests_total and chronicle_http_request_duration_seconds,
// labelled by the pattern of the route jr serves it with (routeOf): the
// label's values are bounded by the routes, whatever ids and paths
// clients send. Refusals before the route runs (authentication, the DNS
// rebinding check, a malformed query) count under the route too. Before,
// /metrics had no HTTP series at all: the 4xx and 5xx an operator alerts
// on were in the request log only (an observability walkthrough,
// 2026-12-06).
func (s *Server) countRequests(jr *jsonRouter, h http.Handler) http.Handler {
	m := s.metrics()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		route := jr.routeOf(r)
		cw := &countingWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		code := cw.status
		if code == 0 {
			code = http.StatusOK
		}
		m.httpRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
		m.httpDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// routeOf is the pattern of the route that serves r ("GET
// /v1/sessions/{id...}", "/mcp"), or routeUnmatched when none does: no
// pattern matches, or only a subtree's whose root ServeMux would redirect
// (jsonRouter.ServeHTTP answers both as no route).
func (jr *jsonRouter) routeOf(r *http.Request) string {
	_, p := jr.mux.Handler(r)
	if p == "" || subtreeRootRedirect(r, p) {
		return routeUnmatched
	}
	return p
}
