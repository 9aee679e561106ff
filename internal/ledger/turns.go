package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Tables turns (captured turns, by generation), folds (the checkpoint
// folded so far) and archives (the local sink's committed generations).
// Written by lifecycle's capture and the local sink; forget zeroes them.

// PutArchive stores (or keeps, if already stored) a generation's archive:
// storing twice is a no-op, so a retried local commit never doubles.
func (tx *Tx) PutArchive(ctx context.Context, sessionID string, gen int, turns, checkpoint, continuity string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO archives (session_id, generation, turns, checkpoint, continuity, stored_at)
		VALUES (?,?,?,?,?,?) ON CONFLICT(session_id, generation) DO NOTHING`, sessionID, gen, turns, checkpoint, continuity, ts(tx.now))
	return err
}

// Archive is a stored generation archive.
type Archive struct {
	SessionID  string
	Generation int
	Turns      string
	Checkpoint string
	Continuity string
	StoredAt   time.Time
}

// Archives returns a session's stored archives.
func (db *DB) Archives(ctx context.Context, sessionID string) ([]Archive, error) {
	return list(ctx, db.q(), scanArchive, `SELECT `+archiveCols+` FROM archives WHERE session_id = ? ORDER BY generation`, sessionID)
}

// Archives is Archives inside the transaction.
func (tx *Tx) Archives(ctx context.Context, sessionID string) ([]Archive, error) {
	return list(ctx, tx.tx, scanArchive, `SELECT `+archiveCols+` FROM archives WHERE session_id = ? ORDER BY generation`, sessionID)
}

const archiveCols = `session_id, generation, turns, checkpoint, continuity, stored_at`

func scanArchive(s scanner) (Archive, error) {
	var a Archive
	var at string
	err := s.Scan(&a.SessionID, &a.Generation, &a.Turns, &a.Checkpoint, &a.Continuity, &at)
	a.StoredAt = parseTS(at)
	return a, err
}

// StoredTurn is a captured turn as the ledger keeps it.
type StoredTurn struct {
	SessionID  string
	Key        string
	Generation int
	Offset     int64
	Data       string // JSON of the turn
}

// UpsertTurn stores a turn by key. A turn seen before keeps its generation
// and gets the newer data (a turn captured while still open is completed
// later); inserted reports whether it is new.
func (tx *Tx) UpsertTurn(ctx context.Context, t StoredTurn) (inserted bool, err error) {
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE session_id = ? AND key = ?`, t.SessionID, t.Key).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		_, err = tx.tx.ExecContext(ctx, `UPDATE turns SET data = ? WHERE session_id = ? AND key = ?`, t.Data, t.SessionID, t.Key)
		return false, err
	}
	_, err = tx.tx.ExecContext(ctx, `INSERT INTO turns (session_id, key, generation, offset, data, captured_at) VALUES (?,?,?,?,?,?)`,
		t.SessionID, t.Key, t.Generation, t.Offset, t.Data, ts(tx.now))
	return err == nil, err
}

// CountTurns counts a generation's captured turns.
func (tx *Tx) CountTurns(ctx context.Context, sessionID string, gen int) (int, error) {
	var n int
	err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE session_id = ? AND generation = ?`, sessionID, gen).Scan(&n)
	return n, err
}

// Turns returns a generation's captured turns in rollout order.
func (db *DB) Turns(ctx context.Context, sessionID string, gen int) ([]StoredTurn, error) {
	return list(ctx, db.q(), scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? AND generation = ? ORDER BY offset, key`, sessionID, gen)
}

// TotalTurns counts every captured turn of a session.
func (db *DB) TotalTurns(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := db.q().QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE session_id = ?`, sessionID).Scan(&n)
	return n, err
}

// TurnsUpTo returns a session's turns of generations up to gen, in order.
func (db *DB) TurnsUpTo(ctx context.Context, sessionID string, gen int) ([]StoredTurn, error) {
	return list(ctx, db.q(), scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? AND generation <= ? ORDER BY generation, offset, key`, sessionID, gen)
}

const turnCols = `session_id, key, generation, offset, data`

func scanTurn(s scanner) (StoredTurn, error) {
	var t StoredTurn
	err := s.Scan(&t.SessionID, &t.Key, &t.Generation, &t.Offset, &t.Data)
	return t, err
}

// Fold is a session's checkpoint fold as capture keeps it.
type Fold struct {
	UpTo     int64    // the rollout offset it covers: the turns before it
	State    string   // checkpoint.Fold JSON
	Sections []string // cx context sections already in the rollout
}

func getFold(ctx context.Context, q querier, id string) (Fold, bool, error) {
	var f Fold
	var secs string
	err := q.QueryRowContext(ctx, `SELECT upto, fold, sections FROM session_folds WHERE session_id = ?`, id).Scan(&f.UpTo, &f.State, &secs)
	if errors.Is(err, sql.ErrNoRows) {
		return f, false, nil
	}
	f.Sections = parseList(secs)
	return f, err == nil, err
}

// Fold returns a session's fold (false: none kept).
func (tx *Tx) Fold(ctx context.Context, id string) (Fold, bool, error) {
	return getFold(ctx, tx.tx, id)
}

// Fold returns a session's fold (false: none kept).
func (db *DB) Fold(ctx context.Context, id string) (Fold, bool, error) {
	return getFold(ctx, db.q(), id)
}

// PutFold stores a session's fold.
func (tx *Tx) PutFold(ctx context.Context, id string, f Fold) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO session_folds (session_id, upto, fold, sections) VALUES (?,?,?,?)
		ON CONFLICT(session_id) DO UPDATE SET upto=excluded.upto, fold=excluded.fold, sections=excluded.sections`,
		id, f.UpTo, f.State, jsonList(f.Sections))
	if err != nil {
		return fmt.Errorf("put checkpoint fold of %s: %w", id, err)
	}
	return nil
}

// TurnsFrom returns a session's turns starting at or after offset, in
// rollout order.
func (tx *Tx) TurnsFrom(ctx context.Context, sessionID string, offset int64) ([]StoredTurn, error) {
	return turnsFrom(ctx, tx.tx, sessionID, offset)
}

// TurnsFrom returns a session's turns starting at or after offset, in
// rollout order.
func (db *DB) TurnsFrom(ctx context.Context, sessionID string, offset int64) ([]StoredTurn, error) {
	return turnsFrom(ctx, db.q(), sessionID, offset)
}

func turnsFrom(ctx context.Context, q querier, sessionID string, offset int64) ([]StoredTurn, error) {
	return list(ctx, q, scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? AND offset >= ? ORDER BY offset, key`, sessionID, offset)
}
