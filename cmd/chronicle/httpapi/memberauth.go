package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Authenticating members' requests to each other. A member sends another
// a forwarded request, a fan-out and a scope probe with the client's
// Authorization and internal headers (ForwardedHeader, FanOutHeader,
// ScopeProbeHeader, forkHopHeader, chainHopHeader); without more, a
// client can send those headers itself, and no member can tell its
// request from a member's (a tenant-isolation review: a forged scope probe
// was an existence oracle; see ScopeProbeHeader). When the token file
// names a member_secret (access.File.MemberSecret), every member signs
// its requests to the others with it (MemberAuthHeader): a request that
// says it is a member's (ForwardedHeader) without a valid signature is
// refused (401), and from any other unsigned request every internal
// header is removed before it is routed (checkMember).

// MemberAuthHeader carries a member's signature of its request to
// another member: "<unix seconds>.<hex HMAC-SHA256>" keyed by the token
// file's member_secret, over the time, the method, the request URI, the
// caller's Authorization and the internal headers' values
// (signedHeaders). It is valid for MemberAuthWindow either side of the
// receiving member's clock.
const MemberAuthHeader = "Chronicle-Member-Auth"

// MemberAuthWindow is how far a member's signature's time may be from the
// receiving member's clock (5 min).
const MemberAuthWindow = 5 * time.Minute

// signedHeaders are the request headers a member's signature covers.
var signedHeaders = []string{"Authorization", ForwardedHeader, FanOutHeader, ScopeProbeHeader, forkHopHeader, chainHopHeader}

// internalHeaders are the headers removed from a request that carries no
// valid member signature (when the token file names a member_secret):
// those only a member sends, and heldScopeHeader, which only a member's
// answer carries.
var internalHeaders = []string{ForwardedHeader, FanOutHeader, ScopeProbeHeader, forkHopHeader, chainHopHeader, heldScopeHeader, MemberAuthHeader, BodyHeldHeader}

// memberSecret is the token file's member_secret (nil: none, members'
// requests are not signed).
func (s *Server) memberSecret() []byte {
	if s.Tokens == nil || s.Tokens.MemberSecret == "" {
		return nil
	}
	return []byte(s.Tokens.MemberSecret)
}

// memberMAC is the signature of a request of method to uri with header h
// at ts (unix seconds) under key.
func memberMAC(key []byte, ts, method, uri string, h http.Header) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "chronicle-member-v1\n%s\n%s\n%s\n", ts, method, uri)
	for _, name := range signedHeaders {
		fmt.Fprintf(m, "%s: %q\n", name, h.Values(name))
	}
	return m.Sum(nil)
}

// signMember signs req, a request to another member, when the token file
// names a member_secret. Call it once every header is set.
func (s *Server) signMember(req *http.Request) {
	key := s.memberSecret()
	if key == nil {
		return
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set(MemberAuthHeader, ts+"."+hex.EncodeToString(memberMAC(key, ts, req.Method, req.URL.RequestURI(), req.Header)))
}

// fromMember reports whether r carries a valid member signature under key.
// A signature that matches but is dated outside MemberAuthWindow of this
// member's clock is not valid; skew then says how far off it is.
func fromMember(key []byte, r *http.Request) (ok bool, skew string) {
	ts, mac, ok := strings.Cut(r.Header.Get(MemberAuthHeader), ".")
	if !ok {
		return false, ""
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false, ""
	}
	got, err := hex.DecodeString(mac)
	if err != nil {
		return false, ""
	}
	uri := r.RequestURI
	if uri == "" { // an in-process request (the /mcp tools)
		uri = r.URL.RequestURI()
	}
	if !hmac.Equal(got, memberMAC(key, ts, r.Method, uri, r.Header)) {
		return false, ""
	}
	now := time.Now()
	if off := now.Unix() - sec; off > int64(MemberAuthWindow/time.Second) || off < -int64(MemberAuthWindow/time.Second) { // whole seconds, as signed
		dir, d := "behind", fmt.Sprintf("%ds", off)
		if off < 0 {
			dir, d = "ahead of", fmt.Sprintf("%ds", -off)
		}
		if off > -1<<32 && off < 1<<32 {
			d = (time.Duration(max(off, -off)) * time.Second).String()
		}
		return false, fmt.Sprintf("%s signed with the member_secret but dated %s, %s %s this member's clock (%s); members' clocks must agree within %v: sync them (NTP)",
			MemberAuthHeader, time.Unix(sec, 0).UTC().Format(time.RFC3339), d, dir, now.UTC().Format(time.RFC3339), MemberAuthWindow)
	}
	return true, ""
}

// checkMember enforces the token file's member_secret on r (none: it
// passes everything). A request a member signed passes. One that claims
// to be a member's (ForwardedHeader or MemberAuthHeader) without a valid
// signature is answered 401 and false: a member whose token file names
// another secret (or none: a member not updated yet) would otherwise have
// its forwards taken for a client's, forwarded again, and fanned out
// again, until the forward timeout. From any other request every internal
// header is removed: it is a client's, answered as any client's.
func (s *Server) checkMember(w http.ResponseWriter, r *http.Request) bool {
	key := s.memberSecret()
	if key == nil {
		return true
	}
	ok, skew := fromMember(key, r)
	if ok {
		return true
	}
	if skew != "" {
		writeErr(w, http.StatusUnauthorized, "%s", skew)
		return false
	}
	if r.Header.Get(ForwardedHeader) != "" || r.Header.Get(MemberAuthHeader) != "" {
		writeErr(w, http.StatusUnauthorized, "%s without a valid %s: a member's request is signed with the token file's member_secret (every member's must be the same, and clocks within %v); a client does not send these headers",
			ForwardedHeader, MemberAuthHeader, MemberAuthWindow)
		return false
	}
	for _, h := range internalHeaders {
		r.Header.Del(h)
	}
	return true
}
