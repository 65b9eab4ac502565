package sessionlog

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronicle-dev/chronicle/projections"
)

// FetchGap is the largest run of unwanted offsets Fetch reads through
// rather than repositioning its consumer: a reposition costs a fetch round
// trip, reading a few hundred small records past costs less.
const FetchGap = 256

// FetchMaxWait is how long the broker may hold one of Fetch's fetch
// requests that finds no new record (a partition read to its end while
// another is still wanted); kgo's default, 5 s, would be a request's
// latency then.
var FetchMaxWait = 20 * time.Millisecond

// Fetch reads the records at positions from the brokers with a plain
// franz-go consumer of assigned partitions (no group, nothing committed):
// each partition starts at its first wanted offset and jumps (SetOffsets)
// over gaps wider than FetchGap, so its cost grows with the records asked
// for, not with the log. It returns each position's record; a position
// the log no longer holds (below the log start, or past its end) is
// absent from the result. It stops at ctx's deadline with an error.
func Fetch(ctx context.Context, brokers []string, positions []projections.Position) (map[projections.Position]*kgo.Record, error) {
	out := make(map[projections.Position]*kgo.Record, len(positions))
	if len(positions) == 0 {
		return out, nil
	}
	type tp struct {
		topic string
		part  int32
	}
	need := map[tp][]int64{}
	for _, p := range positions {
		k := tp{p.Topic, p.Partition}
		need[k] = append(need[k], p.Offset)
	}
	next := map[tp]int{} // index of the next wanted offset per partition
	start := map[string]map[int32]kgo.Offset{}
	for k, offs := range need {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		if start[k.topic] == nil {
			start[k.topic] = map[int32]kgo.Offset{}
		}
		start[k.topic][k.part] = kgo.NewOffset().At(offs[0])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(start), kgo.FetchMaxWait(FetchMaxWait),
		kgo.DisableFetchSessions()) // see kafkapubsub: avoids a race in franz-go's Close
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	left := len(need)
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sessionlog: fetch: %w", ctx.Err())
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("sessionlog: fetch %s/%d: %w", t, p, err) })
		if ferr != nil {
			return nil, ferr
		}
		last := map[tp]int64{}
		done := map[string][]int32{}
		fs.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			offs, i := need[k], next[k]
			for i < len(offs) && offs[i] < r.Offset { // gone from the log
				i++
			}
			if i < len(offs) && offs[i] == r.Offset {
				out[projections.Position{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}] = r
				i++
			}
			if i == len(offs) && next[k] < len(offs) {
				left--
				done[k.topic] = append(done[k.topic], k.part)
			}
			next[k] = i
			if r.Offset > last[k] {
				last[k] = r.Offset
			}
		})
		jump := map[string]map[int32]kgo.EpochOffset{}
		for k, at := range last {
			offs, i := need[k], next[k]
			if i < len(offs) && offs[i]-(at+1) > FetchGap {
				if jump[k.topic] == nil {
					jump[k.topic] = map[int32]kgo.EpochOffset{}
				}
				jump[k.topic][k.part] = kgo.EpochOffset{Epoch: -1, Offset: offs[i]}
			}
		}
		if len(jump) > 0 {
			cl.SetOffsets(jump)
		}
		if len(done) > 0 && left > 0 {
			cl.RemoveConsumePartitions(done) // fetch only what is still wanted
		}
	}
	return out, nil
}
