package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/access"
)

// A body holding more than one JSON value is a 400 on the workflow, suggest
// and DAG routes, as on every route decodeBody reads (before, these
// decoded the first value and dropped the rest: `{"channel":"messages",
// "update":1} {"update":2}` wrote the first and answered 200; found by an
// agent-runtime developer's walkthrough). Nothing here reaches the store.
func TestJSONRoutesRefuseTrailingData(t *testing.T) {
	s := &Server{}
	all := access.Caller{Read: []string{"*"}, Write: []string{"*"}}
	for _, c := range []struct {
		path, body string
		h          http.HandlerFunc
	}{
		{"/v1/workflows/w1/updates", `{"channel":"messages","update":1} {"update":2}`, s.workflowPost},
		{"/v1/workflows/w1/complete", `{"outcome":"success"}]`, s.workflowPost},
		{"/v1/workflows/suggest", `{"intent":"cancel"} x`, s.postSuggest},
		{"/v1/workflows/suggest/feedback", `{"policy":"p","accepted":true,"mode":"suggestion","confidence":0.9}{}`, s.postSuggestFeedback},
		{"/v1/dags", `{"tools":["think"]} {"tools":[]}`, s.postDAG},
	} {
		r := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, all))
		w := httptest.NewRecorder()
		c.h(w, r)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "more after it") {
			t.Errorf("%s %s: %d %s, want 400 naming the data after the object", c.path, c.body, w.Code, w.Body)
		}
	}
}
