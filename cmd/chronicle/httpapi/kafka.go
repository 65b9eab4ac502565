package httpapi

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadataReq(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	return req
}

func partitionsOf(resp kmsg.Response, topic string) int {
	md, ok := resp.(*kmsg.MetadataResponse)
	if !ok {
		return 0
	}
	for _, t := range md.Topics {
		if t.Topic != nil && *t.Topic == topic && t.ErrorCode == 0 {
			return len(t.Partitions)
		}
	}
	return 0
}

func endOffset(ctx context.Context, cl *kgo.Client, topic string, part int32) (int64, error) {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("end offsets: %w", err)
	}
	o, ok := ends.Lookup(topic, part)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("end offset of %s/%d: %v", topic, part, o.Err)
	}
	return o.Offset, nil
}
