package lifecycle

import (
	"context"

	"cx/internal/codex"
	"cx/internal/ledger"
)

// A run of `codex app-server` learns and ends its threads from the
// JSON-RPC frames the supervisor's tap reads (internal/codex names what
// they mean); these are the state machine's side of it.

// LearnThread records a thread of this app-server as a session of the run; a
// resumed one is live again (its next turns are the next generation).
func (r *Run) LearnThread(ctx context.Context, th codex.AppThread, resume bool) {
	err := r.m.db.Tx(ctx, func(tx *ledger.Tx) error {
		run, err := tx.Run(ctx, r.info.ID)
		if err != nil {
			return err
		}
		s, _, err := r.m.ensureSession(ctx, tx, ledger.Session{ID: th.ID, RunID: run.ID, Sinks: run.Sinks,
			TranscriptPath: th.Path, Cwd: th.Cwd, CodexHome: run.CodexHome, EndReason: "app-server"})
		if err != nil {
			return err
		}
		if s.RunID != run.ID {
			adopt(&s, run)
		}
		if resume && s.Status != ledger.Live {
			r.m.openNext(&s, tx, s.Cursor.Seen)
		}
		return tx.PutSession(ctx, s)
	})
	if err != nil {
		r.m.log.Printf("app-server: learn thread %s: %v", th.ID, err)
	}
}

// EndThread ends a thread Codex closed (or unloaded), for the reason of
// the signal stopping the run if one is.
func (r *Run) EndThread(ctx context.Context, id string) {
	if id == "" {
		return
	}
	if _, err := r.m.End(ctx, id, r.m.endReason(ctx, r.info.ID, reasonSessionEnd), EndOptions{}); err != nil {
		r.m.log.Printf("app-server: end %s: %v", id, err)
	}
}

// TurnCompleted captures a thread's finished turn (app-server dispatches no
// Stop hook) and arms sending it to the remote sinks.
func (r *Run) TurnCompleted(ctx context.Context, id string) {
	if id == "" {
		return
	}
	if _, _, err := r.m.capture(ctx, id, 0, r.m.armAppends); err != nil {
		r.m.log.Printf("app-server: capture %s: %v", id, err)
	}
}

// Logf writes a line to cx.log.
func (r *Run) Logf(format string, args ...any) { r.m.log.Printf(format, args...) }
