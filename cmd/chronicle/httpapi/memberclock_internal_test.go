package httpapi

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
)

// A member whose clock is more than MemberAuthWindow off the receiving
// member's signs its forwards with a time outside the window: the 401
// says so — the signature's time, how far ahead or behind this member's
// clock it is, the window — and the forwarding member's 503 carries that
// reason. Before, the 401 read as a wrong member_secret ("signed with the
// token file's member_secret (every member's must be the same, and clocks
// within 5m0s)") and the forwarding member's 503 asked only "do the
// members share one tokens file and member_secret?", so an SRE with
// matching secrets and a member 6 minutes off looked in the wrong place.
// A signature under another secret still says that.
func TestMemberSignatureOutsideTheClockWindowSaysSo(t *testing.T) {
	secret := strings.Repeat("s3cret-", 6)
	s := &Server{Tokens: &access.File{MemberSecret: secret}}
	signed := func(at time.Time, key string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/v1/sessions/s1", nil)
		r.Header.Set(ForwardedHeader, "m2")
		ts := strconv.FormatInt(at.Unix(), 10)
		r.Header.Set(MemberAuthHeader, ts+"."+hex.EncodeToString(memberMAC([]byte(key), ts, r.Method, r.RequestURI, r.Header)))
		return r
	}
	for _, c := range []struct {
		name string
		off  time.Duration
		want []string
	}{
		{"ahead", 10 * time.Minute, []string{"10m0s ahead of this member's clock", "5m0s", "clock"}},
		{"behind", -7 * time.Minute, []string{"7m0s behind this member's clock", "5m0s", "clock"}},
	} {
		w := httptest.NewRecorder()
		if s.checkMember(w, signed(time.Now().Add(c.off), secret)) || w.Code != http.StatusUnauthorized {
			t.Fatalf("%s: a signature %s off passed (%d)", c.name, c.off, w.Code)
		}
		body := w.Body.String()
		for _, want := range c.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s: 401 %s; want it to say %q", c.name, body, want)
			}
		}
		// the forwarding member's error carries the owner's reason
		resp := &http.Response{StatusCode: w.Code, Header: w.Header(), Body: io.NopCloser(strings.NewReader(body))}
		if err := ownerRefusal(resp); err == nil || !strings.Contains(err.Error(), c.want[0]) {
			t.Errorf("%s: the forward's error %v; want it to carry %q", c.name, err, c.want[0])
		}
	}
	w := httptest.NewRecorder()
	if s.checkMember(w, signed(time.Now(), strings.Repeat("other-", 6))) || w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "member_secret") || strings.Contains(w.Body.String(), "ahead") {
		t.Errorf("another secret: %d %s; want a 401 naming the member_secret", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	if !s.checkMember(w, signed(time.Now().Add(4*time.Minute), secret)) {
		t.Errorf("a signature 4 minutes ahead, within the window: refused %d %s", w.Code, w.Body)
	}
}
