package search

import (
	"context"
	"math"

	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/words"
)

// A project's search weighs a word by its rarity in that project, not in
// the whole index: the index holds every project's turns, and a word
// common in one project (its own subject) says little there however rare
// it is elsewhere. FTS5's bm25 knows only the whole index, so a project's
// hits are scored again by bm25 with each word's rarity among the
// project's latest turns (its recall window, the file per-prompt recall
// reads; kept by the index's upkeep) and each hit's own text, times its
// coverage — the share of the query's weighed words it holds: a turn that
// holds more of what was asked outranks one that repeats one word; a word
// only the turn next to it in its session holds counts for half (its
// passage's coverage, as per-prompt recall's). Without a
// window (an unknown project, every project) bm25's own score stands.

// fieldWeights are the index's column weights (ledger's recallWeights):
// a prompt's words count twice, a file name's half.
var fieldWeights = [4]float64{2, 1, 1, 0.5}

// localPool is how many of the index's best a project search scores
// again, at least (a date's turns are looked for among fewer: those the
// index finds best in its span).
const localPool = 40

// searchRun is what one search reads once and uses at each step: its
// project's window (nil for none) and the texts read so far.
type searchRun struct {
	win   *recall.Window
	known map[int64]ledger.RecallText
}

// newRun is a search of rq's project.
func (a *Archive) newRun(rq ledger.RecallQuery) *searchRun {
	r := &searchRun{known: map[int64]ledger.RecallText{}}
	if rq.Project != "" {
		r.win = recall.LoadWindow(a.projects.Home(), rq.Project)
	}
	return r
}

// search runs rq, a plain query's hits scored by their project's word
// rarity (above) when run has its window; the texts it reads are added
// to run's.
func (a *Archive) search(ctx context.Context, pq recall.Question, rq ledger.RecallQuery, pool int, run *searchRun) ([]ledger.RecallHit, error) {
	w := run.win
	if !pq.Natural || w == nil || w.Len() == 0 {
		return a.db.Search(ctx, rq)
	}
	limit := rq.Limit
	rq.Limit = max(limit, pool)
	found, err := a.db.Search(ctx, rq)
	if err != nil || len(found) == 0 {
		return found, err
	}
	texts, err := a.textsOf(ctx, found, run.known)
	if err != nil {
		return nil, err
	}
	phrases := pq.Phrases()
	idf := make([]float64, len(phrases))
	holders := make([][]uint16, len(phrases))
	n := float64(w.Len())
	for i, ph := range phrases {
		holders[i] = w.HoldingAll(ph)
		df := float64(len(holders[i]))
		idf[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	// Only a word that begins as one of the query's terms can be one:
	// the others are counted, not stemmed.
	var first [256]bool
	for _, ph := range phrases {
		for _, t := range ph {
			first[t[0]] = true
		}
	}
	total := 0.0
	for _, v := range idf {
		total += v
	}
	stems := words.Stems{}
	counts := make([][4]map[string]int, len(found))
	lens := make([]int, len(found))
	mean := 0.0
	for k, h := range found {
		t := texts[h.ID]
		for f, s := range [4]string{t.Prompt, t.Reply, t.Commands, t.Files} {
			c := map[string]int{}
			words.EachWord(s, func(w []byte, _, _ int) {
				lens[k]++
				if first[w[0]] {
					c[stems.Of(w)]++
				}
			})
			counts[k][f] = c
		}
		mean += float64(lens[k])
	}
	mean = max(mean/float64(len(found)), 1)
	for k := range found {
		norm := 1.2 * (0.25 + 0.75*float64(lens[k])/mean)
		at := w.IndexOf(found[k].ID)
		score, held := 0.0, 0.0
		for i, ph := range phrases {
			if len(ph) == 0 {
				continue
			}
			f := 0.0
			for c, wt := range fieldWeights {
				n := counts[k][c][ph[0]]
				for _, t := range ph[1:] {
					n = min(n, counts[k][c][t]) // a phrase: as often as its rarest word
				}
				f += wt * float64(n)
			}
			switch {
			case f > 0:
				score += idf[i] * f * 2.2 / (f + norm)
				held += idf[i]
			case at >= 0 && w.NextToOneOf(at, holders[i]):
				// A word the turn next to it holds counts for a share of
				// its coverage (its passage's, as per-prompt recall's).
				held += recall.NextShare * idf[i]
			}
		}
		found[k].Score = score * held / total // times its coverage, as per-prompt recall's order
	}
	sortHits(found)
	return found[:min(len(found), limit)], nil
}
