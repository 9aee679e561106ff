package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Table generations: one row per ended generation (exactly one per end:
// the primary key is the race's referee), its status and checkpoint.
// Written by lifecycle's enders and the outbox when the sinks are done.

// Generation is one ended generation of a session.
type Generation struct {
	SessionID   string
	Generation  int
	Status      string
	EndReason   string
	RunID       string
	Sinks       []string
	StartOffset int64
	EndOffset   int64
	Turns       int
	ExitStatus  *int
	EndedAt     time.Time
	CommittedAt *time.Time
}

const genCols = `session_id, generation, status, end_reason, run_id, sinks, start_offset, end_offset, turns, exit_status, ended_at, committed_at`

func scanGeneration(s scanner) (Generation, error) {
	var g Generation
	var sinks, ended string
	var exit sql.NullInt64
	var committed sql.NullString
	err := s.Scan(&g.SessionID, &g.Generation, &g.Status, &g.EndReason, &g.RunID, &sinks, &g.StartOffset, &g.EndOffset,
		&g.Turns, &exit, &ended, &committed)
	if err != nil {
		return g, err
	}
	g.Sinks, g.EndedAt, g.CommittedAt = parseList(sinks), parseTS(ended), parseTSPtr(committed)
	if exit.Valid {
		n := int(exit.Int64)
		g.ExitStatus = &n
	}
	return g, nil
}

func listGenerations(ctx context.Context, q querier, where string, args ...any) ([]Generation, error) {
	return list(ctx, q, scanGeneration, `SELECT `+genCols+` FROM generations `+where, args...)
}

// --- reads outside a transaction ---

// Generations returns a session's ended generations, in order.
func (db *DB) Generations(ctx context.Context, sessionID string) ([]Generation, error) {
	return listGenerations(ctx, db.q(), `WHERE session_id = ? ORDER BY generation`, sessionID)
}

// Commits counts a session's generations committed to every sink.
func (db *DB) Commits(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := db.q().QueryRowContext(ctx, `SELECT count(*) FROM generations WHERE session_id = ? AND status = ?`, sessionID, Committed).Scan(&n)
	return n, err
}

// InsertGeneration records an ended generation.
func (tx *Tx) InsertGeneration(ctx context.Context, g Generation) error {
	var exit any
	if g.ExitStatus != nil {
		exit = *g.ExitStatus
	}
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO generations (`+genCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
		g.SessionID, g.Generation, g.Status, g.EndReason, g.RunID, jsonList(g.Sinks), g.StartOffset, g.EndOffset, g.Turns,
		exit, ts(g.EndedAt), tsPtr(g.CommittedAt))
	if err != nil {
		return fmt.Errorf("record generation %s/%d: %w", g.SessionID, g.Generation, err)
	}
	return nil
}

// Generation returns one ended generation.
func (tx *Tx) Generation(ctx context.Context, sessionID string, gen int) (Generation, error) {
	gs, err := listGenerations(ctx, tx.tx, `WHERE session_id = ? AND generation = ?`, sessionID, gen)
	if err != nil {
		return Generation{}, err
	}
	if len(gs) == 0 {
		return Generation{}, fmt.Errorf("generation %s/%d: %w", sessionID, gen, ErrNotFound)
	}
	return gs[0], nil
}

// SetGenerationStatus updates an ended generation's status.
func (tx *Tx) SetGenerationStatus(ctx context.Context, sessionID string, gen int, status string) error {
	var committed any
	if status == Committed {
		committed = ts(tx.now)
	}
	_, err := tx.tx.ExecContext(ctx, `UPDATE generations SET status = ?, committed_at = ? WHERE session_id = ? AND generation = ?`,
		status, committed, sessionID, gen)
	return err
}

// SetGenerationCheckpoint records a generation's checkpoint at its end.
func (tx *Tx) SetGenerationCheckpoint(ctx context.Context, sessionID string, gen int, cp string) error {
	_, err := tx.tx.ExecContext(ctx, `UPDATE generations SET checkpoint = ? WHERE session_id = ? AND generation = ?`, cp, sessionID, gen)
	return err
}

// GenerationCheckpoint is a generation's checkpoint at its end ("" when
// none was recorded: ended before cx kept folds).
func (db *DB) GenerationCheckpoint(ctx context.Context, sessionID string, gen int) (string, error) {
	var cp string
	err := db.q().QueryRowContext(ctx, `SELECT checkpoint FROM generations WHERE session_id = ? AND generation = ?`, sessionID, gen).Scan(&cp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return cp, err
}
