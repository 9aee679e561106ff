package recall_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/recall/index"
	"cx/internal/rollout"
	"cx/internal/testing/recalltest"
)

// turnsOf is n turns of one generation, each saying a word of its own
// beside words every turn says.
func turnsOf(sid string, n int, day int) []rollout.Turn {
	turns := make([]rollout.Turn, n)
	for i := range turns {
		turns[i] = rollout.Turn{Key: fmt.Sprintf("t%d", i+1), Time: time.Date(2026, 1, day, 10, 0, i, 0, time.UTC).Format(time.RFC3339),
			User:      fmt.Sprintf("why does the %s-%d walrus step fail in the parser?", sid, i),
			Assistant: []string{fmt.Sprintf("the walrus step %d of %s lacks an index; fixed and tested", i, sid)},
			Tools:     []rollout.ToolCall{{Name: "shell", Command: "go test ./parser", ExitCode: recalltest.Exit(i % 2)}}}
	}
	return turns
}

// projectLedger is a ledger under a new CX_HOME, its projects, and a
// project's directory and id.
func projectLedger(tb testing.TB) (db *ledger.DB, home string, projects *recall.Projects, dir, id string) {
	tb.Helper()
	db, home = recalltest.Ledger(tb)
	projects = recall.NewProjects(home)
	dir = tb.TempDir()
	return db, home, projects, dir, projects.Of(dir)
}

// TestWindowMovesOnByTheTurnsAdded: a window brought up to date from the
// one before it (the turns added since read, not the project's latest
// thousand) is the file a whole read makes, byte for byte — past the
// window's size, where the oldest turns leave it; and after rows were
// removed (a generation indexed again, a session forgotten) it is read
// whole again, holding nothing removed.
func TestWindowMovesOnByTheTurnsAdded(t *testing.T) {
	db, home, projects, proj, id := projectLedger(t)
	ctx := context.Background()
	path := recall.WindowPath(home, id)
	read := func(old *recall.Window) (*recall.Window, []byte) {
		t.Helper()
		w, err := recall.ReadWindow(ctx, db, home, id, old)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return w, data
	}
	same := func(step string, old *recall.Window) *recall.Window {
		t.Helper()
		moved, got := read(old)
		whole, want := read(nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the window moved on (%d turns, %d bytes) is not the one read whole (%d turns, %d bytes)", step, moved.Len(), len(got), whole.Len(), len(want))
		}
		return whole
	}
	recalltest.Archive(t, db, projects, "s1", 1, proj, turnsOf("s1", 3, 2))
	w, _ := read(nil)
	recalltest.Archive(t, db, projects, "s2", 1, proj, turnsOf("s2", 4, 3))
	w = same("a session added", w)
	if w.Len() != 7 {
		t.Fatalf("%d turns, want 7", w.Len())
	}
	recalltest.Archive(t, db, projects, "s3", 1, t.TempDir(), turnsOf("s3", 2, 4)) // another project's
	w = same("another project's session added", w)
	recalltest.Archive(t, db, projects, "s4", 1, proj, turnsOf("s4", recall.WindowTurns-3, 5))
	w = same("the window filled", w)
	recalltest.Archive(t, db, projects, "s5", 1, proj, turnsOf("s5", 5, 6))
	w = same("past the window's size", w)
	// 3 + 4 + 997 + 5 turns: s1's, s2's and s4's first two have left it.
	if first := w.Turn(0); w.Len() != recall.WindowTurns || first.SessionID != "s4" || first.Turn != 3 {
		t.Fatalf("%d turns from %s turn %d, want %d from s4 turn 3", w.Len(), first.SessionID, first.Turn, recall.WindowTurns)
	}
	err := db.Tx(ctx, func(tx *ledger.Tx) error { // indexed again: its rows removed (their ids given again), then added
		return index.IndexGeneration(ctx, tx, "s5", 1, turnsOf("s5", 6, 7), proj, id, tx.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	w = same("a generation indexed again", w)
	if err := db.Tx(ctx, func(tx *ledger.Tx) error { _, err := tx.Forget(ctx, "s5"); return err }); err != nil {
		t.Fatal(err)
	}
	w = same("a session forgotten", w)
	for i := range w.Len() {
		if w.Turn(i).SessionID == "s5" {
			t.Fatal("the window holds a forgotten session's turn")
		}
	}
	if len(w.Holding("s5")) != 0 {
		t.Fatal("the window holds a forgotten session's word")
	}
}

// BenchmarkWindowAfterCommit is what a commit (or the prompt after it)
// pays to bring a full window (1,000 turns) up to date with the five turns
// one session added: read whole, as before, and moved on from the one
// before it.
func BenchmarkWindowAfterCommit(b *testing.B) {
	db, home, projects, proj, id := projectLedger(b)
	ctx := context.Background()
	recalltest.Archive(b, db, projects, "s0", 1, proj, turnsOf("s0", recall.WindowTurns, 2))
	old, err := recall.ReadWindow(ctx, db, home, id, nil)
	if err != nil {
		b.Fatal(err)
	}
	recalltest.Archive(b, db, projects, "s1", 1, proj, turnsOf("s1", 5, 3))
	for _, c := range []struct {
		name string
		old  *recall.Window
	}{{"whole", nil}, {"moved-on", old}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := recall.ReadWindow(ctx, db, home, id, c.old); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
