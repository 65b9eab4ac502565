// Package reflexion reads the Reflexion paper's HotPotQA run logs
// (noahshinn/reflexion, hotpotqa_runs/root/ReAct/, MIT licence) and maps
// them to Chronicle events: one reasoning task per question, one pass per
// trial (see Events).
//
// Log format: per trial a "BEGIN TRIAL n" banner and a "Trial summary:
// Correct: c, Incorrect: i, Halted: h" line, then blocks of CORRECT,
// INCORRECT and HALTED agents. Each agent block has "Question:" (after a
// first trial followed by "You have attempted to answer…"), optional
// "Reflections:" with "- …" items, numbered "Thought i:", "Action i:"
// ("Search[entity]", "Lookup[keyword]", "Finish[answer]") and
// "Observation i:" lines (an observation may continue over several
// lines), and "Correct answer:". The log's own verdict of a finished
// agent is its last observation, "Answer is CORRECT" or "Answer is
// INCORRECT"; an agent without one was halted (step or context limit).
package reflexion

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Verdicts of an agent in the log (ground truth, never shown to the
// evaluator).
const (
	Correct   = "correct"
	Incorrect = "incorrect"
	Halted    = "halted"
)

// Step is one Thought/Action/Observation step of an agent.
type Step struct {
	N           int    `json:"n"`
	Thought     string `json:"thought"`
	Action      string `json:"action"`
	Tool        string `json:"tool"`  // Search, Lookup, Finish; "" for an action that does not parse
	Input       string `json:"input"` // inside the brackets
	Observation string `json:"observation"`
}

// Agent is one question's block in one trial.
type Agent struct {
	Question      string   `json:"question"`
	Reflections   []string `json:"reflections,omitempty"`
	Steps         []Step   `json:"steps"`
	Section       string   `json:"section"` // CORRECT, INCORRECT or HALTED: the block the log lists it in
	CorrectAnswer string   `json:"correct_answer"`
	// Verdict is the log's: Correct / Incorrect from the last observation,
	// else Halted.
	Verdict string `json:"verdict"`
	// Answer is the argument of the Finish action ("" when halted).
	Answer   string `json:"answer,omitempty"`
	Finished bool   `json:"finished"`
}

// Summary is a trial's own summary line.
type Summary struct {
	Correct, Incorrect, Halted int
}

// Trial is one trial: its summary and its agents, one per question in log
// order. A question listed twice in one trial (the baseline log lists some
// finished-incorrect agents under both INCORRECT and HALTED, with the
// same text) is kept once, at its first block.
type Trial struct {
	N       int
	Summary Summary
	Agents  []Agent
	// Repeats counts the question blocks dropped as repeats.
	Repeats int
}

// Run is a whole log.
type Run struct {
	Trials []Trial
}

var (
	stepLine    = regexp.MustCompile(`^(Thought|Action|Observation) (\d+): ?(.*)$`)
	summaryLine = regexp.MustCompile(`^Trial summary: Correct: (\d+), Incorrect: (\d+), Halted: (\d+)`)
	sectionLine = regexp.MustCompile(`^-+ BEGIN (CORRECT|INCORRECT|HALTED) AGENTS -+$`)
	trialLine   = regexp.MustCompile(`^BEGIN TRIAL (\d+)$`)
	actionForm  = regexp.MustCompile(`^(\w+)\[(.*)\]\s*$`)
)

// attempted starts the text the Reflexion agent appends to a question
// after a failed trial.
const attempted = "You have attempted to answer"

// QuestionText is the question without the appended reflexion prompt,
// whitespace collapsed: the same question in every trial.
func QuestionText(q string) string {
	if i := strings.Index(q, attempted); i >= 0 {
		q = q[:i]
	}
	return strings.Join(strings.Fields(q), " ")
}

// ParseAction splits "Search[Creed (band)]" into tool and input; ok is
// false when the action has another form.
func ParseAction(a string) (tool, input string, ok bool) {
	m := actionForm.FindStringSubmatch(strings.TrimSpace(a))
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Parse reads a log. Errors name the line.
func Parse(r io.Reader) (*Run, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	run := &Run{}
	var trial *Trial
	var ag *Agent
	var section string
	seen := map[string]bool{}
	// field is where a continuation line goes
	var field *string
	inReflections := false
	line, agLine := 0, 0
	// cut is the error of a question block that ended without its
	// "Correct answer:" line (a log cut short or edited): said with the
	// block's line, where it was an event's "/data/success_criteria/0/check:
	// missing property 'text'" (a new user's walkthrough, 2026-11-30)
	var cut error
	answered := false // the block had its "Correct answer:" line (empty or not)
	flush := func() {
		if ag == nil {
			return
		}
		if !answered && cut == nil {
			cut = fmt.Errorf("reflexion: line %d: the question block that starts here has no \"Correct answer:\" line (a log cut short or edited?)", agLine)
		}
		finish(ag)
		q := QuestionText(ag.Question)
		if seen[q] {
			trial.Repeats++
		} else {
			seen[q] = true
			trial.Agents = append(trial.Agents, *ag)
		}
		ag, field, inReflections, answered = nil, nil, false, false
	}
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case trialLine.MatchString(l):
			flush()
			n, _ := strconv.Atoi(trialLine.FindStringSubmatch(l)[1])
			run.Trials = append(run.Trials, Trial{N: n})
			trial = &run.Trials[len(run.Trials)-1]
			seen = map[string]bool{}
			continue
		case summaryLine.MatchString(l):
			if trial == nil {
				return nil, fmt.Errorf("reflexion: line %d: trial summary before BEGIN TRIAL", line)
			}
			m := summaryLine.FindStringSubmatch(l)
			trial.Summary.Correct, _ = strconv.Atoi(m[1])
			trial.Summary.Incorrect, _ = strconv.Atoi(m[2])
			trial.Summary.Halted, _ = strconv.Atoi(m[3])
			continue
		case strings.HasPrefix(l, "####"):
			flush()
			continue
		case sectionLine.MatchString(l):
			flush()
			section = sectionLine.FindStringSubmatch(l)[1]
			continue
		case strings.HasPrefix(l, "Question:"):
			flush()
			if trial == nil {
				return nil, fmt.Errorf("reflexion: line %d: question before BEGIN TRIAL", line)
			}
			ag = &Agent{Question: strings.TrimSpace(strings.TrimPrefix(l, "Question:")), Section: section}
			agLine = line
			field = &ag.Question
			continue
		}
		if ag == nil {
			if strings.TrimSpace(l) == "" {
				continue
			}
			return nil, fmt.Errorf("reflexion: line %d: text outside a question block: %.60q", line, l)
		}
		switch {
		case l == "Reflections:":
			inReflections, field = true, nil
		case inReflections && strings.HasPrefix(l, "- "):
			ag.Reflections = append(ag.Reflections, strings.TrimPrefix(l, "- "))
			field = &ag.Reflections[len(ag.Reflections)-1]
		case stepLine.MatchString(l):
			inReflections = false
			m := stepLine.FindStringSubmatch(l)
			n, _ := strconv.Atoi(m[2])
			if len(ag.Steps) == 0 || ag.Steps[len(ag.Steps)-1].N != n {
				ag.Steps = append(ag.Steps, Step{N: n})
			}
			st := &ag.Steps[len(ag.Steps)-1]
			switch m[1] {
			case "Thought":
				st.Thought, field = m[3], &st.Thought
			case "Action":
				st.Action, field = m[3], &st.Action
			default:
				st.Observation, field = m[3], &st.Observation
			}
		case strings.HasPrefix(l, "Correct answer:"):
			ag.CorrectAnswer = strings.TrimSpace(strings.TrimPrefix(l, "Correct answer:"))
			answered = true
			flush()
		default:
			if field != nil {
				*field += "\n" + l
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reflexion: line %d: %w", line, err)
	}
	flush()
	if len(run.Trials) == 0 {
		return nil, fmt.Errorf("reflexion: no BEGIN TRIAL banner: not a Reflexion HotPotQA log")
	}
	if cut != nil {
		return nil, cut
	}
	return run, nil
}

// finish derives an agent's tools, answer and verdict from its steps.
func finish(a *Agent) {
	a.Question = strings.TrimSpace(a.Question)
	a.Verdict = Halted
	for i := range a.Steps {
		st := &a.Steps[i]
		st.Thought, st.Action, st.Observation = strings.TrimSpace(st.Thought), strings.TrimSpace(st.Action), strings.TrimSpace(st.Observation)
		if tool, in, ok := ParseAction(st.Action); ok {
			st.Tool, st.Input = tool, in
		}
		if st.Tool == "Finish" {
			a.Finished, a.Answer = true, st.Input
		}
	}
	if n := len(a.Steps); n > 0 {
		switch a.Steps[n-1].Observation {
		case "Answer is CORRECT":
			a.Verdict = Correct
		case "Answer is INCORRECT":
			a.Verdict = Incorrect
		}
	}
}
