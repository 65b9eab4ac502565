// Package taubench imports tau-bench sessions (sierra-research/tau-bench,
// MIT licence) as Chronicle CloudEvents.
//
// tau-bench runs a tool-calling agent against a simulated user on a
// customer-service domain and rewards a session with 1 when the domain
// database after the session equals the database after the task's
// ground-truth actions and every expected output was said to the user. The
// package ships 200 real GPT-4o sessions of the airline domain (50 tasks x
// 4 trials, from tau-bench's historical_trajectories; see sample/LICENSE)
// and maps each session to the events a live agent would have produced:
// coordination.session.started.v1 with success criteria derived from the
// ground truth, one coordination.minute.recorded.v1 per message, one
// workflow.task.completed.v1 per tool call and
// coordination.session.completed.v1 with tau-bench's reward. Event ids and
// times are deterministic, so importing the same record twice yields
// byte-identical events that consumers drop as duplicates.
package taubench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Record is one tau-bench session as stored in historical_trajectories:
// {task_id, trial, reward, info{task, source, user_cost, reward_info},
// traj[OpenAI-style messages]}.
type Record struct {
	// TaskID is the task's index in the domain's task list (0-based).
	TaskID int `json:"task_id"`
	// Trial is the attempt number of the task (0-based).
	Trial int `json:"trial"`
	// Reward is tau-bench's verdict: 1 success, 0 failure.
	Reward float64 `json:"reward"`
	// Info holds the task and tau-bench's reward details.
	Info Info `json:"info"`
	// Traj is the conversation: system prompt, user and assistant turns,
	// tool replies.
	Traj []Message `json:"traj"`
}

// Info is the info object of a Record.
type Info struct {
	// Task is the user's goal and the ground truth.
	Task Task `json:"task"`
	// Source is how the user turns were produced ("user": an LLM user
	// simulator).
	Source string `json:"source,omitempty"`
	// UserCost is the user simulator's API cost in dollars.
	UserCost float64 `json:"user_cost,omitempty"`
	// RewardInfo is tau-bench's reward breakdown, kept verbatim.
	RewardInfo json.RawMessage `json:"reward_info,omitempty"`
}

// Task is a tau-bench task: the instruction given to the user simulator,
// the ground-truth tool calls and the outputs the agent must say.
type Task struct {
	// UserID is the airline user the simulator plays.
	UserID string `json:"user_id,omitempty"`
	// Instruction is the user simulator's goal.
	Instruction string `json:"instruction"`
	// Actions are the ground-truth tool calls.
	Actions []Action `json:"actions"`
	// Outputs are strings the agent must say in a reply to the user.
	Outputs []string `json:"outputs"`
}

// Action is one ground-truth tool call.
type Action struct {
	// Name is the tool name.
	Name string `json:"name"`
	// Kwargs are the call's arguments, a JSON object.
	Kwargs json.RawMessage `json:"kwargs"`
}

// Message is one OpenAI-style chat message of a trajectory.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string `json:"role"`
	// Content is the text; null for an assistant turn that only calls tools.
	Content *string `json:"content"`
	// ToolCalls are an assistant turn's tool calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, on a tool reply, the id of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is, on a tool reply, the tool's name.
	Name string `json:"name,omitempty"`
}

// Text is the message content, or "" when it is null.
func (m *Message) Text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// ToolCall is one tool call of an assistant message. IDs are not unique
// within a session in the recorded data (the same id is reused by later
// calls), so a tool reply answers the earliest unanswered call with its id.
type ToolCall struct {
	// ID identifies the call; the reply carries it as tool_call_id.
	ID string `json:"id"`
	// Type is "function".
	Type string `json:"type,omitempty"`
	// Function is the called tool and its arguments.
	Function Function `json:"function"`
}

// Function is the tool and arguments of a ToolCall.
type Function struct {
	// Name is the tool name.
	Name string `json:"name"`
	// Arguments is the JSON-encoded argument object, as the model wrote it.
	Arguments string `json:"arguments"`
}

// Error is a record that cannot be imported: its position in the input
// (-1 when the record was passed on its own), the JSON pointer of the
// offending field within the record, and why.
type Error struct {
	// Index is the record's position in the input array, or -1.
	Index int
	// Pointer is the JSON pointer of the bad field ("" for the whole record).
	Pointer string
	// Reason says what is wrong.
	Reason string
}

// Error formats the error as "taubench: record <index>: <pointer>: <reason>".
func (e *Error) Error() string {
	if e.Index < 0 && e.Pointer == "" {
		return "taubench: " + e.Reason
	}
	ptr := e.Pointer
	if ptr == "" {
		ptr = "/"
	}
	if e.Index >= 0 {
		return fmt.Sprintf("taubench: record %d: %s: %s", e.Index, ptr, e.Reason)
	}
	return fmt.Sprintf("taubench: record: %s: %s", ptr, e.Reason)
}

// requiredKeys are the top-level fields every record must carry; numbers
// default to 0 in Go, so their presence is checked on the raw object.
var requiredKeys = []string{"task_id", "trial", "reward", "info", "traj"}

// ReadRecords decodes a JSON array of records (the format of
// historical_trajectories/*.json) and checks each with Record.Validate. A
// bad record yields an *Error naming its index and field.
func ReadRecords(r io.Reader) ([]Record, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, &Error{Index: -1, Pointer: "", Reason: "input is not a JSON array: " + err.Error()}
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, &Error{Index: -1, Pointer: "", Reason: fmt.Sprintf("input is not a JSON array (starts with %v)", tok)}
	}
	var out []Record
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, &Error{Index: i, Pointer: "", Reason: "malformed JSON: " + err.Error()}
		}
		rec, err := decodeRecord(raw)
		if err != nil {
			var re *Error
			if errors.As(err, &re) {
				re.Index = i
			}
			return nil, err
		}
		out = append(out, rec)
	}
	if _, err := dec.Token(); err != nil {
		return nil, &Error{Index: len(out), Pointer: "", Reason: "malformed JSON after the last record: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Index: -1, Pointer: "", Reason: "unexpected data after the JSON array"}
	}
	return out, nil
}

// decodeRecord decodes and validates one raw record; errors carry Index -1.
func decodeRecord(raw json.RawMessage) (Record, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return Record{}, &Error{Index: -1, Pointer: "", Reason: "not a JSON object"}
	}
	for _, k := range requiredKeys {
		if v, ok := top[k]; !ok || string(v) == "null" {
			return Record{}, &Error{Index: -1, Pointer: "/" + k, Reason: "required"}
		}
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Record{}, &Error{Index: -1, Pointer: "/" + strings.ReplaceAll(te.Field, ".", "/"),
				Reason: fmt.Sprintf("expected %s, got JSON %s", goTypeName(te.Type.String()), te.Value)}
		}
		return Record{}, &Error{Index: -1, Pointer: "", Reason: err.Error()}
	}
	if err := rec.Validate(); err != nil {
		return Record{}, err
	}
	return rec, nil
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string", t == "*string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	default:
		return "an object"
	}
}

// Validate checks what Events relies on and returns an *Error (Index -1)
// naming the first bad field: task_id and trial ≥ 0, reward in [0, 1], a
// non-empty instruction, named actions whose kwargs are objects, non-empty
// outputs, a non-empty trajectory of system/user/assistant/tool messages,
// tool calls (on assistant messages only) with an id and a function name,
// and tool replies that each answer an earlier unanswered call.
func (r *Record) Validate() error {
	fail := func(ptr, reason string) error { return &Error{Index: -1, Pointer: ptr, Reason: reason} }
	if r.TaskID < 0 {
		return fail("/task_id", "must be ≥ 0")
	}
	if r.Trial < 0 {
		return fail("/trial", "must be ≥ 0")
	}
	if r.Reward < 0 || r.Reward > 1 {
		return fail("/reward", "must be between 0 and 1")
	}
	if strings.TrimSpace(r.Info.Task.Instruction) == "" {
		return fail("/info/task/instruction", "required, a non-empty string")
	}
	for i, a := range r.Info.Task.Actions {
		p := "/info/task/actions/" + strconv.Itoa(i)
		if a.Name == "" {
			return fail(p+"/name", "required, a non-empty string")
		}
		if k := bytes.TrimSpace(a.Kwargs); len(k) > 0 && string(k) != "null" && k[0] != '{' {
			return fail(p+"/kwargs", "must be a JSON object")
		}
	}
	for i, o := range r.Info.Task.Outputs {
		if o == "" {
			return fail("/info/task/outputs/"+strconv.Itoa(i), "must be a non-empty string")
		}
	}
	if len(r.Traj) == 0 {
		return fail("/traj", "required, a non-empty array of messages")
	}
	var pending []pendingCall
	for i, m := range r.Traj {
		p := "/traj/" + strconv.Itoa(i)
		switch m.Role {
		case "system", "user", "assistant", "tool":
		case "":
			return fail(p+"/role", "required")
		default:
			return fail(p+"/role", fmt.Sprintf("%q is not system, user, assistant or tool", m.Role))
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return fail(p+"/tool_calls", "only assistant messages call tools")
		}
		for j, tc := range m.ToolCalls {
			q := p + "/tool_calls/" + strconv.Itoa(j)
			if tc.ID == "" {
				return fail(q+"/id", "required, a non-empty string")
			}
			if tc.Function.Name == "" {
				return fail(q+"/function/name", "required, a non-empty string")
			}
			pending = append(pending, pendingCall{call: tc})
		}
		if m.Role == "tool" {
			if m.ToolCallID == "" {
				return fail(p+"/tool_call_id", "required on a tool reply")
			}
			k := matchReply(pending, m.ToolCallID)
			if k < 0 {
				return fail(p+"/tool_call_id", fmt.Sprintf("%q answers no earlier unanswered tool call", m.ToolCallID))
			}
			pending[k].answered = true
		}
	}
	return nil
}

// pendingCall is a tool call waiting for its reply.
type pendingCall struct {
	call     ToolCall
	answered bool
}

// matchReply returns the index of the earliest unanswered call with id, or -1.
func matchReply(pending []pendingCall, id string) int {
	for i := range pending {
		if !pending[i].answered && pending[i].call.ID == id {
			return i
		}
	}
	return -1
}
