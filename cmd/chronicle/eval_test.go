package main

import (
	"testing"

	"github.com/chronicle-dev/chronicle/events/taubench"
)

// eval on the bundled sessions: the learned graph beats both baselines on
// top-3 and every session yields at least one memory, some merged.
func TestEval(t *testing.T) {
	recs, err := taubench.SampleRecords()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runEval(recs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("top-3 graph %.3f, bigram %.3f, frequency %.3f; memories %d of %d", rep.NextToolTop3, rep.BaselineBigramTop3, rep.BaselineFrequencyTop3, rep.Memories, rep.Extracted)
	if rep.NextToolTop3 <= rep.BaselineBigramTop3 || rep.NextToolTop3 <= rep.BaselineFrequencyTop3 || rep.NextToolTop3 < 0.81 ||
		rep.NextToolTop1 < rep.BaselineBigramTop1 || rep.Held.NextToolTop1 < rep.Held.BaselineBigramTop1 || rep.Held.NextToolTop3 < rep.Held.BaselineBigramTop3 {
		t.Fatalf("next-tool top-1 %.3f top-3 %.3f vs bigram %.3f / %.3f, frequency top-3 %.3f; report half %+v",
			rep.NextToolTop1, rep.NextToolTop3, rep.BaselineBigramTop1, rep.BaselineBigramTop3, rep.BaselineFrequencyTop3, rep.Held)
	}
	// the second domain: both Reflexion runs, top-1 above bigram
	if len(rep.NextToolDomains) != 2 {
		t.Fatalf("next-tool domains: %+v", rep.NextToolDomains)
	}
	for _, d := range rep.NextToolDomains {
		if d.Predictions == 0 || d.NextToolTop1 <= d.BaselineBigramTop1 || d.Held.NextToolTop1 <= d.Held.BaselineBigramTop1 || d.NextToolTop3 < d.BaselineBigramTop3 {
			t.Fatalf("next-tool %s: %+v", d.Domain, d.Report)
		}
	}
	if rep.SessionsWithMemory != 1 || rep.DuplicatesMerged == 0 || rep.Memories == 0 {
		t.Fatalf("distillation %+v", rep)
	}
	// the deterministic PAIR revision names more of the missed required
	// writes than the task's most frequent tool sequence, at the README's
	// figures (43 missed writes, revision 1.000, baseline 0.535) rounded
	// down: it moved from 0.814 to 1.000 with the retrieval unnoticed,
	// since this asserted only the comparison
	if c := rep.PairRevision; c.Sessions == 0 || c.MissedWrites != 43 || c.Revision > 1 || c.Revision < 0.99 || c.Baseline < 0.53 || c.Revision <= c.Baseline {
		t.Fatalf("pair revision coverage %+v (want 43 missed writes, revision ≥ 0.99, baseline ≥ 0.53, as the README gives them)", c)
	}
	// the hybrid tool search's key: queries measured, figures in [0, 1]
	if ts := rep.ToolSearch; ts.Queries == 0 || ts.Tasks == 0 || ts.Hybrid.MRR <= 0 || ts.Hybrid.MRR > 1 || ts.Semantic.HitAt3 > 1 || ts.Graph.HitAt3 > 1 {
		t.Fatalf("tool search %+v", ts)
	}
	// both Reflexion runs, their curves rebuilt from the projection
	if len(rep.Reflexion) != 2 || rep.Reflexion[0].Reflections == nil || rep.Reflexion[1].Reflections != nil {
		t.Fatalf("reflexion reports %+v", rep.Reflexion)
	}
	// issue 11: on the second data set (reflection memories, report half)
	// the ranking as served finds at least what BM25 alone finds
	if rr := rep.Reflexion[0].Reflections; rr.Model < rr.Lexical || rr.ReportCases == 0 {
		t.Fatalf("reflection recall@3 on %d report questions: ranking %.3f < BM25 %.3f", rr.ReportCases, rr.Model, rr.Lexical)
	}
}
