// Package projections is Chronicle's Pebble store: the projections that
// processors build from the log, together with the bookkeeping that makes
// them exactly-once — consumed offsets, idempotency keys and the outbox of
// derived events — written in one atomic batch per consumed event.
//
// Key layout (one Pebble database per data directory):
//
//	p/<projection>/<key>                    projection rows (the digest covers these only)
//	m/offset/<processor>/<topic>/<partition> next offset to consume (8-byte big-endian)
//	m/idk/<processor>/<sha256(scope,key,source,id)> idempotency key of an applied event (IDHashKeyed; key: the record key, empty on a single-partition topic)
//	m/idem/<processor>/<sha256(scope,source,id)> the same, written before the record key was in it (read only)
//	m/dedup/<processor>/<sha256(source,id)>  the same, written before the scope was in it (read only)
//	m/outbox/<seq, 8-byte big-endian>       derived record waiting for the relay
//
// Because a projection change, its offset and its outbox entries commit
// together, a crash at any moment either keeps all of them or none: on
// restart the processor resumes from the stored offset and re-applies
// nothing twice. Replaying the log from offset 0 into an empty store with
// the same processor code gives the same p/ keys and values, which Digest
// and Diff check.
package projections
