package lifecycle

import (
	"context"
	"fmt"

	"cx/internal/ledger"
	"cx/internal/outbox"
	"cx/internal/testpoint"
)

// EndOptions qualify one end.
type EndOptions struct {
	ExitStatus *int
	// OnlyGeneration, when non-zero, ends only that generation (a racing
	// ender that saw generation g must not end g+1).
	OnlyGeneration int
}

// endLive ends the session's live generation with reason, in one
// transaction with its commit jobs. It reports whether this call ended it
// (false: not live, or another ender won).
func (m *Manager) endLive(ctx context.Context, id, reason string, o EndOptions) (bool, error) {
	ended := false
	err := m.db.Tx(ctx, func(tx *ledger.Tx) (err error) {
		ended, err = m.endInTx(ctx, tx, id, reason, o)
		return err
	})
	if err == nil && ended {
		testpoint.Crash("ended")
	}
	return ended && err == nil, err
}

// endInTx is endLive inside the caller's transaction.
func (m *Manager) endInTx(ctx context.Context, tx *ledger.Tx, id, reason string, o EndOptions) (bool, error) {
	s, err := tx.Session(ctx, id)
	if err != nil {
		return false, err
	}
	if s.Status != ledger.Live || (o.OnlyGeneration != 0 && s.Generation != o.OnlyGeneration) {
		return false, nil
	}
	n, err := tx.CountTurns(ctx, s.ID, s.Generation)
	if err != nil {
		return false, err
	}
	now := tx.Now()
	if n == 0 && s.Generation > 1 {
		// A reopened generation that never got a turn (a resume without a
		// prompt): it never happened; the session is as it was, but
		// ended the way it just ended (a compaction, then a closed
		// terminal, shows the hangup, not the compaction).
		prev, err := tx.Generation(ctx, s.ID, s.Generation-1)
		if err == nil {
			s.Generation, s.Status, s.EndReason, s.EndedAt = prev.Generation, prev.Status, reason, &now
			s.Turns = prev.Turns
			_ = tx.AddEvent(ctx, "generation.discarded", s.ID, s.RunID, reason)
			return true, tx.PutSession(ctx, s)
		}
	}
	g := ledger.Generation{SessionID: s.ID, Generation: s.Generation, EndReason: reason, RunID: s.RunID, Sinks: s.Sinks,
		StartOffset: s.GenStart, EndOffset: s.Cursor.Seen, Turns: n, ExitStatus: o.ExitStatus, EndedAt: now}
	switch {
	case n == 0:
		g.Status = ledger.Empty
	case len(s.Sinks) == 0:
		g.Status, g.CommittedAt = ledger.Committed, &now // CX_SINKS=none: recorded, nothing sent
	default:
		g.Status = ledger.Ended
	}
	if err := tx.InsertGeneration(ctx, g); err != nil {
		return false, err
	}
	if g.Status != ledger.Empty {
		// The checkpoint at the end, from the ledger: the local sink
		// archives it without reading the rollout again.
		if cp, _, ok, err := checkpointOf(ctx, tx, s.ID); err != nil {
			return false, err
		} else if ok {
			if err := tx.SetGenerationCheckpoint(ctx, s.ID, g.Generation, string(cp.JSON())); err != nil {
				return false, err
			}
		}
	}
	if g.Status == ledger.Ended {
		for _, sink := range s.Sinks {
			if _, err := tx.Enqueue(ctx, outbox.JobCommit, s.ID, s.Generation, sink); err != nil {
				return false, err
			}
		}
	}
	s.Status, s.EndReason, s.EndedAt, s.Turns = g.Status, reason, &now, n
	_ = tx.AddEvent(ctx, "generation.ended", s.ID, s.RunID, fmt.Sprintf("g%d %s %s turns=%d", g.Generation, reason, g.Status, n))
	return true, tx.PutSession(ctx, s)
}

// End catches a session up and ends its live generation, in the one
// transaction that stores the capture; used by every ender (SessionEnd,
// the exit path, /new, sweeps, `cx ctl commit`). A rollout that cannot be
// read does not stop the end: the generation ends with what the ledger has.
func (m *Manager) End(ctx context.Context, id, reason string, o EndOptions) (bool, error) {
	ended := false
	_, _, err := m.capture(ctx, id, 0, func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) (err error) {
		ended, err = m.endInTx(ctx, tx, id, reason, o)
		return err
	})
	if err != nil {
		m.log.Printf("catch up %s before end: %v", id, err)
		return m.endLive(ctx, id, reason, o)
	}
	if ended {
		testpoint.Crash("ended")
	}
	return ended, nil
}

// openNext makes the session's next generation live.
func (m *Manager) openNext(s *ledger.Session, tx *ledger.Tx, start int64) {
	s.Generation++
	s.Status = ledger.Live
	s.EndReason = ""
	s.EndedAt = nil
	s.Turns = 0
	s.GenStart = start
	s.LastSeen = tx.Now()
}

// settleGeneration marks a generation committed, and its session when it
// is the session's ended one (the outbox: every sink's commit is done).
func settleGeneration(ctx context.Context, tx *ledger.Tx, sessionID string, gen int) error {
	if err := tx.SetGenerationStatus(ctx, sessionID, gen, ledger.Committed); err != nil {
		return err
	}
	s, err := tx.Session(ctx, sessionID)
	if err != nil {
		return err
	}
	if s.Generation == gen && s.Status == ledger.Ended {
		s.Status = ledger.Committed
		if err := tx.PutSession(ctx, s); err != nil {
			return err
		}
	}
	return tx.AddEvent(ctx, "generation.committed", sessionID, s.RunID, fmt.Sprintf("g%d", gen))
}
