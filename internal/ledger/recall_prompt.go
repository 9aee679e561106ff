package ledger

// Per-prompt recall's reads — a project's latest turns (the window), which
// of them hold each word, the candidates whole — and the turns given to
// each thread (recall_given), written by internal/recall.

import (
	"context"
	"fmt"
	"slices"
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
// queries are one statement, each answered as one list per range of rows
// the window lies in (windowRanges), so what is read stays near the
// window's size wherever the window lies.
func (db *DB) RecallTermRows(ctx context.Context, matches []string, window map[int64]bool) ([]map[int64]bool, error) {
	return db.recallTermRowsIn(ctx, matches, window, windowRanges(window, maxWindowRanges))
}

// recallTermRowsIn is RecallTermRows reading the index in ranges (the
// benchmark's baseline reads it in one).
func (db *DB) recallTermRowsIn(ctx context.Context, matches []string, window map[int64]bool, ranges [][2]int64) ([]map[int64]bool, error) {
	out := make([]map[int64]bool, len(matches))
	for i := range out {
		out[i] = map[int64]bool{}
	}
	if len(matches) == 0 || len(ranges) == 0 {
		return out, nil
	}
	tables, err := db.recallTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		var cols []string
		var args []any
		for _, m := range matches {
			for _, r := range ranges {
				cols = append(cols, `(SELECT coalesce(group_concat(rowid), '') FROM `+table+` WHERE `+table+` MATCH ? AND rowid BETWEEN ? AND ?)`)
				args = append(args, m, r[0], r[1])
			}
		}
		lists := make([]string, len(cols))
		dest := make([]any, len(cols))
		for i := range lists {
			dest[i] = &lists[i]
		}
		if err := db.db.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", "), args...).Scan(dest...); err != nil {
			if isQueryError(err) {
				return nil, fmt.Errorf("%w: %s", ErrQuery, queryErrorText(err))
			}
			return nil, err
		}
		for k, l := range lists {
			ids, err := idSet(l)
			if err != nil {
				return nil, err
			}
			for id := range ids {
				if window[id] {
					out[k/len(ranges)][id] = true
				}
			}
		}
	}
	return out, nil
}

// maxWindowRanges bounds the rowid ranges a window is read in: each is a
// search of its own, so few, but enough to step over the long stretches
// other projects' turns fill.
const maxWindowRanges = 8

// windowRanges covers the window's ids with at most n rowid ranges. A
// generation's turns are indexed together, so a project's turns come in
// runs; the widest gaps between the runs — other projects' turns, often
// most of the archive for a project seldom used — are left out, and the
// narrow ones read through (one search costs more than a few rows). The
// rows a term's lists hold stay near the window's size however the
// archive grows.
func windowRanges(window map[int64]bool, n int) [][2]int64 {
	ids := make([]int64, 0, len(window))
	for id := range window {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil
	}
	type gap struct {
		after int // index in ids of the last id before the gap
		size  int64
	}
	var gaps []gap
	for i := 1; i < len(ids); i++ {
		if d := ids[i] - ids[i-1] - 1; d > minGap {
			gaps = append(gaps, gap{i - 1, d})
		}
	}
	sort.SliceStable(gaps, func(i, j int) bool { return gaps[i].size > gaps[j].size }) // ties: the older gap
	gaps = gaps[:min(len(gaps), n-1)]
	sort.Slice(gaps, func(i, j int) bool { return gaps[i].after < gaps[j].after })
	var out [][2]int64
	start := ids[0]
	for _, g := range gaps {
		out = append(out, [2]int64{start, ids[g.after]})
		start = ids[g.after+1]
	}
	return append(out, [2]int64{start, ids[len(ids)-1]})
}

// minGap is the narrowest gap between a window's runs worth a search of
// its own.
const minGap = 64

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
