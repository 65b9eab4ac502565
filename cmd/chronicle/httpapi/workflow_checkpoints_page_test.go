package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// GET /v1/workflows/{id}/checkpoints reads in pages: limit (1 to 500) and
// cursor (the next_cursor of the previous page); without limit it answers
// every checkpoint, as before. Each checkpoint carries its whole state, and
// ?limit was ignored: a walkthrough's one checkpoint was 1.78 MB.
func TestWorkflowCheckpointsInPages(t *testing.T) {
	_, c, _ := startAt(t, t.TempDir())
	ctx, m := context.Background(), musts{t, c}
	const wf = "pages/w-1"
	var want []string
	for layer := 0; layer < 5; layer++ {
		m.w(c.Update(ctx, wf, layer, "tasks", map[string]any{"id": "t", "layer": layer}))
		want = append(want, m.w(c.Checkpoint(ctx, wf, layer)).CheckpointID)
	}
	type page struct {
		Checkpoints []struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoints"`
		NextCursor string `json:"next_cursor"`
		Error      string `json:"error"`
	}
	get := func(query string) (int, page) {
		t.Helper()
		resp, err := http.Get(c.Base + "/v1/workflows/" + url.PathEscape(wf) + "/checkpoints" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, p
	}
	ids := func(p page) (out []string) {
		for _, c := range p.Checkpoints {
			out = append(out, c.CheckpointID)
		}
		return out
	}
	if code, p := get(""); code != 200 || !slices.Equal(ids(p), want) || p.NextCursor != "" {
		t.Fatalf("without limit: %d %v next %q, want every checkpoint %v", code, ids(p), p.NextCursor, want)
	}
	var got []string
	cursor, pages := "", 0
	for {
		q := "?limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		code, p := get(q)
		if code != 200 || len(p.Checkpoints) > 2 {
			t.Fatalf("page %d: %d %v", pages, code, ids(p))
		}
		got, pages = append(got, ids(p)...), pages+1
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("pages of 2: %v in %d pages, want %v in 3", got, pages, want)
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?limit=x", "?limit="} {
		if code, p := get(q); code != 400 || !strings.Contains(p.Error, "limit") {
			t.Errorf("%s: %d %q, want 400 naming limit", q, code, p.Error)
		}
	}
	if code, p := get("?cursor=chronicle.workflows:0:999999"); code != 400 || !strings.Contains(p.Error, "cursor") {
		t.Errorf("a cursor that is no checkpoint of the workflow: %d %q, want 400 naming cursor", code, p.Error)
	}
}
