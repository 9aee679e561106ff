package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRecallWindowTurnsAfter is what a long-lived process (the hook
// host) does for a prompt after another session's turn was indexed: the
// window's turns after its last, read in one read transaction, on a
// ledger of 1,000 indexed turns in the project.
func BenchmarkRecallWindowTurnsAfter(b *testing.B) {
	db := open(b, filepath.Join(b.TempDir(), FileName))
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	index := func(sid string, n int) {
		var docs []RecallDoc
		for i := range n {
			docs = append(docs, RecallDoc{SessionID: sid, Generation: 1, Turn: i + 1, Key: fmt.Sprint(i), At: at, Project: "p",
				Prompt: fmt.Sprintf("fix the parser cache %d", i), Reply: "done: the cache is keyed by file now"})
		}
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.IndexGeneration(ctx, sid, 1, docs) }); err != nil {
			b.Fatal(err)
		}
	}
	for s := range 50 {
		index(fmt.Sprint("s", s), 20)
	}
	st, _, err := db.RecallWindowTurns(ctx, "p", 0, 1000)
	if err != nil {
		b.Fatal(err)
	}
	index("new", 1)
	for b.Loop() {
		if _, turns, err := db.RecallWindowTurns(ctx, "p", st.Last, 1000); err != nil || len(turns) != 1 {
			b.Fatal(len(turns), err)
		}
	}
}
