package events

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	gojson "github.com/goccy/go-json"
)

// payloadTypes maps each producer type to its typed payload, as
// processors decode it.
var payloadTypes = map[Type]func() any{
	SessionStarted:             func() any { return new(SessionStartedData) },
	MinuteRecorded:             func() any { return new(MinuteData) },
	SessionCompleted:           func() any { return new(SessionCompletedData) },
	WorkflowTaskCompleted:      func() any { return new(TaskCompletedData) },
	WorkflowReducerApplied:     func() any { return new(ReducerAppliedData) },
	WorkflowCheckpointSaved:    func() any { return new(CheckpointSavedData) },
	WorkflowCommandEnqueued:    func() any { return new(CommandEnqueuedData) },
	WorkflowDecisionRequested:  func() any { return new(DecisionRequestedData) },
	WorkflowDecisionAnswered:   func() any { return new(DecisionAnsweredData) },
	WorkflowForked:             func() any { return new(ForkedData) },
	WorkflowResumed:            func() any { return new(ResumedData) },
	WorkflowCompleted:          func() any { return new(WorkflowCompletedData) },
	WorkflowSuggestionFeedback: func() any { return new(SuggestionFeedbackData) },
	MemoryRecorded:             func() any { return new(MemoryRecordedData) },
	MemoryFeedback:             func() any { return new(MemoryFeedbackData) },
	MemoryRetrieved:            func() any { return new(MemoryRetrievedData) },
	ReasoningPassCompleted:     func() any { return new(ReasoningPassData) },
	SearchStarted:              func() any { return new(SearchStartedData) },
	SearchQuotaReserved:        func() any { return new(SearchQuotaReservedData) },
	SearchNodeExpanded:         func() any { return new(SearchNodeData) },
	SearchFrontierDecided:      func() any { return new(SearchFrontierDecidedData) },
	SearchPaused:               func() any { return new(SearchPausedData) },
	SearchResumed:              func() any { return new(SearchResumedData) },
	SearchCompleted:            func() any { return new(SearchCompletedData) },
	SearchBranchCompleted:      func() any { return new(SearchBranchData) },
	SearchConsensusReduced:     func() any { return new(SearchConsensusData) },
	SearchCandidateCorrected:   func() any { return new(SearchCorrectionData) },
	SolverLocked:               func() any { return new(SolverLockedData) },
}

// checkPayload decodes e's data into its type's payload, as the
// processors will, and turns a value its JSON Schema admits but the payload
// cannot hold into a ValidationError naming the member: an integer beyond
// the 64-bit range ("beam_width": 99999999999999999999 passed the schema's
// "integer", was acknowledged with 202 and then dead-lettered by the
// processor: "cannot unmarshal number"; found by a new user's
// walkthrough), and an integer written with a fraction or an exponent
// (1.0, 1e2), which the schema admits too. The producer paths check it, so
// such an event is refused with the rest of its request instead. The
// decoded payload is returned (nil for a type without one) for the checks
// that read it (checkSearchEvent).
func checkPayload(e *Envelope) (any, error) {
	mk, ok := payloadTypes[e.Type]
	if !ok {
		return nil, nil
	}
	v := mk()
	err := gojson.Unmarshal(e.Data, v)
	if err == nil {
		return v, nil
	}
	var te *gojson.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		reason := fmt.Sprintf("got %s, which a %s cannot hold", te.Value, te.Type)
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			reason = fmt.Sprintf("got %s, beyond the range of a %d-bit integer", te.Value, te.Type.Bits())
			if strings.ContainsAny(strings.TrimPrefix(te.Value, "number "), ".eE") {
				// 1.0 or 1e2: JSON Schema's integer admits a number
				// whose fraction is zero, the typed decoding every
				// processor uses does not (it was called "beyond the
				// range": a passes walkthrough, from Python, whose
				// json.dumps writes a float as 1.0)
				reason = fmt.Sprintf("got %s: write an integer without a fraction or an exponent (1, not 1.0 or 1e0)", te.Value)
			}
		}
		return nil, &ValidationError{Index: -1, Pointer: "/data/" + strings.ReplaceAll(te.Field, ".", "/"), Reason: reason}
	}
	return nil, &ValidationError{Index: -1, Pointer: "/data", Reason: err.Error()}
}
