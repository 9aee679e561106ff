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
	unlock, err := e.holdSweeper()
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
	// SessionEnd needs every turn: it leaves the end to the outbox.
	out, _ := e.hook("SessionEnd", map[string]any{"session_id": "A", "hook_event_name": "SessionEnd", "transcript_path": rollouts[0], "cwd": e.w, "reason": "exit"},
		"CX_TEST_HOOK_BACKLOG=2000")
	if st := e.sessions()["A"]; strings.TrimSpace(out) != "{}" || st.TotalTurns != 1 {
		t.Fatalf("SessionEnd answered %q and captured %d turns itself", out, st.TotalTurns)
	}
	if status, _ := e.ctl("status"); !strings.Contains(status, "end A g1 → session_end") {
		t.Fatalf("no end job waiting:\n%s", status)
	}
	unlock()
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %s", out)
	}
	// Its run is over, so the sweep ends it as the run's (exit) before the
	// end job runs; either way it ends once and nothing waits.
	st := e.sessions()["A"]
	if st.TotalTurns != 21 || st.Turns != 20 || st.Status != "committed" || st.Generation != 2 || st.Commits != 2 {
		t.Fatalf("after the sweep: %+v, want generation 2 with 20 turns committed", st)
	}
	if status, _ := e.ctl("status"); !strings.Contains(status, "pending jobs: 0") {
		t.Fatalf("jobs left after the sweep:\n%s", status)
	}
}

// The end a SessionEnd hook leaves to the outbox is made there: caught up
// whole, ended with the hook's reason, committed once.
func TestDeferredEndFromTheOutbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first; exit 0")
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	data, err := os.ReadFile(rollouts[0])
	if err != nil {
		t.Fatal(err)
	}
	// B: a session of a Codex started without cx (no run), with a long history.
	path := strings.Replace(rollouts[0], "-A.jsonl", "-B.jsonl", 1)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		appendTurn(t, path, "B", strings.Repeat("more history ", 10)+strconv.Itoa(i))
	}
	hook := func(ev string, extra map[string]any) string {
		p := map[string]any{"session_id": "B", "hook_event_name": ev, "transcript_path": path, "cwd": e.w}
		for k, v := range extra {
			p[k] = v
		}
		out, _ := e.hook(ev, p, "CX_TEST_HOOK_BACKLOG=2000")
		return out
	}
	unlock, err := e.holdSweeper()
	if err != nil {
		t.Fatal(err)
	}
	hook("SessionStart", map[string]any{"source": "startup"})
	if out := hook("SessionEnd", map[string]any{"reason": "exit"}); strings.TrimSpace(out) != "{}" {
		t.Fatalf("SessionEnd answered %q", out)
	}
	if st := e.sessions()["B"]; st.Status != "live" || st.TotalTurns != 0 {
		t.Fatalf("the hook ended or captured B itself: %+v", st)
	}
	unlock()
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %s", out)
	}
	st := e.sessions()["B"]
	if st.Status != "committed" || st.EndReason != "session_end" || st.Generation != 1 || st.Commits != 1 || st.TotalTurns != 21 {
		t.Fatalf("after the sweep: %+v, want generation 1 of 21 turns committed at its session end", st)
	}
}
