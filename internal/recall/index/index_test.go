package index_test

import (
	"context"
	"cx/internal/ledger"
	"cx/internal/recall/index"
	"cx/internal/recall/search"
	"cx/internal/rollout"
	"cx/internal/testing/recalltest"
	"encoding/json"
	"os"
	"testing"
)

// Archives stored before the index are indexed once, by the backfill the
// migration asks for; a second backfill does nothing.
func TestBackfillIndexesOldArchivesOnce(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// As a ledger from before: archives, and the flag migration 8 leaves.
	for i := range 450 { // more than two batches
		data, _ := json.Marshal([]rollout.Turn{{Key: "t", User: "old archive number w" + itoa(i)}})
		err := db.Tx(ctx, func(tx *ledger.Tx) error {
			return tx.PutArchive(ctx, "s"+itoa(1000+i), 1, string(data), "", "")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Tx(ctx, func(tx *ledger.Tx) error { return tx.PutMeta(ctx, ledger.RecallBackfillKey, "pending") }); err != nil {
		t.Fatal(err)
	}
	if n, err := index.Backfill(ctx, db, home); n != 450 || err != nil {
		t.Fatalf("backfill: %d %v", n, err)
	}
	a := search.NewArchive(db, home)
	hits, err := a.Search(ctx, search.Query{Text: "w449"})
	if err != nil || len(hits) != 1 || hits[0].Session != "s1449" {
		t.Fatalf("after backfill: %+v %v", hits, err)
	}
	if n, err := index.Backfill(ctx, db, home); n != 0 || err != nil {
		t.Errorf("second backfill: %d %v", n, err)
	}
	var rows int
	_ = recalltest.Raw(t, home).QueryRow(`SELECT count(*) FROM recall_turns`).Scan(&rows)
	if rows != 450 {
		t.Errorf("%d index rows, want 450", rows)
	}
	if _, err := os.Stat(ledger.Path(home)); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
