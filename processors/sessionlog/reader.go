package sessionlog

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
	"github.com/chronicle-dev/chronicle/projections"
)

// Reader reads records at given positions with one long-lived franz-go
// client and raw Fetch requests to each partition's leader (no consumer:
// nothing is set up per call), decoding the returned batches with
// kgo.ProcessFetchPartition. It is safe for concurrent use.
type Reader struct {
	cl  *kgo.Client
	dec kgo.Decompressor
}

// NewReader returns a Reader of the brokers. Fetch requests are capped at
// Kafka 3.0's version (v12), the last that names topics (v13 and later
// name them by topic id).
func NewReader(brokers []string) (*Reader, error) {
	cl, err := kafkaconn.NewClient(brokers, kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		return nil, err
	}
	return &Reader{cl: cl, dec: kgo.DefaultDecompressor()}, nil
}

// Close closes the client.
func (r *Reader) Close() { r.cl.Close() }

// FetchPartitionBytes is the most a partition of one Fetch request
// returns (the broker returns at least one whole record batch whatever
// the limit).
const FetchPartitionBytes = 256 << 10

// Fetch returns each position's record; a position the log does not hold
// (below the log start, or past its end) is absent from the result. It
// sends one metadata request for the leaders, then rounds of one Fetch
// request per leader, each partition starting at its next wanted offset
// (a round returns at most FetchPartitionBytes per partition, whole
// batches), until every position is found or known absent, so its cost
// follows the records asked for, not the log.
func (r *Reader) Fetch(ctx context.Context, positions []projections.Position) (map[projections.Position]*kgo.Record, error) {
	out := make(map[projections.Position]*kgo.Record, len(positions))
	if len(positions) == 0 {
		return out, nil
	}
	type tp struct {
		topic string
		part  int32
	}
	need := map[tp][]int64{}
	topicSet := map[string]bool{}
	for _, p := range positions {
		k := tp{p.Topic, p.Partition}
		need[k] = append(need[k], p.Offset)
		topicSet[p.Topic] = true
	}
	for _, offs := range need {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	}
	topics := make([]string, 0, len(topicSet))
	for t := range topicSet {
		topics = append(topics, t)
	}
	md, err := kadm.NewClient(r.cl).Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("sessionlog: metadata: %w", err)
	}
	leader := map[tp]int32{}
	for k := range need {
		pd, ok := md.Topics[k.topic].Partitions[k.part]
		if !ok || pd.Err != nil {
			return nil, fmt.Errorf("sessionlog: no leader for %s/%d: %v", k.topic, k.part, pd.Err)
		}
		leader[k] = pd.Leader
	}
	next := map[tp]int{}
	for round := 0; anyLeft(need, next); round++ {
		if round > 10000 {
			return nil, fmt.Errorf("sessionlog: fetch does not progress")
		}
		byLeader := map[int32]*kmsg.FetchRequest{}
		for k, offs := range need {
			i := next[k]
			if i >= len(offs) {
				continue
			}
			req := byLeader[leader[k]]
			if req == nil {
				req = kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 16<<20
				req.SessionEpoch = -1
				byLeader[leader[k]] = req
			}
			var rt *kmsg.FetchRequestTopic
			for j := range req.Topics {
				if req.Topics[j].Topic == k.topic {
					rt = &req.Topics[j]
				}
			}
			if rt == nil {
				req.Topics = append(req.Topics, kmsg.NewFetchRequestTopic())
				rt = &req.Topics[len(req.Topics)-1]
				rt.Topic = k.topic
			}
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.FetchOffset, p.PartitionMaxBytes = k.part, offs[i], FetchPartitionBytes
			p.CurrentLeaderEpoch, p.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, p)
		}
		if len(byLeader) == 0 {
			break
		}
		for id, req := range byLeader {
			resp, err := req.RequestWith(ctx, r.cl.Broker(int(id)))
			if err != nil {
				return nil, fmt.Errorf("sessionlog: fetch from broker %d: %w", id, err)
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return nil, fmt.Errorf("sessionlog: fetch from broker %d: %w", id, err)
			}
			for ti := range resp.Topics {
				t := &resp.Topics[ti]
				for pi := range t.Partitions {
					rp := &t.Partitions[pi]
					k := tp{t.Topic, rp.Partition}
					offs, i := need[k], next[k]
					if i >= len(offs) {
						continue
					}
					from := offs[i]
					fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: t.Topic, Partition: rp.Partition}, rp, r.dec, nil)
					if fp.Err != nil && fp.Err != kerr.OffsetOutOfRange {
						return nil, fmt.Errorf("sessionlog: fetch %s/%d at %d: %w", t.Topic, rp.Partition, from, fp.Err)
					}
					if len(fp.Records) == 0 {
						next[k] = i + 1 // nothing at or after this offset: absent
						continue
					}
					last := fp.Records[len(fp.Records)-1].Offset
					for _, rec := range fp.Records {
						for i < len(offs) && offs[i] < rec.Offset {
							i++ // gone from the log
						}
						if i < len(offs) && offs[i] == rec.Offset {
							out[projections.Position{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}] = rec
							i++
						}
					}
					for i < len(offs) && offs[i] <= last {
						i++
					}
					next[k] = i
				}
			}
		}
	}
	return out, nil
}

func anyLeft[K comparable](need map[K][]int64, next map[K]int) bool {
	for k, offs := range need {
		if next[k] < len(offs) {
			return true
		}
	}
	return false
}
