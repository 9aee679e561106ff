// Package recalltest is what recall's tests share: a ledger under a
// temporary CX_HOME, a generation archived and indexed as the local sink
// does it, and a plain SQLite handle to read what cx's API does not show.
package recalltest

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/recall/index"
	"cx/internal/rollout"
)

// Ledger opens a ledger to write under a new temporary CX_HOME (closed
// with the test) and returns it and the home.
func Ledger(t testing.TB) (*ledger.DB, string) {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, home
}

// Archive stores and indexes one generation, as the local sink does.
func Archive(t testing.TB, db *ledger.DB, projects *recall.Projects, sid string, gen int, cwd string, turns []rollout.Turn) {
	t.Helper()
	ctx := context.Background()
	data, _ := json.Marshal(turns)
	err := db.Tx(ctx, func(tx *ledger.Tx) error {
		if err := tx.InsertGeneration(ctx, ledger.Generation{SessionID: sid, Generation: gen, Status: ledger.Committed, EndReason: "exit", Turns: len(turns), EndedAt: tx.Now()}); err != nil {
			return err
		}
		if err := tx.PutArchive(ctx, sid, gen, string(data), "", ""); err != nil {
			return err
		}
		return index.IndexGeneration(ctx, tx, sid, gen, turns, cwd, projects.Of(cwd), tx.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Raw is a plain SQLite handle on home's ledger, for a test to read what
// cx's own API does not show (closed with the test).
func Raw(t testing.TB, home string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", ledger.Path(home))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Exit is an exit code, as a tool call holds it.
func Exit(n int) *int { return &n }
