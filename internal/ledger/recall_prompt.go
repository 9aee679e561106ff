package ledger

// Per-prompt recall's reads — a project's latest turns (the window), which
// of them hold each word, the candidates whole — and the turns given to
// each thread (recall_given), written by internal/recall.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// RecallWindow is the index rows of a project's latest n turns (of every
// project's, for ""), but notSession's: the turns per-prompt recall weighs
// and may give. One row of text comes back, not a row per turn: a row
// costs more through database/sql than SQLite takes to find it.
func (db *DB) RecallWindow(ctx context.Context, project, notSession string, n int) (map[int64]bool, error) {
	// Two forms, so each uses its index (an "or every project" term would
	// keep SQLite from using either).
	q, args := `SELECT coalesce(group_concat(id), '') FROM (SELECT id FROM recall_turns WHERE project = ? ORDER BY id DESC LIMIT ?)`, []any{project, n}
	if project == "" {
		q, args = `SELECT coalesce(group_concat(id), '') FROM (SELECT id FROM recall_turns ORDER BY id DESC LIMIT ?)`, []any{n}
	}
	var ids string
	if err := db.db.QueryRowContext(ctx, q, args...).Scan(&ids); err != nil {
		return nil, err
	}
	window, err := idSet(ids)
	if err != nil || notSession == "" {
		return window, err
	}
	if err := db.db.QueryRowContext(ctx, `SELECT coalesce(group_concat(id), '') FROM recall_turns WHERE session_id = ?`, notSession).Scan(&ids); err != nil {
		return nil, err
	}
	own, err := idSet(ids)
	for id := range own {
		delete(window, id)
	}
	return window, err
}

// idSet reads group_concat's list of ids.
func idSet(list string) (map[int64]bool, error) {
	out := map[int64]bool{}
	for f := range strings.SplitSeq(list, ",") {
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read index row id %q: %w", f, err)
		}
		out[id] = true
	}
	return out, nil
}

// RecallTermRows are, for each FTS5 query of matches, the turns of window
// it matches: how many turns of the window hold a word, and which. All the
// queries are one statement, each answered as one list.
func (db *DB) RecallTermRows(ctx context.Context, matches []string, window map[int64]bool) ([]map[int64]bool, error) {
	out := make([]map[int64]bool, len(matches))
	for i := range out {
		out[i] = map[int64]bool{}
	}
	if len(matches) == 0 || len(window) == 0 {
		return out, nil
	}
	minID := int64(math.MaxInt64)
	for id := range window {
		minID = min(minID, id)
	}
	tables, err := db.recallTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		cols := make([]string, len(matches))
		args := make([]any, 0, 2*len(matches))
		for i, m := range matches {
			cols[i] = `(SELECT coalesce(group_concat(rowid), '') FROM ` + table + ` WHERE ` + table + ` MATCH ? AND rowid >= ?)`
			args = append(args, m, minID)
		}
		lists := make([]string, len(matches))
		dest := make([]any, len(matches))
		for i := range lists {
			dest[i] = &lists[i]
		}
		if err := db.db.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", "), args...).Scan(dest...); err != nil {
			if isQueryError(err) {
				return nil, fmt.Errorf("%w: %s", ErrQuery, queryErrorText(err))
			}
			return nil, err
		}
		for i, l := range lists {
			ids, err := idSet(l)
			if err != nil {
				return nil, err
			}
			for id := range ids {
				if window[id] {
					out[i][id] = true
				}
			}
		}
	}
	return out, nil
}

// RecallCandidates returns the indexed turns ids as hits with no score or
// snippet, in the order asked, each with its length (Chars), and the turn
// after each (those indexed), in one statement.
func (db *DB) RecallCandidates(ctx context.Context, ids []int64) (hits, nexts []RecallHit, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	args := make([]any, 0, 2*len(ids))
	for range 2 {
		for _, id := range ids {
			args = append(args, id)
		}
	}
	in := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	const cols = `t.id, t.session_id, t.generation, t.turn, t.key, t.at, t.cwd, t.project, ` + recallCharsCol
	type row struct {
		next bool
		hit  RecallHit
	}
	rows, err := list(ctx, db.db, func(s scanner) (row, error) {
		var r row
		var at string
		h := &r.hit
		err := s.Scan(&r.next, &h.ID, &h.SessionID, &h.Generation, &h.Turn, &h.Key, &at, &h.Cwd, &h.Project, &h.Chars)
		h.At = parseTS(at)
		return r, err
	}, `SELECT 0, `+cols+` FROM recall_turns t WHERE t.id IN (`+in+`)
		UNION ALL
		SELECT 1, `+cols+` FROM recall_turns c CROSS JOIN recall_turns t ON t.session_id = c.session_id AND t.turn = c.turn + 1 WHERE c.id IN (`+in+`)`, args...)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		if r.next {
			nexts = append(nexts, r.hit)
		} else {
			hits = append(hits, r.hit)
		}
	}
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	sort.Slice(hits, func(i, j int) bool { return at[hits[i].ID] < at[hits[j].ID] })
	return hits, nexts, nil
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
