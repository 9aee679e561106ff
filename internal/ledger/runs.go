package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Table runs: one row per cx process that supervised a Codex. Written by
// lifecycle (a run begins, its Codex starts, it stops, it ends; a sweep
// ends an orphan's).

// Run is one cx process.
type Run struct {
	ID           string
	PID          int
	PIDStart     uint64
	CodexPID     int
	CodexStart   uint64
	CodexHome    string
	CodexVersion string
	Cwd          string
	Mode         string
	Args         []string
	Sinks        []string
	Foreground   string
	StartedAt    time.Time
	EndedAt      *time.Time
	ExitCode     *int
	EndReason    string
}

const runCols = `id, pid, pid_start, codex_pid, codex_start, codex_home, codex_version, cwd, mode, args, sinks, foreground, started_at, ended_at, exit_code, end_reason`

func scanRun(s scanner) (Run, error) {
	var r Run
	var args, sinks, started string
	var ended sql.NullString
	var exit sql.NullInt64
	err := s.Scan(&r.ID, &r.PID, &r.PIDStart, &r.CodexPID, &r.CodexStart, &r.CodexHome, &r.CodexVersion, &r.Cwd, &r.Mode,
		&args, &sinks, &r.Foreground, &started, &ended, &exit, &r.EndReason)
	if err != nil {
		return r, err
	}
	r.Args, r.Sinks, r.StartedAt, r.EndedAt = parseList(args), parseList(sinks), parseTS(started), parseTSPtr(ended)
	if exit.Valid {
		n := int(exit.Int64)
		r.ExitCode = &n
	}
	return r, nil
}

func getRun(ctx context.Context, q querier, id string) (Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

func listRuns(ctx context.Context, q querier, where string, args ...any) ([]Run, error) {
	return list(ctx, q, scanRun, `SELECT `+runCols+` FROM runs `+where, args...)
}

// Run returns one run.
func (db *DB) Run(ctx context.Context, id string) (Run, error) { return getRun(ctx, db.q(), id) }

// Runs returns runs, newest first; open only when openOnly.
func (db *DB) Runs(ctx context.Context, openOnly bool) ([]Run, error) {
	if openOnly {
		return listRuns(ctx, db.q(), `WHERE ended_at IS NULL ORDER BY started_at DESC`)
	}
	return listRuns(ctx, db.q(), `ORDER BY started_at DESC`)
}

// Run returns one run.
func (tx *Tx) Run(ctx context.Context, id string) (Run, error) { return getRun(ctx, tx.tx, id) }

// PutRun inserts or replaces a run.
func (tx *Tx) PutRun(ctx context.Context, r Run) error {
	var exit any
	if r.ExitCode != nil {
		exit = *r.ExitCode
	}
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO runs (`+runCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET pid=excluded.pid, pid_start=excluded.pid_start, codex_pid=excluded.codex_pid,
		codex_start=excluded.codex_start, codex_home=excluded.codex_home, codex_version=excluded.codex_version,
		cwd=excluded.cwd, mode=excluded.mode, args=excluded.args, sinks=excluded.sinks, foreground=excluded.foreground,
		started_at=excluded.started_at, ended_at=excluded.ended_at, exit_code=excluded.exit_code, end_reason=excluded.end_reason`,
		r.ID, r.PID, r.PIDStart, r.CodexPID, r.CodexStart, r.CodexHome, r.CodexVersion, r.Cwd, r.Mode, jsonList(r.Args),
		jsonList(r.Sinks), r.Foreground, ts(r.StartedAt), tsPtr(r.EndedAt), exit, r.EndReason)
	if err != nil {
		return fmt.Errorf("put run %s: %w", r.ID, err)
	}
	return nil
}
