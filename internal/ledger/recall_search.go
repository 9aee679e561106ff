package ledger

// Searching the recall index (FTS5): bm25-ranked matches, the turns at
// given places, and the indexed texts of hits.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// RecallQuery is one search of the recall index.
type RecallQuery struct {
	Match   string    // an FTS5 query
	Project string    // "" for every project
	Since   time.Time // zero for all time
	Until   time.Time // before it; zero for up to now
	Limit   int
	// NoSnippets leaves the hits' snippets to the caller: FTS5 makes one
	// for every turn that matches, before the sort.
	NoSnippets bool
}

// RecallHit is one turn a search found, best first.
type RecallHit struct {
	ID         int64 // the index row
	SessionID  string
	Generation int
	Turn       int
	Key        string
	At         time.Time
	Cwd        string
	Project    string
	Score      float64 // bm25's, negated: higher is better
	Snippet    string  // the best-matching field's text around the match, the match between « and »
	Chars      int     // the turn's indexed length in characters, all fields (RecallWindowTurns only)
}

// ErrQuery is a search the index could not parse.
var ErrQuery = errors.New("bad query")

// recallWeights are bm25's column weights: a prompt's words count twice,
// a file name's half.
const recallWeights = "2.0, 1.0, 1.0, 0.5"

// Search runs q over the recall index, ranked by bm25, ties by recency.
// While the schema-8 index still holds rows (RecallReindexKey) it is
// searched too and the two merged by score.
func (db *DB) Search(ctx context.Context, q RecallQuery) ([]RecallHit, error) {
	tables, err := db.recallTables(ctx, db.db)
	if err != nil {
		return nil, err
	}
	var hits []RecallHit
	for _, table := range tables {
		found, err := db.searchTable(ctx, table, q)
		if err != nil {
			return nil, err
		}
		hits = append(hits, found...)
	}
	if len(tables) > 1 {
		sort.SliceStable(hits, func(i, j int) bool {
			if hits[i].Score != hits[j].Score {
				return hits[i].Score > hits[j].Score
			}
			return hits[i].At.After(hits[j].At)
		})
		hits = hits[:min(len(hits), q.Limit)]
	}
	return hits, nil
}

// recallTables are the index tables that may hold rows: the stemmed one,
// and the schema-8 one until its rows have moved.
func (db *DB) recallTables(ctx context.Context, q querier) ([]string, error) {
	if db.reindexed.Load() {
		return []string{"recall_words"}, nil
	}
	pending, err := getMeta(ctx, q, RecallReindexKey)
	if err != nil {
		return nil, err
	}
	if pending != "" {
		return []string{"recall_words", "recall_text"}, nil
	}
	db.reindexed.Store(true)
	return []string{"recall_words"}, nil
}

// searchTable runs q on one index table. The full-text match is the outer
// loop (CROSS JOIN fixes SQLite's join order): with a project filter the
// planner may otherwise walk the project's turns and run the match once
// per turn, many times slower.
func (db *DB) searchTable(ctx context.Context, table string, q RecallQuery) ([]RecallHit, error) {
	where := []string{table + " MATCH ?"}
	args := []any{q.Match}
	if q.Project != "" {
		where = append(where, "t.project = ?")
		args = append(args, q.Project)
	}
	if !q.Since.IsZero() {
		where = append(where, "t.at >= ?")
		args = append(args, ts(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "t.at < ?")
		args = append(args, ts(q.Until))
	}
	args = append(args, q.Limit)
	snippet := `snippet(` + table + `, -1, '«', '»', '…', 24)`
	if q.NoSnippets {
		snippet = `''`
	}
	hits, err := list(ctx, db.q(), func(s scanner) (RecallHit, error) {
		var h RecallHit
		var at string
		err := s.Scan(&h.ID, &h.SessionID, &h.Generation, &h.Turn, &h.Key, &at, &h.Cwd, &h.Project, &h.Score, &h.Snippet)
		h.At = parseTS(at)
		h.Score = -h.Score
		return h, err
	}, `SELECT t.id, t.session_id, t.generation, t.turn, t.key, t.at, t.cwd, t.project, bm25(`+table+`, `+recallWeights+`) AS score, `+snippet+`
		FROM `+table+` CROSS JOIN recall_turns t ON t.id = `+table+`.rowid
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY score, t.at DESC LIMIT ?`, args...)
	if err != nil && isQueryError(err) {
		return nil, fmt.Errorf("%w: %s", ErrQuery, queryErrorText(err))
	}
	return hits, err
}

// Place is a turn of a session.
type Place struct {
	SessionID string
	Turn      int
}

// RecallTurnHits returns the indexed turns at places (those that exist) as
// hits with no score or snippet, and their indexed texts by row (a
// search's places are the turns next to its hits, whose text it reads
// next).
func (db *DB) RecallTurnHits(ctx context.Context, places []Place) ([]RecallHit, map[int64]RecallText, error) {
	if len(places) == 0 {
		return nil, nil, nil
	}
	want := make([][2]any, len(places))
	for i, p := range places {
		want[i] = [2]any{p.SessionID, p.Turn}
	}
	arg, err := json.Marshal(want)
	if err != nil {
		return nil, nil, err
	}
	return db.turnsWithTexts(ctx, `json_each(?) w JOIN recall_turns t ON t.session_id = w.value ->> 0 AND t.turn = w.value ->> 1`, ``, arg)
}

// RecallTurnsByID returns the indexed turns whose rows are ids (those that
// exist, in no order) as RecallTurnHits does, with their texts.
func (db *DB) RecallTurnsByID(ctx context.Context, ids []int64) ([]RecallHit, map[int64]RecallText, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return nil, nil, err
	}
	return db.turnsWithTexts(ctx, `recall_turns t`, `WHERE t.id IN (SELECT value FROM json_each(?))`, arg)
}

// turnsWithTexts runs a query of indexed turns (t, recall_turns, in from,
// filtered by where) and reads each with its text, from whichever index
// table holds its row. The turns asked for are one argument (a JSON
// array, which json_each reads): one statement, kept, however many.
func (db *DB) turnsWithTexts(ctx context.Context, from, where string, turns []byte) ([]RecallHit, map[int64]RecallText, error) {
	tables, err := db.recallTables(ctx, db.db)
	if err != nil {
		return nil, nil, err
	}
	cols := make([]string, 4)
	for i, c := range textCols {
		var held []string
		for k := range tables {
			held = append(held, fmt.Sprintf("x%d.%s", k, c))
		}
		cols[i] = "coalesce(" + strings.Join(held, ", ") + ", '')"
	}
	for k, table := range tables {
		from += fmt.Sprintf(" LEFT JOIN %s x%d ON x%d.id = t.id", textTable(table), k, k)
	}
	texts := map[int64]RecallText{}
	hits, err := list(ctx, db.q(), func(s scanner) (RecallHit, error) {
		var h RecallHit
		var at string
		var t RecallText
		err := s.Scan(&h.ID, &h.SessionID, &h.Generation, &h.Turn, &h.Key, &at, &h.Cwd, &h.Project, &t.Prompt, &t.Reply, &t.Commands, &t.Files)
		h.At = parseTS(at)
		texts[h.ID] = t
		return h, err
	}, `SELECT t.id, t.session_id, t.generation, t.turn, t.key, t.at, t.cwd, t.project, `+strings.Join(cols, ", ")+`
		FROM `+from+` `+where, string(turns))
	if err != nil {
		return nil, nil, err
	}
	return hits, texts, nil
}

// RecallText is an indexed turn's text by field, as indexed (redacted).
type RecallText struct {
	Prompt, Reply, Commands, Files string
}

// RecallTexts returns the indexed text of the rows ids (absent ones are
// left out).
func (db *DB) RecallTexts(ctx context.Context, ids []int64) (map[int64]RecallText, error) {
	return db.recallTexts(ctx, db.db, ids) // its shape is the number of ids: not kept
}

func (db *DB) recallTexts(ctx context.Context, q querier, ids []int64) (map[int64]RecallText, error) {
	out := make(map[int64]RecallText, len(ids))
	err := db.eachIndexed(ctx, q, ids, strings.Join(textCols[:], ", "), func(s idScanner) error {
		var t RecallText
		id, err := s.Scan(&t.Prompt, &t.Reply, &t.Commands, &t.Files)
		out[id] = t
		return err
	})
	return out, err
}

// idScanner scans a row whose first column is its index row id.
type idScanner struct{ rows *sql.Rows }

func (s idScanner) Scan(dest ...any) (int64, error) {
	var id int64
	err := s.rows.Scan(append([]any{&id}, dest...)...)
	return id, err
}

// eachIndexed reads cols (of textTable's) of the index rows ids: one
// query per index table.
func (db *DB) eachIndexed(ctx context.Context, q querier, ids []int64, cols string, fn func(idScanner) error) error {
	if len(ids) == 0 {
		return nil
	}
	tables, err := db.recallTables(ctx, q)
	if err != nil {
		return err
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	in := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	for _, table := range tables {
		rows, err := q.QueryContext(ctx, `SELECT id, `+cols+` FROM `+textTable(table)+` WHERE id IN (`+in+`)`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := fn(idScanner{rows}); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// An index table's texts are read from its FTS5 content table
// (<table>_content: each row's id, and its columns as c0-c3 in the order
// the index table names them). A row read by its id there is a B-tree
// seek; through the index table, a full-text cursor each (a search's
// texts cost 7% more of its instructions so).
func textTable(table string) string { return table + "_content" }

// textCols are the content table's columns of a turn's prompt, reply,
// commands and files.
var textCols = [4]string{"c0", "c1", "c2", "c3"}

// textOf is an index table's texts as a table of id, prompt, reply,
// commands and files, for an expression of the columns' names.
func textOf(table string) string {
	return `(SELECT id, c0 AS prompt, c1 AS reply, c2 AS commands, c3 AS files FROM ` + textTable(table) + `)`
}

// indexedCol is expr, of the index columns, for the turn t (recall_turns)
// from whichever of tables holds its row (recallTables: a statement that
// names the schema-8 table when it is empty pays for opening it).
func indexedCol(tables []string, expr string) string {
	parts := make([]string, len(tables))
	for i, table := range tables {
		parts[i] = `(SELECT ` + expr + ` FROM ` + textOf(table) + ` WHERE id = t.id)`
	}
	return strings.Join(parts, ", ")
}

// recallCharsCol is a turn's indexed length in characters (t is
// recall_turns): as written with it, or for a turn indexed before schema
// 14, read from its text.
func recallCharsCol(tables []string) string {
	return `coalesce(t.chars, ` + indexedCol(tables, `length(prompt) + length(reply) + length(commands) + length(files)`) + `, 0)`
}

// isQueryError reports whether err is SQLite refusing an FTS5 query (as
// opposed to the ledger failing).
func isQueryError(err error) bool {
	// SQLITE_ERROR is also what a broken statement of cx's own would give:
	// the query's own complaints are told apart by what FTS5 says.
	if sqliteCode(err) != sqliteError {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "fts5:") || strings.Contains(s, "unterminated string") || strings.Contains(s, "no such column") || strings.Contains(s, "SQL logic error")
}

// queryErrorText is SQLite's complaint without the driver's wrapping.
func queryErrorText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s[:i], "SQL logic error") {
		s = s[i+2:]
	}
	s = strings.TrimPrefix(s, "SQL logic error: ")
	s = strings.TrimSuffix(s, " (1)")
	return strings.Replace(s, `near ""`, "at the end of the query", 1)
}
