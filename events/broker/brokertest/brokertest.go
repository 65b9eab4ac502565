// Package brokertest reads topics to their end for tests: the event ids
// they hold and their number of records, as a consumer of one isolation
// level sees them (read_committed: what the engine, the workers and
// replay apply; read_uncommitted: aborted transactions' records too); and
// it gives a scripted broker (FakeCluster) and the answer of one that
// refuses writes (RejectProduce).
package brokertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// Read reads every partition of topics from offset 0 to its end offset at
// the call, with isolation level, and returns the count of each event id
// ("<topic> <id>"; nil unless parse) and the number of data records
// (transaction markers are not counted). Every record must parse as an
// event when parse is set. A partition not read to its end when ctx ends
// is an error naming how many were left.
func Read(ctx context.Context, brokers []string, level kgo.IsolationLevel, parse bool, topics ...string) (ids map[string]int, records int, err error) {
	adm, err := kafkaconn.NewClient(brokers)
	if err != nil {
		return nil, 0, err
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, 0, err
	}
	if err := ends.Error(); err != nil {
		return nil, 0, err
	}
	start := map[string]map[int32]kgo.Offset{}
	want := map[string]map[int32]int64{}
	left := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if start[o.Topic] == nil {
				start[o.Topic], want[o.Topic] = map[int32]kgo.Offset{}, map[int32]int64{}
			}
			start[o.Topic][o.Partition] = kgo.NewOffset().At(0)
			want[o.Topic][o.Partition] = o.Offset
			left++
		}
	})
	if parse {
		ids = map[string]int{}
	}
	if left == 0 {
		return ids, 0, nil
	}
	cl, err := kafkaconn.NewClient(brokers, kgo.ConsumePartitions(start), kgo.FetchIsolationLevel(level),
		kgo.KeepControlRecords(), kgo.DisableFetchSessions())
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("brokertest: reading %v: %w (%d partitions not read to their end)", topics, ctx.Err(), left)
		}
		var perr error
		fs.EachRecord(func(r *kgo.Record) {
			end := want[r.Topic][r.Partition]
			if r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				records++
				if parse {
					env, err := events.FromRecord(r)
					if err != nil && perr == nil {
						perr = fmt.Errorf("brokertest: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
					}
					ids[r.Topic+" "+env.ID]++
				}
			}
			if r.Offset+1 == end {
				left--
			}
		})
		if perr != nil {
			return nil, 0, perr
		}
	}
	return ids, records, nil
}

// RejectProduce is the answer of a broker that refuses every batch of req
// with code (a kerr code), for a kfake cluster's ControlKey on
// kmsg.Produce: each partition of the request answered with the error.
func RejectProduce(req *kmsg.ProduceRequest, code int16) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Version = req.Version
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// TopicNames are the names of events.AllTopics.
func TopicNames() []string {
	names := make([]string, len(events.AllTopics))
	for i, tp := range events.AllTopics {
		names[i] = string(tp)
	}
	return names
}

// FakeCluster is a one-broker kfake cluster holding every Chronicle topic
// with one partition, closed when tb ends: the broker of the tests that
// script its answers (ControlKey, RejectProduce).
func FakeCluster(tb testing.TB) *kfake.Cluster {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, TopicNames()...))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}
