package recall

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"cx/internal/rollout"
	"cx/internal/words"
)

// A Question is what a user or the model typed, made into an FTS5 query.
//
// Explicit FTS5 syntax (parentheses, *, ^, a column filter, or
// AND/OR/NOT/NEAR) is run as it is. Anything else is plain words, a question as often as
// not: each word is a term (a phrase of its tokens, so "don't" or
// "parse-config" just work), the index stems them ("failing" finds
// "failed"), words that carry no topic (stopwords: "when", "did", "the")
// are dropped unless nothing else is left, and a turn need not hold them
// all — the terms are OR-ed and bm25 ranks the turns that hold more of the
// rarer ones first.
type Question struct {
	Expr    string     // the FTS5 query
	Terms   []string   // plain words: each term's FTS5 phrase; nil for syntax
	Natural bool       // plain words, ranked rather than all required
	Dates   []DateSpan // the dates it names (plain words only): matched against a turn's time, not its words
}

// ParseQuestion reads text as a search or a prompt: FTS5 syntax as it is,
// plain words as terms and dates (above).
func ParseQuestion(text string) (Question, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Question{}, fmt.Errorf("%w: the query is empty", ErrQuery)
	}
	if len(text) > maxQuery {
		return Question{}, fmt.Errorf("%w: the query is %d bytes; at most %d", ErrQuery, len(text), maxQuery)
	}
	fields := strings.Fields(text)
	if isSyntax(text, fields) {
		return Question{Expr: text}, nil
	}
	plain, dates := cutDates(text)
	if strings.IndexFunc(plain, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		plain, dates = text, nil // a date alone is searched for as words
	}
	var all, content []string
	seen := map[string]bool{}
	add := func(w string, stop bool) {
		if w == "" || seen[w] {
			return
		}
		seen[w] = true
		phrase := `"` + w + `"`
		all = append(all, phrase)
		if !stop {
			content = append(content, phrase)
		}
	}
	// A quoted part of a question ("the book "nothing is impossible"") is
	// one term, its words in order; a lone quote is only a character.
	rest := plain
	if strings.Count(plain, `"`)%2 == 0 {
		rest = quotedRE().ReplaceAllStringFunc(plain, func(q string) string {
			var ws []string
			for _, w := range strings.Fields(q[1 : len(q)-1]) {
				if w = NormalWord(w); w != "" {
					ws = append(ws, w)
				}
			}
			add(strings.Join(ws, " "), false)
			return " "
		})
	}
	for _, w := range strings.Fields(strings.ReplaceAll(rest, `"`, " ")) {
		w = NormalWord(w)
		add(w, words.IsStopword(w))
	}
	if len(all) == 0 {
		return Question{}, fmt.Errorf("%w: %q has no words to search for", ErrQuery, rollout.OneLine(text, 40))
	}
	if len(content) == 0 {
		content = all // "what is it": nothing but stopwords, so those are the topic
	}
	if len(content) > maxTerms {
		content = content[:maxTerms]
	}
	return Question{Expr: strings.Join(content, " OR "), Terms: content, Natural: true, Dates: dates}, nil
}

// phrases are a plain query's terms as the index's words (internal/words):
// each phrase's, in order.
func (q Question) Phrases() [][]string {
	out := make([][]string, len(q.Terms))
	for i, phrase := range q.Terms {
		out[i] = words.Terms(nil, strings.Trim(phrase, `"`))
	}
	return out
}

// maxTerms bounds a plain query's terms, so a pasted paragraph stays a
// bounded search.
const maxTerms = 32

// NormalWord is a typed word as a term: lower case, without the
// punctuation around it or a possessive "'s"; "" when it holds no letter or
// digit.
func NormalWord(w string) string {
	w = strings.ToLower(strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
	for _, s := range []string{"'s", "’s"} {
		w = strings.TrimSuffix(w, s)
	}
	if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return w
}

var quotedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"[^"]*"`) })

// isSyntax reports whether text is meant as FTS5 syntax: an operator in
// capitals, grouping, a prefix or initial-token mark, or a column filter
// (prompt:, reply:, commands:, files:). Quotes alone are a phrase in a
// question, and a colon is punctuation.
func isSyntax(text string, words []string) bool {
	if strings.ContainsAny(text, `()*^{}`) {
		return true
	}
	for _, w := range words {
		switch w {
		case "AND", "OR", "NOT", "NEAR":
			return true
		}
		for _, col := range []string{"prompt:", "reply:", "commands:", "files:", "-prompt:", "-reply:", "-commands:", "-files:"} {
			if strings.HasPrefix(w, col) {
				return true
			}
		}
	}
	return false
}

// ErrQuery is a query cx will not run: empty, too long, or one the index
// cannot parse.
var ErrQuery = errors.New("bad query")

// maxQuery bounds a query's length.
const maxQuery = 4096
