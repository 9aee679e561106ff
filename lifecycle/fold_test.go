package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
