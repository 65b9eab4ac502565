package processors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/projections"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Until bounds a replay: the state "as of" a moment.
//   - Time: on each partition, the records before the first one whose
//     Kafka timestamp is after Time (Kafka's own rule for a time, as in
//     its offsets-for-times lookup: a partition's state is a prefix of
//     it). A record's timestamp is its producer's clock when it sent it
//     (CreateTime, Kafka's default, which the embedded broker keeps; a
//     topic set to LogAppendTime stamps the broker's), so a producer
//     whose clock runs ahead ends its partition's prefix early. A
//     transaction committed after Time (its marker's timestamp) ends the
//     prefix at its first record too, as a read-committed consumer saw
//     neither it nor what follows it then (txnPrefix).
//   - Pos: the record at Pos and everything before it on its partition,
//     whatever their timestamps; on other partitions, as Time with Pos's
//     record's timestamp. Before, Pos's own partition was cut by the time
//     too, so a record stamped later than Pos's (a producer's clock, a
//     retry) left out Pos and everything after it (an analyst's
//     walkthrough: --until chronicle.memories:0:236 held fewer records
//     than :235).
//
// The zero Until replays everything committed when the replay starts: up
// to each partition's last stable offset, so a transaction still open
// then is left out with what follows it on its partition.
type Until struct {
	Time time.Time
	Pos  *projections.Position
}

// timeLike is the start of an RFC 3339 date: a --until starting so is a
// time, never topic:partition:offset.
var timeLike = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)

// timeOfDay is a time of day without its date ("14:02", "14:02:00Z",
// "T14:02:00+01:00"): an analyst asking what the system knew at 14:02
// typed it, and it was split at its colons into topic "14", partition 2,
// offset 0 ("no such topic partition") or refused as a position whose
// offset is no integer (an analyst's walkthrough, 2026-12-07).
var timeOfDay = regexp.MustCompile(`^[Tt]?\d{1,2}:\d{2}(:\d{2}([.,]\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$`)

// dateSpaceTime is a date and a time joined by a space, which RFC 3339
// mentions (section 5.6, a note) but its date-time does not take.
var dateSpaceTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} +\d`)

// rfc3339 is RFC 3339's date-time (section 5.6), "T" and "Z" uppercase:
// Go's time.Parse also takes a one-digit hour, a comma before the
// fraction and offsets of 24 hours or 60 minutes, which are not RFC 3339.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$`)

// ParseUntil parses an RFC 3339 time or topic:partition:offset. A value
// that starts like a date but is not RFC 3339 (no time zone) is an error
// saying so. RFC 3339 lets the "T" and "Z" be lowercase (section 5.6);
// they are read as uppercase. The empty string is the zero Until.
func ParseUntil(s string) (Until, error) {
	if s == "" {
		return Until{}, nil
	}
	if timeLike.MatchString(s) {
		s = strings.ToUpper(s) // 2026-11-30t23:20:21z: RFC 3339 allows it, Go's parser does not
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil && rfc3339.MatchString(s) {
		return Until{Time: t}, nil
	}
	if dateSpaceTime.MatchString(s) {
		// it has the date, the time and maybe the zone: the message below
		// asked for them
		return Until{}, fmt.Errorf("--until: %q: join the date and the time with \"T\", not a space (RFC 3339), e.g. %s", s, strings.Replace(strings.Join(strings.Fields(s), " "), " ", "T", 1))
	}
	if timeLike.MatchString(s) {
		// "2026-11-25T13:58:03" split at its colons is no position either
		return Until{}, fmt.Errorf("--until: %q looks like a time but is not RFC 3339: give the date, the time and the time zone, e.g. 2026-11-25T13:58:03Z or 2026-11-25T14:58:03+01:00", s)
	}
	if timeOfDay.MatchString(s) {
		return Until{}, fmt.Errorf("--until: %q is a time of day without a date: give the date and the time zone too, e.g. 2026-11-25T%sZ (RFC 3339: the records' Kafka timestamps are compared, so a time in UTC, or with its offset, +01:00)", s, clockOf(s))
	}
	i := strings.LastIndexByte(s, ':')
	j := strings.LastIndexByte(s[:max(i, 0)], ':')
	if i < 0 || j < 0 {
		return Until{}, fmt.Errorf("--until: %q is neither an RFC 3339 time nor topic:partition:offset", s)
	}
	p, err1 := strconv.ParseInt(s[j+1:i], 10, 32)
	o, err2 := strconv.ParseInt(s[i+1:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return Until{}, fmt.Errorf("--until: %q: partition and offset must be non-negative integers", s)
	}
	if j == 0 {
		return Until{}, fmt.Errorf("--until: %q: no topic before partition:offset (e.g. chronicle.memories:0:294)", s)
	}
	return Until{Pos: &projections.Position{Topic: s[:j], Partition: int32(p), Offset: o}}, nil
}

// clockOf is the hh:mm:ss of a time of day as timeOfDay matches it, for
// an example: "14:02Z" is "14:02:00", "9:05" "09:05:00".
func clockOf(s string) string {
	s = strings.TrimLeft(s, "Tt")
	if k := strings.IndexAny(s, "Zz+-"); k >= 0 {
		s = s[:k]
	}
	if k := strings.IndexAny(s, ".,"); k >= 0 {
		s = s[:k]
	}
	parts := strings.Split(s, ":")
	for len(parts) < 3 {
		parts = append(parts, "00")
	}
	if len(parts[0]) == 1 {
		parts[0] = "0" + parts[0]
	}
	return strings.Join(parts, ":")
}

// ErrLogTruncated is wrapped by Replay's error when a partition of the log
// no longer starts at offset 0 (its oldest records were removed): the
// log is the source of truth, and a replay of what is left would not
// rebuild the state.
var ErrLogTruncated = errors.New("the log no longer holds its first records")

// ReplayStats summarises a replay.
type ReplayStats struct {
	Records    int64 `json:"records"`    // records read
	Applied    int64 `json:"applied"`    // processor applications
	Duplicates int64 `json:"duplicates"` // dropped by idempotency key
	// DeadLettered counts the records one or more processors failed and
	// skipped, as live dead-letters them: a record every processor of its
	// topic refuses (it does not parse, a conflicting duplicate) counts
	// once, as live writes one letter for it. Before, it counted each
	// processor's refusal: a re-test's replay said 12 for 6 letters.
	DeadLettered int64 `json:"dead_lettered"`
	// PastStopAt counts the records, among Records, at or past every
	// processor's ReplayConfig.StopAt that one of the topic's processors
	// acts on (TypedProcessor): read (the log's end is fixed at the start)
	// but applied by none. 0 without StopAt.
	PastStopAt int64 `json:"past_stop_at,omitempty"`
}

// ErrStoreNotEmpty is the error of Replay into a store that holds processor
// offsets already: a replay rebuilds projections from offset 0 into an
// empty store.
var ErrStoreNotEmpty = errors.New("the store is not empty")

// ReplayConfig configures Replay.
type ReplayConfig struct {
	Brokers    []string
	Store      *projections.Store // an empty store to rebuild into
	Processors []Processor
	Until      Until
	// Progress, when set, is called now and then with the offsets read up
	// to so far and the total to read (transaction markers and aborted
	// records included, which ReplayStats.Records leaves out), after each
	// poll: done equals total once every partition was read to its end.
	Progress func(done, total int64)
	// StopAt, when set, bounds each processor separately: it applies the
	// records of topic/partition below the returned offset only. audit uses
	// it to replay exactly as far as the live store got.
	StopAt func(processor, topic string, partition int32) int64
}

// Replay rebuilds the processors' projections into cfg.Store by reading
// their topics from offset 0 up to the last stable offsets found at start
// (committed: a transaction undecided then is not waited for; or
// cfg.Until), applying every record with the same Apply path as the live
// Runner. An event that fails is skipped, as the live pipeline would have
// dead-lettered it. Derived events are derived and validated as live, but
// not kept in the store's outbox (projections.Store.Rebuilding): the log
// already has them.
func Replay(ctx context.Context, cfg ReplayConfig) (ReplayStats, error) {
	var st ReplayStats
	if err := CheckNames("ReplayConfig.Processors", cfg.Processors); err != nil {
		return st, err // as the Runner's: a repeated name's processor was never applied
	}
	if len(cfg.Processors) == 0 {
		// it replayed nothing and said so with zero stats (a Go-package
		// walkthrough, 2026-12-06)
		return st, errors.New("ReplayConfig.Processors: at least one")
	}
	if cfg.Store == nil {
		return st, errors.New("ReplayConfig.Store: nil: Replay rebuilds into an empty store (projections.Open of a new directory)")
	}
	if offs := cfg.Store.Offsets(); len(offs) > 0 {
		// a store that applied records already would take the log's
		// records again from offset 0 (each one a Duplicate or an
		// AlreadyApplied that changes nothing) and come out as what it
		// held, said to be the log's replay (left out by a Go-package
		// walkthrough, which found it accepted)
		return st, fmt.Errorf("ReplayConfig.Store: %w: it holds %d processor offset(s) already (%s among them); Replay rebuilds into an empty store (projections.Open of a new directory)", ErrStoreNotEmpty, len(offs), slices.Min(slices.Collect(maps.Keys(offs))))
	}
	procs := byTopic(cfg.Processors)
	pl := newPool(cfg.Processors)
	topics := make([]string, 0, len(procs))
	for t := range procs {
		topics = append(topics, t)
	}
	sort.Strings(topics) // errors list them in one order, run after run
	cl, err := kafkaconn.NewClient(cfg.Brokers)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// each partition's last stable offset: a replay never waits for a
	// transaction undecided when it starts (it waited for its commit or
	// abort, up to the transaction's timeout, saying nothing: an
	// integrator's walkthrough); the live service, reading committed, saw
	// neither its records nor those after them on their partition either
	ends, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return st, fmt.Errorf("replay: end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return st, fmt.Errorf("replay: end offsets: %w", err)
	}
	// a log whose beginning is gone cannot be replayed: the state built
	// would lack what the removed records did, and nothing would say so
	// (a topic's retention removes records on a Kafka cluster: its default
	// is 7 days; broker.TopicConfigs)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return st, fmt.Errorf("replay: start offsets: %w", err)
	}
	var cut []kadm.ListedOffset
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			cut = append(cut, o)
		}
	})
	if len(cut) > 0 {
		slices.SortFunc(cut, func(a, b kadm.ListedOffset) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		o := cut[0]
		return st, fmt.Errorf("replay: %s partition %d starts at offset %d, not 0 (%d partition(s) so): the records before it were removed (the topic's retention.ms or retention.bytes, or a deletion of records), so a replay would build a state without them: %w", o.Topic, o.Partition, o.Offset, len(cut), ErrLogTruncated)
	}
	// the store is bound to this log: served with another log whose
	// topics have other ids, it is refused (before, a replayed directory
	// took the other log's records from its own offsets on, silently: an
	// operator's walkthrough)
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return st, fmt.Errorf("replay: topics: %w", err)
	}
	for _, name := range details.Names() {
		if td := details[name]; td.Err != nil {
			return st, fmt.Errorf("replay: topic %s: %w", name, td.Err) // not a zero id recorded
		}
		if err := cfg.Store.SetTopicID(name, details[name].ID.String()); err != nil {
			return st, err
		}
		if err := cfg.Store.SetTopicPartitions(name, len(details[name].Partitions)); err != nil {
			return st, err
		}
	}
	stopAt := map[string]map[int32]int64{}
	var total int64
	start := map[string]map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if stopAt[o.Topic] == nil {
			stopAt[o.Topic] = map[int32]int64{}
			start[o.Topic] = map[int32]kgo.Offset{}
		}
		stopAt[o.Topic][o.Partition] = o.Offset
		if o.Offset > 0 {
			start[o.Topic][o.Partition] = kgo.NewOffset().At(0)
		}
	})
	until := cfg.Until.Time
	// atPos: r is on Pos's partition, which the offset alone bounds
	atPos := func(r *kgo.Record) bool {
		pos := cfg.Until.Pos
		return pos != nil && r.Topic == pos.Topic && r.Partition == pos.Partition
	}
	if pos := cfg.Until.Pos; pos != nil {
		end, ok := stopAt[pos.Topic][pos.Partition]
		if n := len(stopAt[pos.Topic]); !ok && n > 0 {
			// the topic is there: say how many partitions it has (it said
			// "no such topic partition among [every topic]": an
			// operator's walkthrough, 2026-12-06)
			return st, fmt.Errorf("--until: %s: %s has partitions 0 to %d only", pos, pos.Topic, n-1)
		}
		if !ok {
			return st, fmt.Errorf("--until: %s: no such topic partition among %v", pos, topics)
		}
		if pos.Offset >= end {
			return st, fmt.Errorf("--until: %s: offset beyond the partition's committed end (%d: a record there or after it is not written yet, or belongs to a transaction still undecided)", pos, end)
		}
		ts, err := recordTime(ctx, cfg.Brokers, *pos, end)
		if err != nil {
			return st, err
		}
		until = ts
	}
	// a bounded replay reads uncommitted up to the high watermarks, and
	// each partition's txnPrefix decides the transactions itself: reading
	// committed, it never saw an aborted transaction's records, so one
	// open at the bound and aborted after it did not cut its partition (a
	// re-test), and the markers of transactions decided before the start
	// may lie past the last stable offset
	bounded := !until.IsZero()
	if bounded {
		hw, err := adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			err = hw.Error()
		}
		if err != nil {
			return st, fmt.Errorf("replay: end offsets: %w", err)
		}
		hw.Each(func(o kadm.ListedOffset) {
			if _, ok := stopAt[o.Topic][o.Partition]; ok {
				stopAt[o.Topic][o.Partition] = o.Offset
				if o.Offset > 0 {
					start[o.Topic][o.Partition] = kgo.NewOffset().At(0)
				}
			}
		})
	}
	remaining := 0
	for t, ps := range stopAt {
		for p, end := range ps {
			total += end // offsets to cover, --until's bound included
			if end > 0 {
				remaining++
			} else {
				delete(start[t], p)
			}
		}
	}
	if remaining == 0 {
		return st, nil
	}
	// a replay killed from here on leaves a store that digest and audit refuse
	if err := cfg.Store.MarkReplayStarted(); err != nil {
		return st, err
	}
	cfg.Store.Rebuilding()           // the log holds the derived events: no outbox
	isolation := kgo.ReadCommitted() // a fenced relay writes in transactions: never an aborted record
	if bounded {
		isolation = kgo.ReadUncommitted() // txnPrefix decides them
	}
	cons, err := kafkaconn.NewClient(cfg.Brokers, kgo.ConsumePartitions(start), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(replayFetchPartitionBytes),
		kgo.FetchIsolationLevel(isolation), kgo.KeepControlRecords(), // the markers reach the end
		kgo.DisableFetchSessions()) // see kafkapubsub: avoids a race in franz-go's Close
	if err != nil {
		return st, err
	}
	defer cons.Close()
	done := map[string]map[int32]bool{}
	prefixes := map[string]map[int32]*txnPrefix{} // the time bound's cut of each partition
	// covered counts the offsets read up to, what Progress reports: the
	// records applied leave out transaction markers and aborted records,
	// so a replay that read a whole log ended its bar short of its total
	// (93%, 14 of 15: found by an operator's walkthrough)
	at := map[string]map[int32]int64{}
	var covered int64
	reach := func(t string, p int32, next int64) {
		if at[t] == nil {
			at[t] = map[int32]int64{}
		}
		if next > at[t][p] {
			covered += next - at[t][p]
			at[t][p] = next
		}
	}
	finish := func(t string, p int32) {
		if done[t] == nil {
			done[t] = map[int32]bool{}
		}
		if !done[t][p] {
			done[t][p] = true
			remaining--
			reach(t, p, stopAt[t][p])
		}
	}
	// Each partition has a worker that parses and applies its records in
	// the order fetched, while the loop goes on polling: partitions do not
	// wait for each other (as in the live engine, no order across
	// partitions is kept, and none is needed: a processor's state is per
	// key, or it is serialised by the pool). A worker's queue holds at most
	// replayQueue polls' records, so a slow partition holds up the polls
	// (and the memory) once it is that far behind.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		smu     sync.Mutex // guards st's counts, refused and errs
		errs    []error
		refused = map[projections.Position]bool{} // records some processor refused
		wg      sync.WaitGroup
		workers = map[string]chan []*kgo.Record{}
	)
	failed := func() error {
		smu.Lock()
		defer smu.Unlock()
		return errors.Join(errs...)
	}
	// pastStopAt counts in st.PastStopAt the items at or past every
	// processor's StopAt that one of them would act on (a TypedProcessor
	// skips other types, and the live store need not have moved past
	// those)
	pastStopAt := func(topic string, partition int32, items []projections.Item) {
		var end int64
		for _, p := range procs[topic] {
			end = max(end, cfg.StopAt(p.Name(), topic, partition))
		}
		var n int64
		for _, it := range items {
			if it.Pos.Offset >= end && slices.ContainsFunc(procs[topic], func(p Processor) bool { return actsOn(p, it.Env) }) {
				n++
			}
		}
		smu.Lock()
		st.PastStopAt += n
		smu.Unlock()
	}
	worker := func(topic string, partition int32, in <-chan []*kgo.Record) {
		defer wg.Done()
		for recs := range in {
			if wctx.Err() != nil {
				continue // drain: another partition failed
			}
			items := make([]projections.Item, len(recs))
			for i, r := range recs {
				items[i] = parseItem(r, len(stopAt[topic]))
			}
			if cfg.StopAt != nil {
				pastStopAt(topic, partition, items)
			}
			err := pl.each(procs[topic], func(_ int, p Processor) error {
				mine := items
				if cfg.StopAt != nil {
					end := cfg.StopAt(p.Name(), topic, partition)
					n := 0
					for n < len(mine) && mine[n].Pos.Offset < end {
						n++
					}
					mine = mine[:n]
				}
				// no dead-letter records: the log's dead-letter topic has them
				outs, err := applyBatch(cfg.Store, p, mine)
				if err != nil {
					return err
				}
				smu.Lock()
				defer smu.Unlock()
				for i, o := range outs {
					switch o.Result {
					case projections.DeadLettered:
						if !refused[mine[i].Pos] {
							refused[mine[i].Pos] = true
							st.DeadLettered++
						}
					case projections.Duplicate:
						st.Duplicates++
					case projections.Applied:
						st.Applied++
					}
				}
				return nil
			})
			if err != nil {
				smu.Lock()
				errs = append(errs, err)
				smu.Unlock()
				stop()
			}
		}
	}
	closeAll := func() {
		for _, in := range workers {
			close(in)
		}
		workers = nil
		wg.Wait()
	}
	defer func() {
		if workers != nil {
			stop()
			closeAll()
		}
	}()
	for remaining > 0 {
		fs := cons.PollFetches(wctx)
		if err := failed(); err != nil {
			return st, err
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("replay: fetch %s/%d: %w", t, p, err) })
		if ferr != nil {
			return st, ferr
		}
		fs.EachPartition(func(part kgo.FetchTopicPartition) {
			if done[part.Topic][part.Partition] {
				return
			}
			// the records to apply: up to the stop offset and the time bound
			var recs []*kgo.Record
			next := int64(-1) // the offset after the last record read
			for _, r := range part.Records {
				if r.Offset >= stopAt[r.Topic][r.Partition] {
					finish(r.Topic, r.Partition)
					break
				}
				if bounded {
					// the time bound, transactions decided after it
					// included, or the position's offset (txnPrefix)
					tp := prefixes[part.Topic][part.Partition]
					if tp == nil {
						if prefixes[part.Topic] == nil {
							prefixes[part.Topic] = map[int32]*txnPrefix{}
						}
						tp = newTxnPrefix(until, -1)
						if atPos(r) {
							tp = newTxnPrefix(time.Time{}, cfg.Until.Pos.Offset+1)
						}
						prefixes[part.Topic][part.Partition] = tp
					}
					next = r.Offset + 1
					out, complete := tp.add(r)
					recs = append(recs, out...)
					if complete || r.Offset+1 >= stopAt[r.Topic][r.Partition] {
						finish(r.Topic, r.Partition)
						break
					}
					continue
				}
				next = r.Offset + 1
				if r.Attrs.IsControl() { // a transaction marker: not an event
					if r.Offset+1 >= stopAt[r.Topic][r.Partition] {
						finish(r.Topic, r.Partition)
					}
					continue
				}
				recs = append(recs, r)
				if r.Offset+1 >= stopAt[r.Topic][r.Partition] {
					finish(r.Topic, r.Partition)
				}
			}
			if next >= 0 {
				reach(part.Topic, part.Partition, next)
			}
			if len(recs) == 0 {
				return
			}
			st.Records += int64(len(recs)) // only this loop writes Records
			k := part.Topic + "/" + strconv.Itoa(int(part.Partition))
			in, ok := workers[k]
			if !ok {
				in = make(chan []*kgo.Record, replayQueue)
				workers[k] = in
				wg.Add(1)
				go worker(part.Topic, part.Partition, in)
			}
			select {
			case in <- recs:
			case <-wctx.Done():
			}
		})
		if cfg.Progress != nil {
			cfg.Progress(covered, total)
		}
	}
	closeAll()
	if err := failed(); err != nil {
		return st, err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	return st, cfg.Store.MarkReplayFinished()
}

// replayQueue is how many polls' records of one partition may wait for its
// worker during a replay.
const replayQueue = 4

// replayFetchPartitionBytes bounds what one fetch returns of a partition
// during a replay (franz-go's default is 1 MiB). With the default, the
// first poll of a log that has been written returned almost all of it at
// once (26,832 of 27,357 records of `chronicle bench`'s log, after 27–45
// ms), and no worker could start before it: a tenth of the replay's wall
// time with one core idle. 128 KiB gave the first records after 9–13 ms
// while the rest is fetched in the background: `chronicle bench --only
// raw,replay --runs 5`, six runs alternating with 1 MiB (2026-11-28,
// load 0.4–1.2), replay rate ×1.003–1.175 (median ×1.05) run by run, CPU
// per record unchanged; it overlaps, it does not cut.
const replayFetchPartitionBytes = 128 << 10

// recordTime is the Kafka timestamp of the event at pos, read committed
// as the replay reads. An offset that holds no event is an error saying
// which: a transaction marker, or a record of an aborted transaction
// (the replay never applies either). Before, such an offset waited 10 s
// for a record the client never returned and then said only "context
// deadline exceeded" (an analyst's walkthrough, on the markers a restart
// after kill -9 writes). It waits at most 10 s (a record in a
// transaction still open, which read committed holds back).
func recordTime(ctx context.Context, brokers []string, pos projections.Position, end int64) (time.Time, error) {
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		pos.Topic: {pos.Partition: kgo.NewOffset().At(pos.Offset)},
	}), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return time.Time{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("--until: read %s: no committed record there within 10 s (a transaction still open?): %w", pos, ctx.Err())
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			switch {
			case r.Offset < pos.Offset:
				continue
			case r.Offset > pos.Offset && r.Attrs.IsControl() && r.Offset+1 < end:
				continue // the marker of the aborted transaction: the next event follows it
			case r.Offset > pos.Offset && r.Attrs.IsControl():
				return time.Time{}, fmt.Errorf("--until: %s holds no event: its record belongs to an aborted transaction, which a replay skips, and no event follows it in the partition", pos)
			case r.Offset > pos.Offset:
				return time.Time{}, fmt.Errorf("--until: %s holds no event: its record belongs to an aborted transaction, which a replay skips; the next event of the partition is at offset %d", pos, r.Offset)
			case r.Attrs.IsControl():
				return time.Time{}, fmt.Errorf("--until: %s holds no event: it is a transaction marker (the end of a relay's or worker's transaction); give an event's offset, such as one before it", pos)
			}
			return r.Timestamp, nil
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return time.Time{}, fmt.Errorf("--until: read %s: %w", pos, errors.Join(errs[0].Err))
		}
	}
}
