package processors

import (
	"bytes"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Chronicle's group balancers (the workers' followEngineBalancer, the
// HTTP API's AdvertisingBalancer) carry one value per member — the
// member's engine id, its advertised URL — in the consumer protocol's
// member metadata, in front of the wrapped cooperative-sticky balancer's
// user data: magic, uvarint length of the value, the value, then the
// wrapped user data unchanged. The leader strips it before the wrapped
// balancer sees the members, and DescribeGroups shows it to everyone.

// TagJoinMetadata returns raw (a kmsg.ConsumerMemberMetadata as a
// balancer's JoinGroupMetadata encodes it) with value put in front of its
// user data under magic; raw itself when it does not decode.
func TagJoinMetadata(raw, magic []byte, value string) []byte {
	var meta kmsg.ConsumerMemberMetadata
	meta.Default()
	if err := meta.ReadFrom(raw); err != nil {
		return raw
	}
	ud := append([]byte(nil), magic...)
	ud = binary.AppendUvarint(ud, uint64(len(value)))
	ud = append(ud, value...)
	meta.UserData = append(ud, meta.UserData...)
	return meta.AppendTo(nil)
}

// UntagUserData splits user data tagged under magic into the value and
// the wrapped balancer's user data; ok is false for other user data.
func UntagUserData(magic, ud []byte) (value string, inner []byte, ok bool) {
	rest, found := bytes.CutPrefix(ud, magic)
	if !found {
		return "", ud, false
	}
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return "", ud, false
	}
	return string(rest[w : w+int(n)]), rest[w+int(n):], true
}

// UntagMembers returns members with the tag under magic removed from each
// one's metadata (as the wrapped balancer would see them), and each
// tagged member's value by member id.
func UntagMembers(members []kmsg.JoinGroupResponseMember, magic []byte) ([]kmsg.JoinGroupResponseMember, map[string]string) {
	plain := make([]kmsg.JoinGroupResponseMember, len(members))
	values := map[string]string{}
	for i, m := range members {
		plain[i] = m
		var meta kmsg.ConsumerMemberMetadata
		meta.Default()
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			continue // the wrapped balancer reports it
		}
		if v, inner, ok := UntagUserData(magic, meta.UserData); ok {
			meta.UserData = inner
			plain[i].ProtocolMetadata = meta.AppendTo(nil)
			values[m.MemberID] = v
		}
	}
	return plain, values
}
