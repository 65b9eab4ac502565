package toolgraph

import (
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
)

// call is a decoded workflow.task.completed.v1 event.
type call struct {
	Key      string // events.Key: the session id, else the workflow id
	Workflow string
	Tool     string
	AtMS     int64    // event time, Unix milliseconds
	Failed   bool     // success was false
	Words    []string // the words of the key's last user message (userRow)
}

// parseCall decodes a workflow.task.completed.v1 event.
func parseCall(env *events.Envelope) (call, error) {
	var d events.TaskCompletedData
	if err := env.Decode(&d); err != nil {
		return call{}, err
	}
	if d.ToolID == "" || d.WorkflowID == "" {
		return call{}, fmt.Errorf("toolgraph: %s %s: tool_id and workflow_id are required", env.Type, env.ID)
	}
	// A tool is an entity of the graph (graph.edge.learned.v1 is keyed by
	// it), so its name must be an id: refused here, dead-lettered naming
	// the field. Before, "a,c" or "ツール" made the derived edge invalid and
	// the graph's whole transaction was refused with a log line only, the
	// next call's edge lost with it (a walkthrough). Producers are refused
	// at the door (events.checkProduced).
	if err := events.CheckID(d.ToolID); err != nil {
		return call{}, &events.ValidationError{Index: -1, Pointer: "/data/tool_id", Reason: fmt.Sprintf("%q is not a tool name the tool graph can hold: %v", d.ToolID, err)}
	}
	key, err := events.Key(env)
	if err != nil {
		return call{}, err
	}
	at, err := env.EventTime()
	if err != nil {
		return call{}, err
	}
	return call{Key: key, Workflow: d.WorkflowID, Tool: d.ToolID, AtMS: at.UnixMilli(), Failed: !d.Success}, nil
}

// Learner builds a Graph in memory from events with the same learning code
// as the processor (no Kafka, no store, no derived events): feeding it the
// events the processor applies gives a Graph equal to Load of the
// processor's projection.
type Learner struct {
	g         *Graph
	workflows map[[2]string]*workflowRow
	users     map[string][]string // record key → words of its last user message
}

// NewLearner returns a Learner with an empty Graph.
func NewLearner() *Learner {
	return &Learner{g: NewGraph(), workflows: map[[2]string]*workflowRow{}, users: map[string][]string{}}
}

// Observe learns from one event: workflow.task.completed.v1 events extend
// their workflow's sequence, with the words of the last user minute of
// their record key (as Transitions); every other event is ignored. Errors
// come from decoding the event (missing tool or workflow id, bad time, no
// key).
func (l *Learner) Observe(env *events.Envelope) error {
	if env.Type == events.MinuteRecorded && isUserMinute(env) {
		ws, _, err := userWords(env)
		if err != nil {
			return err
		}
		key, err := events.Key(env)
		if err != nil {
			return err
		}
		l.users[key] = ws
		return nil
	}
	if env.Type != events.WorkflowTaskCompleted {
		return nil
	}
	c, err := parseCall(env)
	if err != nil {
		return err
	}
	c.Words = l.users[c.Key]
	return l.observeCall(c)
}

// observeCall learns from a decoded call.
func (l *Learner) observeCall(c call) error {
	k := [2]string{c.Key, c.Workflow}
	w, ok := l.workflows[k]
	if !ok {
		w = &workflowRow{Key: c.Key, Workflow: c.Workflow}
		l.workflows[k] = w
	}
	o := w.advance(c.Tool, c.AtMS, c.Failed)
	o.Words = c.Words
	return learn(l.g, o)
}

// Graph returns the graph learned so far. It is the Learner's own graph:
// later Observe calls change it.
func (l *Learner) Graph() *Graph { return l.g }
