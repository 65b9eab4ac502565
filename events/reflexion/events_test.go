package reflexion

import (
	"reflect"
	"testing"

	"github.com/chronicle-dev/chronicle/events"
)

func TestScoresFromThePassAlone(t *testing.T) {
	obs := Step{N: 1, Tool: "Search", Observation: "Creed disbanded in 2004; Stapp went solo."}
	cases := []struct {
		a    Agent
		want events.ConvergenceScores
	}{
		{Agent{Finished: true, Answer: "2004", Steps: []Step{obs, {N: 2, Thought: "So the answer is 2004.", Tool: "Finish"}}}, events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 1, Consistency: 1}},
		{Agent{Finished: true, Answer: "The year 2004 AD", Steps: []Step{obs, {N: 2, Thought: "Done.", Tool: "Finish"}}}, events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 1.0 / 3, Consistency: 0.5}}, // "year 2004 ad": one word of three,
		{Agent{Finished: true, Answer: "yes", Steps: []Step{obs, {N: 2, Thought: "Both are, so yes.", Tool: "Finish"}}}, events.ConvergenceScores{Converged: true, Completeness: 1, Coherence: 1, Consistency: 1}},
		{Agent{Steps: []Step{obs}}, events.ConvergenceScores{Consistency: 0.5}},
	}
	for i, c := range cases {
		if got := Scores(c.a); !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d: %+v, want %+v", i, got, c.want)
		}
	}
}

// Events of the bundled reflexion run: every event valid (Events checks),
// one reasoning pass per agent, one memory per reflection, one tool event
// per Search/Lookup, ids unique.
func TestEventsOfTheReflexionRun(t *testing.T) {
	run, err := Bundled(RunReflexion)
	if err != nil {
		t.Fatal(err)
	}
	envs, err := Events(run, RunReflexion)
	if err != nil {
		t.Fatal(err)
	}
	var agents, tools, refl int
	for _, tr := range run.Trials {
		for _, a := range tr.Agents {
			agents++
			for _, s := range a.Steps {
				if s.Tool == "Search" || s.Tool == "Lookup" {
					tools++
				}
			}
		}
	}
	for _, q := range Questions(run, RunReflexion) {
		refl += len(q.Agents[len(q.Agents)-1].Reflections)
	}
	count := map[events.Type]int{}
	ids := map[string]bool{}
	for _, e := range envs {
		count[e.Type]++
		if ids[e.ID] {
			t.Fatalf("duplicate id %s", e.ID)
		}
		ids[e.ID] = true
	}
	if count[events.ReasoningPassCompleted] != agents || count[events.SessionStarted] != agents || count[events.SessionCompleted] != agents ||
		count[events.WorkflowTaskCompleted] != tools || count[events.MemoryRecorded] != refl || refl == 0 {
		t.Fatalf("counts %v: %d agents, %d tool calls, %d reflections", count, agents, tools, refl)
	}
}
