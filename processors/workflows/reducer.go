package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chronicle-dev/chronicle/events"
)

// ErrBadUpdate is wrapped by a reducer's rejection of an update: the
// error names the channel and the reason.
var ErrBadUpdate = errors.New("bad reducer update")

// Reduce applies one reducer update to s, as the PML design's
// WorkflowState defines the channels:
//
//   - messages, tasks, decisions append: an array update appends its
//     elements in order (LangGraph's operator.add on lists), any other
//     JSON value is appended as one element;
//   - context merges: the update must be an object, and the result is
//     {...existing, ...update} (a shallow merge: a key of the update
//     replaces the existing value, null included).
//
// null is refused on every channel, and so is a null element of an array
// update on an appending channel (the state's lists never hold null; before,
// [null] appended one, and every answer holding the state then broke the
// HTTP API's description of it: a mutation test, 2026-12-03; a log written
// before holds such an update only if a producer sent one). Values are stored compacted, so the
// same update sent with other whitespace gives the same state. Cost: O(size
// of the update) plus the append's amortised copy.
func Reduce(s *State, channel string, update json.RawMessage) error {
	update = bytes.TrimSpace(update)
	if len(update) == 0 || bytes.Equal(update, []byte("null")) {
		return fmt.Errorf("%w: %w", ErrBadUpdate, fieldError("/data/update", "null or absent on channel %s", channel))
	}
	switch channel {
	case events.ChannelMessages:
		return appendTo(&s.Messages, channel, update)
	case events.ChannelTasks:
		return appendTo(&s.Tasks, channel, update)
	case events.ChannelDecisions:
		return appendTo(&s.Decisions, channel, update)
	case events.ChannelContext:
		if update[0] != '{' {
			return fmt.Errorf("%w: %w", ErrBadUpdate, fieldError("/data/update", "the context channel merges objects, got %s", kindOf(update)))
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(update, &m); err != nil {
			return fmt.Errorf("%w: %w", ErrBadUpdate, fieldError("/data/update", "%v", err))
		}
		if s.Context == nil {
			s.Context = map[string]json.RawMessage{}
		}
		for k, v := range m {
			s.Context[k] = compact(v)
		}
		return nil
	}
	return fmt.Errorf("%w: %w", ErrBadUpdate, fieldError("/data/channel", "%q is not messages, tasks, decisions or context", channel))
}

func appendTo(list *[]json.RawMessage, channel string, update json.RawMessage) error {
	if update[0] != '[' {
		*list = append(*list, compact(update))
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(update, &items); err != nil {
		return fmt.Errorf("%w: %w", ErrBadUpdate, fieldError("/data/update", "channel %s: %v", channel, err))
	}
	for i, it := range items {
		if bytes.Equal(bytes.TrimSpace(it), []byte("null")) {
			return fmt.Errorf("%w: %w", ErrBadUpdate, fieldError(fmt.Sprintf("/data/update/%d", i), "null element on channel %s: an element is any JSON value but null", channel))
		}
	}
	for _, it := range items {
		*list = append(*list, compact(it))
	}
	return nil
}

func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return append(json.RawMessage(nil), v...)
	}
	return b.Bytes()
}

func kindOf(v json.RawMessage) string {
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
