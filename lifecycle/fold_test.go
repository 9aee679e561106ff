package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cx/internal/checkpoint"
	"cx/internal/fsutil"
)

// Each generation's archived checkpoint is the one the full reduction of
// its rollout gives — now kept by the ledger as capture folds each turn,
// never recomputed from the rollout — and a resume is given the session's
// checkpoint from the ledger even when its rollout can no longer be read.
func TestCheckpointsFromTheLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first request; turn A second request; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts %v", rollouts)
	}
	data, err := os.ReadFile(rollouts[0])
	if err != nil {
		t.Fatal(err)
	}
	out, _ := e.ctl("show", "A", "--json")
	var show struct {
		Archives []struct {
			Checkpoint json.RawMessage `json:"checkpoint"`
		} `json:"archives"`
	}
	if err := json.Unmarshal([]byte(out), &show); err != nil || len(show.Archives) != 1 {
		t.Fatalf("show A: %v\n%s", err, out)
	}
	want := checkpoint.FromRollout(data, checkpoint.DefaultCaps).JSON()
	kept, err := e.db().GenerationCheckpoint(context.Background(), "A", 1)
	if err != nil || kept != string(want) {
		t.Fatalf("the ledger's checkpoint of generation 1 (%v):\n%s\nwant\n%s", err, kept, want)
	}
	if got := append(bytes.TrimRight(show.Archives[0].Checkpoint, "\n"), '\n'); !jsonEqual(got, want) {
		t.Fatalf("archived checkpoint differs from the full reduction:\n--- archived\n%s\n--- full\n%s", got, want)
	}

	// The rollout goes away: the resume's checkpoint still comes, from the ledger.
	if err := os.Rename(rollouts[0], filepath.Join(t.TempDir(), "elsewhere.jsonl")); err != nil {
		t.Fatal(err)
	}
	ans, _ := e.hook("SessionStart", map[string]any{"session_id": "A", "hook_event_name": "SessionStart", "source": "resume", "cwd": e.w, "transcript_path": rollouts[0]})
	if !strings.Contains(ans, "Checkpoint of this session") || !strings.Contains(ans, "second request") {
		t.Fatalf("resume without a readable rollout lacks the session's checkpoint:\n%s", ans)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// A hook never reads a long unread history on Codex's time: past the
// bound it answers with what the ledger has, and the background sweeper
// catches the session up (here held off by its lock until the test lets
// it, to see the hook's part alone).
func TestLongHistoryCaughtUpBySweeper(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	for i := range 20 {
		appendTurn(t, rollouts[0], "A", strings.Repeat("more history ", 10)+strconv.Itoa(i))
	}
	unlock, err := fsutil.Lock(filepath.Join(e.cxHome, "sweep.lock"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"UserPromptSubmit", "Stop"} {
		out, took := e.hook(ev, map[string]any{"session_id": "A", "hook_event_name": ev, "transcript_path": rollouts[0], "cwd": e.w},
			"CX_TEST_HOOK_BACKLOG=2000")
		if strings.TrimSpace(out) != "{}" {
			t.Fatalf("%s answered %q", ev, out)
		}
		if st := e.sessions()["A"]; st.TotalTurns != 1 {
			t.Fatalf("after %s (%v) the hook captured the long history itself: %d turns", ev, took, st.TotalTurns)
		}
	}
	unlock()
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %s", out)
	}
	if st := e.sessions()["A"]; st.TotalTurns != 21 {
		t.Fatalf("after the sweep: %d turns, want 21", st.TotalTurns)
	}
}
