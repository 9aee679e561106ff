package search

import (
	"strings"

	"cx/internal/words"
)

// Search's snippets, made in Go for the hits alone. In the ranking
// statement SQLite makes FTS5's snippet() for every turn that matches,
// before it sorts them: most of a plain-words search's time. This is
// snippet(-1, '«', '»', '…', snippetTokens) as FTS5 makes it (sqlite's
// ext/fts5/fts5_aux.c, fts5SnippetFunction): the fragment of
// snippetTokens words with the most distinct phrases of the query (1,000
// for a phrase's first hit in it, 1 for each other), moved to centre its
// hits or, scoring 100 more (120 at the text's start), to the start of
// the sentence its first hit is in; the best of every field; its hits
// marked, "…" where it cuts the field.
const snippetTokens = 24

// token is one word of a field: its term and where it is.
type token struct {
	term       string
	start, end int
}

// hit is one phrase instance in a field: which phrase, at which word.
type hit struct{ phrase, at int }

// snippet makes the snippet of fields (prompt, reply, commands, files)
// for a query's phrases (each its terms).
func snippet(fields []string, phrases [][]string) string {
	type field struct {
		text      string
		tokens    []token
		hits      []hit
		sentences []int // the words that begin a sentence
	}
	starts := startsOf(phrases) // the others keep their place, with no term
	stems := words.Stems{}
	fs := make([]field, len(fields))
	for i, text := range fields {
		f := &fs[i]
		f.text = text
		words.EachWord(text, func(w []byte, start, end int) {
			term := ""
			if starts.May(w) {
				term = stems.Of(w)
			}
			n := len(f.tokens)
			// A word begins a sentence when whitespace after a '.' or ':'
			// comes before it.
			j := start - 1
			for j >= 0 && strings.IndexByte(" \t\n\r", text[j]) >= 0 {
				j--
			}
			if n == 0 || (j != start-1 && j >= 0 && (text[j] == '.' || text[j] == ':')) {
				f.sentences = append(f.sentences, n)
			}
			f.tokens = append(f.tokens, token{term, start, end})
		})
		for at := range f.tokens {
			for p, terms := range phrases {
				if matchAt(f.tokens, at, terms) {
					f.hits = append(f.hits, hit{p, at})
				}
			}
		}
	}
	// score is fts5SnippetScore: the hits in [from, from+snippetTokens) of
	// field i, and the start that centres them.
	score := func(i, from int) (int, int) {
		f := &fs[i]
		seen := make([]bool, len(phrases))
		sc, first, last := 0, -1, 0
		for _, h := range f.hits {
			if h.at < from || h.at >= from+snippetTokens {
				continue
			}
			if seen[h.phrase] {
				sc++
			} else {
				sc += 1000
			}
			seen[h.phrase] = true
			if first < 0 {
				first = h.at
			}
			last = h.at + len(phrases[h.phrase])
		}
		adj := first - (snippetTokens-(last-first))/2
		if adj+snippetTokens > len(f.tokens) {
			adj = len(f.tokens) - snippetTokens
		}
		return sc, max(adj, 0)
	}
	bestField, bestStart, bestScore := 0, 0, 0
	for i := range fs {
		f := &fs[i]
		for _, h := range f.hits {
			if sc, adj := score(i, h.at); sc > bestScore {
				bestField, bestStart, bestScore = i, adj, sc
			}
			if len(f.sentences) > 0 && len(f.tokens) > snippetTokens {
				jj := 0
				for jj < len(f.sentences)-1 && f.sentences[jj+1] <= h.at {
					jj++
				}
				if s := f.sentences[jj]; s < h.at {
					sc, _ := score(i, s)
					if s == 0 {
						sc += 120
					} else {
						sc += 100
					}
					if sc > bestScore {
						bestField, bestStart, bestScore = i, s, sc
					}
				}
			}
		}
	}
	return highlight(fs[bestField].text, fs[bestField].tokens, fs[bestField].hits, phrases, bestStart)
}

// matchAt reports whether the phrase terms begins at word at.
func matchAt(tokens []token, at int, terms []string) bool {
	if len(terms) == 0 || at+len(terms) > len(tokens) {
		return false
	}
	for k, t := range terms {
		if tokens[at+k].term != t {
			return false
		}
	}
	return true
}

// highlight is the fragment of text from word from, snippetTokens words
// long, its hits between « and » (hits that overlap are one), "…" where
// it cuts the text.
func highlight(text string, tokens []token, hits []hit, phrases [][]string, from int) string {
	// The hits coalesced: runs of words [start, end], in order.
	type run struct{ start, end int }
	var runs []run
	for _, h := range hits {
		end := h.at + len(phrases[h.phrase]) - 1
		if n := len(runs); n > 0 && h.at <= runs[n-1].end {
			runs[n-1].end = max(runs[n-1].end, end)
			continue
		}
		runs = append(runs, run{h.at, end})
	}
	for len(runs) > 0 && runs[0].start < from {
		runs = runs[1:]
	}
	last := from + snippetTokens - 1
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	off, open := 0, false
	for pos, tk := range tokens {
		if pos < from || pos > last {
			continue
		}
		if from > 0 && pos == from {
			off = tk.start
		}
		next := run{-1, -1}
		if len(runs) > 0 {
			next = runs[0]
		}
		if open && (pos <= next.start || next.start < 0) && tk.start > off {
			b.WriteString("»")
			open = false
		}
		if pos == next.start && !open {
			b.WriteString(text[off:tk.start])
			b.WriteString("«")
			off, open = tk.start, true
		}
		if pos == next.end {
			if !open {
				b.WriteString("«")
				open = true
			}
			b.WriteString(text[off:tk.end])
			off = tk.end
			runs = runs[1:]
			next = run{-1, -1}
			if len(runs) > 0 {
				next = runs[0]
			}
		}
		if pos == last {
			if open {
				if next.start >= 0 && pos >= next.start {
					b.WriteString(text[off:tk.end])
					off = tk.end
				}
				b.WriteString("»")
				open = false
			}
			b.WriteString(text[off:tk.end])
			off = tk.end
		}
	}
	if open {
		b.WriteString("»")
	}
	if last >= len(tokens)-1 {
		b.WriteString(text[off:])
	} else {
		b.WriteString("…")
	}
	return b.String()
}
