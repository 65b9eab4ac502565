package suggest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/taubench"
	"github.com/chronicle-dev/chronicle/processors/toolgraph"
	"github.com/chronicle-dev/chronicle/processors/workflows/dag"
	"github.com/chronicle-dev/chronicle/projections/embedder"
)

// graphOf learns a tool graph from workflows given as tool sequences.
func graphOf(t *testing.T, seqs ...[]string) *toolgraph.Graph {
	t.Helper()
	l := toolgraph.NewLearner()
	at := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	n := 0
	for w, seq := range seqs {
		for i, tool := range seq {
			n++
			env, err := events.New(events.WorkflowTaskCompleted, "test", fmt.Sprintf("e%d", n), at.Add(time.Duration(n)*time.Second),
				events.TaskCompletedData{WorkflowID: fmt.Sprintf("w%d", w), TaskID: fmt.Sprintf("t%d", i), ToolID: tool, Success: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Observe(&env); err != nil {
				t.Fatal(err)
			}
		}
	}
	return l.Graph()
}

func repeat(seq []string, n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = seq
	}
	return out
}

// The mode follows the DAG's confidence (the weakest supporting edge)
// and the thresholds; a tool that writes never runs speculatively.
func TestModesAndSafety(t *testing.T) {
	cat := []dag.Tool{{Name: "lookup"}, {Name: "details"}, {Name: "cancel_order"}, {Name: "rare"}}
	// lookup → details 20 times: confidence 20/21 = 0.952
	seqs := repeat([]string{"lookup", "details"}, 20)
	s := &Suggester{Graph: graphOf(t, seqs...), Catalog: cat}
	res, err := s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tools[0].Tool != "details" || res.Mode != ModeSpeculative || res.Confidence < 0.95 || len(res.Safety) != 0 || !strings.Contains(res.Explanation[0], "direct edge lookup → details") {
		t.Fatalf("a strong read-only edge: %+v", res)
	}
	// the same above a raised threshold: a suggestion
	if res, _ := s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, K: 1, SpeculationThreshold: 0.97}); res.Mode != ModeSuggestion {
		t.Fatalf("above the threshold: %s", res.Mode)
	}
	// a strong edge to a writing tool: never speculative
	s = &Suggester{Graph: graphOf(t, repeat([]string{"lookup", "cancel_order"}, 20)...), Catalog: cat}
	res, err = s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tools[0].Tool != "cancel_order" || res.Mode != ModeSuggestion || len(res.Safety) != 1 || !strings.Contains(res.Safety[0], "writes") {
		t.Fatalf("a strong edge to a write: %+v", res)
	}
	// 0.70..0.85: lookup → details 3 of 4 times (confidence 15/21 = 0.714)
	mixed := append(repeat([]string{"lookup", "details"}, 15), repeat([]string{"lookup", "rare"}, 5)...)
	s = &Suggester{Graph: graphOf(t, mixed...), Catalog: cat}
	if res, _ = s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, K: 1}); res.Mode != ModeSuggestion || res.Confidence < 0.70 || res.Confidence > 0.85 {
		t.Fatalf("a medium edge: %s %.3f", res.Mode, res.Confidence)
	}
	// a second pick no edge supports: confidence 0, explicit
	if res, _ = s.Suggest(context.Background(), Request{ContextTools: []string{"lookup"}, K: 3}); res.Mode != ModeExplicitRequired || res.Confidence != 0 || len(res.Tools) != 3 {
		t.Fatalf("unsupported picks: %s %.3f %d", res.Mode, res.Confidence, len(res.Tools))
	}
	if _, err := s.Suggest(context.Background(), Request{K: 3}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "intent") {
		t.Fatalf("no intent, no context: %v", err)
	}
	if _, err := s.Suggest(context.Background(), Request{Intent: "x", K: 11}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "k:") {
		t.Fatalf("k 11: %v", err)
	}
}

func TestAlpha(t *testing.T) {
	// hub → each of 4 tools, 5 times: density 4/4 = 1 → alpha 0.5
	var seqs [][]string
	for _, to := range []string{"a", "b", "c", "d"} {
		seqs = append(seqs, repeat([]string{"hub", to}, 5)...)
	}
	g := graphOf(t, seqs...)
	if a := Alpha(g, "hub"); a != 0.5 {
		t.Fatalf("dense: alpha %v", a)
	}
	if a := Alpha(g, "a"); a != 1 {
		t.Fatalf("no observations (cold start): alpha %v", a)
	}
	if a := Alpha(g, ""); a != 1 {
		t.Fatalf("no context: alpha %v", a)
	}
}

func TestWrites(t *testing.T) {
	for tool, want := range map[string]bool{"book_reservation": true, "send_certificate": true, "update_reservation_flights": true,
		"deploy_service": true, "delete_file": true, "get_user_details": false, "search_direct_flight": false, "think": false} {
		if Writes(tool) != want {
			t.Errorf("Writes(%s) = %v", tool, !want)
		}
	}
	for _, m := range taubench.MutatingTools {
		if !Writes(m) {
			t.Errorf("the tau-bench mutating tool %s is not a write", m)
		}
	}
}

// Leave-one-task-out on the bundled sessions: no suggestion would run a
// writing tool speculatively, in any variant.
func TestEvaluateNeverSpeculatesOnWrites(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	var emb embedder.Embedder
	if raceEnabled {
		recs = recs[:40] // 10 tasks, and the graph term alone
	} else if emb, err = embedder.NewUSELite(); err != nil {
		t.Fatal(err)
	}
	reps, err := Evaluate(context.Background(), recs, emb)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		t.Logf("%s k=%d: recall %.3f precision %.3f modes %v", r.Variant, r.K, r.All.Recall, r.All.Precision, r.ByMode)
		if r.SpeculativeWrites != 0 || r.Sessions == 0 || r.All.Suggestions != r.Sessions {
			t.Fatalf("%+v", r)
		}
	}
}
