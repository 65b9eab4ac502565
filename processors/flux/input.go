package flux

import (
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
)

// InputFromEvents builds the Input of one session from its events, in
// order, decoding the payloads as a consumer of the topics would:
// coordination.session.started.v1 gives the task and criteria (the first
// one, as the sessions processor refuses a second start:
// ErrAlreadyStarted), coordination.minute.recorded.v1 the minutes,
// workflow.task.completed.v1 the calls, and
// coordination.session.completed.v1 only the output: its outcome and reward
// are the producer's verdict, which the evaluator must not see. Other
// types are ignored. SessionID is the sessionid of the first event that
// has one; an event of another session is an error, as is a payload that
// does not decode.
func InputFromEvents(envs []events.Envelope) (Input, error) {
	var in Input
	started := false
	for i := range envs {
		e := &envs[i]
		if e.SessionID != "" {
			if in.SessionID == "" {
				in.SessionID = e.SessionID
			} else if e.SessionID != in.SessionID {
				return Input{}, fmt.Errorf("flux: event %s belongs to session %q, not %q", e.ID, e.SessionID, in.SessionID)
			}
		}
		switch e.Type {
		case events.SessionStarted:
			if started {
				continue
			}
			started = true
			var d events.SessionStartedData
			if err := e.Decode(&d); err != nil {
				return Input{}, err
			}
			in.Task, in.Criteria = d.OriginalTask, d.SuccessCriteria
		case events.MinuteRecorded:
			var d events.MinuteData
			if err := e.Decode(&d); err != nil {
				return Input{}, err
			}
			in.Minutes = append(in.Minutes, d)
		case events.WorkflowTaskCompleted:
			var d events.TaskCompletedData
			if err := e.Decode(&d); err != nil {
				return Input{}, err
			}
			in.Calls = append(in.Calls, d)
		case events.SessionCompleted:
			var d events.SessionCompletedData
			if err := e.Decode(&d); err != nil {
				return Input{}, err
			}
			in.Output = d.Output
		}
	}
	return in, nil
}
