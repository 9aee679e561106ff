package search

import (
	"context"
	"math"
	"time"

	"cx/internal/ledger"
	"cx/internal/recall"
)

// dated weighs the dates a question names: the turns of a date's span
// that match the question join the hits, and each hit within a span
// gains what a word held by as many turns would add (bm25's idf of the
// span's turns among the project's, as a prompt's word once).
func (a *Archive) dated(ctx context.Context, pq recall.Question, rq ledger.RecallQuery, found []ledger.RecallHit, run *searchRun) ([]ledger.RecallHit, error) {
	total := -1
	for _, d := range pq.Dates {
		from, to, ok := d.Bounds()
		if !ok {
			continue // a day of any year: the window's recall matches it, search does not
		}
		if from.Before(rq.Since) {
			from = rq.Since
		}
		df, err := a.countTurns(ctx, run, rq.Project, from, to)
		if err != nil {
			return nil, err
		}
		if df == 0 {
			continue
		}
		if total < 0 {
			if total, err = a.countTurns(ctx, run, rq.Project, time.Time{}, time.Time{}); err != nil {
				return nil, err
			}
		}
		in := rq
		in.Since, in.Until = from, to
		more, err := a.search(ctx, pq, in, 0, run)
		if err != nil {
			return nil, err
		}
		seen := map[int64]bool{}
		for _, h := range found {
			seen[h.ID] = true
		}
		for _, h := range more {
			if !seen[h.ID] {
				found = append(found, h)
			}
		}
		n := float64(total)
		w := dateWeight * math.Log(1+(n-float64(df)+0.5)/(float64(df)+0.5))
		for i := range found {
			if d.Holds(found[i].At) {
				found[i].Score += w
			}
		}
	}
	return found, nil
}

// dateWeight is a date's weight as a word of a turn's prompt would have
// it (the index weighs the prompt twice the reply: ledger's recallWeights).
const dateWeight = 2.0

// countTurns is how many of project's turns were at or after since and
// before until (zero: unbounded): counted in run's window when it is the
// project's whole, else by the index.
func (a *Archive) countTurns(ctx context.Context, run *searchRun, project string, since, until time.Time) (int, error) {
	if !run.whole {
		return a.db.RecallCount(ctx, project, since, until)
	}
	n := 0
	for i := range run.win.Len() {
		at := run.win.At(i)
		if (since.IsZero() || !at.Before(since)) && (until.IsZero() || at.Before(until)) {
			n++
		}
	}
	return n, nil
}
