package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Table sessions: one row per Codex thread, its live or last generation,
// its rollout cursor and counters. Written by lifecycle (hooks, capture,
// ends, recovery) and history (import).

// Cursor is how far a session's rollout has been captured, with enough of
// the file's identity to notice a rewrite or shrink.
type Cursor struct {
	Offset int64
	Seen   int64
	Inode  uint64
	Size   int64
	Head   string // hash of the file's first bytes
}

// Session is one Codex session (thread) and its current generation.
type Session struct {
	ID             string
	RunID          string
	Status         string
	Generation     int
	EndReason      string
	TranscriptPath string
	Cwd            string
	CodexHome      string
	Meta           string // the rollout's session_meta (JSON), once read
	Sinks          []string
	Cursor         Cursor
	GenStart       int64 // rollout offset where the current generation began
	Turns          int   // turns captured in the current generation
	Interrupted    int
	Compactions    int
	// InjectedCompactions is how many compactions the checkpoint was
	// re-injected after (once each).
	InjectedCompactions int
	Placeholders        int
	CreatedAt           time.Time
	LastSeen            time.Time
	EndedAt             *time.Time
}

const sessionCols = `id, run_id, status, generation, end_reason, transcript_path, cwd, codex_home, meta, sinks, cursor_offset, cursor_seen, cursor_inode, cursor_size, cursor_head, gen_start, turns, interrupted, compactions, injected_compactions, placeholders, created_at, last_seen, ended_at`

func scanSession(s scanner) (Session, error) {
	var x Session
	var sinks, created, seen string
	var ended sql.NullString
	err := s.Scan(&x.ID, &x.RunID, &x.Status, &x.Generation, &x.EndReason, &x.TranscriptPath, &x.Cwd, &x.CodexHome, &x.Meta, &sinks,
		&x.Cursor.Offset, &x.Cursor.Seen, &x.Cursor.Inode, &x.Cursor.Size, &x.Cursor.Head, &x.GenStart, &x.Turns, &x.Interrupted,
		&x.Compactions, &x.InjectedCompactions, &x.Placeholders, &created, &seen, &ended)
	if err != nil {
		return x, err
	}
	x.Sinks, x.CreatedAt, x.LastSeen, x.EndedAt = parseList(sinks), parseTS(created), parseTS(seen), parseTSPtr(ended)
	return x, nil
}

func getSession(ctx context.Context, q querier, id string) (Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return s, err
}

func listSessions(ctx context.Context, q querier, where string, args ...any) ([]Session, error) {
	return list(ctx, q, scanSession, `SELECT `+sessionCols+` FROM sessions `+where, args...)
}

// Session returns one session.
func (db *DB) Session(ctx context.Context, id string) (Session, error) {
	return getSession(ctx, db.q(), id)
}

// Sessions returns every session, newest activity first.
func (db *DB) Sessions(ctx context.Context) ([]Session, error) {
	return listSessions(ctx, db.q(), `ORDER BY last_seen DESC, id`)
}

// SweepCandidates returns the sessions a sweep looks at: every live one,
// and the others seen since since; most recent first.
func (db *DB) SweepCandidates(ctx context.Context, since time.Time) ([]Session, error) {
	return listSessions(ctx, db.q(), `WHERE status = ? OR last_seen >= ? ORDER BY last_seen DESC, id`, Live, ts(since))
}

// RecentSessions returns the n most recently seen sessions, most recent
// first.
func (db *DB) RecentSessions(ctx context.Context, n int) ([]Session, error) {
	return listSessions(ctx, db.q(), `ORDER BY last_seen DESC, id LIMIT ?`, n)
}

// LiveSessions returns the sessions whose generation is live, most recently
// seen first.
func (db *DB) LiveSessions(ctx context.Context) ([]Session, error) {
	return listSessions(ctx, db.q(), `WHERE status = ? ORDER BY last_seen DESC, id`, Live)
}

// SessionCounts counts sessions by status.
func (db *DB) SessionCounts(ctx context.Context) (map[string]int, error) {
	rows, err := db.q().QueryContext(ctx, `SELECT status, count(*) FROM sessions GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

// Session returns one session.
func (tx *Tx) Session(ctx context.Context, id string) (Session, error) {
	return getSession(ctx, tx.tx, id)
}

// RunSessions returns the sessions a run owns.
func (tx *Tx) RunSessions(ctx context.Context, runID string) ([]Session, error) {
	return listSessions(ctx, tx.tx, `WHERE run_id = ? ORDER BY created_at, id`, runID)
}

// UnownedLive returns live sessions no run owns.
func (tx *Tx) UnownedLive(ctx context.Context) ([]Session, error) {
	return listSessions(ctx, tx.tx, `WHERE run_id = '' AND status = ? ORDER BY last_seen DESC`, Live)
}

// PutSession inserts or replaces a session.
func (tx *Tx) PutSession(ctx context.Context, s Session) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO sessions (`+sessionCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET run_id=excluded.run_id, status=excluded.status, generation=excluded.generation,
		end_reason=excluded.end_reason, transcript_path=excluded.transcript_path, cwd=excluded.cwd, codex_home=excluded.codex_home,
		meta=excluded.meta, sinks=excluded.sinks, cursor_offset=excluded.cursor_offset, cursor_seen=excluded.cursor_seen, cursor_inode=excluded.cursor_inode, cursor_size=excluded.cursor_size,
		cursor_head=excluded.cursor_head, gen_start=excluded.gen_start, turns=excluded.turns, interrupted=excluded.interrupted,
		compactions=excluded.compactions, injected_compactions=excluded.injected_compactions, placeholders=excluded.placeholders, last_seen=excluded.last_seen, ended_at=excluded.ended_at`,
		s.ID, s.RunID, s.Status, s.Generation, s.EndReason, s.TranscriptPath, s.Cwd, s.CodexHome, s.Meta, jsonList(s.Sinks), s.Cursor.Offset,
		s.Cursor.Seen, s.Cursor.Inode, s.Cursor.Size, s.Cursor.Head, s.GenStart, s.Turns, s.Interrupted, s.Compactions, s.InjectedCompactions, s.Placeholders,
		ts(s.CreatedAt), ts(s.LastSeen), tsPtr(s.EndedAt))
	if err != nil {
		return fmt.Errorf("put session %s: %w", s.ID, err)
	}
	return nil
}

// ErrAmbiguous means a session id prefix names more than one session.
var ErrAmbiguous = errors.New("ambiguous")

// ResolveSession returns the session whose id is id, or else the one
// session whose id starts with id (as git takes a commit's prefix).
func (db *DB) ResolveSession(ctx context.Context, id string) (string, error) {
	if id == "" {
		return id, fmt.Errorf("no session id: %w", ErrNotFound)
	}
	// One range over the primary key (not LIKE: ids may hold '_' and '%'):
	// the id itself, if it is one, sorts first.
	ids, err := list(ctx, db.q(), func(r scanner) (string, error) {
		var s string
		return s, r.Scan(&s)
	}, `SELECT id FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 3`, id, id+"\U0010FFFF")
	switch {
	case err != nil:
		return id, err
	case len(ids) == 0:
		return id, fmt.Errorf("session %s: %w", id, ErrNotFound)
	case ids[0] == id || len(ids) == 1:
		return ids[0], nil
	}
	more := ""
	if len(ids) > 2 {
		more = ", …"
	}
	return id, fmt.Errorf("session id prefix %s is %w: %s, %s%s", id, ErrAmbiguous, ids[0], ids[1], more)
}
