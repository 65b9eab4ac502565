package mcpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// textChecked reads at most the SDK's body limit (and a byte) of a POST
// before handing it on: a 6 MiB body, which the SDK refuses, was read
// whole into memory first (the limit was 16 MiB), four times what the
// HTTP API's ingest budget weighs a body at.
func TestTextCheckedReadsNoMoreThanTheSDKTakes(t *testing.T) {
	body := &countingReader{r: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 6<<20) + `"}}`)}
	var handedOn bool
	h := textChecked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handedOn = true // as the SDK would, refusing it past its limit unread
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !handedOn {
		t.Fatal("the large body was not handed on to the SDK, whose limit refuses it")
	}
	if max := int64(mcp.DefaultMaxRequestBodyBytes) + 1; body.n > max {
		t.Fatalf("textChecked read %d bytes of the body, more than the SDK's limit and a byte (%d)", body.n, max)
	}
}
