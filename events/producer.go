package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// ProducerConfig configures a Producer. Zero fields take the documented
// defaults; Validate reports the first bad field.
type ProducerConfig struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// MaxAttempts bounds the produce attempts of one Publish call
	// (default 5, must be ≥ 1). Each attempt resends only the records the
	// broker has not acknowledged.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt (default
	// 100 ms); it doubles per attempt (backoff/v4 exponential, factor 2).
	InitialBackoff time.Duration
	// DeliveryTimeout bounds one attempt of one record, including the
	// client's own internal retries (default 10 s; at least 1 s,
	// franz-go's least record timeout: Validate refuses less).
	DeliveryTimeout time.Duration
	// PublishTimeout bounds a whole Publish or ProduceRecords call, all
	// attempts included (default 15 s): with the broker down the caller
	// gets ErrNotAcknowledged then, never later. Records still buffered may
	// reach the broker afterwards; a retry with the same event ids is
	// dropped as a duplicate.
	PublishTimeout time.Duration
	// ExtraOpts are appended to the franz-go client options.
	ExtraOpts []kgo.Opt
	// StorageFailure, when set, returns when the broker last failed to
	// write its log and that failure (broker.Broker.StorageFailure
	// for the embedded broker): a Publish that fails after such a
	// failure names it in its ErrNotAcknowledged ("the broker could not
	// write its log: …"), as a broker on a full disk answers only
	// UNKNOWN_SERVER_ERROR. Nil: no such cause is named.
	StorageFailure func() (time.Time, error)
}

func (c *ProducerConfig) setDefaults() {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = 100 * time.Millisecond
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = 10 * time.Second
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 15 * time.Second
	}
}

// Validate reports the first invalid field of c.
func (c ProducerConfig) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("events: ProducerConfig.Brokers: at least one broker required")
	}
	for i, b := range c.Brokers {
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			return fmt.Errorf("events: ProducerConfig.Brokers[%d]: %q is not host:port", i, b)
		}
	}
	if c.MaxAttempts < 0 {
		return errors.New("events: ProducerConfig.MaxAttempts: must be ≥ 1")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"InitialBackoff", c.InitialBackoff}, {"DeliveryTimeout", c.DeliveryTimeout}, {"PublishTimeout", c.PublishTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("events: ProducerConfig.%s: %v, must not be negative (0: the default)", d.name, d.v)
		}
	}
	if c.DeliveryTimeout > 0 && c.DeliveryTimeout < time.Second {
		return fmt.Errorf("events: ProducerConfig.DeliveryTimeout: %v, must be ≥ 1s (franz-go's least record timeout)", c.DeliveryTimeout)
	}
	return nil
}

// Producer writes events to Kafka with an idempotent producer and
// acks=all. Publish returns only once the broker acknowledged every event.
// A Producer is safe for concurrent use by several goroutines (its
// franz-go client is); Close ends it. Make one with NewProducer: the zero
// Producer has no client, and its Publish panics.
type Producer struct {
	cfg    ProducerConfig
	cl     *kgo.Client
	dial   *dialErrors
	writes writeHealth
	closed atomic.Bool
}

// ErrProducerClosed is returned by Publish, PublishDerived and
// ProduceRecords called after Close: nothing was sent, so nothing can be
// written later (unlike ErrNotAcknowledged). Before, such a call retried
// for about 1.6 s, answered ErrNotAcknowledged ("client closed") and set
// WriteFailure, which /healthz reads as the broker refusing writes (a Go
// embedder's walkthrough).
var ErrProducerClosed = errors.New("events: producer closed")

// writeHealth is the outcome of the producer's writes (WriteFailure).
type writeHealth struct {
	mu sync.Mutex
	f  WriteFailure
}

func (w *writeHealth) record(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.f = WriteFailure{}
		return
	}
	now := time.Now()
	if w.f.Err == nil {
		w.f.Since = now
	}
	w.f.Err, w.f.Last = err, now
}

// WriteFailure is the state of a producer whose writes the broker refuses
// (Producer.WriteFailure).
type WriteFailure struct {
	// Err is the error of the last produce; nil when it succeeded or none
	// was made.
	Err error
	// Since is when the writes started failing (the first failed produce
	// after the last acknowledged one); Last is the last failed produce.
	Since, Last time.Time
}

// WriteFailure reports whether the broker refused this producer's last
// write: the error of its last produce (Publish, PublishDerived,
// ProduceRecords) when that failed, with when the failures began and the
// last one; the zero WriteFailure when a record was acknowledged since
// (the last produce's, or one an earlier produce gave up on and the
// broker took later: it takes writes again) or none was made. A produce cut short by the caller's own context, and
// a refused validation, are not writes and change nothing. serve's
// /healthz answers 503 "broker rejects writes" while the last failure is
// recent (a broker whose disk is full still answers metadata and
// offsets, so the lag alone looks healthy).
func (p *Producer) WriteFailure() WriteFailure {
	p.writes.mu.Lock()
	defer p.writes.mu.Unlock()
	return p.writes.f
}

// Acknowledged records a write the broker acknowledged to another client
// of this producer's owner (a worker's or the fenced relay's
// transaction): as an acknowledged produce does, it ends the failure
// WriteFailure reports. Before, only this producer's own produces did, so
// after a broker outage /healthz answered 503 "broker rejects writes" for
// the rest of the window while the workers and the relay were writing
// again (an SRE drill).
func (p *Producer) Acknowledged() { p.writes.record(nil) }

// dialErrors keeps the client's last failed broker connection (a
// kgo.HookBrokerConnect), so that a produce that timed out can say why:
// the context's "deadline exceeded" alone names no cause.
type dialErrors struct {
	mu   sync.Mutex
	last error
	at   time.Time
}

func (d *dialErrors) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.last = nil
		return
	}
	d.last, d.at = fmt.Errorf("broker %s:%d: %w", meta.Host, meta.Port, err), time.Now()
}

// failure returns the last connection error and when it happened: nil
// when the last connection attempt succeeded or none was made.
func (d *dialErrors) failure() (error, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last, d.at
}

// NewProducer creates a Producer; it dials nothing: the client connects
// at the first Publish, and a broker that cannot be reached fails that
// Publish after PublishTimeout (Client().Ping asks the brokers at once,
// as the CLI's ingest and import do before producing). The franz-go
// client is idempotent with acks=all (its default) and never
// auto-creates topics, so producing to a missing topic fails after a few
// metadata refreshes instead of hanging. Errors: cfg.Validate's.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dial := &dialErrors{}
	opts := append([]kgo.Opt{
		kgo.WithHooks(dial),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		kgo.UnknownTopicRetries(3),
		kgo.ProducerLinger(0),
	}, cfg.ExtraOpts...)
	cl, err := kgo.NewClient(kafkaconn.With(opts...)...)
	if err != nil {
		return nil, fmt.Errorf("events: producer client: %w", err)
	}
	return &Producer{cfg: cfg, cl: cl, dial: dial}, nil
}

// Client is the underlying franz-go client.
func (p *Producer) Client() *kgo.Client { return p.cl }

// Close flushes nothing further and closes the client. A Publish still
// running ends with the client's error (ErrNotAcknowledged: what it
// handed the broker may be written); a Publish called after Close returns
// ErrProducerClosed at once. Close may be called more than once.
func (p *Producer) Close() {
	p.closed.Store(true)
	p.cl.Close()
}

// ParseBatch validates every raw event of one request before anything is
// written. The first invalid event is reported as a *ValidationError whose
// Index is its position; nothing is returned for a rejected batch.
func ParseBatch(raws [][]byte) ([]Envelope, error) {
	out := make([]Envelope, 0, len(raws))
	for i, raw := range raws {
		env, err := ParseProducerEvent(raw)
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				ve.Index = i
			}
			return nil, err
		}
		out = append(out, env)
	}
	return out, nil
}

// Publish validates every event as ParseProducerEvent does (as HTTP,
// ingest and import do: derived types, a producer's initial_confidence or
// distilled memory, a member repeated within an object and an integer out
// of its payload's range are refused), then produces them and waits for
// the broker's acknowledgement of all. Validation is
// all-or-nothing: a *ValidationError (with Index) means nothing was
// written. Produce failures are retried per record with exponential
// backoff; the final error of the last attempt is returned. A failed
// Publish may have written some records: retrying it with the same event
// ids is safe, because consumers drop duplicates by (scope, source, id).
// A produce failure wraps ErrNotAcknowledged (errors.As finds a
// *ProduceError naming the records not acknowledged), and ErrRefused too
// when the broker refused them before appending (nothing was written); the wait ends at
// ProducerConfig.PublishTimeout (15 s by default) or when ctx ends,
// whichever comes first, and in the second case the error also wraps
// ctx.Err() and WriteFailure is left as it was. A ctx that has ended
// before the call sends nothing: the error wraps ctx.Err() but not
// ErrNotAcknowledged, whose outcome is unknown. No events (an empty envs)
// is nil at once.
//
// Two events of one call with the same scope, source and id but other
// content (the time aside) are refused at the second one's index, pointer
// /id: the processors would apply the first and dead-letter the second as
// a conflicting duplicate after the call was acknowledged. The same event
// twice is accepted (the second is a duplicate). A Checker makes these
// checks across several calls.
func (p *Producer) Publish(ctx context.Context, envs ...Envelope) error {
	recs := make([]*kgo.Record, 0, len(envs))
	var c Checker
	for i := range envs {
		r, err := c.Check(&envs[i])
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	return p.ProduceRecords(ctx, recs)
}

// Checker makes the checks of Publish on a sequence of events, one event
// at a time, remembering every event's scope, source and id across its
// calls: a writer that produces a long sequence in several calls
// (chronicle ingest, 500 events a call) checks all of it first, so that no
// later call refuses an event after earlier ones were written. The zero
// Checker is ready for use; it is not safe for concurrent use.
type Checker struct {
	// Name, when set, names the earlier event in the reason of a repeated
	// id with other content, given its index among the checked events;
	// unset, it is "event INDEX of this batch".
	Name func(index int) string
	n    int
	seen map[[3]string]checked
}

type checked struct {
	index int
	env   Envelope
}

// Check validates e as Publish does and returns its record, ready for
// ProduceRecords. Its *ValidationError has Index e's position among the
// events checked (counting from 0): a derived type (ErrDerivedType), an
// encoding above MaxEventBytes (ErrEventTooLarge), whatever
// ParseProducerEvent refuses, and an earlier event's scope, source and id
// with other content (pointer /id); the same event again (the time aside,
// sameEvent) is accepted, a plain duplicate the processors drop.
func (c *Checker) Check(e *Envelope) (*kgo.Record, error) {
	i := c.n
	c.n++
	if ti, ok := Lookup(e.Type); ok && ti.Derived {
		return nil, &ValidationError{Index: i, Pointer: "/type", Reason: fmt.Sprintf("%s: %v", e.Type, ErrDerivedType), Err: ErrDerivedType}
	}
	k := [3]string{e.EffectiveScope(), e.Source, e.ID}
	first, repeated := c.seen[k]
	if repeated && !sameEvent(&first.env, e) {
		name := fmt.Sprintf("event %d of this batch", first.index)
		if c.Name != nil {
			name = c.Name(first.index)
		}
		return nil, &ValidationError{Index: i, Pointer: "/id", Reason: fmt.Sprintf("(source %q, id %q) is %s with other content: an id names one event of its source", e.Source, e.ID, name)}
	}
	r, err := validRecord(e, true)
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Index = i
		}
		return nil, err
	}
	if !repeated {
		if c.seen == nil {
			c.seen = make(map[[3]string]checked)
		}
		c.seen[k] = checked{index: i, env: *e}
	}
	return r, nil
}

// sameEvent reports whether a and b, of one scope, source and id, are the
// same event as the processors' idempotency check sees it (the content
// hash of package projections): every attribute but the time, the scope as
// the effective one, and the data in its canonical form (AppendCanonical).
// The datacontenttype does not count: every value accepted says JSON.
func sameEvent(a, b *Envelope) bool {
	if a.SpecVersion != b.SpecVersion || a.Type != b.Type || a.Subject != b.Subject ||
		a.DataSchema != b.DataSchema || a.SessionID != b.SessionID || a.CausationID != b.CausationID || a.CorrelationID != b.CorrelationID {
		return false
	}
	if bytes.Equal(a.Data, b.Data) {
		return true
	}
	ca, errA := AppendCanonical(nil, a.Data)
	cb, errB := AppendCanonical(nil, b.Data)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

// PublishDerived is Publish for Chronicle's own writers (the clock, the LLM
// distiller, the judge): it validates and produces events of any known
// type, derived ones included. A refusal is a *ValidationError whose Index
// is the event's position in envs, as Publish's (it was -1: a Go
// embedder's walkthrough), and nothing was written.
func (p *Producer) PublishDerived(ctx context.Context, envs ...Envelope) error {
	recs := make([]*kgo.Record, 0, len(envs))
	for i := range envs {
		r, err := validRecord(&envs[i], false)
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				ve.Index = i
			}
			return err
		}
		recs = append(recs, r)
	}
	return p.ProduceRecords(ctx, recs)
}

// MaxEventBytes is the largest event Chronicle produces: 983,040 bytes
// (960 KiB) of encoded envelope, the record value. It leaves room for the
// record key, headers and batch overhead below franz-go's default batch
// limit (1,000,012 bytes) and Kafka's default max.message.bytes (1,048,588,
// also kfake's), so an event that passes this check is never refused by
// the broker for its size.
const MaxEventBytes = 960 << 10

// ErrEventTooLarge is wrapped by the ValidationError of an event whose
// encoding exceeds MaxEventBytes; the HTTP API answers 413 for it.
var ErrEventTooLarge = errors.New("event too large")

// validRecord encodes e once, validates that encoding (with producer,
// as ParseProducerEvent does; else as ParseEvent) and makes it the record
// value.
func validRecord(e *Envelope, producer bool) (*kgo.Record, error) {
	if producer {
		if err := checkUTF8(e); err != nil {
			return nil, err
		}
	}
	raw, err := e.MarshalJSON() // compact already: json.Marshal(e) would compact it again
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) { // an extension's: its own pointer
			return nil, ve
		}
		return nil, &ValidationError{Index: -1, Pointer: "/data", Reason: err.Error()}
	}
	if len(raw) > MaxEventBytes {
		ptr, size := largestMember(raw)
		reason := fmt.Sprintf("%d bytes encoded, above the %d-byte limit of one event", len(raw), MaxEventBytes)
		if ptr != "/" {
			reason += fmt.Sprintf(", %d of them in %s", size, ptr)
		}
		return nil, &ValidationError{Index: -1, Pointer: ptr, Reason: reason, Err: ErrEventTooLarge}
	}
	if producer {
		_, err = ParseProducerEvent(raw)
	} else {
		_, err = parseEvent(raw, true, true)
	}
	if err != nil {
		return nil, err
	}
	return recordOf(e, raw)
}

// RecordSink takes the records of a Publish, PublishDerived or
// ProduceRecords call whose context carries it (WithRecordSink) instead of
// the broker: the Runner collects a worker's outputs this way and writes
// them in one Kafka transaction with the consumed offset, so that they are
// written once. Its error is the call's.
type RecordSink func(recs []*kgo.Record) error

type recordSinkKey struct{}

// WithRecordSink returns ctx carrying sink: a Producer given that context
// (or one derived from it) hands its validated records to sink and
// produces nothing itself.
func WithRecordSink(ctx context.Context, sink RecordSink) context.Context {
	return context.WithValue(ctx, recordSinkKey{}, sink)
}

// ProduceError is ProduceRecords' error when the broker did not
// acknowledge every record: Failed lists the records (of those passed in,
// the same pointers) not acknowledged when it gave up; the others were
// acknowledged, and a caller that retries should send only Failed (the
// outbox relay re-sent every record of a call with one record too large
// for the broker, so each of the others reached the log again every
// round, hundreds of times: a Node.js integrator's walkthrough). Err is
// the failure as ProduceRecords describes it (wrapping ErrNotAcknowledged;
// for a ctx that had ended before the call, ctx.Err() alone: nothing was
// sent).
type ProduceError struct {
	Failed []*kgo.Record
	Err    error
}

func (e *ProduceError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ProduceError) Unwrap() error { return e.Err }

// ProduceRecords produces already encoded records (the outbox relay uses
// it for derived events) with the same acknowledgement and retry rules as
// Publish; with a RecordSink in ctx they go to the sink instead. When some
// records were not acknowledged its error is a *ProduceError naming them.
func (p *Producer) ProduceRecords(ctx context.Context, recs []*kgo.Record) error {
	if sink, ok := ctx.Value(recordSinkKey{}).(RecordSink); ok && sink != nil {
		return sink(recs)
	}
	if p.closed.Load() {
		return fmt.Errorf("%w: %d records not sent", ErrProducerClosed, len(recs))
	}
	if err := ctx.Err(); err != nil {
		// nothing sent: it was ErrNotAcknowledged, "outcome unknown",
		// for records that never left (a Go-package walkthrough)
		return &ProduceError{Failed: recs, Err: fmt.Errorf("events: %d records not sent: the context had ended before the call: %w", len(recs), err)}
	}
	start, parent := time.Now(), ctx
	ctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
	defer cancel()
	pending := recs
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = p.cfg.InitialBackoff
	bo.Multiplier = 2
	bo.MaxElapsedTime = 0
	var attempts int
	unknown := false // some attempt left a record's outcome unknown
	op := func() error {
		attempts++
		failed, refused, lastErr := p.produceOnce(ctx, pending, time.Now())
		if len(failed) == 0 {
			return nil
		}
		pending = failed
		unknown = unknown || !refused
		err := fmt.Errorf("events: produce %d of %d records failed (attempt %d): %w", len(failed), len(recs), attempts, lastErr)
		// a log that could not be written may be writable again (room
		// freed): that refusal is retried, the others would be refused
		// again
		if refused && !errors.Is(lastErr, kerr.UnknownServerError) || errors.Is(lastErr, kerr.UnknownTopicOrPartition) || errors.Is(lastErr, kerr.MessageTooLarge) || errors.Is(lastErr, kerr.RecordListTooLarge) || errors.Is(lastErr, kgo.ErrClientClosed) || ctx.Err() != nil {
			return backoff.Permanent(err) // the broker would refuse them again
		}
		return err
	}
	err := backoff.Retry(op, backoff.WithContext(backoff.WithMaxRetries(bo, uint64(p.cfg.MaxAttempts-1)), ctx))
	if err != nil {
		err = p.explain(err, start, parent.Err() == nil)
		if !unknown {
			err = fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	if err == nil || parent.Err() == nil { // not the caller giving up
		// the failure as the caller gets it, its cause named: /healthz
		// showed the bare "context deadline exceeded" (an SRE's walkthrough)
		p.writes.record(err)
	}
	if err != nil {
		return &ProduceError{Failed: pending, Err: err}
	}
	return nil
}

// explain wraps a produce's failure in ErrNotAcknowledged with its cause:
// the last failed connection when none succeeded since, or, when the
// client's last connection attempt succeeded and the publish timeout (not
// the caller) ended it, that the broker did not answer.
func (p *Producer) explain(err error, start time.Time, ownTimeout bool) error {
	if p.cfg.StorageFailure != nil {
		if at, serr := p.cfg.StorageFailure(); serr != nil && !at.Before(start) {
			// the broker answered but could not append (a full disk, an
			// I/O error): it said only UNKNOWN_SERVER_ERROR (a disk
			// walkthrough)
			return fmt.Errorf("%w: %w (the broker could not write its log: %v)", ErrNotAcknowledged, err, serr)
		}
	}
	if p.dial != nil {
		derr, at := p.dial.failure()
		switch {
		case derr == nil:
		case !at.Before(start):
			return fmt.Errorf("%w: %w (last connection attempt: %w)", ErrNotAcknowledged, err, derr)
		default:
			// the client, backing off, tried no connection during this
			// call: the refusal before it is still the cause. Only
			// failures during the call were named, so such a call said
			// "no connection failed: … hung" of a broker refusing
			// connections (a Go-package walkthrough: one Publish in four
			// with a 3 s PublishTimeout)
			return fmt.Errorf("%w: %w (last connection attempt, %v before this call: %w; none succeeded since)", ErrNotAcknowledged, err, start.Sub(at).Round(time.Millisecond), derr)
		}
	}
	if ownTimeout && errors.Is(err, context.DeadlineExceeded) {
		// no connection failed: the broker took the requests and did
		// not answer (the first 503 of a SIGSTOPped broker said only
		// "context deadline exceeded": an operator's walkthrough)
		return fmt.Errorf("%w: %w (no connection failed: the broker did not answer within %v, so it is hung, overloaded or cut off)", ErrNotAcknowledged, err, p.cfg.PublishTimeout)
	}
	return fmt.Errorf("%w: %w", ErrNotAcknowledged, err)
}

// ErrNotAcknowledged wraps every produce failure: the broker did not
// acknowledge all records within ProducerConfig.PublishTimeout (or the
// caller's context). The outcome of the records not acknowledged is
// unknown, as with any Kafka producer's timeout: the broker may have
// appended them with the acknowledgement lost, and the idempotent client
// keeps a record it may have sent until the broker answers, so it can
// still be written after the error. Retrying with the same event ids and
// content is safe (a written one is then a duplicate, dropped by (scope,
// source, id)); sending other content under those ids is not. When the client
// failed to connect during the call, the error names the last attempt
// (e.g. "connection refused").
var ErrNotAcknowledged = errors.New("events: not acknowledged by the broker")

// ErrRefused narrows ErrNotAcknowledged (a refused write's error wraps
// both): the broker answered every attempt for the records not
// acknowledged with a refusal that Kafka makes before it appends
// anything (refusal: an ACL, a record or batch too large, a topic
// policy), or the client refused them before sending, or the embedded
// broker could not write its log (ProducerConfig.StorageFailure: a full
// disk); so they were not written, and a retry is refused again until the
// cause is fixed. Such a call is not retried, except after a failed log
// write (room may be freed meanwhile). A call in which any attempt lost its answer (a
// timeout, a dropped connection, another broker error) stays
// ErrNotAcknowledged alone, its outcome unknown. Before, a refusal read
// as an unknown outcome: a memory route answered "the recording may still
// be written: retry" to a cluster whose ACL refused every write (left out
// by several stops, done 2026-12-05).
var ErrRefused = errors.New("events: refused by the broker, not written")

// refusal reports whether err, a record's produce failure, is one that
// Kafka makes before appending anything: a broker error code from the
// request's validation (authorization, size, record format, topic
// policy), or franz-go's own MESSAGE_TOO_LARGE for a record it will not
// send. Other errors, UNKNOWN_SERVER_ERROR among them (an append may have
// failed after it began), leave the outcome unknown.
func refusal(err error) bool {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
		kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.InvalidTimestamp,
		kerr.PolicyViolation, kerr.InvalidTopicException, kerr.InvalidRequiredAcks,
		kerr.UnsupportedForMessageFormat, kerr.UnsupportedCompressionType:
		return true
	}
	return false
}

// storageRefusal reports whether err, a record's produce failure, is the
// embedded broker's answer to a write of its log that failed since
// (ProducerConfig.StorageFailure): UNKNOWN_SERVER_ERROR, with the record
// left out of the log (kfake truncates the segment back and does not
// index the batch).
func (p *Producer) storageRefusal(err error, since time.Time) bool {
	if p.cfg.StorageFailure == nil || !errors.Is(err, kerr.UnknownServerError) {
		return false
	}
	at, serr := p.cfg.StorageFailure()
	return serr != nil && !at.Before(since)
}

// produceOnce produces recs and waits for every acknowledgement, or for
// ctx: franz-go keeps a buffered record until its delivery timeout even
// when the context of ProduceSync ends, so the wait is bounded here. It
// returns the records not acknowledged, whether each of them was refused
// (refusal, or storageRefusal since start) rather than left unknown, and
// the last error.
func (p *Producer) produceOnce(ctx context.Context, recs []*kgo.Record, start time.Time) ([]*kgo.Record, bool, error) {
	type result struct {
		i   int
		err error
	}
	done := make(chan result, len(recs))
	for i, r := range recs {
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err == nil {
				// also a record acknowledged after its Publish gave up
				// (the idempotent client keeps an in-flight one): the
				// broker takes writes again, which ends WriteFailure at
				// once instead of at its window's end (an SRE's
				// walkthrough: /healthz said "broker rejects writes" for
				// 60 s after the broker was back)
				p.writes.record(nil)
			}
			done <- result{i, err}
		})
	}
	acked := make([]bool, len(recs))
	var lastErr error
	refused := true // every failed record's error is a refusal
wait:
	for range recs {
		select {
		case res := <-done:
			if res.err != nil {
				lastErr = res.err
				refused = refused && (refusal(res.err) || p.storageRefusal(res.err, start))
			} else {
				acked[res.i] = true
			}
		case <-ctx.Done():
			lastErr = ctx.Err()
			refused = false // records without an answer
			break wait
		}
	}
	var failed []*kgo.Record
	for i, r := range recs {
		if !acked[i] {
			failed = append(failed, r)
		}
	}
	return failed, refused, lastErr
}
