package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Table events: the append-only log `cx ctl show` prints. Written by
// everyone who changes a session or a run.

// Events returns the audit log for a session (all when sessionID is "").
func (db *DB) Events(ctx context.Context, sessionID string) ([]Event, error) {
	q := `SELECT id, at, kind, session_id, run_id, detail FROM events `
	var args []any
	if sessionID != "" {
		q += `WHERE session_id = ? `
		args = append(args, sessionID)
	}
	return list(ctx, db.q(), func(s scanner) (Event, error) {
		var e Event
		var at string
		err := s.Scan(&e.ID, &at, &e.Kind, &e.SessionID, &e.RunID, &e.Detail)
		e.At = parseTS(at)
		return e, err
	}, q+`ORDER BY id`, args...)
}

// LastEvent is the newest event of a kind (ErrNotFound when there is none).
func (db *DB) LastEvent(ctx context.Context, kind string) (Event, error) {
	evs, err := list(ctx, db.q(), func(s scanner) (Event, error) {
		var e Event
		var at string
		err := s.Scan(&e.ID, &at, &e.Kind, &e.SessionID, &e.RunID, &e.Detail)
		e.At = parseTS(at)
		return e, err
	}, `SELECT id, at, kind, session_id, run_id, detail FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1`, kind)
	if err != nil {
		return Event{}, err
	}
	if len(evs) == 0 {
		return Event{}, ErrNotFound
	}
	return evs[0], nil
}

// Event is one audit-log entry.
type Event struct {
	ID        int64
	At        time.Time
	Kind      string
	SessionID string
	RunID     string
	Detail    string
}

// --- writes inside a transaction ---

// AddEvent appends to the audit log.
func (tx *Tx) AddEvent(ctx context.Context, kind, sessionID, runID, detail string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO events (at, kind, session_id, run_id, detail) VALUES (?,?,?,?,?)`,
		ts(tx.now), kind, sessionID, runID, detail)
	return err
}

// ForgottenSessions are the sessions `cx ctl forget` took the words of,
// in one query (a list of sessions asks of each).
func (db *DB) ForgottenSessions(ctx context.Context) (map[string]bool, error) {
	ids, err := list(ctx, db.q(), func(s scanner) (string, error) {
		var id string
		return id, s.Scan(&id)
	}, `SELECT DISTINCT session_id FROM events WHERE kind = 'session.forgotten'`)
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// Forgotten reports whether `cx ctl forget` took a session's words out of
// the ledger (its event says so).
func (db *DB) Forgotten(ctx context.Context, sessionID string) (bool, error) {
	var yes bool
	err := db.q().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE session_id = ? AND kind = 'session.forgotten')`, sessionID).Scan(&yes)
	return yes, err
}

// LastEventDetail is the detail of a session's latest event of kind that
// holds sub ("" when there is none).
func (tx *Tx) LastEventDetail(ctx context.Context, sessionID, kind, sub string) (string, error) {
	var d string
	err := tx.tx.QueryRowContext(ctx, `SELECT detail FROM events WHERE session_id = ? AND kind = ? AND instr(detail, ?) > 0 ORDER BY id DESC LIMIT 1`,
		sessionID, kind, sub).Scan(&d)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return d, err
}
