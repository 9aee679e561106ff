// Package runproc says what the machine's processes tell of a run in the
// ledger: whether its cx or its Codex still runs, whether a hook came from
// its Codex, and which threads another run's Codex may hold. The facts are
// internal/proc's, so it works alike on Linux and macOS.
package runproc

import (
	"context"
	"slices"
	"time"

	"cx/internal/codex"
	"cx/internal/ledger"
	"cx/internal/proc"
	"cx/internal/rollout"
)

// CxAlive reports whether the run's cx still runs (its pid not reused).
func CxAlive(r ledger.Run) bool { return proc.Alive(r.PID, r.PIDStart) }

// CodexAlive reports whether the run's recorded Codex still runs.
func CodexAlive(r ledger.Run) bool {
	return r.CodexPID != 0 && proc.Alive(r.CodexPID, r.CodexStart)
}

// codexMayRun reports whether the run's Codex runs, or is not recorded yet
// while its cx runs (the run records it just after starting it).
func codexMayRun(r ledger.Run) bool {
	return CodexAlive(r) || (r.CodexPID == 0 && CxAlive(r))
}

// BornBeside tells whether a thread was born (its id is a UUIDv7) after
// the start of a run among runs, other than self, of the Codex home home,
// whose Codex may run: that Codex's thread, maybe. Codex 0.128 keeps no
// writer lock and a quick `exec` logs no thread rows, so nothing on disk
// says whose such a thread is.
func BornBeside(runs []ledger.Run, self, home string) func(id string) bool {
	var since []time.Time
	for _, o := range runs {
		if o.ID != self && o.CodexHome == home && o.EndedAt == nil && codexMayRun(o) {
			since = append(since, o.StartedAt.Add(-time.Second)) // clocks round
		}
	}
	return func(id string) bool {
		born, ok := rollout.IDTime(id)
		return ok && slices.ContainsFunc(since, func(t time.Time) bool { return !born.Before(t) })
	}
}

// HookFrom reports whether a hook whose process's parent is ppid came from
// run's Codex: its nearest ancestor that is not a shell must be that Codex
// (pid and start time). A nested Codex started by the model, or a shared
// daemon's hooks carrying a stale CX_RUN_ID, fail this. Until the run has
// recorded Codex's pid, its Codex is known as the child of the run's cx,
// or of its session leader.
func HookFrom(run ledger.Run, ppid int) bool {
	// The chain past the hook's shells: Codex, then (while the run has
	// not recorded Codex) the two above it.
	var chain []proc.Stat
	for st := range proc.Ancestors(ppid, 6) {
		if len(chain) == 0 && codex.IsHookShell(st.Comm) {
			continue
		}
		chain = append(chain, st)
		if run.CodexPID != 0 || len(chain) == 3 {
			break
		}
	}
	if len(chain) == 0 {
		return false
	}
	if st := chain[0]; run.CodexPID != 0 {
		return st.PID == run.CodexPID && (run.CodexStart == 0 || st.StartTime == run.CodexStart)
	}
	isRun := func(p proc.Stat) bool { return p.PID == run.PID && p.StartTime == run.PIDStart }
	up := chain[1:]
	if len(up) > 1 && up[0].Comm == up[1].Comm {
		up = up[1:] // the session leader, a copy of cx (a nested Codex's parent is a Codex)
	}
	return len(up) > 0 && isRun(up[0])
}

// Attribute reads the run named by a hook's CX_RUN_ID and decides whether
// the hook (its parent ppid) came from that run's Codex (HookFrom). The
// wrapper records its run beside Codex's start, so a very early hook may
// arrive first, and a ledger busy past its timeout delays the record of
// Codex's pid: the run is read again for up to a second until it names
// its Codex. An ended run owns no hook.
func Attribute(ctx context.Context, db *ledger.DB, runID string, ppid int) (ledger.Run, bool) {
	if runID == "" || ppid <= 1 {
		return ledger.Run{}, false
	}
	deadline := time.Now().Add(time.Second)
	for {
		run, err := db.Run(ctx, runID)
		if err == nil && run.CodexPID != 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil || run.EndedAt != nil {
				return ledger.Run{}, false
			}
			return run, HookFrom(run, ppid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
