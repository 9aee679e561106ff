package ledger

import (
	"context"
	"cx/internal/fsutil"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RecallBackfillKey is the meta key that says the archives stored before
// the recall index existed still wait to be indexed.
const RecallBackfillKey = "recall_backfill"

// RecallDoc is one archived turn as the recall index holds it: where it is,
// and its (already redacted) text by field.
type RecallDoc struct {
	SessionID  string
	Generation int
	Turn       int // 1-based, across the session's generations
	Key        string
	At         time.Time
	Cwd        string
	Project    string
	Prompt     string
	Reply      string
	Commands   string
	Files      string
}

// IndexGeneration replaces a generation's rows in the recall index with
// docs (indexing the same generation twice leaves one copy).
func (tx *Tx) IndexGeneration(ctx context.Context, sessionID string, gen int, docs []RecallDoc) error {
	if err := tx.unindex(ctx, `session_id = ? AND generation = ?`, sessionID, gen); err != nil {
		return err
	}
	for _, d := range docs {
		res, err := tx.tx.ExecContext(ctx, `INSERT INTO recall_turns (session_id, generation, turn, key, at, cwd, project) VALUES (?,?,?,?,?,?,?)`,
			d.SessionID, d.Generation, d.Turn, d.Key, ts(d.At), d.Cwd, d.Project)
		if err != nil {
			return fmt.Errorf("index %s g%d turn %d: %w", d.SessionID, d.Generation, d.Turn, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO recall_text (rowid, prompt, reply, commands, files) VALUES (?,?,?,?,?)`,
			id, d.Prompt, d.Reply, d.Commands, d.Files); err != nil {
			return fmt.Errorf("index %s g%d turn %d: %w", d.SessionID, d.Generation, d.Turn, err)
		}
	}
	return nil
}

func (tx *Tx) unindex(ctx context.Context, where string, args ...any) error {
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM recall_text WHERE rowid IN (SELECT id FROM recall_turns WHERE `+where+`)`, args...); err != nil {
		return fmt.Errorf("unindex: %w", err)
	}
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM recall_turns WHERE `+where, args...); err != nil {
		return fmt.Errorf("unindex: %w", err)
	}
	return nil
}

// TurnsBefore counts the turns of a session's generations before gen: the
// number the index gives gen's first turn, less one.
func (tx *Tx) TurnsBefore(ctx context.Context, sessionID string, gen int) (int, error) {
	var n int
	err := tx.tx.QueryRowContext(ctx, `SELECT coalesce(sum(turns), 0) FROM generations WHERE session_id = ? AND generation < ?`, sessionID, gen).Scan(&n)
	return n, err
}

// ArchivesFrom returns up to n stored archives after (session, generation)
// in key order, for a backfill that goes in batches; indexed reports
// whether the index already has each one's turns.
func (tx *Tx) ArchivesFrom(ctx context.Context, sessionID string, gen, n int) (archives []Archive, indexed []bool, err error) {
	archives, err = list(ctx, tx.tx, scanArchive, `SELECT `+archiveCols+` FROM archives WHERE (session_id, generation) > (?, ?) ORDER BY session_id, generation LIMIT ?`, sessionID, gen, n)
	for _, a := range archives {
		var has bool
		if err == nil {
			err = tx.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM recall_turns WHERE session_id = ? AND generation = ?)`, a.SessionID, a.Generation).Scan(&has)
		}
		indexed = append(indexed, has)
	}
	return archives, indexed, err
}

// Meta is Meta inside the transaction.
func (tx *Tx) Meta(ctx context.Context, key string) (string, error) { return getMeta(ctx, tx.tx, key) }

// DeleteMeta removes key.
func (tx *Tx) DeleteMeta(ctx context.Context, key string) error {
	_, err := tx.tx.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, key)
	return err
}

// RecallQuery is one search of the recall index.
type RecallQuery struct {
	Match   string    // an FTS5 query
	Project string    // "" for every project
	Since   time.Time // zero for all time
	Limit   int
}

// RecallHit is one turn a search found, best first.
type RecallHit struct {
	SessionID  string
	Generation int
	Turn       int
	At         time.Time
	Cwd        string
	Project    string
	Snippet    string // the best-matching field's text around the match, the match between « and »
}

// ErrQuery is a search the index could not parse.
var ErrQuery = errors.New("bad query")

// Search runs q over the recall index, ranked by bm25 (a prompt's words
// count twice, a file name's half).
func (db *DB) Search(ctx context.Context, q RecallQuery) ([]RecallHit, error) {
	where := []string{"recall_text MATCH ?"}
	args := []any{q.Match}
	if q.Project != "" {
		where = append(where, "t.project = ?")
		args = append(args, q.Project)
	}
	if !q.Since.IsZero() {
		where = append(where, "t.at >= ?")
		args = append(args, ts(q.Since))
	}
	args = append(args, q.Limit)
	hits, err := list(ctx, db.db, func(s scanner) (RecallHit, error) {
		var h RecallHit
		var at string
		err := s.Scan(&h.SessionID, &h.Generation, &h.Turn, &at, &h.Cwd, &h.Project, &h.Snippet)
		h.At = parseTS(at)
		return h, err
	}, `SELECT t.session_id, t.generation, t.turn, t.at, t.cwd, t.project, snippet(recall_text, -1, '«', '»', '…', 24)
		FROM recall_text JOIN recall_turns t ON t.id = recall_text.rowid
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY bm25(recall_text, 2.0, 1.0, 1.0, 0.5), t.at DESC LIMIT ?`, args...)
	if err != nil && isQueryError(err) {
		return nil, fmt.Errorf("%w: %s", ErrQuery, queryErrorText(err))
	}
	return hits, err
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

// RecallTurn is one indexed turn: where it is, and its prompt as indexed.
type RecallTurn struct {
	Turn       int
	Generation int
	Key        string
	At         time.Time
	Cwd        string
	Prompt     string
}

const recallTurnCols = `t.turn, t.generation, t.key, t.at, t.cwd, x.prompt FROM recall_turns t JOIN recall_text x ON x.rowid = t.id`

func scanRecallTurn(s scanner) (RecallTurn, error) {
	var t RecallTurn
	var at string
	err := s.Scan(&t.Turn, &t.Generation, &t.Key, &at, &t.Cwd, &t.Prompt)
	t.At = parseTS(at)
	return t, err
}

// RecallTurnAt returns a session's indexed turn n and how many it has
// (0 when the index has none of the session).
func (db *DB) RecallTurnAt(ctx context.Context, sessionID string, n int) (t RecallTurn, ok bool, total int, err error) {
	if err = db.db.QueryRowContext(ctx, `SELECT count(*) FROM recall_turns WHERE session_id = ?`, sessionID).Scan(&total); err != nil || total == 0 {
		return t, false, total, err
	}
	t, err = scanRecallTurn(db.db.QueryRowContext(ctx, `SELECT `+recallTurnCols+` WHERE t.session_id = ? AND t.turn = ?`, sessionID, n))
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, total, nil
	}
	return t, err == nil, total, err
}

// LatestRecallTurns returns a session's last n indexed turns, in order.
func (db *DB) LatestRecallTurns(ctx context.Context, sessionID string, n int) ([]RecallTurn, error) {
	return list(ctx, db.db, scanRecallTurn, `SELECT * FROM (SELECT `+recallTurnCols+` WHERE t.session_id = ? ORDER BY t.turn DESC LIMIT ?) ORDER BY turn`, sessionID, n)
}

// StoredTurnData is a captured turn's data (JSON) by key; "" when the
// ledger has none.
func (db *DB) StoredTurnData(ctx context.Context, sessionID, key string) (string, error) {
	var data string
	err := db.db.QueryRowContext(ctx, `SELECT data FROM turns WHERE session_id = ? AND key = ?`, sessionID, key).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return data, err
}

// LatestCheckpoint is the checkpoint of a session's latest archive that
// has one ("" for none), read without its turns.
func (db *DB) LatestCheckpoint(ctx context.Context, sessionID string) (string, error) {
	var cp string
	err := db.db.QueryRowContext(ctx, `SELECT checkpoint FROM archives WHERE session_id = ? AND checkpoint != '' ORDER BY generation DESC LIMIT 1`, sessionID).Scan(&cp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return cp, err
}

// Forget removes what a session said and did from the ledger — its
// archives, captured turns, checkpoints, fold and index rows — and keeps
// what it did to the ledger: its generations and their commits, so none is
// committed twice. It returns how many index rows went.
func (tx *Tx) Forget(ctx context.Context, sessionID string) (int, error) {
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM recall_turns WHERE session_id = ?`, sessionID).Scan(&n); err != nil {
		return 0, err
	}
	if err := tx.unindex(ctx, `session_id = ?`, sessionID); err != nil {
		return 0, err
	}
	for _, q := range []string{
		`DELETE FROM archives WHERE session_id = ?`,
		`DELETE FROM turns WHERE session_id = ?`,
		`DELETE FROM session_folds WHERE session_id = ?`,
		`UPDATE generations SET checkpoint = '' WHERE session_id = ?`,
		`UPDATE sessions SET meta = '' WHERE id = ?`,
	} {
		if _, err := tx.tx.ExecContext(ctx, q, sessionID); err != nil {
			return 0, fmt.Errorf("forget %s: %w", sessionID, err)
		}
	}
	return n, nil
}

// OpenReadOnly opens an existing ledger for reading only: it neither
// creates nor migrates it, and a ledger older than the schema that has
// the recall index is refused.
func OpenReadOnly(ctx context.Context, path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	sdb, v, err := openRO(ctx, path, "")
	if sqliteCode(err) == sqliteCantOpen || IsFull(fsutil.Full(filepath.Dir(path), err)) {
		// A WAL ledger with no -shm beside it, on a file system that cannot
		// create one (mounted read only), or with one a full disk keeps from
		// growing: nothing can change it there, so SQLite may read it as
		// immutable.
		sdb, v, err = openRO(ctx, path, "&immutable=1")
	}
	if err != nil {
		if isDamage(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
		}
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	if v < 8 {
		sdb.Close()
		return nil, fmt.Errorf("ledger %s is at schema %d, before the recall index: run any `cx ctl` command once to upgrade it", path, v)
	}
	return &DB{db: sdb, Path: path}, nil
}

// openRO opens path read only (with extra URI parameters) and reads its
// schema version.
func openRO(ctx context.Context, path, extra string) (*sql.DB, int, error) {
	sdb, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)&_pragma=query_only(1)"+extra)
	if err != nil {
		return nil, 0, err
	}
	sdb.SetMaxOpenConns(1)
	var v int
	if err := sdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		sdb.Close()
		return nil, 0, err
	}
	return sdb, v, nil
}
