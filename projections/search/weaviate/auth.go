package weaviate

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/auth"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrUnauthorized is wrapped by the error of an operation the server
// refused for its credentials: HTTP 401 or 403, gRPC Unauthenticated or
// PermissionDenied, or objects or a query refused with the server's
// "forbidden action" (no API key where one is required, a wrong key, or
// a key whose user may not do the operation). It is never retried: the
// operation fails at once instead of spending RetryMaxElapsed as if the
// server were unavailable.
var ErrUnauthorized = errors.New("unauthorized: check the API key")

// authHeaders are the request headers that carry c.APIKey (nil without
// one), made by the client's own auth.ApiKey: "authorization: Bearer
// <key>". The client sends its Config.Headers with every REST/GraphQL
// request and as metadata of every gRPC call, so one set covers both.
// (Config.AuthConfig would do the same but cannot be combined with the
// store's own ConnectionClient.)
func (c Config) authHeaders() map[string]string {
	if c.APIKey == "" {
		return nil
	}
	// ApiKey.GetAuthInfo only builds the header: it does not use the
	// connection and cannot fail.
	_, headers, _ := auth.ApiKey{Value: c.APIKey}.GetAuthInfo(nil)
	return headers
}

// unauthorized reports whether err is the server's refusal of the
// credentials (see ErrUnauthorized), or of every object of a batch or a
// query for the user's permissions (forbiddenError).
func unauthorized(err error) bool {
	var fe *forbiddenError
	var we *fault.WeaviateClientError
	switch {
	case errors.As(err, &fe):
		return true
	case errors.As(err, &we) && we.DerivedFromError != nil:
		return unauthorized(we.DerivedFromError)
	case we != nil:
		return we.StatusCode == http.StatusUnauthorized || we.StatusCode == http.StatusForbidden
	}
	c := status.Code(err)
	return c == codes.Unauthenticated || c == codes.PermissionDenied
}

// forbiddenMarker is in the message of the server's refusal of an
// object or a query for the user's permissions (admin list or RBAC): the
// gRPC batch reports it per object in a successful reply, not as a gRPC
// status.
const forbiddenMarker = "authorization, forbidden action:"

// forbiddenError is a refusal for the user's permissions (see
// forbiddenMarker), reported in a response's per-object or GraphQL errors.
type forbiddenError struct{ msg string }

func (e *forbiddenError) Error() string { return e.msg }

// refusal is the error of the server's refusal msg (per-object or GraphQL
// errors): a forbiddenError when it is for the user's permissions.
func refusal(msg string) error {
	if strings.Contains(msg, forbiddenMarker) {
		return &forbiddenError{msg}
	}
	return errors.New(msg)
}

// authError is the error of an operation refused for its credentials:
// it names the host, wraps ErrUnauthorized and the cause, and never shows
// the key.
type authError struct {
	host, op, detail string
	noKey            bool
	cause            error
}

// newAuthError is the authError of op refused with cause by the server of
// cfg; the key is cut out of the server's message in case it quoted it.
func newAuthError(cfg Config, op string, cause error) *authError {
	detail := describe(cause)
	if cfg.APIKey != "" {
		detail = strings.ReplaceAll(detail, cfg.APIKey, "[redacted]")
	}
	return &authError{host: cfg.Host, op: op, detail: detail, noKey: cfg.APIKey == "", cause: cause}
}

func (e *authError) Error() string {
	hint := ""
	switch {
	case e.noKey:
		hint = " (no key was sent)"
	case strings.Contains(e.detail, noAuthMarker):
		// the key is not wrong: the server takes none (a Weaviate
		// walkthrough, 2026-11-30: a stray WEAVIATE_API_KEY in the
		// environment, read by default, and the hint said to check it)
		hint = " (the server has no API-key authentication, so it refuses any key: send none — unset the key's environment variable, WEAVIATE_API_KEY or the one --weaviate-api-key-env names)"
	}
	return fmt.Sprintf("weaviate: %s: %v%s: %s: %s", e.host, ErrUnauthorized, hint, e.op, e.detail)
}

// noAuthMarker is in the server's refusal of a key it has no
// authentication for (Weaviate answers 401 "oidc auth is not configured,
// please try another auth scheme or set up weaviate with OIDC
// configured").
const noAuthMarker = "auth is not configured"

func (e *authError) Unwrap() []error { return []error{ErrUnauthorized, e.cause} }
