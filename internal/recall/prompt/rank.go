package prompt

import (
	"math"
	"slices"
	"sort"

	"cx/internal/ledger"
	"cx/internal/nearwords"
	"cx/internal/recall"
	"cx/internal/words"
)

// windowHit is a window's turn above the floor: its coverage of the prompt
// (the floor's measure, and the item's score).
type windowHit struct {
	turn  int // in the window
	cover float64
	// follows: the turn comes only as the one after a turn above the
	// floor (its own coverage is below it), so only with that turn.
	follows bool
	// precedes: the turn comes only as the one before a turn above the
	// floor.
	precedes bool
}

// rank orders the window's turns for a prompt's terms (each a word's
// terms, or a quoted phrase's), the turns of session left out, best
// first, those whose coverage is below floor dropped; at most
// 2*candidates (what the thread was given before is left out after).
//
// Per-prompt recall runs on every prompt, so its cost must not grow with
// the archive: it looks at the project's latest recallWindow turns (its
// window), and ranks them itself rather than with FTS5's bm25, whose word
// weights come from reading every turn that holds each word, in the whole
// index. A turn's score is its coverage of the prompt, the words weighed
// by their rarity in the window (see weights), a date the prompt names
// held by the turns of that day; the best by coverage are ordered by
// bm25 over their items' text times their coverage; a word near one of the
// prompt's in meaning (near: internal/nearwords; nil for none) counts for a
// share of it; the turn after a turn gains half its rank
// (the answer follows the question, as in search: internal/recall/search), and
// one below the floor comes only with that turn; the turn before, when it
// holds a topical word of the prompt itself, joins too, right after that
// turn in the order and only with it when below the floor; ties go to the
// newer turn.
func rank(w *recall.Window, terms [][]string, dates []recall.DateSpan, session string, floor float64, near func(term string) []nearwords.Near) []windowHit {
	own := func(i int) bool { return session != "" && w.SessionIs(i, session) }
	size := 0
	for i := 0; i < w.Len(); i++ {
		if !own(i) {
			size++
		}
	}
	// A word most of the project's sessions hold names no topic there
	// ("run", "tests" where every session runs its tests): a turn is
	// recalled for holding a word that does (or a date the prompt names),
	// and a prompt of ordinary words alone recalls nothing.
	topical := make([]bool, len(terms), len(terms)+len(dates))
	topic := len(dates) > 0
	for j, t := range terms {
		topical[j] = !w.Ordinary(t)
		topic = topic || topical[j]
	}
	if !topic {
		return nil
	}
	for range dates {
		topical = append(topical, true)
	}
	rows := make([][]uint16, len(terms), len(terms)+len(dates))
	for j, t := range terms {
		for _, i := range w.HoldingAll(t) {
			if !own(int(i)) {
				rows[j] = append(rows[j], i)
			}
		}
	}
	for _, d := range dates { // a date is held by the turns of its day
		var row []uint16
		for i := 0; i < w.Len(); i++ {
			if !own(i) && d.Holds(w.At(i)) {
				row = append(row, uint16(i))
			}
		}
		rows = append(rows, row)
	}
	idf := weights(rows, size)
	// A turn holds a word fully, or, when only the turn next to it in its
	// session does, a share of it (recall.NextShare): a conversation's question
	// and its answer are two turns, and the answer need not repeat the
	// question's words (a passage's coverage, not a turn's alone).
	// By turn in the window (a window has at most recall.WindowTurns).
	score := make([]float64, w.Len())
	named := make([]bool, w.Len()) // a turn (or its neighbour) holds a topical word
	held := make([]float64, w.Len())
	// names: the turn or the one next to it holds the word itself (a
	// word near it in meaning adds to the coverage but names no topic).
	names := make([]bool, w.Len())
	var touched []int // the turns held has a share for
	hold := func(i int, share float64, itself bool) {
		if held[i] == 0 {
			touched = append(touched, i)
		}
		held[i] = max(held[i], share)
		names[i] = names[i] || itself
	}
	itself := make([]bool, w.Len()) // the turn itself holds a topical word
	for j, ids := range rows {
		for _, i := range touched {
			held[i], names[i] = 0, false
		}
		touched = touched[:0]
		for _, i := range ids {
			itself[i] = itself[i] || topical[j]
			hold(int(i), 1, true)
			for _, n := range []int{int(i) - 1, int(i) + 1} {
				if n >= 0 && n < w.Len() && !own(n) && w.Neighbours(int(i), n) {
					hold(n, recall.NextShare, true)
				}
			}
		}
		// A turn that holds a word near the prompt's in meaning (and not the
		// word) holds a share of it, as near as the words are: "kids" finds
		// a turn about the children.
		if near != nil && j < len(terms) && len(terms[j]) == 1 {
			for _, n := range near(terms[j][0]) {
				for _, i := range w.Holding(n.Term) {
					if !own(int(i)) {
						hold(int(i), NearShare*n.Cosine, false)
					}
				}
			}
		}
		for _, i := range touched {
			score[i] += held[i] * idf[j]
			// A likeness alone recalls nothing: the turn (or the one next
			// to it) holds a topical word itself.
			named[i] = named[i] || topical[j] && names[i]
		}
	}
	var cands []int
	for i, sc := range score {
		if sc > 0 && sc >= floor && named[i] {
			cands = append(cands, i)
		}
	}
	sort.Slice(cands, func(x, y int) bool {
		if score[cands[x]] != score[cands[y]] {
			return score[cands[x]] > score[cands[y]]
		}
		return cands[x] > cands[y]
	})
	// Among the best by coverage, the order is bm25's (k1 1.2, b 0.75) over
	// what an item of the turn holds, times the coverage: a turn that says
	// the prompt's words more often, in fewer words, is more about them;
	// the floor stays on coverage, which does not depend on that.
	cands = cands[:min(len(cands), preselect)]
	hits := make([]recall.WindowTurn, len(cands))
	counts := make([]map[string]int, len(cands))
	lens := make([]int, len(cands))
	var starts words.Starts // only a word that begins as one of terms can be one
	for _, ph := range terms {
		if len(ph) > 0 {
			starts.Add(ph[0])
		}
	}
	stems := words.Stems{}
	mean := 0.0
	for k, i := range cands {
		hits[k] = w.Turn(i)
		counts[k], lens[k] = termCounts(hits[k].Body, &starts, stems)
		mean += float64(lens[k])
	}
	mean = max(mean/float64(max(len(hits), 1)), 1)
	rank := map[int]float64{}
	for k, i := range cands {
		norm := 1.2 * (0.25 + 0.75*float64(lens[k])/mean)
		for j, ids := range rows {
			if _, held := slices.BinarySearch(ids, uint16(i)); !held {
				continue
			}
			f := 1.0 // a date, or a word the item's text lost to its bound
			if j < len(terms) && len(terms[j]) > 0 {
				f = max(f, float64(counts[k][terms[j][0]]))
			}
			rank[i] += idf[j] * f * 2.2 / (f + norm)
		}
		// bm25 knows the turn alone; its coverage knows the passage (what
		// the turns next to it hold) and the prompt's dates: a turn ranks
		// by both, the one scaled by the other.
		rank[i] *= score[i]
	}
	order := make([]int, len(cands)) // positions in cands
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(x, y int) bool { return rank[cands[order[x]]] > rank[cands[order[y]]] })
	order = order[:min(len(order), candidates)]
	// The turn after each candidate (in the window, not the thread's own)
	// joins them.
	type entry struct {
		at          int // in the window
		t           recall.WindowTurn
		cover, rank float64
		follows     bool
		precedes    bool
		before      bool // joined as the turn before one of the list
	}
	var list []entry
	for _, k := range order {
		list = append(list, entry{at: cands[k], t: hits[k], cover: score[cands[k]], rank: rank[cands[k]]})
	}
	at := map[ledger.Place]int{}
	for k, e := range list {
		at[ledger.Place{SessionID: e.t.SessionID, Turn: e.t.Turn}] = k
	}
	kept := len(list)
	for k := 0; k < kept; k++ {
		next := list[k].at + 1 // a session's turns are indexed in order, so its next turn follows it in the window
		for ; next < w.Len(); next++ {
			if w.SessionIs(next, list[k].t.SessionID) {
				break
			}
		}
		if next >= w.Len() || own(next) {
			continue
		}
		nt := w.Turn(next)
		if nt.Turn != list[k].t.Turn+1 {
			continue
		}
		if _, ok := at[ledger.Place{SessionID: nt.SessionID, Turn: nt.Turn}]; ok {
			continue
		}
		at[ledger.Place{SessionID: nt.SessionID, Turn: nt.Turn}] = len(list)
		list = append(list, entry{at: next, t: nt, cover: score[next], rank: rank[next], follows: score[next] < floor})
	}
	// So does the turn before, when it holds a word of the prompt that is
	// not ordinary itself (the question's words in the answer's turn, the
	// answer in the turn before: search's passage takes it the same way),
	// and comes only with that turn when below the floor.
	for k := 0; k < kept; k++ {
		prev := list[k].at - 1
		for ; prev >= 0; prev-- {
			if w.SessionIs(prev, list[k].t.SessionID) {
				break
			}
		}
		if prev < 0 || own(prev) || !itself[prev] {
			continue
		}
		pt := w.Turn(prev)
		if pt.Turn != list[k].t.Turn-1 {
			continue
		}
		if _, ok := at[ledger.Place{SessionID: pt.SessionID, Turn: pt.Turn}]; ok {
			continue
		}
		at[ledger.Place{SessionID: pt.SessionID, Turn: pt.Turn}] = len(list)
		list = append(list, entry{at: prev, t: pt, cover: score[prev], rank: rank[prev], precedes: score[prev] < floor, before: true})
	}
	// The turn after a turn gains a share of that turn's rank, as in
	// search (recall.NextShare); one below the floor comes with that turn, never
	// above it.
	before := make([]float64, len(list))
	for k := range list {
		before[k] = list[k].rank
	}
	for k := range list {
		if j, ok := at[ledger.Place{SessionID: list[k].t.SessionID, Turn: list[k].t.Turn - 1}]; ok {
			list[k].rank += recall.NextShare * before[j]
			if list[k].follows {
				list[k].rank = min(list[k].rank, before[j])
			}
		}
	}
	sort.SliceStable(list, func(x, y int) bool {
		i, j := list[x], list[y]
		switch {
		case i.rank != j.rank:
			return i.rank > j.rank
		case i.t.SessionID == j.t.SessionID:
			return i.t.Turn < j.t.Turn // a turn before the one after it, which took its score
		}
		return i.t.ID > j.t.ID
	})
	// A turn that comes only before another is next after it in this order
	// (fit gives a passage's turns in their order), so it is weighed only
	// once that one is given.
	lead := map[ledger.Place]entry{}
	for _, e := range list {
		if e.before {
			lead[ledger.Place{SessionID: e.t.SessionID, Turn: e.t.Turn + 1}] = e
		}
	}
	var out []windowHit
	add := func(e entry) {
		if (e.cover >= floor || e.follows || e.precedes) && len(out) < 2*candidates {
			out = append(out, windowHit{e.at, e.cover, e.follows, e.precedes})
		}
	}
	for _, e := range list {
		if !e.before {
			add(e)
			if l, ok := lead[ledger.Place{SessionID: e.t.SessionID, Turn: e.t.Turn}]; ok {
				add(l)
			}
		}
	}
	return out
}

// NearShare is the share of a prompt's word a turn holds for each unit of
// cosine of a word near it in meaning (nearwords.MinCos is the least):
// at most half, as the turn next to one that holds it.
const NearShare = 0.5

// weights are the prompt's terms' weights, normalised to sum to 1: each
// term's rarity (bm25's idf) among size turns, given the turns that hold
// it. Rarity is judged as if there were at least minArchive turns: in a
// young archive every word is rare, and a word it never saw ("last",
// "time") would outweigh the ones a turn shares with the prompt.
func weights(rows [][]uint16, size int) []float64 {
	n := float64(max(size, minArchive))
	idf := make([]float64, len(rows))
	sum := 0.0
	for i, ids := range rows {
		df := float64(len(ids))
		idf[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
		sum += idf[i]
	}
	for i := range idf {
		if sum > 0 {
			idf[i] /= sum
		}
	}
	return idf
}

// minArchive is the fewest turns coverage weighs words against.
const minArchive = 1000

// preselect is how many turns, best by coverage, are ordered by bm25.
const preselect = 3 * candidates

// termCounts counts the terms of text whose word may be one of starts'
// (the others are counted, not stemmed), and all words.
func termCounts(text string, starts *words.Starts, stems words.Stems) (map[string]int, int) {
	counts := map[string]int{}
	n := 0
	words.EachWord(text, func(w []byte, _, _ int) {
		n++
		if starts.May(w) {
			counts[stems.Of(w)]++
		}
	})
	return counts, n
}
