package ledger

// Per-prompt recall's reads — a project's latest turns (the window), which
// of them hold each word, the candidates whole — and the turns given to
// each thread (recall_given), written by internal/recall.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// RecallWindow is the index row from which a project's latest n turns
// lie (of every project's, for ""), and how many of its turns lie from
// there on; 0 and all of them when it has fewer than n.
func (db *DB) RecallWindow(ctx context.Context, project string, n int) (from int64, size int, err error) {
	// Two forms, so each uses its index (an "or every project" term would
	// keep SQLite from using either).
	first, count := `SELECT id FROM recall_turns WHERE project = ? ORDER BY id DESC LIMIT 1 OFFSET ?`, `SELECT count(*) FROM recall_turns WHERE project = ? AND id >= ?`
	args := []any{project}
	if project == "" {
		first, count, args = `SELECT id FROM recall_turns ORDER BY id DESC LIMIT 1 OFFSET ?`, `SELECT count(*) FROM recall_turns WHERE id >= ?`, nil
	}
	err = db.db.QueryRowContext(ctx, first, append(args, n-1)...).Scan(&from)
	if errors.Is(err, sql.ErrNoRows) {
		from, err = 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	err = db.db.QueryRowContext(ctx, count, append(args, from)...).Scan(&size)
	return from, size, err
}

// RecallTermRows are, for each FTS5 query of matches, the turns of a
// project (every project's for "") from index row minID on, but
// notSession's, that it matches: how many turns of the window hold a word,
// and which. The turns are told apart by project and session after, in
// one query (a join per matching row costs more).
func (db *DB) RecallTermRows(ctx context.Context, matches []string, minID int64, project, notSession string) ([]map[int64]bool, error) {
	out := make([]map[int64]bool, len(matches))
	for i := range out {
		out[i] = map[int64]bool{}
	}
	if len(matches) == 0 {
		return out, nil
	}
	tables, err := db.recallTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		for i, m := range matches {
			ids, err := list(ctx, db.db, func(s scanner) (int64, error) {
				var id int64
				return id, s.Scan(&id)
			}, `SELECT rowid FROM `+table+` WHERE `+table+` MATCH ? AND rowid >= ?`, m, minID)
			if err != nil {
				if isQueryError(err) {
					return nil, fmt.Errorf("%w: %s", ErrQuery, queryErrorText(err))
				}
				return nil, err
			}
			for _, id := range ids {
				out[i][id] = true
			}
		}
	}
	if project == "" && notSession == "" {
		return out, nil
	}
	q, qargs := `SELECT id FROM recall_turns WHERE project = ? AND id >= ? AND session_id != ?`, []any{project, minID, notSession}
	if project == "" {
		q, qargs = `SELECT id FROM recall_turns WHERE id >= ? AND session_id != ?`, []any{minID, notSession}
	}
	ids, err := list(ctx, db.db, func(s scanner) (int64, error) {
		var id int64
		return id, s.Scan(&id)
	}, q, qargs...)
	if err != nil {
		return nil, err
	}
	allowed := make(map[int64]bool, len(ids))
	for _, id := range ids {
		allowed[id] = true
	}
	for _, m := range out {
		for id := range m {
			if !allowed[id] {
				delete(m, id)
			}
		}
	}
	return out, nil
}

// RecallHitsByID returns the indexed turns ids as hits with no score, in
// the order asked, each snippet the start of its prompt.
func (db *DB) RecallHitsByID(ctx context.Context, ids []int64) ([]RecallHit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	hits, err := list(ctx, db.db, scanRecallHit, `SELECT `+recallHitCols+` FROM recall_turns t WHERE t.id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	sort.Slice(hits, func(i, j int) bool { return at[hits[i].ID] < at[hits[j].ID] })
	return hits, nil
}

// RecallLengths are the indexed turns' lengths in characters, all fields.
func (db *DB) RecallLengths(ctx context.Context, ids []int64) (map[int64]int, error) {
	out := make(map[int64]int, len(ids))
	err := db.eachIndexed(ctx, ids, `length(prompt) + length(reply) + length(commands) + length(files)`, func(s idScanner) error {
		var n int
		id, err := s.Scan(&n)
		out[id] = n
		return err
	})
	return out, err
}

// GivenTurns are the (source session, turn) pairs per-prompt recall has
// given a thread, keyed "session/turn".
func (db *DB) GivenTurns(ctx context.Context, sessionID string) (map[string]bool, error) {
	rows, err := list(ctx, db.db, func(s scanner) (string, error) {
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
