package httpapi

import (
	"errors"
	"fmt"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
)

// ErrNoTokens is ReloadTokens' error on a server started without tokens
// (Server.Tokens nil): it serves every scope on loopback, and taking
// tokens on would change who may call it, which takes a restart.
var ErrNoTokens = errors.New("httpapi: the server was started without tokens")

// ReloadTokens replaces the tokens of a server started with Tokens: every
// request from then on is authenticated against f, so a token created
// since start is accepted and one removed from the file is refused (401),
// without a restart (`chronicle serve` and `inspect` call it on SIGHUP,
// re-reading --tokens). A request already authenticated keeps its caller,
// a learned stream included. Before, the file was read at start only, and
// a new token was a 401 until every member restarted (a walkthrough's
// finding).
//
// Errors, and then the tokens before stay: ErrNoTokens; f not valid
// (access.File.Validate); f's member_secret other than the one the
// server started with — the members of a cluster sign their requests to
// each other with it, so one member changing it alone would refuse the
// others' requests: change it by restarting every member.
func (s *Server) ReloadTokens(f access.File) error {
	if s.Tokens == nil {
		return ErrNoTokens
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if f.MemberSecret != s.Tokens.MemberSecret {
		return fmt.Errorf("httpapi: the token file's member_secret changed: the cluster's members sign their requests to each other with it, so it changes by restarting every member, not by a reload")
	}
	s.reloaded.Store(&f)
	return nil
}

// tokenFile is the tokens requests are authenticated against: the last
// ReloadTokens', else Tokens.
func (s *Server) tokenFile() *access.File {
	if f := s.reloaded.Load(); f != nil {
		return f
	}
	return s.Tokens
}
