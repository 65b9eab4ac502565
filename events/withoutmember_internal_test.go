package events

import "testing"

func TestWithoutMember(t *testing.T) {
	for _, c := range []struct {
		in, name, want string
		dropped        bool
	}{
		{`{"memory_id":"m1","source":"token:a"}`, "source", `{"memory_id":"m1"}`, true},
		{`{"source":"token:a","memory_id":"m1"}`, "source", `{"memory_id":"m1"}`, true},
		{`{"a":1,"source":"x","b":[1,{"source":"y"}]}`, "source", `{"a":1,"b":[1,{"source":"y"}]}`, true},
		{`{"source":"x"}`, "source", `{}`, true},
		{`{"source":"x","source":"y","z":null}`, "source", `{"z":null}`, true},
		{`{"a":{"source":"nested"}}`, "source", "", false},
		{`{"a":"\"source\":","b":true}`, "source", "", false},
		{`{"a":"}\\","source":{"k":"]"},"b":-1.5e3}`, "source", `{"a":"}\\","b":-1.5e3}`, true},
		{`{"sources":"x"}`, "source", "", false},
		{`{}`, "source", "", false},
		{`null`, "source", "", false},
		{`["source",1]`, "source", "", false},
		{`{"source":"unterminated`, "source", "", false},
		{`{"source":"x","a":1`, "source", "", false},
		{`{"recorded_by":"token:a","content":"c"}`, "recorded_by", `{"content":"c"}`, true},
	} {
		got, dropped := WithoutMember([]byte("pre"), []byte(c.in), c.name)
		if string(got) != "pre"+c.want || dropped != c.dropped {
			t.Errorf("%s without %q: %s (dropped %v), want %s (%v)", c.in, c.name, got[3:], dropped, c.want, c.dropped)
		}
	}
}
