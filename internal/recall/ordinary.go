package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"

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
	w := LoadWindow(home, project)
	if w == nil || w.Stamp() != stamp {
		if w, err = ReadWindow(ctx, db, home, project, w); err != nil {
			return nil, err
		}
	}
	return func(term string) bool { return w.Ordinary([]string{term}) }, nil
}

// ordinary reports whether the window's sessions make a term (a phrase's
// words) ordinary: most of them hold it, and at least two.
func (w *Window) Ordinary(terms []string) bool {
	defer runtime.KeepAlive(w) // its bytes may be a mapping, released with w
	if w.sessions == 0 {
		seen := map[string]bool{}
		for i := range w.Len() {
			seen[string(w.session(i))] = true
		}
		w.sessions = len(seen)
	}
	held := map[string]bool{}
	for _, i := range w.HoldingAll(terms) {
		held[string(w.session(int(i)))] = true
	}
	return len(held) >= 2 && 2*len(held) > w.sessions
}

// neighbours reports whether window turns i and n are next to each other in one session.
func (w *Window) Neighbours(i, n int) bool {
	defer runtime.KeepAlive(w)
	if !bytes.Equal(w.session(i), w.session(n)) {
		return false
	}
	ti := int(binary.LittleEndian.Uint32(w.turns[i*windowTurnLen+20:]))
	tn := int(binary.LittleEndian.Uint32(w.turns[n*windowTurnLen+20:]))
	return ti-tn == 1 || tn-ti == 1
}
