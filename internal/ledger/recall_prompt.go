package ledger

// Per-prompt recall's reads — a project's latest turns whole (its window,
// which internal/recall keeps as a file) and the stamp that says whether
// a window read earlier still holds — and the turns given to each thread
// (recall_given), written by internal/recall/prompt.

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RecallEpochKey is the meta key counting the times index rows were
// removed (a session forgotten, a generation indexed again): with the
// newest row, it says whether a recall window read earlier still holds.
const RecallEpochKey = "recall_epoch"

// WindowStamp is the state of the index a recall window was read at: the
// project's newest index row and the removal count. Rows are only added
// with higher ids or removed, so an equal stamp is an equal window.
type WindowStamp struct {
	Last  int64
	Epoch int64
}

// RecallWindowStamp is the index's stamp for project's window ("" for
// every project's): two lookups, however large the index.
func (db *DB) RecallWindowStamp(ctx context.Context, project string) (WindowStamp, error) {
	return windowStamp(ctx, db.q(), project)
}

func windowStamp(ctx context.Context, q querier, project string) (WindowStamp, error) {
	last := `(SELECT coalesce(max(id), 0) FROM recall_turns WHERE project = ?1)`
	if project == "" {
		last = `(SELECT coalesce(max(id), 0) FROM recall_turns WHERE ?1 = '')`
	}
	var st WindowStamp
	err := q.QueryRowContext(ctx, `SELECT `+last+`, coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?2), 0)`, project, RecallEpochKey).Scan(&st.Last, &st.Epoch)
	return st, err
}

// WindowTurn is one turn of a recall window: where it is, its length
// (Chars) and its indexed text.
type WindowTurn struct {
	RecallHit
	Text RecallText
}

// RecallWindowTurns reads a project's latest n indexed turns (every
// project's, for "") of those after row after (0 for all), oldest first,
// with their text, and the stamp they were read at, in one read
// transaction. A window read at a stamp whose removal count the index
// still has is brought up to date by the turns after its newest row.
func (db *DB) RecallWindowTurns(ctx context.Context, project string, after int64, n int) (WindowStamp, []WindowTurn, error) {
	var st WindowStamp
	var turns []WindowTurn
	err := db.readTx(ctx, func(q querier) error {
		var err error
		if st, err = windowStamp(ctx, q, project); err != nil {
			return err
		}
		latest := `SELECT id FROM recall_turns WHERE project = ? AND id > ? ORDER BY id DESC LIMIT ?`
		args := []any{project, after, n}
		if project == "" {
			latest, args = `SELECT id FROM recall_turns WHERE id > ? ORDER BY id DESC LIMIT ?`, []any{after, n}
		}
		tables, err := db.recallTables(ctx, q)
		if err != nil {
			return err
		}
		hits, err := list(ctx, q, func(s scanner) (RecallHit, error) {
			var h RecallHit
			var at string
			err := s.Scan(&h.ID, &h.SessionID, &h.Generation, &h.Turn, &h.Key, &at, &h.Cwd, &h.Project, &h.Chars)
			h.At = parseTS(at)
			return h, err
		}, `SELECT t.id, t.session_id, t.generation, t.turn, t.key, t.at, t.cwd, t.project, `+recallCharsCol(tables)+`
			FROM (`+latest+`) l CROSS JOIN recall_turns t ON t.id = l.id ORDER BY t.id`, args...)
		if err != nil {
			return err
		}
		ids := make([]int64, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		texts, err := db.recallTexts(ctx, q, ids)
		for _, h := range hits {
			turns = append(turns, WindowTurn{RecallHit: h, Text: texts[h.ID]})
		}
		return err
	})
	return st, turns, err
}

// GivenTurns are the (source session, turn) pairs per-prompt recall has
// given a thread, keyed "session/turn".
func (db *DB) GivenTurns(ctx context.Context, sessionID string) (map[string]bool, error) {
	rows, err := list(ctx, db.q(), func(s scanner) (string, error) {
		var src string
		var turn int
		err := s.Scan(&src, &turn)
		return fmt.Sprintf("%s/%d", src, turn), err
	}, `SELECT source_session, turn FROM recall_given WHERE session_id = ?`, sessionID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r] = true
	}
	return out, nil
}

// Given is one turn per-prompt recall gave a thread.
type Given struct {
	Source string
	Turn   int
}

// MarkGiven records that turns were given to a thread.
func (db *DB) MarkGiven(ctx context.Context, sessionID string, given []Given) error {
	if len(given) == 0 {
		return nil
	}
	return db.Tx(ctx, func(tx *Tx) error {
		for _, g := range given {
			if _, err := tx.tx.ExecContext(ctx, `INSERT OR IGNORE INTO recall_given (session_id, source_session, turn, given_at) VALUES (?,?,?,?)`,
				sessionID, g.Source, g.Turn, ts(tx.Now())); err != nil {
				return fmt.Errorf("mark given %s: %w", sessionID, err)
			}
		}
		return nil
	})
}

// RecallCount is how many indexed turns of project ("" for every project)
// were at or after since and before until (zero: unbounded).
func (db *DB) RecallCount(ctx context.Context, project string, since, until time.Time) (int, error) {
	where, args := []string{"1"}, []any{}
	if project != "" {
		where, args = append(where, "project = ?"), append(args, project)
	}
	if !since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, ts(since))
	}
	if !until.IsZero() {
		where, args = append(where, "at < ?"), append(args, ts(until))
	}
	var n int
	err := db.q().QueryRowContext(ctx, `SELECT count(*) FROM recall_turns WHERE `+strings.Join(where, " AND "), args...).Scan(&n)
	return n, err
}
