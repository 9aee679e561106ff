package ledger

import (
	"context"
	"path/filepath"
	"testing"
)

// kept reports whether db keeps query's statement.
func kept(db *DB, query string) bool {
	db.stmts.mu.Lock()
	defer db.stmts.mu.Unlock()
	_, ok := db.stmts.stmts[query]
	return ok
}

// A read outside a transaction is kept from its first run; a statement of
// a transaction only once it has run twice (prepared before the next
// transaction), so one a short process runs once is not prepared twice;
// neither a pragma nor two statements in one are kept.
func TestKeptStatements(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), FileName))
	const read = `SELECT count(*) FROM sessions WHERE status = ?`
	var n int
	if err := db.q().QueryRowContext(ctx, read, Live).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if !kept(db, read) {
		t.Fatal("a read outside a transaction is not kept after its first run")
	}
	const inTx = `SELECT count(*) FROM runs WHERE ended_at IS NULL`
	txRead := func() {
		t.Helper()
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.tx.QueryRowContext(ctx, inTx).Scan(&n) }); err != nil {
			t.Fatal(err)
		}
	}
	txRead()
	txRead() // prepares nothing yet: the statement was seen once before
	if kept(db, inTx) {
		t.Fatal("a transaction's statement run once was prepared to be kept")
	}
	txRead() // prepared before it: it ran twice
	if !kept(db, inTx) {
		t.Fatal("a transaction's statement run twice is not kept")
	}
	for _, q := range []string{"PRAGMA user_version", "SELECT 1; SELECT 2"} {
		if keepable(q) {
			t.Errorf("%q is keepable", q)
		}
	}
}
