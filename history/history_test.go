package history

import (
	"context"
	"errors"
	"testing"
	"time"

	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/readmodel"
	"cx/internal/recall/index"
	"cx/internal/recall/search"
	"cx/internal/rollout"
	"cx/internal/sinks"
	"cx/lifecycle"
)

// Forget refuses a session it does not know, one that is live and one with
// a commit in the outbox; a committed one leaves the archive and the index
// (search finds nothing of it) and is shown as forgotten.
func TestForget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home := t.TempDir()
	cfg, err := config.Load(func(k string) (string, bool) {
		if k == "CX_HOME" {
			return home, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := State{DB: db, Cfg: cfg, M: lifecycle.New(cfg, db, sinks.Build)}
	err = db.Tx(ctx, func(tx *ledger.Tx) error {
		now := tx.Now()
		for _, s := range []ledger.Session{
			{ID: "live", Status: ledger.Live, Generation: 1, CreatedAt: now, LastSeen: now},
			{ID: "queued", Status: ledger.Ended, Generation: 1, CreatedAt: now, LastSeen: now},
			{ID: "done", Status: ledger.Committed, Generation: 1, CreatedAt: now, LastSeen: now},
		} {
			if err := tx.PutSession(ctx, s); err != nil {
				return err
			}
		}
		if err := tx.InsertGeneration(ctx, ledger.Generation{SessionID: "done", Generation: 1, Status: ledger.Committed, EndReason: "exit", Turns: 1, EndedAt: now}); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, "commit", "queued", 1, "local")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	turns := []rollout.Turn{{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "the narwhalzebra password reset"}}
	err = db.SinkStore().PutArchive(ctx, "done", 1, `[{"key":"t1","user":"the narwhalzebra password reset"}]`, "", "", func(before int, at time.Time) []ledger.RecallDoc {
		return index.Docs("done", 1, before, turns, "", "", at)
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]error{"nobody": readmodel.ErrNoSession, "live": ErrBusy, "queued": ErrBusy} {
		if _, err := Forget(ctx, st, id); !errors.Is(err, want) {
			t.Errorf("Forget(%s): %v, want %v", id, err, want)
		}
	}
	n, err := Forget(ctx, st, "done")
	if err != nil || n != 1 {
		t.Fatalf("Forget(done): %d turns, %v", n, err)
	}
	ar := search.NewArchive(db, home)
	if hits, err := ar.Search(ctx, search.Query{Text: "narwhalzebra"}); err != nil || len(hits) != 0 {
		t.Errorf("search after forget: %+v, %v", hits, err)
	}
	s, _ := db.Session(ctx, "done")
	if v := readmodel.Session(ctx, db, s); !v.Forgotten || v.Commits != 1 {
		t.Errorf("the forgotten session's view: %+v", v)
	}
}
