package local

import (
	"database/sql"
	"path/filepath"
	"testing"

	"cx/internal/rollout"

	_ "modernc.org/sqlite"
)

// Codex's goal as it stands (issue 51): the status Codex's goal store has
// now wins over the rollout's last word; no row for a thread whose rollout
// showed a goal is a clear; without a store the rollout's word stands.
func TestGoalAsItStands(t *testing.T) {
	home := t.TempDir()
	shown := &rollout.Goal{Objective: "Migrate the invoice tables", Status: "active"}
	if g := goalAsItStands(shown, home, "t1"); g != shown {
		t.Errorf("without a store: %+v", g)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, "goals_1.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE thread_goals (thread_id TEXT PRIMARY KEY, goal_id TEXT, objective TEXT NOT NULL, status TEXT NOT NULL);
		INSERT INTO thread_goals VALUES ('t1', 'g1', 'Migrate the invoice tables', 'paused')`); err != nil {
		t.Fatal(err)
	}
	if g := goalAsItStands(shown, home, "t1"); g == nil || g.Status != "paused" || g.Objective != shown.Objective {
		t.Errorf("paused in the store: %+v", g)
	}
	if g := goalAsItStands(shown, home, "t2"); !g.Cleared() || g.Objective != shown.Objective {
		t.Errorf("no row (cleared): %+v", g)
	}
	if g := goalAsItStands(nil, home, "t1"); g != nil {
		t.Errorf("a thread whose rollout showed no goal: %+v", g)
	}
}
