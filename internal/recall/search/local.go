package search

import (
	"context"
	"math"
	"sort"

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

// A project's candidates, the turns it scores, come from its window when
// the window holds every turn of the project as the index has them now
// (most projects: a window holds the latest thousand): the turns that
// hold a word of the query, best first by bm25 with each word's rarity in
// the project and once per turn. The index's full-text match would read
// every project's turns that hold a word, score each with the whole
// index's rarities, and join each to its turn to keep the project's: the
// larger part of a search's work, for candidates that the window ranks
// by the project's own rarities, as the scores below do. Otherwise (a
// larger project, a window not yet current, no window) the index finds
// them.

// searchRun is what one search reads once and uses at each step: its
// project's window (nil for none), whether the window is the project's
// whole (its candidates come from it), and the texts read so far.
type searchRun struct {
	win   *recall.Window
	whole bool
	known map[int64]ledger.RecallText
}

// newRun is a search of rq's project.
func (a *Archive) newRun(ctx context.Context, rq ledger.RecallQuery) (*searchRun, error) {
	r := &searchRun{known: map[int64]ledger.RecallText{}}
	if rq.Project == "" {
		return r, nil
	}
	r.win = recall.LoadWindow(a.projects.Home(), rq.Project)
	if r.win != nil && r.win.Whole() {
		stamp, err := a.db.RecallWindowStamp(ctx, rq.Project)
		if err != nil {
			return nil, err
		}
		r.whole = stamp == r.win.Stamp()
	}
	return r, nil
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
	phrases := pq.Phrases()
	idf := make([]float64, len(phrases))
	holders := make([][]uint16, len(phrases))
	n := float64(w.Len())
	for i, ph := range phrases {
		holders[i] = w.HoldingAll(ph)
		df := float64(len(holders[i]))
		idf[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	var found []ledger.RecallHit
	var err error
	if run.whole {
		found, err = a.candidates(ctx, run, holders, idf, rq)
	} else {
		found, err = a.db.Search(ctx, rq)
	}
	if err != nil || len(found) == 0 {
		return found, err
	}
	texts, err := a.textsOf(ctx, found, run.known)
	if err != nil {
		return nil, err
	}
	starts := startsOf(phrases) // the others are counted, not stemmed
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
				if starts.May(w) {
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

// candidates are a query's candidate turns from run's whole window (above):
// at most rq.Limit of those within rq's span that hold one of its phrases
// (holders, with their rarities idf), best first, ties to the newer; their
// texts are added to run's.
func (a *Archive) candidates(ctx context.Context, run *searchRun, holders [][]uint16, idf []float64, rq ledger.RecallQuery) ([]ledger.RecallHit, error) {
	w := run.win
	score := make([]float64, w.Len())
	for i, hs := range holders {
		for _, t := range hs {
			score[t] += idf[i]
		}
	}
	mean := 0.0
	for i := range w.Len() {
		mean += float64(w.Chars(i))
	}
	mean = max(mean/float64(w.Len()), 1)
	var held []int
	for i, s := range score {
		if s == 0 || !rq.Since.IsZero() && w.At(i).Before(rq.Since) || !rq.Until.IsZero() && !w.At(i).Before(rq.Until) {
			continue
		}
		// bm25, each word once: a longer turn holds more words by chance.
		score[i] = s * 2.2 / (1 + 1.2*(0.25+0.75*float64(w.Chars(i))/mean))
		held = append(held, i)
	}
	sort.SliceStable(held, func(x, y int) bool {
		return score[held[x]] > score[held[y]] || score[held[x]] == score[held[y]] && held[x] > held[y]
	})
	held = held[:min(len(held), rq.Limit)]
	ids := make([]int64, len(held))
	for k, i := range held {
		ids[k] = w.ID(i)
	}
	found, texts, err := a.db.RecallTurnsByID(ctx, ids)
	for id, t := range texts {
		run.known[id] = t
	}
	return found, err
}

// startsOf tells the words that may be one of phrases' terms (only a word
// that begins as one can be one): only those are stemmed.
func startsOf(phrases [][]string) *words.Starts {
	var s words.Starts
	for _, ph := range phrases {
		for _, t := range ph {
			s.Add(t)
		}
	}
	return &s
}
