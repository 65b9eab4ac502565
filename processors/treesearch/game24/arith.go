// Package game24 is the Game of 24 for Chronicle's tree search: exact
// rational arithmetic (math/big.Rat), the objective checks, an exhaustive
// arithmetic proposer and evaluator, and the recorded proposals and values
// of GPT-4 in the Tree of Thoughts run (princeton-nlp/tree-of-thought-llm,
// propose1_value3_greedy5 on puzzles 901–1000, MIT licence, data/).
//
// Steps use Tree of Thoughts' format, one per line: "4 + 5 = 9 (left: 6 9
// 10)"; the final step is "Answer: (4 * 5) + (10 - 6) = 24". A state is the
// sorted multiset of the numbers left ("6 9 10", exact: "2/3" for a
// fraction); once only 24 is left, "24 = <expression>" (so different ways
// to 24 stay different states); "answer: <expression>" after the answer
// step.
package game24

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// Target is 24.
var Target = big.NewRat(24, 1)

// ParseNumber reads an integer, a decimal ("1.5") or a fraction ("2/3"),
// optionally signed and in parentheses ("(-1)"), exactly, each part at most
// MaxDigits digits. Anything else is no number: big.Rat.SetString also
// reads exponents and base prefixes, and "1e99999999" in a forged search
// state took the resume worker minutes of a core to build (a walkthrough's
// finding).
func ParseNumber(s string) (*big.Rat, bool) {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if !numberRe.MatchString(s) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// MaxDigits bounds each digit run of a number ParseNumber reads: far more
// than a Game of 24 step needs (13 × 13 × 13 × 13 is 28,561), far fewer
// than makes exact arithmetic slow.
const MaxDigits = 20

// numberRe is what ParseNumber reads.
var numberRe = regexp.MustCompile(`^[+-]?[0-9]{1,20}(\.[0-9]{1,20}|/[0-9]{1,20})?$`)

// MaxNumbers is the most numbers a state holds: a Game of 24 puzzle has
// four, and each step leaves one fewer.
const MaxNumbers = 4

// Format writes r exactly: "9", "-1", "2/3".
func Format(r *big.Rat) string { return r.RatString() }

// ParseState reads a state's numbers: at most MaxNumbers, each one
// ParseNumber reads. More is no Game of 24 state: the exhaustive
// evaluator (Solvable) grows factorially with them, and a forged search
// whose root held eight numbers kept the resume worker busy for minutes,
// holding every other search's resume up behind it (a walkthrough's
// finding).
func ParseState(state string) ([]*big.Rat, error) {
	var out []*big.Rat
	fields := strings.Fields(state)
	if len(fields) > MaxNumbers {
		return nil, fmt.Errorf("game24: %d numbers in %q, at most %d (a Game of 24 puzzle has four)", len(fields), clip(state), MaxNumbers)
	}
	for _, f := range fields {
		r, ok := ParseNumber(f)
		if !ok {
			return nil, fmt.Errorf("game24: %q is not a number (an integer, a decimal or a fraction of at most %d digits a part)", clip(f), MaxDigits)
		}
		out = append(out, r)
	}
	return out, nil
}

// State is the canonical state of numbers: sorted by value, exact.
func State(nums []*big.Rat) string {
	s := slices.Clone(nums)
	slices.SortFunc(s, func(a, b *big.Rat) int { return a.Cmp(b) })
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = Format(r)
	}
	return strings.Join(parts, " ")
}

// AnswerState is the state after the answer step.
func AnswerState(expr string) string { return "answer: " + strings.Join(strings.Fields(expr), " ") }

// Apply computes a op b exactly; ok is false for a division by zero or an
// unknown operator.
func Apply(a *big.Rat, op string, b *big.Rat) (*big.Rat, bool) {
	r := new(big.Rat)
	switch op {
	case "+":
		return r.Add(a, b), true
	case "-":
		return r.Sub(a, b), true
	case "*", "×", "x":
		return r.Mul(a, b), true
	case "/", "÷":
		if b.Sign() == 0 {
			return nil, false
		}
		return r.Quo(a, b), true
	}
	return nil, false
}

var stepRe = regexp.MustCompile(`^\s*(\(?-?[0-9./]+\)?)\s*([-+*/×÷x])\s*(\(?-?[0-9./]+\)?)\s*=\s*(\(?-?[0-9./]+\)?)\s*\(left:\s*([^)]*)\)\s*$`)

// Step is a parsed step line.
type Step struct {
	A, B, C *big.Rat
	Op      string
	Left    []*big.Rat
}

// ParseStep parses "a op b = c (left: ...)". ok is false when the line is
// not in that form (the pre-filter's schema check).
func ParseStep(line string) (Step, bool) {
	m := stepRe.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return Step{}, false
	}
	a, ok1 := ParseNumber(m[1])
	b, ok2 := ParseNumber(m[3])
	c, ok3 := ParseNumber(m[4])
	left, err := ParseState(m[5])
	if !ok1 || !ok2 || !ok3 || err != nil {
		return Step{}, false
	}
	return Step{A: a, B: b, C: c, Op: m[2], Left: left}, true
}

// remove takes one number equal to r out of nums; ok is false when there
// is none.
func remove(nums []*big.Rat, r *big.Rat) ([]*big.Rat, bool) {
	for i, n := range nums {
		if n.Cmp(r) == 0 {
			return slices.Delete(slices.Clone(nums), i, i+1), true
		}
	}
	return nums, false
}

// CheckStep is the hard check of a step from state: both operands are
// numbers left, the result is exact, and the numbers left afterwards are
// the rest plus the result. It returns the new canonical state, or a
// report of the first failed check.
func CheckStep(state string, st Step) (string, string) {
	nums, err := ParseState(state)
	if err != nil {
		return "", err.Error()
	}
	rest, ok := remove(nums, st.A)
	if !ok {
		return "", fmt.Sprintf("%s is not among the numbers left (%s)", Format(st.A), state)
	}
	if rest, ok = remove(rest, st.B); !ok {
		return "", fmt.Sprintf("%s is not among the numbers left (%s) after using %s", Format(st.B), state, Format(st.A))
	}
	c, ok := Apply(st.A, st.Op, st.B)
	if !ok {
		return "", "division by zero"
	}
	if c.Cmp(st.C) != 0 {
		return "", fmt.Sprintf("%s %s %s is %s, not %s", Format(st.A), st.Op, Format(st.B), Format(c), Format(st.C))
	}
	after := append(rest, c)
	if State(after) != State(st.Left) {
		return "", fmt.Sprintf("the numbers left are %s, not %s", State(after), State(st.Left))
	}
	if len(after) == 1 && c.Cmp(Target) != 0 {
		return "", fmt.Sprintf("the last number left is %s, not 24", Format(c))
	}
	return State(after), ""
}

// ParseAnswer reads "Answer: <expression> = 24"; ok is false for another
// form.
func ParseAnswer(line string) (string, bool) {
	line = strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(line, "Answer:")
	if !ok {
		return "", false
	}
	expr, rhs, ok := strings.Cut(rest, "=")
	if !ok || strings.TrimSpace(rhs) != "24" || strings.TrimSpace(expr) == "" {
		return "", false
	}
	return strings.TrimSpace(expr), true
}

// CheckAnswer is the hard check of the final expression: it uses each of
// the puzzle's numbers exactly once and equals 24 (exact arithmetic). It
// returns "" when it passes, else the reason.
func CheckAnswer(puzzle, expr string) string {
	nums, err := ParseState(puzzle)
	if err != nil {
		return err.Error()
	}
	v, used, err := Eval(expr)
	if err != nil {
		return err.Error()
	}
	if State(used) != State(nums) {
		return fmt.Sprintf("the expression uses %s, the puzzle is %s", State(used), State(nums))
	}
	if v.Cmp(Target) != 0 {
		return fmt.Sprintf("the expression equals %s, not 24", Format(v))
	}
	return ""
}

// Eval evaluates an arithmetic expression of numbers, + - * / and
// parentheses exactly, and returns the numbers it uses.
func Eval(expr string) (*big.Rat, []*big.Rat, error) {
	p := &parser{s: strings.NewReplacer("×", "*", "÷", "/").Replace(expr)}
	v, err := p.sum()
	if err != nil {
		return nil, nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, nil, fmt.Errorf("game24: unexpected %q in %q", p.s[p.i:], expr)
	}
	return v, p.used, nil
}

type parser struct {
	s    string
	i    int
	used []*big.Rat
}

func (p *parser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *parser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) sum() (*big.Rat, error) {
	v, err := p.product()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.i++
		var w *big.Rat
		if w, err = p.product(); err == nil {
			v, _ = Apply(v, string(op), w)
		}
	}
	return nil, err
}

func (p *parser) product() (*big.Rat, error) {
	v, err := p.factor()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' {
			return v, nil
		}
		p.i++
		var w *big.Rat
		if w, err = p.factor(); err == nil {
			var ok bool
			if v, ok = Apply(v, string(op), w); !ok {
				return nil, fmt.Errorf("game24: division by zero")
			}
		}
	}
	return nil, err
}

func (p *parser) factor() (*big.Rat, error) {
	switch c := p.peek(); {
	case c == '(':
		p.i++
		v, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, fmt.Errorf("game24: missing ')' in %q", p.s)
		}
		p.i++
		return v, nil
	case c == '-':
		p.i++
		v, err := p.factor()
		if err != nil {
			return nil, err
		}
		return new(big.Rat).Neg(v), nil
	case c >= '0' && c <= '9':
		j := p.i
		for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
			p.i++
		}
		r, ok := new(big.Rat).SetString(p.s[j:p.i])
		if !ok {
			return nil, fmt.Errorf("game24: %q is not a number", p.s[j:p.i])
		}
		p.used = append(p.used, r)
		return r, nil
	default:
		return nil, fmt.Errorf("game24: unexpected %q in %q", p.s[p.i:], p.s)
	}
}

// Solvable reports whether 24 can be reached from nums with + - * /
// (exhaustive search over exact rationals).
func Solvable(nums []*big.Rat) bool {
	if len(nums) == 1 {
		return nums[0].Cmp(Target) == 0
	}
	for i := range nums {
		for j := i + 1; j < len(nums); j++ {
			rest := make([]*big.Rat, 0, len(nums)-1)
			for k := range nums {
				if k != i && k != j {
					rest = append(rest, nums[k])
				}
			}
			for _, m := range moves(nums[i], nums[j]) {
				if Solvable(append(rest, m.c)) {
					return true
				}
			}
		}
	}
	return false
}

type move struct {
	a, b *big.Rat
	op   string
	c    *big.Rat
}

// moves are the six results of a pair: a+b, a*b, a−b, b−a, a/b, b/a
// (divisions by zero left out), in that order.
func moves(a, b *big.Rat) []move {
	var out []move
	for _, m := range []struct {
		x, y *big.Rat
		op   string
	}{{a, b, "+"}, {a, b, "*"}, {a, b, "-"}, {b, a, "-"}, {a, b, "/"}, {b, a, "/"}} {
		if c, ok := Apply(m.x, m.op, m.y); ok {
			out = append(out, move{m.x, m.y, m.op, c})
		}
	}
	return out
}

// clip is s cut to its first 40 characters for an error message.
func clip(s string) string {
	n := 0
	for i := range s {
		if n == 40 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
