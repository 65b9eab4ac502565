package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/chronicle-dev/chronicle/projections/search"
)

// IdempotencyKeyHeader is the request header of POST /v1/memories that
// makes a retry one recording (draft-ietf-httpapi-idempotency-key-header):
// its value is a Structured Field String ("8e03978e-…", quoted), or, as
// many clients send it, the bare key.
const IdempotencyKeyHeader = "Idempotency-Key"

// idempotencyKey reads r's Idempotency-Key header: "" when absent, else
// the key (a quoted Structured Field String unquoted, RFC 8941 §4.2.5).
// Its error, for the 400, names the header and the reason: sent twice,
// or search.CheckIdempotencyKey's reason, or a malformed quoted string.
func idempotencyKey(r *http.Request) (string, error) {
	vals := r.Header.Values(IdempotencyKeyHeader)
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", fmt.Errorf("%s: sent %d times; send one key", IdempotencyKeyHeader, len(vals))
	}
	raw := strings.TrimSpace(vals[0])
	key := raw
	if strings.HasPrefix(raw, `"`) {
		var err error
		if key, err = sfString(raw); err != nil {
			return "", fmt.Errorf("%s: %s: %v", IdempotencyKeyHeader, raw, err)
		}
	}
	if err := search.CheckIdempotencyKey(key); err != nil {
		return "", fmt.Errorf("%s: %w", IdempotencyKeyHeader, err)
	}
	return key, nil
}

// sfString parses s, which starts with '"', as an RFC 8941 String: the
// characters between the quotes, with \" and \\ unescaped; nothing may
// follow the closing quote.
func sfString(s string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
				return "", fmt.Errorf(`'\' at byte %d escapes neither '"' nor '\' (RFC 8941 String)`, i)
			}
			i++
			b.WriteByte(s[i])
		case c == '"':
			if i != len(s)-1 {
				return "", fmt.Errorf("%q follows the closing quote (send one quoted string)", s[i+1:])
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("byte %d (0x%02x) is not printable ASCII", i, c)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("no closing quote (RFC 8941 String)")
}
