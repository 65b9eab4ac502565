// Package access holds Chronicle's API tokens: each maps to the scopes it
// may read and write (project:<id>, team:<id>, org:<id>, or * for all).
// Tokens are stored hashed (SHA-256) in a JSON file; the plain token is
// shown once, when it is created.
package access

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Token is one entry of the token file.
type Token struct {
	Name string `json:"name"`
	// SHA256 is the hex SHA-256 of the token; the token itself is never
	// stored.
	SHA256 string   `json:"sha256"`
	Read   []string `json:"read"`
	Write  []string `json:"write"`
}

// File is the token file's content: {"tokens": [...]}.
type File struct {
	Tokens []Token `json:"tokens"`
	// MemberSecret, when set, is the secret the members of a cluster sign
	// their requests to each other with (an HMAC; httpapi.MemberAuthHeader):
	// a request without a valid signature has the cluster's internal
	// headers (Chronicle-Forwarded-By, -Fan-Out, -Scope-Probe, …) removed,
	// so a client cannot send them. Every member's token file needs the
	// same value, of at least MinMemberSecret characters; no client is
	// given it.
	MemberSecret string `json:"member_secret,omitempty"`
}

// MinMemberSecret is the shortest member_secret accepted (32 characters).
const MinMemberSecret = 32

var scopeRe = regexp.MustCompile(`^((project|team|org):[A-Za-z0-9._-]+|\*)$`)

// ValidGrant reports whether s may stand in a token's read or write
// list: a scope (project:<id>, team:<id>, org:<id>) or "*".
func ValidGrant(s string) bool { return scopeRe.MatchString(s) }

// Validate reports the first bad entry, naming it and the field.
func (f File) Validate() error {
	if f.MemberSecret != "" && len(f.MemberSecret) < MinMemberSecret {
		return fmt.Errorf("access: member_secret: %d characters, want at least %d (e.g. openssl rand -hex 32)", len(f.MemberSecret), MinMemberSecret)
	}
	seen := map[string]bool{}
	names := map[string]int{}
	for i, t := range f.Tokens {
		if t.Name == "" {
			return fmt.Errorf("access: tokens[%d].name: required", i)
		}
		if j, dup := names[t.Name]; dup {
			// a memory's history and the consensus rule name the author
			// by token name: two tokens of one name would be one author
			return fmt.Errorf("access: tokens[%d].name: %q is the name of tokens[%d] too: authors (token:<name>) must be told apart, rename one", i, t.Name, j)
		}
		names[t.Name] = i
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("access: tokens[%d] (%s).sha256: not a hex SHA-256", i, t.Name)
		}
		if seen[t.SHA256] {
			return fmt.Errorf("access: tokens[%d] (%s).sha256: duplicate token", i, t.Name)
		}
		seen[t.SHA256] = true
		for _, l := range [][]string{t.Read, t.Write} {
			for _, s := range l {
				if !ValidGrant(s) {
					return fmt.Errorf("access: tokens[%d] (%s): scope %q is not project:<id>, team:<id>, org:<id> or *", i, t.Name, s)
				}
			}
		}
	}
	return nil
}

// Load reads and validates a token file.
func Load(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("access: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt "write" must not leave a token without its scopes silently
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("access: %s: %w", path, err)
	}
	// hex is case-insensitive: an upper-case hash (sha256sum's is lower
	// case, other tools' upper) was accepted and matched no token, so its
	// caller was refused without a word why (a security walkthrough,
	// 2026-12-05)
	for i := range f.Tokens {
		f.Tokens[i].SHA256 = strings.ToLower(f.Tokens[i].SHA256)
	}
	return f, f.Validate()
}

// Exposed reports the permission bits of the file at path when users
// other than its owner may read or write it (mode & 0o077), for a warning:
// a token file holds member_secret in clear, with which a process can
// sign requests as a cluster member. Save writes 0600; a file made or
// copied otherwise keeps its mode. ok is false when the mode is 0600 or
// stricter, or path cannot be read.
func Exposed(path string) (mode os.FileMode, ok bool) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return 0, false
	}
	return fi.Mode().Perm(), true
}

// Save writes f to path, mode 0600: an existing file is set to 0600 too
// (os.WriteFile keeps an existing file's mode, so a file created 0644 by
// hand stayed readable by every user, member_secret included: a security
// walkthrough, 2026-12-05).
func Save(path string, f File) error {
	if err := f.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// Hash is the hex SHA-256 of a token.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// NewToken returns a fresh random token ("chr_" + 32 random bytes,
// base64url).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "chr_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// Caller is an authenticated caller's rights.
type Caller struct {
	Name  string
	Read  []string
	Write []string
}

// Unrestricted is the caller of a service without tokens (loopback only).
var Unrestricted = Caller{Name: "local", Read: []string{"*"}, Write: []string{"*"}}

func allowed(list []string, scope string) bool {
	for _, s := range list {
		if s == "*" || s == scope {
			return true
		}
	}
	return false
}

// OnlyReadScope is the scope a request that names none means for an entity
// no projection holds yet: c's only concrete read scope, or the default
// scope (org:default) for a caller that reads every scope; "" when c reads
// several concrete scopes (the request must name one).
func (c Caller) OnlyReadScope() string {
	if c.ReadsAll() {
		return "org:default"
	}
	if len(c.Read) == 1 {
		return c.Read[0]
	}
	return ""
}

// CanRead reports whether c may read scope.
func (c Caller) CanRead(scope string) bool { return allowed(c.Read, scope) }

// CanWrite reports whether c may write scope.
func (c Caller) CanWrite(scope string) bool { return allowed(c.Write, scope) }

// ReadsAll reports whether c may read every scope (cross-scope views: the
// tool graph, the digest).
func (c Caller) ReadsAll() bool {
	for _, s := range c.Read {
		if s == "*" {
			return true
		}
	}
	return false
}

// DefaultWriteScope is the scope a write without one goes to: the first
// write scope that is not "*".
func (c Caller) DefaultWriteScope() string {
	for _, s := range c.Write {
		if s != "*" {
			return s
		}
	}
	return ""
}

// ErrUnauthenticated is returned for a missing or unknown token.
var ErrUnauthenticated = errors.New("access: missing or unknown bearer token")

// BearerToken returns the token of an Authorization header value of the
// Bearer scheme (RFC 6750 section 2.1; the scheme name is
// case-insensitive, RFC 7235 section 2.1), false for another scheme or an
// empty token.
func BearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// Authenticate finds the token of an Authorization header value
// ("Bearer <token>"), comparing hashes in constant time.
func (f File) Authenticate(header string) (Caller, error) {
	tok, ok := BearerToken(header)
	if !ok {
		return Caller{}, ErrUnauthenticated
	}
	h := Hash(tok)
	for _, t := range f.Tokens {
		if subtle.ConstantTimeCompare([]byte(h), []byte(t.SHA256)) == 1 {
			return Caller{Name: t.Name, Read: t.Read, Write: t.Write}, nil
		}
	}
	return Caller{}, ErrUnauthenticated
}
