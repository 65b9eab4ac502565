package pair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors"
	"github.com/chronicle-dev/chronicle/processors/distill"
	"github.com/chronicle-dev/chronicle/processors/flux"
	"github.com/chronicle-dev/chronicle/processors/sessions"
	"github.com/chronicle-dev/chronicle/projections"
)

// RevisionWritten is pair.revision.written.v1 (data RevisionWrittenData),
// written by the RevisionWorker on chronicle.learned, keyed by session_id.
// Its registry entry lives in events/types.go.
const RevisionWritten = events.PairRevisionWritten

// RevisionPrompt is the PAIR design's informed-revision prompt, sent as
// the single user message (temperature 0) by the RevisionWorker; this is
// the one place its text lives. RenderRevisionPrompt fills the
// placeholders: {{session}} and {{iteration}}, {{composite}} (the
// session's composite, 2 decimals), {{trace}} (distill.Trace of the
// session: task, minutes, tool calls, output), {{gaps}} (per gap: its
// criterion, score and severity, the design's recommendation text
// "Based on N similar past coordination decisions: success rate …,
// consider …, confidence …" as Revise words it, and each retrieved
// pattern group with its success rate and examples) and {{headroom}}
// (100 − composite). The answer format it asks for is what
// ParseRevisionAnswer reads first; a free-text answer is read too.
const RevisionPrompt = `You are a fresh agent reviewing a coordination session that did not meet its success criteria. You did not take part in it.
Session {{session}}, iteration {{iteration}}: composite score {{composite}} of 100; success needs 95.
Session (task, decisions and tool calls in order, output):
{{trace}}
Gaps found by the evaluation, each with the similar successful coordination patterns retrieved from past sessions:
{{gaps}}
Using the gaps and the patterns, answer:
1. What should have been done differently?
2. Which assignments (tool calls, writes, hand-offs) were missing?
3. Which coordination rules would have helped?
Then revise the session's decisions for the next attempt.
Answer with one JSON object and nothing else:
{"revised_decisions": ["<decision or step of the revised attempt, in order>"],
 "missing_assignments": ["<assignment the session lacked>"],
 "rules": ["<coordination rule that would have helped>"],
 "rationale": "<why the revision closes the gaps>",
 "estimated_improvement": <expected gain of the composite score, in points, from 0 to {{headroom}}>}`

// Bounds of the prompt and of a parsed revision.
const (
	// MaxPromptTrace bounds the session trace in the prompt (characters).
	MaxPromptTrace = 12000
	// MaxPromptExample bounds one example's content in the prompt.
	MaxPromptExample = 800
	// MaxRevisionItems bounds each list of a parsed revision.
	MaxRevisionItems = 20
	// MaxRevisionItem bounds one item of a list (characters).
	MaxRevisionItem = 500
	// MaxRationale bounds the rationale (characters).
	MaxRationale = 4000
)

// RevisionTimeout bounds one revision's model call, retries included: the
// LLM client (distill.LLM) tries 3 times, waiting 1 s then 2 s
// (backoff/v4, factor 2) or what a 429/5xx asks in Retry-After (at most
// 30 s, distill.LLMConfig.MaxRetryAfter), each request bounded by its own
// timeout (60 s by default, distill.LLMConfig.Timeout); 4 minutes covers
// that schedule. A
// call still unanswered then fails like any other.
const RevisionTimeout = 4 * time.Minute

// Sources of an LLMRevision.
const (
	// SourceLLM: the model's answer parsed into a revision; follow it.
	SourceLLM = "llm"
	// SourceDeterministic: the model's answer was unusable (FallbackReason
	// says why); the deterministic LoopState.Revision stands.
	SourceDeterministic = "deterministic"
)

// Formats of a parsed answer (LLMRevision.Format).
const (
	FormatJSON = "json"
	FormatText = "text"
)

// RevisionWrittenData is the data of pair.revision.written.v1: the prompt
// sent for the context event ContextID and the model's raw Answer, or the
// Error of the call after its attempts (exactly one of the two).
type RevisionWrittenData struct {
	SessionID string  `json:"session_id"`
	ContextID string  `json:"context_id"`
	Iteration int     `json:"iteration,omitempty"`
	Model     string  `json:"model"`
	Prompt    string  `json:"prompt"`
	Answer    *string `json:"answer,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// LLMRevision is the LLM-written informed revision of a session, the
// llm_revision field of its LoopState, as the pairloop processor reads it
// from pair.revision.written.v1 (InterpretRevision). With Source
// SourceLLM the lists, Rationale and EstimatedImprovement are the model's;
// with SourceDeterministic the answer was unusable (FallbackReason names
// why) and the deterministic LoopState.Revision is the revision.
type LLMRevision struct {
	Source string `json:"source"`
	Model  string `json:"model"`
	// EventID is the pair.revision.written.v1 it comes from, ContextID the
	// context the prompt was built from.
	EventID   string `json:"event_id"`
	ContextID string `json:"context_id"`
	// Format is how the answer was read: FormatJSON (the asked-for
	// object) or FormatText (free text); empty on a fallback.
	Format string `json:"format,omitempty"`
	// RevisedDecisions are the decisions or steps of the revised attempt.
	RevisedDecisions []string `json:"revised_decisions,omitempty"`
	// MissingAssignments are the assignments the session lacked.
	MissingAssignments []string `json:"missing_assignments,omitempty"`
	// Rules are the coordination rules that would have helped.
	Rules []string `json:"rules,omitempty"`
	// Rationale explains the revision (the whole answer for free text).
	Rationale string `json:"rationale,omitempty"`
	// EstimatedImprovement is the model's expected composite gain in
	// points, [0, 100]; absent when the model gave none (always for free
	// text). An estimate, not a measurement.
	EstimatedImprovement *float64 `json:"estimated_improvement,omitempty"`
	// FallbackReason says why the answer was not used (SourceDeterministic).
	FallbackReason string `json:"fallback_reason,omitempty"`
	// WrittenAt is the event's time.
	WrittenAt string `json:"written_at"`
}

// Answer is a model's revision as ParseRevisionAnswer reads it.
type Answer struct {
	RevisedDecisions     []string
	MissingAssignments   []string
	Rules                []string
	Rationale            string
	EstimatedImprovement *float64
	// Format is FormatJSON or FormatText.
	Format string
}

// RenderRevisionPrompt fills RevisionPrompt for context c of a session
// whose projected input is in (its task, minutes, tool calls and output).
func RenderRevisionPrompt(in flux.Input, c Context) string {
	trace := distill.Clip(distill.Trace(distill.Session{Input: in}), MaxPromptTrace)
	recs := map[string]string{}
	for _, r := range Revise(c).Recommendations {
		recs[r.CriterionID] = r.Text
	}
	var g strings.Builder
	for i, gap := range c.Gaps {
		fmt.Fprintf(&g, "Gap %d: %s", i+1, gap.CriterionID)
		if gap.Description != "" {
			fmt.Fprintf(&g, ": %s", gap.Description)
		}
		fmt.Fprintf(&g, " (score %.0f, severity %s)\n", gap.Score, gap.Severity)
		if t := recs[gap.CriterionID]; t != "" {
			fmt.Fprintf(&g, "  Recommendation: %s\n", t)
		}
		for _, grp := range gap.Patterns {
			fmt.Fprintf(&g, "  Patterns %q: success rate %s over %d sessions, confidence %.2f\n", grp.Category, rateText(grp.SuccessRate), grp.Sessions, grp.Confidence)
			for _, ex := range grp.Examples {
				fmt.Fprintf(&g, "  - %s (%s %s, success rate %s, confidence %.2f)\n", ex.Title, ex.Collection, ex.MemoryID, rateText(ex.SuccessRate), ex.Confidence)
				if content := strings.TrimSpace(ex.Content); content != "" {
					fmt.Fprintf(&g, "    %s\n", strings.ReplaceAll(distill.Clip(content, MaxPromptExample), "\n", "\n    "))
				}
			}
		}
	}
	if len(c.Gaps) == 0 {
		g.WriteString("(no weighted gap was reported)\n")
	}
	return strings.NewReplacer(
		"{{session}}", c.SessionID,
		"{{iteration}}", strconv.Itoa(c.Iteration),
		"{{composite}}", fmt.Sprintf("%.2f", c.Composite),
		"{{trace}}", strings.TrimRight(trace, "\n"),
		"{{gaps}}", strings.TrimRight(g.String(), "\n"),
		"{{headroom}}", strconv.FormatFloat(roundTo(100-c.Composite, 2), 'f', -1, 64),
	).Replace(RevisionPrompt)
}

func rateText(r *float64) string {
	if r == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.0f%%", 100**r)
}

var (
	// fencedJSON is a ```json … ``` (or bare ```) block holding an object.
	fencedJSON = regexp.MustCompile("(?s)```[A-Za-z]*[ \t]*\n\\s*(\\{.*\\})\\s*\n?```")
	// listMarker starts a list item: "- ", "* ", "• ", "1. ", "1) ".
	listMarker = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s+`)
	// planHeading is a line that introduces a plan ("New plan:", "Plan:"),
	// with the plan on the same line or on the lines after it.
	planHeading = regexp.MustCompile(`(?i)^(?:(?:a |my |the )?(?:new|revised) plan|plan)\s*:\s*`)
	// planCue marks a sentence of free text as a revised decision.
	planCue = regexp.MustCompile(`(?i)\b(?:should(?: have)?|instead|new plan|next time|i will|i'll|i would|i need to)\b`)
	// leadingNumber reads an estimate given as text ("10", "+12.5 points").
	leadingNumber = regexp.MustCompile(`^\s*\+?(-?\d+(?:\.\d+)?)`)
)

// ParseRevisionAnswer reads a model's answer to RevisionPrompt.
//
// JSON (FormatJSON): an answer that is an object, or holds one in a
// ``` fence, is read as the asked-for object: revised_decisions,
// missing_assignments and rules are lists of strings (a single string is
// one item; a non-string item is kept as its compact JSON), rationale a
// string, estimated_improvement a number (or a string starting with one)
// in [0, 100]; unknown keys are ignored. It must carry at least one
// decision, assignment, rule or a rationale.
//
// Free text (FormatText, anything else): the rationale is the whole text;
// the revised decisions are the sentences that state a plan: every
// sentence after a plan heading ("New plan: …", "Plan:" with the plan on
// the following lines), and every sentence with a plan cue (should,
// should have, instead, new plan, next time, I will, I would, I need to),
// as in "- I should have searched …"; no missing assignments, rules or
// estimate. It must yield at least one decision.
//
// An empty answer, an object that does not decode, a field of the wrong
// type or out of range, or an answer with nothing usable is an error that
// names the field or the reason: the revision then falls back to the
// deterministic one (InterpretRevision).
func ParseRevisionAnswer(raw string) (Answer, error) {
	text := strings.TrimSpace(raw)
	if text == "" {
		return Answer{}, errors.New("empty answer")
	}
	if obj, ok := jsonObject(text); ok {
		return parseJSONAnswer(obj)
	}
	return parseTextAnswer(text)
}

func jsonObject(text string) (string, bool) {
	if strings.HasPrefix(text, "{") {
		return text, true
	}
	if m := fencedJSON.FindStringSubmatch(text); m != nil {
		return m[1], true
	}
	return "", false
}

func parseJSONAnswer(obj string) (Answer, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		return Answer{}, fmt.Errorf("answer is a JSON object that does not decode: %v", err)
	}
	a := Answer{Format: FormatJSON}
	var err error
	if a.RevisedDecisions, err = jsonList(m, "revised_decisions"); err != nil {
		return Answer{}, err
	}
	if a.MissingAssignments, err = jsonList(m, "missing_assignments"); err != nil {
		return Answer{}, err
	}
	if a.Rules, err = jsonList(m, "rules"); err != nil {
		return Answer{}, err
	}
	if raw, ok := m["rationale"]; ok && string(raw) != "null" {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Answer{}, fmt.Errorf("/rationale: not a string: %s", distill.Clip(string(raw), 80))
		}
		a.Rationale = distill.Clip(strings.TrimSpace(s), MaxRationale)
	}
	if raw, ok := m["estimated_improvement"]; ok && string(raw) != "null" {
		var x float64
		if err := json.Unmarshal(raw, &x); err != nil {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return Answer{}, fmt.Errorf("/estimated_improvement: not a number: %s", distill.Clip(string(raw), 80))
			}
			n := leadingNumber.FindStringSubmatch(s)
			if n == nil {
				return Answer{}, fmt.Errorf("/estimated_improvement: %q does not start with a number", distill.Clip(s, 80))
			}
			x, _ = strconv.ParseFloat(n[1], 64)
		}
		if math.IsNaN(x) || x < 0 || x > 100 {
			return Answer{}, fmt.Errorf("/estimated_improvement: %v is outside [0, 100]", x)
		}
		x = roundTo(x, 2)
		a.EstimatedImprovement = &x
	}
	if len(a.RevisedDecisions)+len(a.MissingAssignments)+len(a.Rules) == 0 && a.Rationale == "" {
		return Answer{}, errors.New("JSON answer has no revised_decisions, missing_assignments, rules or rationale")
	}
	return a, nil
}

// jsonList reads key of m as a list of strings (see ParseRevisionAnswer).
func jsonList(m map[string]json.RawMessage, key string) ([]string, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return addItem(nil, one), nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("/%s: neither a list nor a string: %s", key, distill.Clip(string(raw), 80))
	}
	var out []string
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) != nil {
			s = string(it) // an object or number: kept as its JSON
		}
		out = addItem(out, s)
	}
	return out, nil
}

// addItem appends s (trimmed, clipped) unless it is empty, a repeat or
// the list is full.
func addItem(list []string, s string) []string {
	s = distill.Clip(strings.TrimSpace(s), MaxRevisionItem)
	if s == "" || len(list) == MaxRevisionItems {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func parseTextAnswer(text string) (Answer, error) {
	a := Answer{Format: FormatText, Rationale: distill.Clip(text, MaxRationale)}
	inPlan := false
	for _, line := range strings.Split(text, "\n") {
		item := listMarker.MatchString(line)
		line = strings.TrimSpace(listMarker.ReplaceAllString(line, ""))
		if line == "" {
			inPlan = false
			continue
		}
		if loc := planHeading.FindStringIndex(line); loc != nil {
			rest := strings.TrimSpace(line[loc[1]:])
			if rest == "" {
				inPlan = true
				continue
			}
			for _, s := range sentences(rest) {
				a.RevisedDecisions = addItem(a.RevisedDecisions, s)
			}
			continue
		}
		if inPlan && item {
			a.RevisedDecisions = addItem(a.RevisedDecisions, line)
			continue
		}
		inPlan = false
		for _, s := range sentences(line) {
			if planCue.MatchString(s) {
				a.RevisedDecisions = addItem(a.RevisedDecisions, s)
			}
		}
	}
	if len(a.RevisedDecisions) == 0 {
		return Answer{}, errors.New("free-text answer states no revised decision (no plan heading, no sentence with should / instead / new plan / next time / I will)")
	}
	return a, nil
}

// sentences splits s after '.', '!' or '?' followed by a space and an
// upper-case letter or digit.
func sentences(s string) []string {
	var out []string
	r := []rune(s)
	start := 0
	for i := 0; i < len(r); i++ {
		if (r[i] == '.' || r[i] == '!' || r[i] == '?') && i+2 < len(r) && r[i+1] == ' ' && (unicode.IsUpper(r[i+2]) || unicode.IsDigit(r[i+2])) {
			out = append(out, strings.TrimSpace(string(r[start:i+1])))
			start = i + 2
		}
	}
	if rest := strings.TrimSpace(string(r[start:])); rest != "" {
		out = append(out, rest)
	}
	return out
}

// InterpretRevision is the LLMRevision of event env (a
// pair.revision.written.v1 with data d): SourceLLM with the parsed answer,
// or SourceDeterministic with FallbackReason when the call failed ("model
// call failed: …") or the answer is unusable ("answer unusable: …", see
// ParseRevisionAnswer). A pure function of the event: the pairloop
// processor applies it, replay gives the same revision.
func InterpretRevision(env *events.Envelope, d RevisionWrittenData) LLMRevision {
	r := LLMRevision{Model: d.Model, EventID: env.ID, ContextID: d.ContextID, WrittenAt: env.TimeUTC()}
	switch {
	case d.Error != "":
		r.Source, r.FallbackReason = SourceDeterministic, "model call failed: "+distill.Clip(d.Error, 500)
	case d.Answer == nil:
		r.Source, r.FallbackReason = SourceDeterministic, "no answer recorded"
	default:
		a, err := ParseRevisionAnswer(*d.Answer)
		if err != nil {
			r.Source, r.FallbackReason = SourceDeterministic, "answer unusable: "+err.Error()
			break
		}
		r.Source, r.Format = SourceLLM, a.Format
		r.RevisedDecisions, r.MissingAssignments, r.Rules = a.RevisedDecisions, a.MissingAssignments, a.Rules
		r.Rationale, r.EstimatedImprovement = a.Rationale, a.EstimatedImprovement
	}
	return r
}

// Completer is the chat model the RevisionWorker calls; *distill.LLM
// implements it (retries with backoff included).
type Completer interface {
	Complete(ctx context.Context, user string) (string, error)
	Model() string
}

var (
	_ processors.Worker = (*RevisionWorker)(nil)
	_ Completer         = (*distill.LLM)(nil)
)

// RevisionSource is the CloudEvents source of pair.revision.written.v1.
const RevisionSource = "chronicle/pair-revision"

// RevisionWorker writes the LLM informed revision: a processors.Worker
// named "pair-revision" on chronicle.learned that, for each
// pair.context.retrieved.v1 that asks for a revision (recommendation other
// than stop_iteration_limit), sends RevisionPrompt filled with the session
// and the context to the model and writes its answer, or the error of the
// call after the client's retries, as pair.revision.written.v1 (id
// derived from the context event, index 0: a redelivery writes a
// duplicate that consumers drop). The pairloop processor parses it; replay
// never calls the model. It runs only with an LLM configured (serve
// --llm-url, with the pair worker).
type RevisionWorker struct {
	// Store holds the sessions projection (the session's trace) and the
	// pairloop projection (a revision already written is not asked again).
	Store *projections.Store
	// LLM answers the prompt.
	LLM Completer
	// Producer publishes pair.revision.written.v1.
	Producer *events.Producer
	// Timeout bounds one call, retries included (default RevisionTimeout).
	Timeout time.Duration
}

// Name implements processors.Worker.
func (*RevisionWorker) Name() string { return "pair-revision" }

// Topic implements processors.Worker.
func (*RevisionWorker) Topic() events.Topic { return events.TopicLearned }

// Handle implements processors.Worker: it publishes what Derive returns.
func (w *RevisionWorker) Handle(ctx context.Context, env *events.Envelope) error {
	out, err := w.Derive(ctx, env)
	if err != nil || out == nil {
		return err
	}
	return w.Producer.PublishDerived(ctx, *out)
}

// Derive calls the model for context event env and returns the
// pair.revision.written.v1 to write, or nil for another type, a context
// that stops the loop, or a context whose revision the pairloop
// projection already holds. A failed call (after the client's retries, or
// past Timeout) is recorded in the event's error, not returned; only the
// end of ctx itself (the worker stopping) and a session missing from the
// sessions projection are returned as errors, so the event is handled
// again or dead-lettered.
func (w *RevisionWorker) Derive(ctx context.Context, env *events.Envelope) (*events.Envelope, error) {
	if env.Type != ContextRetrieved {
		return nil, nil
	}
	var c Context
	if err := json.Unmarshal(env.Data, &c); err != nil {
		return nil, fmt.Errorf("pair-revision: context %s: %w", env.ID, err)
	}
	if c.Recommendation == StopIterationLimit {
		return nil, nil
	}
	key := events.EntityKey(env.EffectiveScope(), c.SessionID)
	st, ok, err := GetLoop(w.Store, key)
	if err != nil {
		return nil, err
	}
	if ok && st.LLMRevision != nil && st.LLMRevision.ContextID == env.ID {
		return nil, nil
	}
	in, ok, err := sessions.Input(w.Store, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("pair-revision: session %s is not in the sessions projection", c.SessionID)
	}
	prompt := RenderRevisionPrompt(in, c)
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = RevisionTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	answer, callErr := w.LLM.Complete(cctx, prompt)
	cancel()
	if callErr != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	d := RevisionWrittenData{SessionID: c.SessionID, ContextID: env.ID, Iteration: c.Iteration, Model: w.LLM.Model(), Prompt: prompt}
	if callErr != nil {
		d.Error = callErr.Error()
	} else {
		d.Answer = &answer
	}
	out, err := events.Derive(env, RevisionSource, RevisionWritten, 0, d)
	if err != nil {
		return nil, err
	}
	if d.Answer != nil {
		// an answer the event cannot carry is a failed call too: written
		// as the error, so the deterministic revision stands, rather than
		// the context dead-lettered with no revision event at all
		raw, err := out.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if len(raw) > events.MaxEventBytes {
			d.Answer = nil
			d.Error = fmt.Sprintf("model %s: answer of %d bytes not kept: the event with it is %d bytes encoded, above the %d-byte limit of one event", w.LLM.Model(), len(answer), len(raw), events.MaxEventBytes)
			if out, err = events.Derive(env, RevisionSource, RevisionWritten, 0, d); err != nil {
				return nil, err
			}
		}
	}
	return &out, nil
}
