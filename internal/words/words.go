// Package words splits text into the terms cx's recall matches on, the
// way the recall index's FTS5 tokenizer does ('porter unicode61
// remove_diacritics 2', see internal/ledger): runs of letters and digits,
// lower-cased, Latin diacritics removed, each stemmed by Porter's
// algorithm — so "failing" and "failed" are one term, "fail". Per-prompt
// recall's window (internal/recall) is matched with these terms, without
// the index; TestTermsAgreeWithTheIndex checks them against FTS5's own.
package words

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Terms appends the terms of s to dst, in order, repeats included.
func Terms(dst []string, s string) []string {
	Each(s, func(term string, _, _ int) { dst = append(dst, term) })
	return dst
}

// Stems remembers the terms of the words it stemmed, for work that stems
// the same words over and over (a search's candidate turns): a map lookup
// costs far less than Porter's steps and their two allocations.
type Stems map[string]string

// Of is word's term (word as EachWord gives it).
func (s Stems) Of(word []byte) string {
	if t, ok := s[string(word)]; ok {
		return t
	}
	t := Stem(string(word))
	s[string(word)] = t
	return t
}

// Starts tells the words that may be one of some terms from the many that
// cannot, so that only those are stemmed: a word's term begins with the
// word's first two bytes, the second a 'y' that may turn 'i' ("eyed":
// "ei"), or is one byte, the word's first (Porter's steps replace
// suffixes; TestStemKeepsItsStart). Its zero value holds none.
type Starts struct {
	one [256]bool            // of one-byte terms: any word of that first byte
	two [1 << 16 / 64]uint64 // of the others: their first two bytes
}

// Add adds a term's start.
func (s *Starts) Add(term string) {
	switch {
	case len(term) == 1:
		s.one[term[0]] = true
	case len(term) > 1:
		k := startKey(term[0], term[1])
		s.two[k/64] |= 1 << (k % 64)
	}
}

// May reports whether word (as EachWord gives it) may be one of the
// terms added.
func (s *Starts) May(word []byte) bool {
	switch {
	case len(word) == 0:
		return false
	case s.one[word[0]]:
		return true
	case len(word) == 1:
		return false
	}
	k := startKey(word[0], word[1])
	return s.two[k/64]&(1<<(k%64)) != 0
}

func startKey(a, b byte) int {
	if b == 'y' {
		b = 'i'
	}
	return int(a)<<8 | int(b)
}

// Each calls fn with each term of s, in order, and the byte offsets of
// the word it came from (s[start:end]), as FTS5's tokenizer reports them.
func Each(s string, fn func(term string, start, end int)) {
	EachWord(s, func(word []byte, start, end int) { fn(Stem(string(word)), start, end) })
}

// EachWord calls fn with each word of s folded but not stemmed (its bytes
// are reused after fn returns), for a caller that stems only the words
// that could be a term it looks for (Starts).
func EachWord(s string, fn func(word []byte, start, end int)) {
	var b []byte
	start := -1
	flush := func(end int) {
		if start >= 0 {
			fn(b, start, end)
			b, start = b[:0], -1
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf { // the common case, without decoding
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				b = append(b, c)
			case 'A' <= c && c <= 'Z':
				b = append(b, c+'a'-'A')
			default:
				flush(i)
				i++
				continue
			}
			if start < 0 {
				start = i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isTokenRune(r) {
			flush(i)
			i += n
			continue
		}
		if start < 0 {
			start = i
		}
		b = utf8.AppendRune(b, fold(r))
		i += n
	}
	flush(len(s))
}

// isTokenRune is unicode61's token character: a letter, a number, or a
// private-use character (its default categories L*, N* and Co).
func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// fold lower-cases r and removes a Latin diacritic (remove_diacritics 2
// folds letters with a diacritic to their base letter).
func fold(r rune) rune {
	if r == 'µ' {
		return 'μ' // the micro sign is the Greek letter, to FTS5
	}
	r = unicode.ToLower(r)
	if r >= 0xe0 && r <= 0x17f {
		if base, ok := latinBase()[r]; ok {
			return base
		}
	}
	return r
}

// latinBase is the base letter of each lower-case letter with a
// diacritic in Latin-1 and Latin Extended-A (the ones typed most; other
// scripts are lower-cased only). Letters whose mark is part of them (đ,
// ł, ø, ħ, ŧ, ı) stay, as FTS5 keeps them.
var latinBase = sync.OnceValue(func() map[rune]rune {
	m := map[rune]rune{}
	for _, group := range strings.Fields(`aàáâãäåāăą cçćĉċč dď eèéêëēĕėęě gĝğġģ hĥ iìíîïĩīĭį jĵ kķ lĺļľ nñńņň oòóôõöōŏő rŕŗř sśŝşš tţť uùúûüũūŭůűų wŵ yýÿŷ zźżž`) {
		rs := []rune(group)
		for _, r := range rs[1:] {
			m[r] = rs[0]
		}
	}
	return m
})
