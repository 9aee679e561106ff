package ledger

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
	// A ledger a writer is making (its file there, no schema yet) reads as
	// empty too: a new ledger is made in one transaction, never seen half
	// made.
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(home), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(ctx, home, Reader, Options{}); err != nil {
		t.Fatalf("reader of a ledger being made: %v", err)
	} else {
		r.Close()
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

// Processes that open a CX_HOME's first ledger at once (a hook answered in
// its own process and the hook host it started, on a fresh CX_HOME) all
// open it: SQLite answers one of them "busy" at once, without waiting its
// busy timeout, while another makes the file a WAL database.
func TestFirstOpensAtOnce(t *testing.T) {
	for round := range 20 {
		home := filepath.Join(t.TempDir(), "cx")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := Open(ctx, home, Writer, Options{})
				if err != nil {
					errs <- err
					return
				}
				db.Close()
			}()
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: a first open beside others: %v", round, err)
		}
	}
}
