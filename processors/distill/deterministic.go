package distill

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/flux"
)

// Deterministic extracts memories without a model, from the trace and the
// FLUX evaluation:
//   - a session that meets its criteria gives one strategy: the ordered tool
//     sequence (argument names, not values, so trials of the same kind of
//     task merge) and the weighted criteria it satisfied;
//   - a session that does not gives up to three anti-patterns, one per
//     weighted gap in priority order: the criterion that failed, what the
//     evaluator found (the closest call and the argument that differed, the
//     unrequested write, the missing call or output) and what to do instead.
//
// Every sentence of advice comes from the session's own evidence — its
// calls, its criteria and what the evaluator found — never from a domain
// (issue 11: every strategy used to end with airline advice). A session
// whose evaluation is not_evaluated (no weighted criterion could be
// scored) gives no memory: there is nothing to tell success from failure.
//
// It is a pure function of the session: replay gives the same memories.
type Deterministic struct{}

// Name implements Extractor.
func (Deterministic) Name() string { return "deterministic" }

// Extract implements Extractor.
func (Deterministic) Extract(_ context.Context, s Session) ([]Memory, error) {
	if s.Evaluation.Recommendation == events.NotEvaluated {
		return nil, nil
	}
	if s.Outcome == events.OutcomeSuccess {
		return []Memory{strategy(s)}, nil
	}
	return antiPatterns(s), nil
}

// TaskSummary is the task's goal in the third person: the first sentence
// that says what is wanted ("… want …", "… need …", "… would like …",
// "… trying to …", "… goal …"), else the first question, else the first
// sentence that is neither a role line ("You are …") nor a statement of
// the date or time ("Today is 2024-05-15", "The current time is 10:00
// EST"), which other agent traces lead with (issue 11: such a date
// sentence described the task). Its first letter is lowercased only when
// that is safe (lowerFirst).
func TaskSummary(task string) string {
	var sentences []string
	for _, sent := range splitSentences(task) {
		if sent = strings.TrimSpace(sent); sent != "" {
			sentences = append(sentences, strings.TrimRight(sent, "."))
		}
	}
	pick := ""
	for _, sent := range sentences {
		if mayStateGoal(sent) && goalWords.MatchString(sent) && !isDate(sent) {
			pick = sent
			break
		}
	}
	if pick == "" {
		for _, sent := range sentences {
			if strings.HasSuffix(sent, "?") && !isDate(sent) {
				pick = sent
				break
			}
		}
	}
	if pick == "" {
		for _, sent := range sentences {
			if !isDate(sent) && !strings.HasPrefix(sent, "You are ") {
				pick = sent
				break
			}
		}
	}
	if pick == "" {
		return Clip(task, 120)
	}
	for _, p := range [][2]string{{"You want to ", "the user wants to "}, {"you want to ", "the user wants to "}, {"You need to ", "the user needs to "}, {"You are ", "the user is "}, {"you're ", "they're "}, {"You ", "the user "}, {"your ", "their "}, {"Your ", "their "},
		// "you" as an object ("wants you to add": it became "wants they to add": a re-test, 2026-11-30)
		{"you ", "they "}} {
		pick = strings.ReplaceAll(pick, p[0], p[1])
	}
	return lowerFirst(pick, task)
}

// lowerFirst lowercases the first letter of sentence, which TaskSummary's
// answer continues ("When <summary>: …", PAIR's gap query), only when its
// first word is an ordinary capitalised word: not "I", no other capital
// in it (acronyms, "SECRET", "McDonald", "iOS"), and not written
// capitalised within a sentence anywhere in task (a proper name: "Mia"
// in "… and Mia wants …"). Before, every first letter was lowercased: the
// task "SECRET ALPHASECRET book a flight" became "sECRET ALPHASECRET book
// a flight" (found by a new user's walkthrough). A capitalised proper
// name task gives no other evidence of stays lowercased.
func lowerFirst(sentence, task string) string {
	first, size := utf8.DecodeRuneInString(sentence)
	if !unicode.IsUpper(first) {
		return sentence
	}
	word := sentence
	if i := strings.IndexFunc(sentence, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
		word = sentence[:i]
	}
	if word == "I" || titles[word] || strings.IndexFunc(word[size:], unicode.IsUpper) >= 0 || midSentence(task, word) {
		return sentence
	}
	return string(unicode.ToLower(first)) + sentence[size:]
}

// midSentence reports whether word occurs in text as a whole word within
// a sentence: after a letter, digit or comma and spaces, not at the
// text's or a sentence's start.
func midSentence(text, word string) bool {
	for at := 0; ; {
		i := strings.Index(text[at:], word)
		if i < 0 {
			return false
		}
		i += at
		at = i + len(word)
		if next, _ := utf8.DecodeRuneInString(text[at:]); unicode.IsLetter(next) || unicode.IsDigit(next) {
			continue // a longer word
		}
		before := strings.TrimRightFunc(text[:i], unicode.IsSpace)
		if len(before) == len(text[:i]) || before == "" {
			continue // inside a word, or at the text's start
		}
		if prev, _ := utf8.DecodeLastRuneInString(before); unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == ',' {
			return true
		}
	}
}

var (
	goalWords = regexp.MustCompile(`(?i)\b(want|wants|wanted|need|needs|would like|'d like|wish|wishes|trying to|try to|goal|aim)\b`)
	// dateLead starts a sentence that states the date or time.
	dateLead = regexp.MustCompile(`(?i)^(today is|today's date|the current (date|time)|current (date|time)|the date is|the time is|it is now|now is|date:|time:)`)
	dateTime = regexp.MustCompile(`(?i)\b(\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\d{1,2}/\d{1,2}(/\d{2,4})?|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}|monday|tuesday|wednesday|thursday|friday|saturday|sunday|[ap]\.?m\.?|est|edt|pst|pdt|utc|gmt)\b`)
)

// The regexps above cost most of a completed session's task summary
// (about 48 µs on the bundled tasks, run at every completion): Go's
// regexp has no literal prefix to look for in a case-insensitive
// alternation, so it tries every alternative at every position.
// mayStateGoal and mayStateDate are cheaper necessary conditions checked
// first: when one is false its regexp cannot match. Text with a non-ASCII
// byte always goes to the regexp ((?i) folds ſ to s and K to k).
// TestPrefiltersNeverMiss and FuzzPrefiltersNeverMiss hold them to it.

// goalTerms are the lower-case texts one of which any match of goalWords
// contains.
var goalTerms = [...]string{"want", "need", "would like", "'d like", "wish", "try", "goal", "aim"}

// mayStateGoal reports whether goalWords may match sent.
func mayStateGoal(sent string) bool {
	low, ascii := lowerASCII(sent)
	if !ascii {
		return true
	}
	for _, t := range goalTerms {
		if strings.Contains(low, t) {
			return true
		}
	}
	return false
}

// dateStarts are the lower-case texts one of which a match of dateTime
// starts with at a word start, unless it starts with a digit (a month
// name must be followed by a day, so a digit is there too).
var dateStarts = [...]string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
	"am", "a.m", "pm", "p.m", "est", "edt", "pst", "pdt", "utc", "gmt"}

// mayStateDate reports whether dateTime may match sent: every match
// starts at a word start (\b) with a digit or one of dateStarts.
func mayStateDate(sent string) bool {
	low, ascii := lowerASCII(sent)
	if !ascii {
		return true
	}
	for i := 0; i < len(low); i++ {
		if !wordByte(low[i]) || i > 0 && wordByte(low[i-1]) {
			continue
		}
		if low[i] >= '0' && low[i] <= '9' {
			return true
		}
		for _, p := range dateStarts {
			if strings.HasPrefix(low[i:], p) {
				return true
			}
		}
	}
	return false
}

// lowerASCII returns s in lower case when it is all ASCII (ok true).
func lowerASCII(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// wordByte reports whether c is a word character of \b (ASCII letters,
// digits and _).
func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// splitSentences cuts text after each ".", "!" or "?" that is followed by
// white space (or ends the text), keeping the mark with its sentence.
func splitSentences(text string) []string {
	var out []string
	r := []rune(text)
	start := 0
	for i, c := range r {
		if c == '.' && abbreviation(r[start:i]) {
			continue // "Andrew J. Elliot", "Dr. Smith": no end of sentence
		}
		if (c == '.' || c == '!' || c == '?') && (i+1 == len(r) || unicode.IsSpace(r[i+1])) {
			out = append(out, string(r[start:i+1]))
			start = i + 1
		}
	}
	if start < len(r) {
		out = append(out, string(r[start:]))
	}
	return out
}

// titles are the abbreviations before a name that end in a period.
var titles = map[string]bool{"Mr": true, "Mrs": true, "Ms": true, "Dr": true, "Prof": true, "St": true, "Jr": true, "Sr": true,
	"Gen": true, "Col": true, "Capt": true, "Lt": true, "Sgt": true, "Gov": true, "Sen": true, "Rep": true, "Rev": true, "Hon": true, "Fr": true, "Mt": true}

// abbreviation reports whether the token that ends before a period (the
// last token of before) is an initial or a run of them (one letter, or
// capitals each followed by a period: "J." in "Andrew J. Elliot",
// "J.R.R.", "U.S.") or a title (titles), after which the period ends no
// sentence. Before, "How many schools does the university, in which
// Andrew J. Elliot is a professor of psychology, have?" was cut after
// "J.", and its memories were described "When elliot is a professor of
// psychology, have?" (walkthroughs, 2026-11-30; "J.R.R. Tolkien" and
// "Gen. George Patton" were cut too).
func abbreviation(before []rune) bool {
	i := len(before)
	for i > 0 && !unicode.IsSpace(before[i-1]) && before[i-1] != '(' {
		i--
	}
	token := before[i:]
	if titles[string(token)] {
		return true
	}
	// capital letters, each but the last followed by a period (lower-case
	// runs, "a.m." and "e.g.", end sentences as before: a tau-bench goal
	// ends in "a.m.", and the demo's summaries stay as they were)
	for j, r := range token {
		if j%2 == 0 && !unicode.IsUpper(r) || j%2 == 1 && r != '.' {
			return false
		}
	}
	return len(token)%2 == 1
}

// isDate reports whether sent says only what day or time it is: it
// starts like such a statement, or has at most three words besides its
// date and time tokens.
func isDate(sent string) bool {
	if dateLead.MatchString(sent) {
		return true
	}
	if !mayStateDate(sent) || !dateTime.MatchString(sent) {
		return false
	}
	return len(strings.Fields(dateTime.ReplaceAllString(sent, " "))) <= 3
}

// callSig renders a call as tool(arg, names) with sorted argument names.
func callSig(c events.TaskCompletedData) string { return signature(c.ToolID, c.Inputs) }

// signature renders tool(arg, names): the sorted names of the JSON object
// args, without their values, so calls of the same shape read alike.
func signature(tool string, args json.RawMessage) string {
	return tool + "(" + strings.Join(flux.ArgNames(args), ", ") + ")"
}

// Steps lists the successful calls as tool(sorted argument names),
// folding consecutive repeats into "×n".
func Steps(calls []events.TaskCompletedData) []string {
	var out []string
	var last string
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", last, n))
		} else {
			out = append(out, last)
		}
	}
	for _, c := range calls {
		if !c.Success {
			continue
		}
		sig := callSig(c)
		if sig == last {
			n++
			continue
		}
		flush()
		last, n = sig, 1
	}
	flush()
	return out
}

// weighted returns the criteria with weight > 0 by id.
func weighted(in flux.Input) map[string]events.Criterion {
	out := map[string]events.Criterion{}
	for _, c := range in.Criteria {
		if c.Weight > 0 {
			out[c.ID] = c
		}
	}
	return out
}

// WriteTools lists the tools of the weighted tool-call criteria (the
// database writes a session must make), in criteria order, each once.
func WriteTools(in flux.Input) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range in.Criteria {
		if c.Weight > 0 && c.Check.Kind == events.CheckToolCall && !seen[c.Check.Name] {
			seen[c.Check.Name] = true
			out = append(out, c.Check.Name)
		}
	}
	return out
}

func strategy(s Session) Memory {
	in := s.Input
	tools := WriteTools(in)
	title := "Strategy: answer without changing records"
	if len(tools) > 0 {
		title = "Strategy: " + strings.Join(tools, " + ")
	}
	st := Steps(in.Calls)
	w := weighted(in)
	var satisfied []string
	for _, r := range s.Evaluation.Criteria {
		if _, ok := w[r.ID]; ok && r.Evaluated && r.Score != nil && *r.Score == 100 {
			satisfied = append(satisfied, r.Description)
		}
	}
	var b strings.Builder
	b.WriteString("Tool sequence that met every weighted criterion:\n")
	for i, x := range st {
		fmt.Fprintf(&b, "%d. %s\n", i+1, x)
	}
	if len(satisfied) > 0 {
		b.WriteString("Criteria satisfied:\n")
		for _, x := range satisfied {
			fmt.Fprintf(&b, "- %s\n", x)
		}
	}
	if ev := orderEvidence(in, tools); ev != "" {
		b.WriteString(ev)
	}
	desc := fmt.Sprintf("Use when %s: %d successful calls, %d of %d weighted criteria met.", s.summary(), len(st), len(satisfied), len(w))
	tags := append([]string{"strategy"}, tools...)
	return Clamp(Memory{Title: title, Description: desc, Content: b.String(), Tags: tags, Outcome: events.OutcomeSuccess})
}

// orderEvidence says, from the session's successful calls, what came
// before its first write (a tool a weighted tool_call criterion checks) —
// "Before cancel_reservation: get_user_details, get_reservation_details."
// — or, when the session wrote nothing and a weighted no_other_calls
// criterion watched some tools, that none of them was called. "" when the
// calls say neither.
func orderEvidence(in flux.Input, writes []string) string {
	isWrite := map[string]bool{}
	for _, t := range writes {
		isWrite[t] = true
	}
	var before []string
	seen := map[string]bool{}
	for _, c := range in.Calls {
		if !c.Success {
			continue
		}
		if isWrite[c.ToolID] {
			if len(before) == 0 {
				return ""
			}
			return fmt.Sprintf("Before %s the session called: %s.", c.ToolID, strings.Join(before, ", "))
		}
		if !seen[c.ToolID] {
			seen[c.ToolID] = true
			before = append(before, c.ToolID)
		}
	}
	for _, c := range in.Criteria {
		if c.Weight > 0 && c.Check.Kind == events.CheckNoOtherCalls && len(c.Check.Tools) > 0 && len(c.Check.Allowed) == 0 {
			return fmt.Sprintf("It called none of %s.", strings.Join(c.Check.Tools, ", "))
		}
	}
	return ""
}

func antiPatterns(s Session) []Memory {
	in := s.Input
	w := weighted(in)
	byID := map[string]events.CriterionResult{}
	for _, r := range s.Evaluation.Criteria {
		byID[r.ID] = r
	}
	var out []Memory
	task := "" // computed once for every gap
	if len(s.Evaluation.Gaps) > 0 {
		task = s.summary()
	}
	for _, g := range s.Evaluation.Gaps {
		c, ok := w[g.CriterionID]
		if !ok {
			continue
		}
		m := antiPattern(in, task, c, byID[g.CriterionID], g)
		out = append(out, Clamp(m))
		if len(out) == MaxMemories {
			break
		}
	}
	return out
}

// antiPattern is the memory of gap g (criterion c, its result r) of a
// session with input in; task is TaskSummary(in.Task).
func antiPattern(in flux.Input, task string, c events.Criterion, r events.CriterionResult, g events.Gap) Memory {
	var title, instead string
	tags := []string{"anti-pattern", g.Severity}
	switch c.Check.Kind {
	case events.CheckToolCall:
		tags = append(tags, c.Check.Name)
		switch {
		case strings.Contains(r.Detail, "never called"):
			title = "Avoid: skipping " + c.Check.Name
			instead = fmt.Sprintf("Call %s before ending the session; the criterion expects %s.", c.Check.Name, argValues(c.Check.Arguments))
		case strings.Contains(r.Detail, "closest"):
			title = "Avoid: wrong " + c.Check.Name + " arguments"
			instead = fmt.Sprintf("Call %s with %s, the values the criterion expects.", c.Check.Name, argValues(c.Check.Arguments))
		default:
			title = "Avoid: failed " + c.Check.Name + " call"
			instead = fmt.Sprintf("Remove the cause of the failure found above and call %s with %s.", c.Check.Name, argValues(c.Check.Arguments))
		}
	case events.CheckNoOtherCalls:
		bad := unrequested(in, c.Check)
		title = "Avoid: unrequested writes"
		if len(bad) > 0 {
			title = "Avoid: unrequested " + bad[0]
			tags = append(tags, bad...)
		}
		instead = "Call " + strings.Join(c.Check.Tools, ", ") + " only as the criterion allows: " + allowedCalls(c.Check) + "."
	case events.CheckOutputContains:
		title = "Avoid: not stating the requested answer"
		instead = fmt.Sprintf("State %q in the output.", c.Check.Text)
	default:
		title = "Avoid: missing " + c.Check.Kind + " criterion"
		instead = "Check the output against the criterion before finishing."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Failed criterion (%s, score %.0f): %s\n", g.Severity, g.Score, c.Description)
	fmt.Fprintf(&b, "What went wrong: %s\n", r.Detail)
	if st := Steps(in.Calls); len(st) > 0 {
		b.WriteString("Calls made: " + strings.Join(st, " → ") + "\n")
	}
	b.WriteString("Instead: " + instead)
	desc := fmt.Sprintf("When %s: %s", task, c.Description)
	return Memory{Title: title, Description: desc, Content: b.String(), Tags: tags, Outcome: events.OutcomeFailure}
}

// argValues renders a check's expected arguments as k=v pairs in sorted
// key order ("no particular arguments" for none).
func argValues(args json.RawMessage) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(args, &m)
	if len(m) == 0 {
		return "no particular arguments"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := string(m[k])
		var str string
		if json.Unmarshal(m[k], &str) == nil {
			v = str
		}
		parts[i] = k + "=" + v
	}
	return Clip(strings.Join(parts, ", "), 300)
}

// allowedCalls renders a no_other_calls check's allowed calls
// ("no call at all" for none).
func allowedCalls(ch events.Check) string {
	if len(ch.Allowed) == 0 {
		return "no call at all"
	}
	parts := make([]string, len(ch.Allowed))
	for i, a := range ch.Allowed {
		parts[i] = a.Name + "(" + argValues(a.Arguments) + ")"
	}
	return strings.Join(parts, "; ")
}

// unrequested lists the tools of successful calls a no_other_calls check
// did not allow, in call order, without repeats.
func unrequested(in flux.Input, ch events.Check) []string {
	listed := map[string]bool{}
	for _, t := range ch.Tools {
		listed[t] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range in.Calls {
		if !c.Success || !listed[c.ToolID] {
			continue
		}
		ok := false
		for _, a := range ch.Allowed {
			if a.Name == c.ToolID && flux.Contains(c.Inputs, a.Arguments) {
				ok = true
				break
			}
		}
		if !ok && !seen[c.ToolID] {
			seen[c.ToolID] = true
			out = append(out, c.ToolID)
		}
	}
	return out
}
