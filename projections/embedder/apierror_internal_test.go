package embedder

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An endpoint's error body that is no JSON (a gateway's page, here in
// Chinese, as Chinese providers' gateways answer) is kept to about 200
// bytes, cut at a character: before, at the 200th byte, inside 请's three
// bytes, and the message ended in half a character.
func TestAPIErrorTextCutAtACharacter(t *testing.T) {
	body := []byte("服务暂时不可用，请稍后重试。" + strings.Repeat("请求过多", 20))
	e := parseAPIError(503, body)
	if !utf8.ValidString(e.Message) {
		t.Fatalf("message %q is not valid UTF-8", e.Message)
	}
	if !strings.HasPrefix(e.Message, "服务暂时不可用") || !strings.HasSuffix(e.Message, "…") || len(e.Message) > 200+len("…") {
		t.Fatalf("message %q: want the body's first 200 bytes or less, cut, then …", e.Message)
	}
}
