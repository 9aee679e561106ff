package ledger

import (
	"context"
	"time"
)

// SinkStore is the ledger as a sink may use it: a session's generations
// and turns to read; its own progress (sink_turns, sink_commits,
// sink_sessions) and an event to write; and, for the local sink, a
// generation's archive with its recall index rows. Each write is one
// transaction. A sink gets this for what it may change; the local sink
// also reads the index it keeps (sink.Host.Index, the *DB) for its upkeep
// and its project's words.
type SinkStore struct{ db *DB }

// SinkStore is db as the sinks see it.
func (db *DB) SinkStore() SinkStore { return SinkStore{db} }

// Generations is DB.Generations.
func (s SinkStore) Generations(ctx context.Context, sessionID string) ([]Generation, error) {
	return s.db.Generations(ctx, sessionID)
}

// TurnsUpTo is DB.TurnsUpTo.
func (s SinkStore) TurnsUpTo(ctx context.Context, sessionID string, gen int) ([]StoredTurn, error) {
	return s.db.TurnsUpTo(ctx, sessionID, gen)
}

// SinkSession is DB.SinkSession.
func (s SinkStore) SinkSession(ctx context.Context, sessionID, sink string) (SinkSession, bool, error) {
	return s.db.SinkSession(ctx, sessionID, sink)
}

// SinkCommit is DB.SinkCommit.
func (s SinkStore) SinkCommit(ctx context.Context, sessionID, sink string, gen int) (SinkCommit, error) {
	return s.db.SinkCommit(ctx, sessionID, sink, gen)
}

// SinkTurns is DB.SinkTurns.
func (s SinkStore) SinkTurns(ctx context.Context, sessionID, sink string) (map[string]SinkTurn, error) {
	return s.db.SinkTurns(ctx, sessionID, sink)
}

// LatestArchiveURI is DB.LatestArchiveURI.
func (s SinkStore) LatestArchiveURI(ctx context.Context, sessionID, sink string) (string, error) {
	return s.db.LatestArchiveURI(ctx, sessionID, sink)
}

// SaveSinkTurn records a turn's progress with a sink and, with it, the
// sink's counters for the session (rs, when not nil).
func (s SinkStore) SaveSinkTurn(ctx context.Context, sessionID, sink, key string, st SinkTurn, rs *SinkSession) error {
	return s.db.Tx(ctx, func(tx *Tx) error {
		if err := tx.PutSinkTurn(ctx, sessionID, sink, key, st); err != nil {
			return err
		}
		return putSinkSession(ctx, tx, sessionID, sink, rs)
	})
}

// SaveSinkCommit records a commit's progress with a sink and, with it, the
// sink's counters for the session (rs, when not nil).
func (s SinkStore) SaveSinkCommit(ctx context.Context, sessionID, sink string, gen int, c SinkCommit, rs *SinkSession) error {
	return s.db.Tx(ctx, func(tx *Tx) error {
		if err := tx.PutSinkCommit(ctx, sessionID, sink, gen, c); err != nil {
			return err
		}
		return putSinkSession(ctx, tx, sessionID, sink, rs)
	})
}

// SaveSinkSession records the sink's counters for a session.
func (s SinkStore) SaveSinkSession(ctx context.Context, sessionID, sink string, rs SinkSession) error {
	return s.db.Tx(ctx, func(tx *Tx) error { return putSinkSession(ctx, tx, sessionID, sink, &rs) })
}

func putSinkSession(ctx context.Context, tx *Tx, sessionID, sink string, rs *SinkSession) error {
	if rs == nil {
		return nil
	}
	return tx.PutSinkSession(ctx, sessionID, sink, *rs)
}

// AddEvent records an event of a session (a sink's word in its log).
func (s SinkStore) AddEvent(ctx context.Context, kind, sessionID, detail string) error {
	return s.db.Tx(ctx, func(tx *Tx) error { return tx.AddEvent(ctx, kind, sessionID, "", detail) })
}

// PutArchive stores a generation's archive and its recall index rows in
// one transaction: docs makes the rows, given how many turns the session's
// generations before it had and the transaction's time.
func (s SinkStore) PutArchive(ctx context.Context, sessionID string, gen int, turns, checkpoint, continuity string, docs func(before int, at time.Time) []RecallDoc) error {
	return s.db.Tx(ctx, func(tx *Tx) error {
		if err := tx.PutArchive(ctx, sessionID, gen, turns, checkpoint, continuity); err != nil {
			return err
		}
		before, err := tx.TurnsBefore(ctx, sessionID, gen)
		if err != nil {
			return err
		}
		return tx.IndexGeneration(ctx, sessionID, gen, docs(before, tx.Now()))
	})
}
