package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// A ledger left at every earlier schema version, on a real file with a
// session in it, opens at today's: migrated in order, intact, the session
// kept — and one from before zeroed deletes is vacuumed by its first scrub.
func TestMigrateFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	for from := 1; from < SchemaVersion; from++ {
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < from; i++ {
				if _, err := raw.ExecContext(ctx, migrations[i]); err != nil {
					t.Fatalf("migration %d: %v", i+1, err)
				}
			}
			if _, err := raw.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", from)); err != nil {
				t.Fatal(err)
			}
			if _, err := raw.ExecContext(ctx, `INSERT INTO sessions (id, status, created_at, last_seen) VALUES ('s-old', 'committed', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`); err != nil {
				t.Fatal(err)
			}
			raw.Close()

			db, err := openWriter(ctx, path, Options{BusyTimeout: 5 * time.Second})
			if err != nil {
				t.Fatalf("open a schema %d ledger: %v", from, err)
			}
			defer db.Close()
			var v int
			if err := db.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
				t.Fatalf("user_version %d (%v), want %d", v, err, SchemaVersion)
			}
			if err := db.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if s, err := db.Session(ctx, "s-old"); err != nil || s.Status != "committed" {
				t.Fatalf("the session before the migration: %+v, %v", s, err)
			}
			if from >= 9 {
				return // zeroed deletes since schema 9: no scrub due
			}
			pending, _ := db.Meta(ctx, ScrubKey)
			if pending == "" {
				t.Fatal("a ledger from before zeroed deletes is not marked for a scrub")
			}
			if vacuumed, err := db.Scrub(ctx); err != nil || !vacuumed {
				t.Fatalf("first scrub: vacuumed %v, %v", vacuumed, err)
			}
		})
	}
}
