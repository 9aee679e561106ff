// Package ledger is cx's state in SQLite (pure Go driver). Many short hook
// processes and several cx processes use it at once: WAL, a busy timeout,
// and write transactions that take the write lock up front (BEGIN
// IMMEDIATE), so a read-then-write decision is never raced; every write
// connection zeroes what it deletes (secure_delete), and Scrub takes the
// rest out of the files.
//
// Its tables, each in the file named for it, and the packages that write
// them (TestLedgerWritersAreTheDocumented fails when another does; history
// writes every table that holds what a session said, to forget it):
//
//	runs                 runs.go           lifecycle; history (forget) — a cx process supervising a Codex
//	sessions             sessions.go       lifecycle; history (forget) — hooks, capture, ends, recovery
//	generations          generations.go    lifecycle; history (forget) — one row per end: the primary key referees racing enders
//	jobs                 jobs.go           lifecycle; internal/outbox; history (forget) — enqueued with the end that causes them, leased and settled by the outbox
//	events               events.go         lifecycle; internal/outbox; internal/sink/openviking; history — the log `cx ctl show` prints (forget blanks a detail)
//	turns, session_folds  turns.go         lifecycle; history (forget) — capture: turns by generation, the checkpoint folded so far
//	archives             turns.go          internal/sink/local; history (forget) — committed generations (SinkStore.PutArchive)
//	sink_turns, sink_commits, sink_sessions  sinkstate.go  internal/sink/openviking — how far each turn, commit and remote session got (SinkStore)
//	recall_turns, recall_words, recall_text  recall.go  internal/sink/local; internal/recall/index; history (forget) — the search index (FTS5): a committed archive's rows, the backfill of older ones (searched in recall_search.go)
//	recall_given         recall_prompt.go  internal/recall/prompt; history (forget) — the turns per-prompt recall gave each thread
//	meta                 meta.go           internal/ledger; internal/recall/index; internal/sink/local; history — migrations (schema version), the recall backfill's keys, a scrub due, the count of index removals (recall.go: its windows' stamp)
//
// Every table's schema, and the migrations between versions, are in
// schema.go. A sink writes through a SinkStore (sinkstore.go); the local
// sink also reads the index it keeps.
//
// Errors are told apart by SQLite's result codes (IsDamaged, CannotWrite,
// query errors), never by their text. history's forget deletes from every
// table that holds what a session said (Forget, forget.go).
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"cx/internal/config"
	"cx/internal/fsutil"
	"cx/internal/testpoint"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// FileName is the ledger's file inside CX_HOME.
const FileName = "cx.db"

// DB is an open ledger.
type DB struct {
	db   *sql.DB
	Path string
	now  func() time.Time
	// reindexed: the schema-8 index is known empty (nothing makes it hold
	// rows again), so searches need not look there.
	reindexed atomic.Bool
	// readSchema is the schema version a read-only open found (0 for a
	// writer, which migrates).
	readSchema int
	// stmts are the transactions' statements, prepared once (stmts.go).
	stmts stmtCache
	// written counts the transactions Tx committed (Written).
	written atomic.Int64
}

// Options tune Open.
type Options struct {
	// BusyTimeout is how long a statement waits for another process's lock.
	BusyTimeout time.Duration
	// Now is the transactions' clock (nil: the system's, in UTC, as
	// testpoint sets it).
	Now func() time.Time
}

// ErrDamaged means the file is not a usable SQLite database.
var ErrDamaged = errors.New("ledger damaged")

// Mode is what an entry point opens the ledger for; it chooses the mode,
// the packages below it get the DB it opened.
type Mode int

const (
	// Writer opens the ledger to write: created when missing (mode 0600,
	// in a CX_HOME made when missing, config.EnsureHome) and migrated to
	// this build's schema. The state machine's: a run, a
	// hook, a command that ends, commits, imports or forgets.
	Writer Mode = iota
	// Reader opens it to read only (status, show, search, context, `cx
	// mcp`): never created, migrated or written, so a read-only CX_HOME is
	// read too. A ledger that is not there yet reads as an empty one; one
	// at an older schema (from the recall index on) is read as it is.
	Reader
	// Prompt is per-prompt recall's read-only open when the hook could not
	// open the ledger to write: as Reader, but a ledger a writer has yet to
	// migrate, or none, is refused (recall reads what the latest schema
	// adds, and a hook has milliseconds).
	Prompt
)

// Open opens the ledger in CX_HOME home for mode.
func Open(ctx context.Context, home string, mode Mode, opts Options) (*DB, error) {
	path := Path(home)
	switch mode {
	case Writer:
		if err := config.EnsureHome(home); err != nil {
			return nil, err
		}
		return openWriter(ctx, path, opts)
	case Prompt:
		db, err := openReader(ctx, path)
		if err == nil && db.Behind() {
			db.Close()
			return nil, fmt.Errorf("the ledger is at an older schema than this cx's: recall waits for its upgrade (the hook's own connection, or the next cx, does it)")
		}
		return db, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return openEmpty(ctx, path, opts)
	}
	db, err := openReader(ctx, path)
	if errors.Is(err, errUnmade) {
		return openEmpty(ctx, path, opts) // a writer is making it: none of it is there yet
	}
	return db, err
}

// openEmpty is a ledger that is not there yet, read: an empty one at this
// build's schema, in memory (nothing is written).
func openEmpty(ctx context.Context, path string, opts Options) (*DB, error) {
	sdb, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	sdb.SetMaxOpenConns(1) // the one connection holds the memory database
	db := &DB{db: sdb, Path: path, now: opts.Now}
	if db.now == nil {
		db.now = testpoint.Now
	}
	if err := db.migrate(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	return db, nil
}

// openWriter opens (creating if needed, mode 0600) and migrates the
// ledger at path.
func openWriter(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 2 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	// Create the file ourselves so it is 0600; SQLite gives its -wal and
	// -shm files the database's permissions.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	f.Close()
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=secure_delete(1)&_txlock=immediate",
		path, opts.BusyTimeout.Milliseconds())
	// SQLite answers "busy" at once, without waiting its busy timeout, to a
	// connection that would make the file a WAL database, or migrate it,
	// while another process does (the first hooks of a fresh CX_HOME: one
	// answered in its own process, beside the hook host it started): the
	// open is tried again until the busy timeout has passed.
	for end := time.Now().Add(opts.BusyTimeout); ; {
		db, err := openWriterOnce(ctx, path, dsn, opts)
		if err == nil || sqliteCode(err) != sqliteBusy || time.Now().After(end) || ctx.Err() != nil {
			return db, err
		}
		time.Sleep(openRetryPause)
	}
}

// openRetryPause is the pause before a busy first open is tried again.
const openRetryPause = 20 * time.Millisecond

// openWriterOnce opens the ledger at path with dsn and migrates it.
func openWriterOnce(ctx context.Context, path, dsn string, opts Options) (*DB, error) {
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	sdb.SetMaxOpenConns(1) // one connection per process: SQLite serialises writers anyway
	db := &DB{db: sdb, Path: path, now: opts.Now}
	if db.now == nil {
		db.now = testpoint.Now
	}
	if err := db.migrate(ctx); err != nil {
		sdb.Close()
		if isDamage(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
		}
		return nil, fmt.Errorf("open ledger %s: %w", path, fsutil.Full(filepath.Dir(path), err))
	}
	return db, nil
}

// CannotWrite reports whether err means the ledger cannot be written
// where it is — a read-only file system or folder, a file the user may
// not write — while it may still be read.
func CannotWrite(err error) bool {
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return true
	}
	c := sqliteCode(err)
	return c == sqliteReadOnly || c == sqliteCantOpen
}

// IsFull reports whether err met a disk with no room left.
func IsFull(err error) bool {
	var fe *fsutil.FullError
	return errors.As(err, &fe)
}

// Passing reports whether err may pass by itself if the same write is
// tried again soon: another process holding the ledger past the busy
// timeout, or a disk with no room for the moment.
func Passing(err error) bool {
	switch sqliteCode(err) {
	case sqliteBusy, sqliteLocked, sqliteIOErr, sqliteFull:
		return true
	}
	return errors.Is(err, syscall.ENOSPC) || IsFull(err)
}

// sqliteCode is the primary SQLite result code err carries (0: none).
func sqliteCode(err error) int {
	var se interface{ Code() int }
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// SQLite's primary result codes cx tells apart.
const (
	sqliteError    = 1
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteCorrupt  = 11
	sqliteFull     = 13
	sqliteCantOpen = 14
	sqliteNotADB   = 26
)

// IsDamaged reports whether err says the ledger file is damaged (not a
// database, or a malformed one): moving it aside is the fix.
func IsDamaged(err error) bool {
	if errors.Is(err, ErrDamaged) {
		return true
	}
	if c := sqliteCode(err); c == sqliteCorrupt || c == sqliteNotADB {
		return true
	}
	return isDamage(err)
}

func isDamage(err error) bool {
	c := sqliteCode(err)
	return c == sqliteCorrupt || c == sqliteNotADB
}

// q runs reads outside a transaction with kept statements.
func (db *DB) q() keptDB { return keptDB{db.db, &db.stmts} }

// Close closes the ledger.
func (db *DB) Close() error {
	db.stmts.close()
	return db.db.Close()
}

// Tx runs f in one write transaction (the write lock taken at BEGIN).
func (db *DB) Tx(ctx context.Context, f func(tx *Tx) error) error {
	db.stmts.prepare(ctx, db.db)
	stx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger begin: %w", err)
	}
	tx := &Tx{tx: keptTx{Tx: stx, cache: &db.stmts}, now: db.now()}
	if err := f(tx); err != nil {
		_ = stx.Rollback()
		return err
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("ledger commit: %w", err)
	}
	db.written.Add(1)
	return nil
}

// Written is how many write transactions this handle has committed (Tx
// and TxRetry): each is the write lock taken and a write to the WAL, what
// many hooks at once queue on.
func (db *DB) Written() int64 { return db.written.Load() }

// TxRetry runs f as Tx does, and while it fails for a reason that passes
// (Passing) tries it again every pause, until it succeeds, fails
// otherwise, ctx ends, or stop is closed (then it tries once more). It
// returns how many tries it made and the last one's error.
func (db *DB) TxRetry(ctx context.Context, stop <-chan struct{}, pause time.Duration, f func(tx *Tx) error) (int, error) {
	for tries := 1; ; tries++ {
		err := db.Tx(ctx, f)
		if err == nil || !Passing(err) {
			return tries, err
		}
		select {
		case <-ctx.Done():
			return tries, err
		case <-stop:
			return tries + 1, db.Tx(ctx, f)
		case <-time.After(pause):
		}
	}
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

func (db *DB) migrate(ctx context.Context) error {
	var v int
	if err := db.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("ledger schema version %d is newer than this cx understands (%d)", v, len(migrations))
	}
	for v < len(migrations) {
		err := db.Tx(ctx, func(tx *Tx) error {
			var cur int
			if err := tx.tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
				return err
			}
			// A new ledger is made whole in one transaction: a reader
			// sees none of it (schema 0, read as empty) or all of it,
			// never a ledger half made. An older one moves a step at a
			// time. Another process may have moved it on meanwhile.
			last := min(cur+1, len(migrations))
			if cur == 0 {
				last = len(migrations)
			}
			for j := cur; j < last; j++ {
				if _, err := tx.tx.ExecContext(ctx, migrations[j]); err != nil {
					return fmt.Errorf("migration %d: %w", j+1, err)
				}
			}
			_, err := tx.tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", max(cur, last)))
			return err
		})
		if err != nil {
			return err
		}
		if err := db.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
	}
	return nil
}

// Check runs SQLite's quick integrity check.
func (db *DB) Check(ctx context.Context) error {
	var res string
	if err := db.db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&res); err != nil {
		return fmt.Errorf("ledger check: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("%w: %s", ErrDamaged, res)
	}
	return nil
}
