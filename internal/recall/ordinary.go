package recall

import (
	"context"

	"cx/internal/ledger"
)

// Ordinary is how a project's history weighs a word: a term (of
// internal/words) is ordinary when most of the project's archived
// sessions hold it, and at least two do — "run", "tests", "code" in a
// project whose every session runs its tests. Such a word names no topic:
// continuity does not link a request to a line of work by it. It reads
// the project's per-prompt recall window (its latest turns), current with
// the index; with no archive nothing is ordinary.
func Ordinary(ctx context.Context, db *ledger.DB, home, project string) (func(term string) bool, error) {
	stamp, err := db.RecallWindowStamp(ctx, project)
	if err != nil {
		return nil, err
	}
	w := loadWindow(home, project)
	if w == nil || w.stamp != stamp {
		if w, err = readWindow(ctx, db, home, project); err != nil {
			return nil, err
		}
	}
	return func(term string) bool { return w.ordinary([]string{term}) }, nil
}

// ordinary reports whether the window's sessions make a term (a phrase's
// words) ordinary: most of them hold it, and at least two.
func (w *window) ordinary(terms []string) bool {
	if w.sessions == 0 {
		seen := map[string]bool{}
		for i := range w.nTurns {
			seen[string(w.session(i))] = true
		}
		w.sessions = len(seen)
	}
	held := map[string]bool{}
	for _, i := range w.holdingAll(terms) {
		held[string(w.session(int(i)))] = true
	}
	return len(held) >= 2 && 2*len(held) > w.sessions
}
