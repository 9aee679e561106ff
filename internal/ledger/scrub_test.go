package ledger

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// copiesIn counts text in the ledger's files: the database, its WAL, its shm.
func copiesIn(t *testing.T, path, text string) int {
	t.Helper()
	return codextest.CountIn(text, path, path+"-wal", path+"-shm")
}

// putAndDelete writes text into an ordinary row (small, and large enough
// for overflow pages) and into the full-text index, then deletes them.
func putAndDelete(t *testing.T, db *DB, text string) {
	t.Helper()
	ctx := context.Background()
	big := strings.Repeat(text+" ", 20000/len(text))
	for _, q := range []string{
		`INSERT INTO meta (key, value) VALUES ('small', '` + text + `'), ('big', '` + big + `')`,
		`INSERT INTO recall_text (rowid, prompt, reply, commands, files) VALUES (424242, '` + text + `', '', '', '')`,
		`DELETE FROM meta WHERE key IN ('small', 'big')`,
		`DELETE FROM recall_text WHERE rowid = 424242`,
	} {
		if _, err := db.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestScrub(t *testing.T) {
	ctx := context.Background()
	const text = "zebraquux-forgotten"
	t.Run("deletes are zeroed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		db := open(t, path)
		putAndDelete(t, db, text)
		vacuumed, err := db.Scrub(ctx)
		if err != nil || vacuumed {
			t.Fatalf("scrub of a new ledger: vacuumed %v, %v (want no vacuum)", vacuumed, err)
		}
		// The index keeps terms, not the text: its term is gone too.
		for _, s := range []string{text, "zebraquux"} {
			if n := copiesIn(t, path, s); n != 0 {
				t.Fatalf("%d copies of %q left in the ledger's files", n, s)
			}
		}
	})
	// A ledger that deleted before deletes were zeroed keeps the text in
	// free space until the first scrub vacuums it.
	t.Run("legacy free space is vacuumed once", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		db := open(t, path)
		if _, err := db.db.ExecContext(ctx, `PRAGMA secure_delete = 0`); err != nil {
			t.Fatal(err)
		}
		putAndDelete(t, db, text)
		if _, err := db.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		if n := copiesIn(t, path, text); n == 0 {
			t.Fatal("no copy left by deletes that were not zeroed: the test proves nothing")
		}
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.PutMeta(ctx, ScrubKey, "pending") }); err != nil {
			t.Fatal(err)
		}
		vacuumed, err := db.Scrub(ctx)
		if err != nil || !vacuumed {
			t.Fatalf("vacuumed %v, %v", vacuumed, err)
		}
		if n := copiesIn(t, path, text); n != 0 {
			t.Fatalf("%d copies left after the scrub", n)
		}
		if v, _ := db.Meta(ctx, ScrubKey); v != "" {
			t.Fatalf("scrub still pending: %q", v)
		}
		if vacuumed, err := db.Scrub(ctx); err != nil || vacuumed {
			t.Fatalf("second scrub: vacuumed %v, %v (want no vacuum)", vacuumed, err)
		}
	})
	// Another process reading holds the WAL: the scrub says so rather than
	// claim the bytes are gone.
	t.Run("WAL held by a reader", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), FileName)
		db := open(t, path)
		reader, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		rtx, err := reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := rtx.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		putAndDelete(t, db, text)
		short, err := openWriter(ctx, path, Options{BusyTimeout: 100 * 1e6})
		if err != nil {
			t.Fatal(err)
		}
		defer short.Close()
		if _, err := short.Scrub(ctx); !errors.Is(err, ErrWALHeld) {
			t.Fatalf("scrub with a reader: %v, want ErrWALHeld", err)
		}
		_ = rtx.Rollback()
		if _, err := short.Scrub(ctx); err != nil {
			t.Fatalf("scrub once the reader is gone: %v", err)
		}
		if n := copiesIn(t, path, text); n != 0 {
			t.Fatalf("%d copies left", n)
		}
	})
}

func TestResolveSession(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), FileName))
	for _, id := range []string{"01a2-aaaa", "01a2-aabb", "01b3-cccc", "x_y%z"} {
		if _, err := db.db.ExecContext(ctx, `INSERT INTO sessions (id, status, created_at, last_seen) VALUES (?, 'live', '', '')`, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		in, want string
		err      error
	}{
		{"01a2-aaaa", "01a2-aaaa", nil}, // whole: itself
		{"01b3", "01b3-cccc", nil},      // a unique prefix
		{"01a2-aab", "01a2-aabb", nil},
		{"01a2", "", ErrAmbiguous},
		{"01c", "", ErrNotFound},
		{"x_", "x_y%z", nil}, // '_' and '%' are letters, not patterns
		{"x%", "", ErrNotFound},
		{"", "", ErrNotFound},
	} {
		got, err := db.ResolveSession(ctx, c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%q: %q, %v; want %v", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
