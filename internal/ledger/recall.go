package ledger

import (
	"context"
	"cx/internal/fsutil"
	"cx/internal/testpoint"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"
)

// RecallBackfillKey is the meta key that says the archives stored before
// the recall index existed still wait to be indexed.
const RecallBackfillKey = "recall_backfill"

// RecallReindexKey is the meta key that says recall_text (words as typed,
// schema 8) still holds rows that are to move to recall_words (stemmed).
const RecallReindexKey = "recall_reindex"

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
		chars := utf8.RuneCountInString(d.Prompt) + utf8.RuneCountInString(d.Reply) + utf8.RuneCountInString(d.Commands) + utf8.RuneCountInString(d.Files)
		res, err := tx.tx.ExecContext(ctx, `INSERT INTO recall_turns (session_id, generation, turn, key, at, cwd, project, chars) VALUES (?,?,?,?,?,?,?,?)`,
			d.SessionID, d.Generation, d.Turn, d.Key, ts(d.At), d.Cwd, d.Project, chars)
		if err != nil {
			return fmt.Errorf("index %s g%d turn %d: %w", d.SessionID, d.Generation, d.Turn, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO recall_words (rowid, prompt, reply, commands, files) VALUES (?,?,?,?,?)`,
			id, d.Prompt, d.Reply, d.Commands, d.Files); err != nil {
			return fmt.Errorf("index %s g%d turn %d: %w", d.SessionID, d.Generation, d.Turn, err)
		}
	}
	return nil
}

func (tx *Tx) unindex(ctx context.Context, where string, args ...any) error {
	for _, table := range []string{"recall_words", "recall_text"} {
		if _, err := tx.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE rowid IN (SELECT id FROM recall_turns WHERE `+where+`)`, args...); err != nil {
			return fmt.Errorf("unindex: %w", err)
		}
	}
	res, err := tx.tx.ExecContext(ctx, `DELETE FROM recall_turns WHERE `+where, args...)
	if err != nil {
		return fmt.Errorf("unindex: %w", err)
	}
	// A removal may change a recall window without a newer row: counted,
	// so a window read before it is known to be stale.
	if n, _ := res.RowsAffected(); n > 0 {
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, '1')
			ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`, RecallEpochKey); err != nil {
			return fmt.Errorf("unindex: %w", err)
		}
	}
	return nil
}

// readTx runs f in one read transaction (deferred: it takes no write lock,
// even on a writer's connection), so what it reads is one state; its
// statements are kept as a write transaction's are (a hook host reads a
// window's new turns on most prompts: prepared each time, its few
// statements cost 0.45 ms a read).
func (db *DB) readTx(ctx context.Context, f func(querier) error) error {
	db.stmts.prepare(ctx, db.db)
	// Read only: the driver begins it deferred, whatever the ledger's
	// _txlock says for writes.
	stx, err := db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	err = f(keptTx{Tx: stx, cache: &db.stmts})
	// A context ended after f has rolled it back already (ErrTxDone): what
	// f read stands.
	if rerr := stx.Rollback(); err == nil && !errors.Is(rerr, sql.ErrTxDone) {
		err = rerr
	}
	return err
}

// OptimizeRecall merges the index's segments into one. Each transaction
// that indexes turns adds a segment, and FTS5 merges them only four at a
// time, level by level, so a bulk import leaves a dozen or more, and every
// search seeks each word in each of them. An import merges them after.
func (db *DB) OptimizeRecall(ctx context.Context) error {
	return db.indexCommand(ctx, `INSERT INTO recall_words (recall_words) VALUES ('optimize')`)
}

// MergeRecall does a bounded step of the index's own merging: segments of
// one level, four or more, merged, at most mergePages pages written. The
// sessions archived one by one since an import each add a small segment
// (a hundred left eleven, and a search 1.1-1.4 ms slower); a sweep that
// committed some runs this after, which leaves two or three.
func (db *DB) MergeRecall(ctx context.Context) error {
	return db.indexCommand(ctx, `INSERT INTO recall_words (recall_words, rank) VALUES ('merge', ?)`, mergePages)
}

// indexCommand runs one of FTS5's commands on the index, in a write
// transaction of its own.
func (db *DB) indexCommand(ctx context.Context, command string, args ...any) error {
	return db.Tx(ctx, func(tx *Tx) error {
		if _, err := tx.tx.ExecContext(ctx, command, args...); err != nil {
			return fmt.Errorf("merge the recall index: %w", err)
		}
		return nil
	})
}

// mergePages bounds MergeRecall's work: about 2 MB written.
const mergePages = 500

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

// ReindexRecall moves up to n rows of the schema-8 index (words as typed)
// to the stemmed one, removing them there; when none is left it clears
// RecallReindexKey. It returns how many rows moved.
func (tx *Tx) ReindexRecall(ctx context.Context, n int) (int, error) {
	res, err := tx.tx.ExecContext(ctx, `INSERT INTO recall_words (rowid, prompt, reply, commands, files)
		SELECT rowid, prompt, reply, commands, files FROM recall_text ORDER BY rowid LIMIT ?`, n)
	if err != nil {
		return 0, fmt.Errorf("reindex: %w", err)
	}
	moved, _ := res.RowsAffected()
	if moved == 0 {
		return 0, tx.DeleteMeta(ctx, RecallReindexKey)
	}
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM recall_text WHERE rowid IN (SELECT rowid FROM recall_text ORDER BY rowid LIMIT ?)`, moved); err != nil {
		return 0, fmt.Errorf("reindex: %w", err)
	}
	return int(moved), nil
}

// Meta is Meta inside the transaction.
func (tx *Tx) Meta(ctx context.Context, key string) (string, error) { return getMeta(ctx, tx.tx, key) }

// DeleteMeta removes key.
func (tx *Tx) DeleteMeta(ctx context.Context, key string) error {
	_, err := tx.tx.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, key)
	return err
}

// RecallCurrent reports whether the ledger is at this build's schema with
// no recall backfill or reindex pending: a reader then needs no write.
func (db *DB) RecallCurrent(ctx context.Context) (bool, error) {
	v := db.readSchema // read at a read-only open; a writer's is read here
	if v == 0 {
		if err := db.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return false, err
		}
	}
	if v != SchemaVersion {
		return false, nil
	}
	var backfill, reindex int
	err := db.q().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE key = ?), count(*) FILTER (WHERE key = ?) FROM meta`, RecallBackfillKey, RecallReindexKey).Scan(&backfill, &reindex)
	if err == nil && reindex == 0 {
		db.reindexed.Store(true) // what recallTables would read again
	}
	return backfill+reindex == 0, err
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

func recallTurnCols(tables []string) string {
	return `t.turn, t.generation, t.key, t.at, t.cwd, coalesce(` + indexedCol(tables, `prompt`) + `, '') FROM recall_turns t`
}

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
	if err = db.q().QueryRowContext(ctx, `SELECT count(*) FROM recall_turns WHERE session_id = ?`, sessionID).Scan(&total); err != nil || total == 0 {
		return t, false, total, err
	}
	tables, err := db.recallTables(ctx, db.db)
	if err != nil {
		return t, false, total, err
	}
	t, err = scanRecallTurn(db.q().QueryRowContext(ctx, `SELECT `+recallTurnCols(tables)+` WHERE t.session_id = ? AND t.turn = ?`, sessionID, n))
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, total, nil
	}
	return t, err == nil, total, err
}

// LatestRecallTurns returns a session's last n indexed turns, in order.
func (db *DB) LatestRecallTurns(ctx context.Context, sessionID string, n int) ([]RecallTurn, error) {
	tables, err := db.recallTables(ctx, db.db)
	if err != nil {
		return nil, err
	}
	return list(ctx, db.q(), scanRecallTurn, `SELECT * FROM (SELECT `+recallTurnCols(tables)+` WHERE t.session_id = ? ORDER BY t.turn DESC LIMIT ?) ORDER BY turn`, sessionID, n)
}

// StoredTurnData is a captured turn's data (JSON) by key; "" when the
// ledger has none.
func (db *DB) StoredTurnData(ctx context.Context, sessionID, key string) (string, error) {
	var data string
	err := db.q().QueryRowContext(ctx, `SELECT data FROM turns WHERE session_id = ? AND key = ?`, sessionID, key).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return data, err
}

// LatestCheckpoint is the checkpoint of a session's latest archive that
// has one ("" for none), read without its turns.
func (db *DB) LatestCheckpoint(ctx context.Context, sessionID string) (string, error) {
	var cp string
	err := db.q().QueryRowContext(ctx, `SELECT checkpoint FROM archives WHERE session_id = ? AND checkpoint != '' ORDER BY generation DESC LIMIT 1`, sessionID).Scan(&cp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return cp, err
}

// errUnmade is a ledger file with no schema yet (a writer is making it).
var errUnmade = errors.New("not made yet")

// openReader opens an existing ledger for reading only: it neither
// creates nor migrates it, and a ledger older than the schema that has
// the recall index is refused.
func openReader(ctx context.Context, path string) (*DB, error) {
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
	if v == 0 {
		sdb.Close()
		return nil, fmt.Errorf("ledger %s: %w", path, errUnmade)
	}
	if v < 8 {
		sdb.Close()
		return nil, fmt.Errorf("ledger %s is at schema %d, before the recall index: run `cx ctl sweep` once to upgrade it", path, v)
	}
	return &DB{db: sdb, Path: path, now: testpoint.Now, readSchema: v}, nil
}

// Behind reports whether a ledger opened read only is at an older schema
// than this build's (a writer has yet to migrate it).
func (db *DB) Behind() bool { return db.readSchema != 0 && db.readSchema < SchemaVersion }

// openRO opens path read only (with extra URI parameters) and reads its
// schema version. It reads the file through a memory map (mmap_size, at
// most 256 MB of it): a search reads a few hundred pages, and each read
// through the page cache is a system call, a copy and an allocation (a
// search as a process took 1 ms more, about 14 ms against 13).
func openRO(ctx context.Context, path, extra string) (*sql.DB, int, error) {
	sdb, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)&_pragma=query_only(1)&_pragma=mmap_size(268435456)"+extra)
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
