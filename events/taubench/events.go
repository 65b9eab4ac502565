package taubench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/rivo/uniseg"
)

// Attributes shared by every imported event.
const (
	// Source is the CloudEvents source of every imported event.
	Source = "chronicle-import/taubench-airline"
	// Scope is the scope of every imported event.
	Scope = "project:taubench-airline"
	// AgentID is the agent of every session (assignment role "assistant").
	AgentID = "gpt-4o"
	// UserAgentID is tau-bench's LLM user simulator (assignment role "user").
	UserAgentID = "user-simulator"
)

// Criterion ids that are not numbered.
const (
	// NoUnrequestedWritesID is the id of the no_other_calls criterion.
	NoUnrequestedWritesID = "no-unrequested-writes"
)

// BaseTime is the time of the first event of task 0, trial 0: the
// airline system prompt says "The current time is 2024-05-15 15:00:00
// EST". Session (task, trial) starts (task*4+trial) hours later and its
// n-th event is n seconds after its start.
var BaseTime = time.Date(2024, 5, 15, 20, 0, 0, 0, time.UTC)

// MutatingTools are the airline tools that change the database. tau-bench
// rewards a session by comparing the database after the agent's calls with
// the database after the ground-truth calls, so only these calls can
// affect the reward: ground-truth calls of other tools (lookups such as
// get_reservation_details, calculate, think, transfer_to_human_agents) are
// imported as criteria of weight 0, which report informative gaps but do
// not move the composite. Treat the slice as read-only.
var MutatingTools = []string{
	"book_reservation",
	"cancel_reservation",
	"update_reservation_flights",
	"update_reservation_baggages",
	"update_reservation_passengers",
	"send_certificate",
}

// IsMutating reports whether tool is one of MutatingTools.
func IsMutating(tool string) bool { return slices.Contains(MutatingTools, tool) }

// SessionID is the session id of a record: taubench-airline/<task>/<trial>.
func SessionID(taskID, trial int) string {
	return fmt.Sprintf("taubench-airline/%d/%d", taskID, trial)
}

// MessageData is the data object of an imported minute
// (coordination.minute.recorded.v1 with event_type "message"; the actor is
// the message role).
type MessageData struct {
	// Content is the message text ("" when the message had none).
	Content string `json:"content"`
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []MessageToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, on a tool reply, the id of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is, on a tool reply, the tool's name.
	Name string `json:"name,omitempty"`
}

// MessageToolCall is one tool call inside MessageData.
type MessageToolCall struct {
	// ID is the tool call id.
	ID string `json:"id"`
	// Name is the tool name.
	Name string `json:"name"`
	// Arguments is the parsed argument JSON, or the raw argument text as a
	// JSON string when the model wrote invalid JSON.
	Arguments json.RawMessage `json:"arguments"`
}

// Events maps one record to the CloudEvents of its session, in order:
//
//  1. coordination.session.started.v1: the instruction as original task,
//     assignments gpt-4o (assistant) and user-simulator (user), and the
//     success criteria of Criteria;
//  2. one coordination.minute.recorded.v1 per trajectory message (event
//     type "message", actor = role, data = MessageData), each tool reply's
//     minute followed by the workflow.task.completed.v1 of the call it
//     answers (workflow_id = session id, layer 0, task_id = call id,
//     tool_id = tool name, inputs = parsed arguments, result = reply text,
//     success = the reply does not start with "Error", tau-bench's error
//     convention); calls never answered follow the last minute with
//     success false and result null;
//  3. coordination.session.completed.v1: output = the last non-empty
//     assistant message, outcome success when reward is 1 else failure,
//     and the reward.
//
// Every envelope has Source, Scope, SessionID and CorrelationID set, id
// "<session id>#<n>" (n the 0-based event index, 4 digits) and time
// BaseTime + (task*4+trial) h + n s, so Events is deterministic. Each
// envelope is checked with events.Validate; an invalid record yields an
// *Error.
func Events(rec Record) ([]events.Envelope, error) {
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	sid := SessionID(rec.TaskID, rec.Trial)
	start := BaseTime.Add(time.Duration(rec.TaskID*4+rec.Trial) * time.Hour)
	var out []events.Envelope
	add := func(t events.Type, payload any) error {
		n := len(out)
		env, err := events.New(t, Source, fmt.Sprintf("%s#%04d", sid, n), start.Add(time.Duration(n)*time.Second), payload)
		if err != nil {
			return err
		}
		env.SessionID = sid
		env.Scope = Scope
		env.CorrelationID = sid
		if err := events.Validate(&env); err != nil {
			return fmt.Errorf("taubench: %s event %d (%s): %w", sid, n, t, err)
		}
		out = append(out, env)
		return nil
	}

	if err := add(events.SessionStarted, startedWire{
		SessionStartedData: events.SessionStartedData{
			OriginalTask: rec.Info.Task.Instruction,
			Assignments: []events.Assignment{
				{AgentID: AgentID, Role: "assistant"},
				{AgentID: UserAgentID, Role: "user"},
			},
		},
		SuccessCriteria: wireCriteria(Criteria(rec.Info.Task)),
	}); err != nil {
		return nil, err
	}

	var pending []pendingCall
	output := ""
	for _, m := range rec.Traj {
		data := MessageData{Content: m.Text()}
		if m.Role == "assistant" && data.Content != "" {
			output = data.Content
		}
		for _, tc := range m.ToolCalls {
			data.ToolCalls = append(data.ToolCalls, MessageToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: parseArguments(tc.Function.Arguments)})
			pending = append(pending, pendingCall{call: tc})
		}
		if m.Role == "tool" {
			data.ToolCallID = m.ToolCallID
			data.Name = m.Name
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return nil, fmt.Errorf("taubench: %s: %w", sid, err)
		}
		if err := add(events.MinuteRecorded, events.MinuteData{EventType: "message", Actor: m.Role, Data: raw}); err != nil {
			return nil, err
		}
		if m.Role != "tool" {
			continue
		}
		k := matchReply(pending, m.ToolCallID) // Validate guarantees k ≥ 0
		pending[k].answered = true
		result, err := json.Marshal(m.Text())
		if err != nil {
			return nil, fmt.Errorf("taubench: %s: %w", sid, err)
		}
		if err := add(events.WorkflowTaskCompleted, taskCompleted(sid, pending[k].call, result, !strings.HasPrefix(m.Text(), "Error"))); err != nil {
			return nil, err
		}
	}
	for _, p := range pending {
		if p.answered {
			continue
		}
		if err := add(events.WorkflowTaskCompleted, taskCompleted(sid, p.call, json.RawMessage("null"), false)); err != nil {
			return nil, err
		}
	}

	outcome := events.OutcomeFailure
	if rec.Reward == 1 {
		outcome = events.OutcomeSuccess
	}
	reward := rec.Reward
	if err := add(events.SessionCompleted, events.SessionCompletedData{Output: output, Outcome: outcome, Reward: &reward}); err != nil {
		return nil, err
	}
	return out, nil
}

func taskCompleted(sid string, tc ToolCall, result json.RawMessage, success bool) events.TaskCompletedData {
	return events.TaskCompletedData{
		WorkflowID: sid,
		Layer:      0,
		TaskID:     tc.ID,
		ToolID:     tc.Function.Name,
		Inputs:     parseArguments(tc.Function.Arguments),
		Result:     result,
		Success:    success,
	}
}

// parseArguments returns the compacted argument JSON, or the raw text as a
// JSON string when it is not valid JSON.
func parseArguments(s string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err == nil && buf.Len() > 0 {
		return buf.Bytes()
	}
	raw, _ := json.Marshal(s) // marshalling a string cannot fail
	return raw
}

// Criteria derives a session's success criteria from a task, in order:
//
//   - "action-<i>" per ground-truth action: a tool_call check of the tool
//     with the action's kwargs as arguments; weight 1 for MutatingTools,
//     0 for lookups (tau-bench's reward is defined over the final database
//     state, which lookups do not change, so they are informative only);
//   - "output-<i>" per expected output: an output_contains check, weight 1;
//   - NoUnrequestedWritesID: a no_other_calls check over MutatingTools
//     whose allowed calls are the ground-truth mutating actions, weight 1
//     (a successful extra write changes the database, so tau-bench fails
//     the session).
func Criteria(task Task) []events.Criterion {
	var out []events.Criterion
	allowed := []events.Call{}
	for i, a := range task.Actions {
		args := kwargs(a.Kwargs)
		w := 0.0
		if IsMutating(a.Name) {
			w = 1
			allowed = append(allowed, events.Call{Name: a.Name, Arguments: args})
		}
		out = append(out, events.Criterion{
			ID:          fmt.Sprintf("action-%d", i),
			Description: "call " + describeCall(a.Name, args),
			Weight:      w,
			Check:       events.Check{Kind: events.CheckToolCall, Name: a.Name, Arguments: args},
		})
	}
	for i, o := range task.Outputs {
		out = append(out, events.Criterion{
			ID:          fmt.Sprintf("output-%d", i),
			Description: fmt.Sprintf("tell the user %q", o),
			Weight:      1,
			Check:       events.Check{Kind: events.CheckOutputContains, Text: o},
		})
	}
	desc := "no airline-database write besides the ground-truth ones"
	if len(allowed) == 0 {
		desc = "no airline-database write at all"
	}
	out = append(out, events.Criterion{
		ID:          NoUnrequestedWritesID,
		Description: desc,
		Weight:      1,
		Check:       events.Check{Kind: events.CheckNoOtherCalls, Tools: slices.Clone(MutatingTools), Allowed: allowed},
	})
	return out
}

// kwargs returns the compacted kwargs object, {} when absent or null.
func kwargs(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil || buf.Len() == 0 || buf.String() == "null" {
		return json.RawMessage("{}")
	}
	return buf.Bytes()
}

// describeCall renders name(k=v, ...) with arguments in their original
// order, strings unquoted, and "..." once the text passes ~60 characters.
func describeCall(name string, args json.RawMessage) string {
	const budget = 60
	dec := json.NewDecoder(bytes.NewReader(args))
	var parts []string
	length := 0
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				break
			}
			val := string(v)
			var s string
			if json.Unmarshal(v, &s) == nil {
				val = s
			}
			part := fmt.Sprintf("%v=%s", kt, val)
			if len(parts) > 0 && length+len(part) > budget {
				parts = append(parts, "...")
				break
			}
			if len(part) > budget {
				part = cutGraphemes(part, budget-3) + "..."
			}
			parts = append(parts, part)
			length += len(part) + 2
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// cutGraphemes returns the longest prefix of s of at most n bytes that
// ends between two graphemes (user-perceived characters: a letter with
// its marks, an emoji sequence joined by U+200D).
func cutGraphemes(s string, n int) string {
	end := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		_, to := g.Positions()
		if to > n {
			break
		}
		end = to
	}
	return s[:end]
}

// startedWire is SessionStartedData with criteria whose no_other_calls
// allow-list is always written: events.Check.Allowed is omitempty, which
// would drop an empty list (nothing allowed) that the schema requires.
type startedWire struct {
	events.SessionStartedData
	SuccessCriteria []criterionWire `json:"success_criteria"`
}

type criterionWire struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	Weight      float64   `json:"weight"`
	Check       checkWire `json:"check"`
}

type checkWire struct {
	events.Check
	Allowed *[]events.Call `json:"allowed,omitempty"`
}

func wireCriteria(cs []events.Criterion) []criterionWire {
	out := make([]criterionWire, len(cs))
	for i, c := range cs {
		out[i] = criterionWire{ID: c.ID, Description: c.Description, Weight: c.Weight, Check: checkWire{Check: c.Check}}
		if c.Check.Kind == events.CheckNoOtherCalls {
			allowed := c.Check.Allowed
			if allowed == nil {
				allowed = []events.Call{}
			}
			out[i].Check.Allowed = &allowed
		}
	}
	return out
}
