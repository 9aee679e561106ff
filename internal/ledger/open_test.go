package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Each mode opens the ledger as its entry points need: a writer creates
// and migrates it; a reader neither creates nor writes it (a ledger not
// there yet reads as an empty one, and no file appears); per-prompt
// recall's read refuses a ledger that is not there.
func TestOpenModes(t *testing.T) {
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "home")
	r, err := Open(ctx, home, Reader, Options{})
	if err != nil {
		t.Fatalf("reader of no ledger: %v", err)
	}
	if ss, err := r.Sessions(ctx); err != nil || len(ss) != 0 {
		t.Fatalf("reader of no ledger: sessions %v, %v", ss, err)
	}
	r.Close()
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("a reader created %s (%v)", home, err)
	}
	if _, err := Open(ctx, home, Prompt, Options{}); err == nil {
		t.Fatal("prompt read of no ledger: no error")
	}
	w, err := Open(ctx, home, Writer, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Tx(ctx, func(tx *Tx) error { return tx.PutSession(ctx, Session{ID: "s1", Status: Live, Generation: 1}) }); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, mode := range []Mode{Reader, Prompt} {
		db, err := Open(ctx, home, mode, Options{})
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		if ss, err := db.Sessions(ctx); err != nil || len(ss) != 1 {
			t.Errorf("mode %d: sessions %v, %v", mode, ss, err)
		}
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.PutSession(ctx, Session{ID: "s2", Status: Live, Generation: 1}) }); err == nil {
			t.Errorf("mode %d wrote the ledger", mode)
		}
		db.Close()
	}
}
