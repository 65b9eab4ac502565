package toolgraph

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/chronicle-dev/chronicle/events"
)

// The user's last message as a next-tool context (issue 11, item 10).
//
// The call history alone does not say which tool comes next; what the
// user asked last does. Each transition carries the words of the last
// message the user sent in its session before the call
// (TransitionData.Words), the graph counts (previous tool, word, next
// tool) per scope (v/ rows), and a query that gives the user's message
// (NextAfterMessage; GET /v1/graph/next?text=) mixes the context model
// with those counts:
//
//	P(t) = λ·P_model(t | calls so far) + (1 − λ)·mean_w c(prev, w, t) / c(prev, w, ·)
//
// with w over the message's words that followed prev at least
// WordMinObservations times (prev the last tool, or the start of a
// workflow for a first call) and λ = WordsLambda, which the tuning half
// chose at 0: where a word has evidence, the words rank alone. Without
// such a word the prediction is the context model's.

// LevelWords names the words level in Prediction.Levels: the user's
// message was given and at least one of its words had followed the
// context tool.
const LevelWords = "words"

// UserActor is the actor of a coordination.minute.recorded.v1 whose
// words the next calls of its session are learned with: the role chat
// transcripts give the user (tau-bench's, OpenAI's messages). A minute of
// any other actor leaves them as they are.
const UserActor = "user"

// WordsLambda is λ of the mixture: the context model's weight against
// the words' counts. Chosen on the tuning half of the leave-one-task-out
// evaluation (even tau-bench task ids), by the sum of top-1 and top-3,
// among 0.5, 0.4, 0.3, 0.2, 0.1 and 0 (TestWordsChoice). At 0 the words
// rank alone wherever one of them has followed the context tool (ties
// broken by the design ranking, as every tie of Probability); where none
// has, the context model ranks as without a message.
const WordsLambda = 0.0

// WordMinObservations is the number of calls a word must have been
// followed by after the context tool for it to count in the mixture.
// Chosen with WordsLambda among 1, 3, 5 and 10 (TestWordsChoice).
const WordMinObservations = 1

// MaxWords bounds the words a transition carries and a query uses: the
// first MaxWords distinct words of the message. A tau-bench user message
// has 12 on the median and 38 at most (the 1,490 of the bundled
// sessions).
const MaxWords = 64

// Words returns the words of a message the tool graph learns from and is
// queried with: runs of letters, lower-cased, of three letters or more,
// each once in the order of first appearance, at most MaxWords. Digits
// and punctuation separate words, so ids and amounts ("HAT170", "$500")
// add no words beyond their letters. No stop list: function words
// ("the", "and") follow every tool alike and pull the mixture towards the
// tool's usual successors, which on the tuning half did better than
// leaving 43 of them out (TestWordsChoice).
func Words(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if utf8.RuneCountInString(f) < 3 || slices.Contains(out, f) {
			continue
		}
		out = append(out, f)
		if len(out) == MaxWords {
			break
		}
	}
	return out
}

// userMinute is what Transitions reads of a minute.
type userMinute struct {
	Actor string            `json:"actor"`
	Data  gojson.RawMessage `json:"data"`
}

var (
	quotedUser = []byte(`"user"`)
	escape     = []byte(`\u`)
)

// isUserMinute reports whether env is a coordination.minute.recorded.v1
// of UserActor (an undecodable one is not: Apply is never given it). A
// minute whose data holds neither "user" nor a \u escape (which could
// spell it) is refused without decoding: most minutes are the agents'
// and the tools', and ActsOn is asked about every one.
func isUserMinute(env *events.Envelope) bool {
	if env.Type != events.MinuteRecorded || (!bytes.Contains(env.Data, quotedUser) && !bytes.Contains(env.Data, escape)) {
		return false
	}
	var m struct {
		Actor string `json:"actor"`
	}
	return gojson.Unmarshal(env.Data, &m) == nil && m.Actor == UserActor
}

// minuteText is the text of a minute's data: the data itself when it is
// a JSON string, else its "content" (chat messages, tau-bench's import)
// or "text" member when that is a string; "" otherwise.
func minuteText(data []byte) string {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return ""
	}
	switch data[0] {
	case '"':
		var s string
		if gojson.Unmarshal(data, &s) != nil {
			return ""
		}
		return s
	case '{':
		var m struct {
			Content *string `json:"content"`
			Text    *string `json:"text"`
		}
		if gojson.Unmarshal(data, &m) != nil {
			return ""
		}
		if m.Content != nil {
			return *m.Content
		}
		if m.Text != nil {
			return *m.Text
		}
	}
	return ""
}

// userWords decodes a minute and returns the Words of its text and
// whether it is the user's (UserActor).
func userWords(env *events.Envelope) ([]string, bool, error) {
	var m userMinute
	if err := env.Decode(&m); err != nil {
		return nil, false, err
	}
	if m.Actor != UserActor {
		return nil, false, nil
	}
	return Words(minuteText(m.Data)), true, nil
}

// wordRow is v/<scope>/<from>/<word>/<to> (value: Count in decimal): how
// often To was called after From (From "" = the workflow's first call)
// while the last message of the user in the session held Word.
type wordRow struct {
	From, Word, To string
	Count          int
}

// wordKey is the identity of a wordRow.
type wordKey struct{ From, Word, To string }

func (r wordRow) key() wordKey { return wordKey{r.From, r.Word, r.To} }

// userRow is u/<key>: the words of the last user message of a record key
// (a session), which its next calls carry.
type userRow struct {
	Words []string `json:"words,omitempty"`
}

// wordCounts are the (context tool, word) contexts' successor counts of
// an analysis: from node id (−1: first call) → word → counts.
type wordCounts map[int32]map[string]*succCounts

func buildWordCounts(g *Graph, idx map[string]int32) wordCounts {
	m := wordCounts{}
	for _, r := range g.words {
		from := int32(-1)
		ok := true
		if r.From != "" {
			from, ok = idx[r.From]
		}
		to, ok2 := idx[r.To]
		if !ok || !ok2 { // cannot happen with rows written by learn
			continue
		}
		byWord := m[from]
		if byWord == nil {
			byWord = map[string]*succCounts{}
			m[from] = byWord
		}
		at(byWord, r.Word).add(to, r.Count)
	}
	return m
}

// wordLevel returns the counts of the words of ws that followed the
// context of after (its last tool, or the start) at least minObs times,
// and those words, in the order of ws.
func (a *analysis) wordLevel(after []Call, ws []string) ([]string, []*succCounts) {
	from := int32(-1)
	if n := len(after); n > 0 {
		v, ok := a.idx[after[n-1].Tool]
		if !ok {
			return nil, nil
		}
		from = v
	}
	byWord := a.wc[from]
	var used []string
	var cs []*succCounts
	for _, w := range ws {
		if s := byWord[w]; s != nil && s.tot >= max(a.p.wordMinObs, 1) {
			used, cs = append(used, w), append(cs, s)
		}
	}
	return used, cs
}

// mixWords is the mixture of the package's words documentation: p, the
// context model's probability of v, mixed with the mean of v's share
// after each word. The weighting choice's variants (params.wordsPrior,
// params.wordsWeight) shrink each share towards p and weigh the words;
// the shipped parameters do neither.
func (pp *params) mixWords(p float64, v int32, ws []*succCounts) float64 {
	if len(ws) == 0 {
		return p
	}
	beta := pp.wordsPrior
	m, wsum := 0.0, 0.0
	for _, s := range ws {
		w := 1.0
		switch pp.wordsWeight {
		case wordsByCount:
			w = math.Pow(float64(s.tot), pp.wordsGamma)
		case wordsByPeak:
			peak := 0
			for _, c := range s.n {
				peak = max(peak, c)
			}
			w = math.Pow(float64(peak)/float64(s.tot), pp.wordsGamma)
		}
		m += w * (float64(s.n[v]) + beta*p) / (float64(s.tot) + beta)
		wsum += w
	}
	return pp.wordsLambda*p + (1-pp.wordsLambda)*m/wsum
}

// distinct returns ws without repeats (first occurrences, in order): a
// transition a producer wrote itself may repeat a word, which counts once.
// ws itself when it has none, the usual case.
func distinct(ws []string) []string {
	for i := 1; i < len(ws); i++ {
		if slices.Contains(ws[:i], ws[i]) {
			out := slices.Clone(ws[:i])
			for _, w := range ws[i+1:] {
				if !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
			return out
		}
	}
	return ws
}
