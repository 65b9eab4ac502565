package processors_test

import (
	"testing"

	"github.com/chronicle-dev/chronicle/processors"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A value tagged into a member's join metadata comes back out of it and
// out of the members a leader sees, which then carry the wrapped
// balancer's metadata byte for byte; user data of another format is no
// tag.
func TestUserDataTags(t *testing.T) {
	magic := []byte("tst1")
	plain := kgo.CooperativeStickyBalancer().JoinGroupMetadata([]string{"t"}, map[string][]int32{"t": {0, 2}}, 3)
	for _, v := range []string{"", "http://127.0.0.1:8080", "kgo-5d2c6f0e-member"} {
		tagged := processors.TagJoinMetadata(plain, magic, v)
		var meta kmsg.ConsumerMemberMetadata
		meta.Default()
		if err := meta.ReadFrom(tagged); err != nil {
			t.Fatal(err)
		}
		got, _, ok := processors.UntagUserData(magic, meta.UserData)
		if !ok || got != v {
			t.Fatalf("%q: untagged %q %v", v, got, ok)
		}
		members, values := processors.UntagMembers([]kmsg.JoinGroupResponseMember{{MemberID: "m", ProtocolMetadata: tagged}, {MemberID: "old", ProtocolMetadata: plain}}, magic)
		if string(members[0].ProtocolMetadata) != string(plain) || string(members[1].ProtocolMetadata) != string(plain) || values["m"] != v || len(values) != 1 {
			t.Fatalf("%q: members %v, values %v", v, members, values)
		}
	}
	for _, raw := range [][]byte{nil, []byte{0, 1, 2}, magic, append(append([]byte(nil), magic...), 0xff)} {
		if v, rest, ok := processors.UntagUserData(magic, raw); ok || v != "" || string(rest) != string(raw) {
			t.Fatalf("%v: untagged %q %v %v", raw, v, rest, ok)
		}
	}
	if got := processors.TagJoinMetadata([]byte{0xff}, magic, "x"); string(got) != "\xff" {
		t.Fatalf("metadata that does not decode: %v, want it unchanged", got)
	}
}
