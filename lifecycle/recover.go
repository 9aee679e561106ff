package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"cx/internal/codex"
	"cx/internal/crumbs"
	"cx/internal/ledger"
)

// ReasonRecovered ends a session that cx learned of only afterwards, from
// its rollout: the run that had it could not write the ledger (a full disk,
// an I/O error, a damaged or locked ledger).
const ReasonRecovered = "recovered"

// recoverUnrecorded records and commits, once each, the sessions that runs
// and hooks of this CX_HOME on codexHome could not record, as their
// breadcrumbs name them. A thread a process still writes waits for a later
// scan: its writer lock is held; or — a hook's thread, whose Codex may
// still run, on a Codex that keeps no writer locks — its rollout was
// written within active_window. A run's breadcrumb is left after its Codex
// exited, so its threads are done unless another Codex resumed them.
func (m *Manager) recoverUnrecorded(ctx context.Context, codexHome string) (int, error) {
	if codexHome == "" {
		return 0, nil
	}
	codexHome, _ = filepath.Abs(codexHome)
	now := m.now()
	recovered := 0
	for _, b := range crumbs.List(m.cfg.Home) {
		if b.CodexHome != codexHome {
			continue
		}
		waiting := false
		for _, id := range b.Threads {
			n, wait, err := m.recoverThread(ctx, codexHome, id, b.Kind, now)
			if err != nil {
				return recovered, err
			}
			recovered += n
			waiting = waiting || wait
		}
		if !waiting {
			b.Remove()
		}
	}
	if recovered > 0 {
		err := m.db.Tx(ctx, func(tx *ledger.Tx) error {
			return tx.AddEvent(ctx, "rollouts.recovered", "", "", fmt.Sprintf("%d session(s) in %s", recovered, codexHome))
		})
		if err != nil {
			return recovered, err
		}
	}
	return recovered, nil
}

// recoverThread records and ends one thread a breadcrumb names; wait is
// true when it is still being written.
func (m *Manager) recoverThread(ctx context.Context, codexHome, id, kind string, now time.Time) (n int, wait bool, err error) {
	s, err := m.db.Session(ctx, id)
	recorded := err == nil
	switch {
	case recorded && (s.RunID != "" || s.Status != ledger.Live):
		return 0, false, nil // a run has it (resumed), or it is over
	case recorded:
		// A hook recorded it, knowing no run (this one could not write its
		// own): its end is this breadcrumb's to make.
	case !errors.Is(err, ledger.ErrNotFound):
		return 0, false, err
	}
	path := codex.FindRollout(codexHome, id, "")
	if path == "" {
		return 0, false, nil // a thread with no turn: nothing to keep
	}
	if kind == crumbs.Run {
		if codex.ThreadLocked(codexHome, id) {
			return 0, true, nil // resumed by another Codex meanwhile
		}
	} else if codex.RolloutFileLiveness(codexHome, id, path, now, m.cfg.Lifecycle.ActiveWindow.Duration).Live {
		return 0, true, nil
	}
	if !recorded {
		err = m.Learn(ctx, ledger.Session{ID: id, TranscriptPath: path, CodexHome: codexHome, EndReason: ReasonRecovered},
			"session.recovered", "recorded late from its rollout: the ledger could not be written when it ran")
		if err != nil {
			return 0, false, err
		}
	}
	if _, err := m.End(ctx, id, ReasonRecovered, EndOptions{}); err != nil {
		return 0, false, err
	}
	return 1, false, nil
}

// RecoverAtStart is what a run does beside Codex's start: it ends the
// sessions of runs whose cx died, records what earlier runs could not,
// and works the commits left in the outbox (for at most 30 s).
func (m *Manager) RecoverAtStart(ctx context.Context, codexHome string) {
	if _, err := m.recoverOrphans(ctx); err != nil {
		m.log.Printf("orphan recovery at start: %v", err)
	}
	if n, err := m.recoverUnrecorded(ctx, codexHome); err != nil {
		m.log.Printf("recovering unrecorded sessions at start: %v", err)
	} else if n > 0 {
		m.log.Printf("recorded %d session(s) an earlier run could not record", n)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := m.outbox.Work(wctx, nil); err != nil && wctx.Err() == nil {
		m.log.Printf("outbox at start: %v", err)
	}
}
