// Package answer compares short answers the way HotPotQA's exact-match
// metric does (hotpot_evaluate_v1.py, normalize_answer): lower case, ASCII
// punctuation removed, the articles a, an, the removed, whitespace
// collapsed.
package answer

import (
	"regexp"
	"strings"
)

var articles = regexp.MustCompile(`\b(a|an|the)\b`)

// punctuation is Python's string.punctuation, which HotPotQA removes.
const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// Normalize applies HotPotQA's normalize_answer: lower, remove punctuation,
// remove articles, collapse whitespace (in that order).
func Normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(punctuation, r) {
			return -1
		}
		return r
	}, s)
	s = articles.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(s), " ")
}

// ExactMatch reports whether prediction and truth are equal after
// Normalize (HotPotQA's exact match).
func ExactMatch(prediction, truth string) bool { return Normalize(prediction) == Normalize(truth) }
