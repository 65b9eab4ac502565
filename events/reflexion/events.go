package reflexion

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/events/answer"
)

// Attributes of every imported event.
const (
	// Scope is the scope of every imported event.
	Scope = "project:reflexion-hotpotqa"
	// SourcePrefix + run name is the CloudEvents source.
	SourcePrefix = "chronicle-import/reflexion-hotpotqa/"
	// AgentID is the agent of every session.
	AgentID = "react-agent"
	// MaxSteps is the ReAct agent's step budget in the Reflexion runs
	// (max_steps = 6): a pass's TTL in steps.
	MaxSteps = 6
	// AnswerCriterion is the id of the one success criterion.
	AnswerCriterion = "answer"
	// RootStep is the id of the plan's one top-level step (answer the
	// question); reflections are added under it.
	RootStep = "answer"
)

// BaseTime is the time of the first event of the first question: the
// Reflexion paper's first version (2023-03-20). Question q (in order of
// first appearance), trial n starts q·10 + n minutes later; its k-th event
// is k seconds after that.
var BaseTime = time.Date(2023, 3, 20, 0, 0, 0, 0, time.UTC)

// TaskID is the reasoning task of a question in a run:
// hotpotqa/<run>/<first 12 hex digits of SHA-256 of the question text>.
func TaskID(run, question string) string {
	h := sha256.Sum256([]byte(QuestionText(question)))
	return "hotpotqa/" + run + "/" + hex.EncodeToString(h[:6])
}

// SessionID is the coordination session of one pass (trial n) of a task.
func SessionID(task string, trial int) string { return fmt.Sprintf("%s/trial-%d", task, trial) }

// ReflectionMemoryID is the memory of the k-th (1-based) reflection of a task.
func ReflectionMemoryID(task string, k int) string { return fmt.Sprintf("reflection/%s/%d", task, k) }

// Question is one question's passes across the trials.
type Question struct {
	Text   string
	Task   string
	Trials []int // trial number of each pass
	Agents []Agent
}

// Questions groups a run's agents by question, in order of first
// appearance; each question's agents in trial order.
func Questions(run *Run, name string) []Question {
	var out []Question
	idx := map[string]int{}
	for _, tr := range run.Trials {
		for _, a := range tr.Agents {
			q := QuestionText(a.Question)
			i, ok := idx[q]
			if !ok {
				i = len(out)
				idx[q] = i
				out = append(out, Question{Text: q, Task: TaskID(name, q)})
			}
			out[i].Trials = append(out[i].Trials, tr.N)
			out[i].Agents = append(out[i].Agents, a)
		}
	}
	return out
}

// Scores are the convergence scores the importer assigns a pass from what
// the pass itself shows, without the ground truth:
//   - completeness 1 when the agent called Finish with an answer, else 0;
//   - coherence: the share of the answer's normalised words found in the
//     pass's observations (the answer is grounded in what it read); a yes
//     or no answer is a judgement, not a span, and counts 1;
//   - consistency 1 when the thought before Finish states the answer
//     (normalised containment), else 0.5.
//
// The engine's claim (Converged) is the agent's own: a ReAct agent that
// calls Finish with an answer declares the question answered, one that
// halts does not. The log has no other claim; before, the importer left
// Converged false on every pass, so each pass Chronicle judged converged
// was flagged CLAIM_DISAGREES although the agent had claimed it was done.
// CLAIM_DISAGREES now marks a pass the agent finished whose answer the
// thresholds do not accept (not grounded in its observations, or not
// stated by its last thought).
func Scores(a Agent) events.ConvergenceScores {
	var c events.ConvergenceScores
	if !a.Finished || strings.TrimSpace(a.Answer) == "" {
		c.Consistency = 0.5
		return c
	}
	c.Converged, c.Completeness = true, 1
	ans := answer.Normalize(a.Answer)
	words := strings.Fields(ans)
	if ans == "yes" || ans == "no" {
		c.Coherence = 1
	} else if len(words) > 0 {
		var obs strings.Builder
		for _, s := range a.Steps {
			obs.WriteString(" " + answer.Normalize(s.Observation) + " ")
		}
		text, found := obs.String(), 0
		for _, w := range words {
			if strings.Contains(text, " "+w+" ") {
				found++
			}
		}
		c.Coherence = float64(found) / float64(len(words))
	}
	c.Consistency = 0.5
	if n := len(a.Steps); n > 0 && strings.Contains(" "+answer.Normalize(a.Steps[n-1].Thought)+" ", " "+ans+" ") {
		c.Consistency = 1
	}
	return c
}

// failedObservation reports whether a tool observation is a failure:
// a search that found nothing, a lookup without results, an invalid action.
func failedObservation(obs string) (code string, failed bool) {
	switch {
	case strings.HasPrefix(obs, "Could not find"):
		return "SEARCH_NOT_FOUND", true
	case strings.HasPrefix(obs, "No more results"):
		return "LOOKUP_NO_RESULT", true
	case strings.HasPrefix(obs, "Invalid Action"):
		return "INVALID_ACTION", true
	}
	return "", false
}

// Events maps a run to events, question by question in order of first
// appearance, and per question trial by trial. For the pass of trial n:
//
//  1. coordination.session.started.v1 of session SessionID(task, n): the
//     question as original task, one exact_match criterion (weight 1)
//     stating the expected answer (HotPotQA normalisation);
//  2. per reflection new in this trial (Reflexion writes it after the
//     failed trial before and gives it to this one): a memory.recorded.v1
//     (outcome failure, tags reflexion and anti-pattern, source explicit,
//     source_session the failed trial's session) — an anti-pattern to avoid;
//  3. per Search or Lookup action a workflow.task.completed.v1 of the
//     session (workflow_id the session id, layer 0, task_id step-<i>,
//     tool_id Search/Lookup, inputs {entity} or {keyword}, result the
//     observation, success unless it failed), so the tool graph learns;
//  4. coordination.session.completed.v1: output the Finish answer ("" when
//     halted), outcome success / failure by the log's own verdict, reward 1/0;
//  5. reasoning.pass.completed.v1 of the task (chronicle.reasoning), pass
//     number = trial number: the question, the session, phase C, status
//     completed or halted, the default TaskProfile (Reflexion infers
//     none), TTL used = steps executed of MaxSteps (remaining 0 when
//     halted), the plan (trial 1: one step "answer the question"), each
//     new reflection as an ADD under it (refinement_actions, one attempt),
//     the Thought/Action/Observation steps, the convergence Scores,
//     validation issues (failed searches and lookups as warnings, invalid
//     actions and a halt as errors) and the answer as output.
//
// Every envelope has the run's source, Scope, and id "<session id>#<k>"
// (reasoning and memory events included), times from BaseTime; each is
// checked with events.Validate.
func Events(run *Run, name string) ([]events.Envelope, error) {
	if err := events.CheckID(TaskID(name, "x")); err != nil {
		return nil, fmt.Errorf("reflexion: run name %q: %v", name, err)
	}
	var out []events.Envelope
	source := SourcePrefix + name
	for qi, q := range Questions(run, name) {
		prevSession := ""
		known := 0 // reflections already recorded
		for pi, a := range q.Agents {
			trial := q.Trials[pi]
			sid := SessionID(q.Task, trial)
			start := BaseTime.Add(time.Duration(qi*10+trial) * time.Minute)
			k := 0
			add := func(t events.Type, session string, payload any) error {
				env, err := events.New(t, source, fmt.Sprintf("%s#%04d", sid, k), start.Add(time.Duration(k)*time.Second), payload)
				if err != nil {
					return err
				}
				k++
				env.SessionID, env.Scope, env.CorrelationID = session, Scope, q.Task
				if err := events.Validate(&env); err != nil {
					return fmt.Errorf("reflexion: %s event %d (%s): %w", sid, k-1, t, err)
				}
				out = append(out, env)
				return nil
			}
			crit := events.Criterion{ID: AnswerCriterion, Description: fmt.Sprintf("answer %q (HotPotQA exact match)", a.CorrectAnswer), Weight: 1,
				Check: events.Check{Kind: events.CheckExactMatch, Text: a.CorrectAnswer}}
			if err := add(events.SessionStarted, sid, events.SessionStartedData{OriginalTask: q.Text, SuccessCriteria: []events.Criterion{crit},
				Assignments: []events.Assignment{{AgentID: AgentID, Role: "assistant"}}}); err != nil {
				return nil, err
			}
			var actions []events.RefinementAction
			for j := known; j < len(a.Reflections); j++ {
				text := strings.TrimSpace(a.Reflections[j])
				mid := ReflectionMemoryID(q.Task, j+1)
				if err := add(events.MemoryRecorded, "", events.MemoryRecordedData{MemoryID: mid, Title: clip("Reflection: "+text, 50),
					Description: clip(text, 200), Content: text, Outcome: events.OutcomeFailure, Tags: []string{"reflexion", "anti-pattern"},
					Source: "explicit", SourceSession: prevSession}); err != nil {
					return nil, err
				}
				parent, desc := RootStep, "avoid: "+text
				actions = append(actions, events.RefinementAction{Type: events.RefineAdd, Target: fmt.Sprintf("reflection-%d", j+1), Attempt: 1,
					Changes: &events.StepChanges{ParentID: &parent, Description: &desc}})
			}
			if len(a.Reflections) > known {
				known = len(a.Reflections)
			}
			var steps []events.ExecutedStep
			var issues []events.ValidationIssue
			for i, st := range a.Steps {
				stepID := fmt.Sprintf("step-%d", st.N)
				es := events.ExecutedStep{StepID: stepID, StepIndex: i + 1, TotalSteps: len(a.Steps), Thought: st.Thought, Tool: st.Tool, Input: st.Input, Observation: st.Observation}
				if i > 0 {
					es.IncomingContext = a.Steps[i-1].Observation
				}
				if i+1 < len(a.Steps) {
					es.HandoffToNext = st.Observation
				}
				code, failed := failedObservation(st.Observation)
				if st.Tool == "" {
					code, failed = "INVALID_ACTION", true
				}
				ok := !failed
				es.Success = &ok
				steps = append(steps, es)
				if failed {
					sev := "warning"
					if code == "INVALID_ACTION" {
						sev = "error"
					}
					issues = append(issues, events.ValidationIssue{Code: code, Severity: sev, StepID: stepID, Message: clip(st.Action, 200)})
				}
				if st.Tool != "Search" && st.Tool != "Lookup" {
					continue
				}
				arg := "entity"
				if st.Tool == "Lookup" {
					arg = "keyword"
				}
				inputs, _ := json.Marshal(map[string]string{arg: st.Input})
				result, _ := json.Marshal(st.Observation)
				if err := add(events.WorkflowTaskCompleted, sid, events.TaskCompletedData{WorkflowID: sid, TaskID: stepID, ToolID: st.Tool,
					Inputs: inputs, Result: result, Success: !failed}); err != nil {
					return nil, err
				}
			}
			status := events.PassCompleted
			if !a.Finished {
				status = events.PassHalted
				issues = append(issues, events.ValidationIssue{Code: "HALTED", Severity: "error", Message: "no Finish within the step or context limit"})
			}
			outcome, reward := events.OutcomeFailure, 0.0
			if a.Verdict == Correct {
				outcome, reward = events.OutcomeSuccess, 1
			}
			if err := add(events.SessionCompleted, sid, events.SessionCompletedData{Output: a.Answer, Outcome: outcome, Reward: &reward}); err != nil {
				return nil, err
			}
			used := len(a.Steps)
			remaining := max(0, MaxSteps-used)
			if !a.Finished {
				remaining = 0
			}
			prof := events.DefaultTaskProfile()
			d := events.ReasoningPassData{TaskID: q.Task, Task: q.Text, SessionID: sid, PassNumber: trial, Phase: "C", Status: status,
				Profile: &prof, ProfileSource: "default", TTLUsed: &used, TTLRemaining: remaining, RefinementActions: actions,
				StepsExecuted: steps, Convergence: Scores(a), ValidationIssues: issues, Output: a.Answer}
			if pi == 0 {
				d.Plan = &events.Plan{Steps: []events.PlanStep{{StepID: RootStep, Description: "answer: " + q.Text}}}
			}
			if err := add(events.ReasoningPassCompleted, "", d); err != nil {
				return nil, err
			}
			prevSession = sid
		}
	}
	return out, nil
}

// clip shortens s to at most n bytes on a rune boundary, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
