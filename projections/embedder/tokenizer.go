package embedder

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The tokenizer is a line-by-line port of lib/tokenizer.ts and lib/trie.ts
// of @energetic-ai/embeddings@0.2.0 (itself the tokenizer of
// @tensorflow-models/universal-sentence-encoder): a SentencePiece-style
// unigram model decoded with a Viterbi pass over a trie of the vocabulary.
// Its quirks are kept on purpose so that token ids match the JavaScript
// reference exactly:
//   - the input is NFKC-normalised, prefixed with "▁" and every U+0020
//     space becomes "▁" (no other whitespace is touched);
//   - a position no piece starts at becomes the unknown id 0 with score 0,
//     and a best score of exactly 0 counts as "unset";
//   - ties go to the later candidate (score >= best);
//   - later duplicates in the vocabulary replace earlier ones;
//   - runs of unknown ids collapse into one.

const (
	// wordSeparator is SentencePiece's meta symbol for a space.
	wordSeparator = '\u2581'
	// reservedSymbols are the first vocabulary entries (unknown, <s>,
	// </s>, extra ids) that never take part in matching.
	reservedSymbols = 6
	// unknownID is the id of the unknown piece.
	unknownID = 0
)

// trieNode is one code point of a vocabulary piece.
type trieNode struct {
	children map[rune]*trieNode
	end      bool
	depth    int // number of code points from the root
	score    float64
	id       int
}

// tokenizer turns text into USE lite vocabulary ids.
type tokenizer struct {
	root *trieNode
	// pieceLen is the JavaScript (UTF-16) length of each vocabulary piece,
	// which the reference uses to walk back through the lattice.
	pieceLen []int
}

// newTokenizer builds the trie over vocab[reservedSymbols:].
func newTokenizer(vocab []vocabEntry) *tokenizer {
	t := &tokenizer{root: &trieNode{}, pieceLen: make([]int, len(vocab))}
	for i, v := range vocab {
		t.pieceLen[i] = len(utf16.Encode([]rune(v.piece)))
	}
	for i := reservedSymbols; i < len(vocab); i++ {
		node := t.root
		runes := []rune(vocab[i].piece)
		for j, r := range runes {
			child := node.children[r]
			if child == nil {
				if node.children == nil {
					node.children = make(map[rune]*trieNode)
				}
				child = &trieNode{depth: node.depth + 1}
				node.children[r] = child
			}
			node = child
			if j == len(runes)-1 {
				node.end = true
				node.score = vocab[i].score
				node.id = i
			}
		}
	}
	return t
}

// normalizeInput mirrors processInput of the reference.
func normalizeInput(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	n := norm.NFKC.String(s)
	if n == "" {
		return n
	}
	return string(wordSeparator) + strings.ReplaceAll(n, " ", string(wordSeparator))
}

// latticeEdge is a piece ending at some position of the lattice.
type latticeEdge struct {
	length int // code points
	score  float64
	id     int
}

// encode returns the ids of s, exactly as Tokenizer.encode of the reference.
func (t *tokenizer) encode(s string) []int {
	symbols := []rune(normalizeInput(s))
	n := len(symbols)
	// edges[end] lists the pieces ending at end, in increasing start order
	// (the order the reference visits them in).
	edges := make([][]latticeEdge, n+1)
	for i := 0; i < n; i++ {
		matched := false
		node := t.root.children[symbols[i]]
		for j := i; j < n && node != nil; j++ {
			if node.end {
				edges[i+node.depth] = append(edges[i+node.depth], latticeEdge{node.depth, node.score, node.id})
				matched = true
			}
			if j+1 < n {
				node = node.children[symbols[j+1]]
			} else {
				node = nil
			}
		}
		if !matched {
			edges[i+1] = append(edges[i+1], latticeEdge{1, 0, unknownID})
		}
	}
	best := make([]float64, n+1)
	words := make([]int, n+1)
	for end := 0; end <= n; end++ {
		for _, e := range edges[end] {
			score := e.score + best[end-e.length]
			if best[end] == 0 || score >= best[end] {
				best[end] = score
				words[end] = e.id
			}
		}
	}
	var results []int
	for iter := n; iter > 0; iter -= t.pieceLen[words[iter]] {
		results = append(results, words[iter])
	}
	merged := make([]int, 0, len(results))
	prevUnknown := false
	for _, id := range results {
		if !(prevUnknown && id == unknownID) {
			merged = append(merged, id)
		}
		prevUnknown = id == unknownID
	}
	for i, j := 0, len(merged)-1; i < j; i, j = i+1, j-1 {
		merged[i], merged[j] = merged[j], merged[i]
	}
	return merged
}
