package toolgraph

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hi! I'd like to CANCEL my reservation ZFA04Y, please; cancel it.", []string{"like", "cancel", "reservation", "zfa", "please"}},
		{"$500 on 2024-05-15", nil},
		{"Über straße für", []string{"über", "straße", "für"}},
		{"", nil},
	} {
		if got := Words(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := ""
	for i := 0; i < 3*MaxWords; i++ {
		long += string(rune('a'+i%26)) + string(rune('a'+i/26)) + "x "
	}
	if n := len(Words(long)); n != MaxWords {
		t.Errorf("%d words of a long message, want MaxWords %d", n, MaxWords)
	}
}

func TestMinuteText(t *testing.T) {
	for in, want := range map[string]string{
		`"plain text"`:                      "plain text",
		`{"content": "chat", "text": "no"}`: "chat",
		`{"text": "a note"}`:                "a note",
		`{"content": 3}`:                    "",
		`{"other": "x"}`:                    "",
		`[1, 2]`:                            "",
	} {
		if got := minuteText([]byte(in)); got != want {
			t.Errorf("minuteText(%s) = %q, want %q", in, got, want)
		}
	}
}

// minute is a coordination.minute.recorded.v1 of actor in session sid.
func minute(t *testing.T, sid, id, actor, content string) events.Envelope {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"content": content})
	env, err := events.New(events.MinuteRecorded, "test", id, time.Unix(1700000000, 0), events.MinuteData{EventType: "message", Actor: actor, Data: raw})
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = sid
	return env
}

// toolCall is a workflow.task.completed.v1 of tool in session sid.
func toolCall(t *testing.T, sid, id, tool string) events.Envelope {
	t.Helper()
	env, err := events.New(events.WorkflowTaskCompleted, "test", id, time.Unix(1700000001, 0), events.TaskCompletedData{WorkflowID: sid, TaskID: id, ToolID: tool, Success: true})
	if err != nil {
		t.Fatal(err)
	}
	env.SessionID = sid
	return env
}

// Transitions gives every call the words of its session's last user
// minute: the agent's and the tool's minutes leave them, another
// session's do not reach it, an empty user message clears them; ActsOn
// takes exactly the user's minutes and the calls.
func TestTransitionsCarryTheUserWords(t *testing.T) {
	s := openStore(t)
	evs := []events.Envelope{
		minute(t, "s1", "1", "user", "Please cancel my reservation"),
		minute(t, "s2", "2", "user", "book a flight"),
		minute(t, "s1", "3", "assistant", "Sure, which one?"),
		toolCall(t, "s1", "4", "get_user_details"),
		minute(t, "s1", "5", "tool", "{...}"),
		toolCall(t, "s1", "6", "cancel_reservation"),
		minute(t, "s1", "7", "user", "ok."),
		toolCall(t, "s1", "8", "get_user_details"),
	}
	want := map[string][]string{
		"4": {"please", "cancel", "reservation"},
		"6": {"please", "cancel", "reservation"},
		"8": nil,
	}
	for i := range evs {
		acts := Transitions{}.ActsOn(&evs[i])
		if wantActs := evs[i].Type == events.WorkflowTaskCompleted || i == 0 || i == 1 || i == 6; acts != wantActs {
			t.Errorf("event %s: ActsOn %v, want %v", evs[i].ID, acts, wantActs)
		}
		var emitted []projections.OutboxRecord
		if _, err := s.Apply(TransitionsName, projections.Position{Topic: string(events.TopicSessions), Offset: int64(i)}, &evs[i], func(tx *projections.Tx, env *events.Envelope) error {
			err := Transitions{}.Apply(tx, env)
			emitted = tx.Emitted()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		w, isCall := want[evs[i].ID]
		if !isCall {
			if len(emitted) != 0 {
				t.Errorf("minute %s emitted %d events", evs[i].ID, len(emitted))
			}
			continue
		}
		if len(emitted) != 1 {
			t.Fatalf("call %s emitted %d events", evs[i].ID, len(emitted))
		}
		tr, err := events.ParseEvent(emitted[0].Value) // validated against the schema, words included
		if err != nil {
			t.Fatal(err)
		}
		var d TransitionData
		if err := tr.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.Words, w) {
			t.Errorf("call %s: words %q, want %q", evs[i].ID, d.Words, w)
		}
	}
}

// The processor's v/ rows, loaded, equal the in-memory learner's word
// counts on the first 24 bundled sessions, and the words change the
// prediction: after get_user_details, a message asking for bags puts
// update_reservation_baggages above the call history's own first choice
// (get_reservation_details).
func TestProcessorLearnsWordsAsTheLearner(t *testing.T) {
	seq := flatten(sampleEvents(t, 24))
	s := openStore(t)
	applyAll(t, s, Processor{}, seq)
	g, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	l := learnAll(t, seq)
	if len(g.words) == 0 || !reflect.DeepEqual(g.words, l.words) {
		t.Fatalf("projection: %d word rows, learner: %d; equal %v", len(g.words), len(l.words), reflect.DeepEqual(g.words, l.words))
	}
	full := sampleGraph(t)
	after := []Call{{Tool: "get_user_details"}}
	plain := full.NextCalls(after, 3)
	msg := full.NextAfterMessage(after, true, "Please add two checked bags", 3)
	if plain.Suggestions[0].Tool == "update_reservation_baggages" {
		t.Fatalf("the history alone already ranks update_reservation_baggages first: %+v", plain.Suggestions)
	}
	if msg.Suggestions[0].Tool != "update_reservation_baggages" || !reflect.DeepEqual(msg.Words, []string{"please", "add", "two", "checked", "bags"}) || msg.Levels[0] != LevelWords {
		t.Errorf("with the message: %+v (words %q, levels %q), want update_reservation_baggages first", msg.Suggestions, msg.Words, msg.Levels)
	}
	if none := full.NextAfterMessage(after, true, "zzzq xxyy", 3); !reflect.DeepEqual(none, plain) {
		t.Errorf("words never seen changed the prediction: %+v, want %+v", none, plain)
	}
}

// isUserMinute's fast refusal (no "user" and no \u escape in the data)
// never refuses a user minute: an actor spelled with an escape is read.
func TestIsUserMinute(t *testing.T) {
	for data, want := range map[string]bool{
		`{"event_type":"message","actor":"user","data":{"content":"hi"}}`:        true,
		`{"event_type":"message","actor":"\u0075ser","data":"hi"}`:               true,
		`{"event_type":"message","actor":"assistant","data":{"content":"user"}}`: false,
		`{"event_type":"message","actor":"tool","data":{"content":"ok"}}`:        false,
	} {
		env := events.Envelope{Type: events.MinuteRecorded, Data: []byte(data)}
		if got := isUserMinute(&env); got != want {
			t.Errorf("isUserMinute(%s) = %v, want %v", data, got, want)
		}
	}
	if isUserMinute(&events.Envelope{Type: events.WorkflowTaskCompleted, Data: []byte(`{"actor":"user"}`)}) {
		t.Error("a task event taken for a user minute")
	}
}

func TestDistinct(t *testing.T) {
	for _, c := range [][2][]string{
		{nil, nil},
		{{"a", "b"}, {"a", "b"}},
		{{"a", "b", "a", "c", "b"}, {"a", "b", "c"}},
	} {
		if got := distinct(c[0]); !reflect.DeepEqual(got, c[1]) {
			t.Errorf("distinct(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
