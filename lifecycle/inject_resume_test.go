package lifecycle_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A compaction the model was not given yet (the terminal closed before the
// next prompt), then a resume: the resume's block carries the session's
// checkpoint, and the first prompt after it carries no second copy.
func TestResumeTakesThePendingCompaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A design the cache; compact A; die 1")
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts %v", rollouts)
	}
	payload := func(event, source string) map[string]any {
		return map[string]any{"session_id": "A", "hook_event_name": event, "source": source, "cwd": e.w,
			"transcript_path": rollouts[0], "prompt": "go on", "turn_id": "t9"}
	}
	resume, _ := e.hook("SessionStart", payload("SessionStart", "resume"))
	if !strings.Contains(resume, "Checkpoint of this session") {
		t.Fatalf("the resume's block has no checkpoint of the session:\n%s", resume)
	}
	prompt, _ := e.hook("UserPromptSubmit", payload("UserPromptSubmit", ""))
	if strings.Contains(prompt, "cx-context") {
		t.Fatalf("the prompt after the resume carries cx context again:\n%s", prompt)
	}
}

// Threads side by side in one worktree: a resumed thread is given its own
// goal (its checkpoint), never the goal of the thread that ended last
// there; a new thread is told whose continuity it gets.
func TestResumedThreadGetsItsOwnGoal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start B; hook SessionStart B startup; work B tune the bee parser; exit 0")
	e.run("start A; hook SessionStart A startup; work A paint the ay button; exit 0")
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-B.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts %v", rollouts)
	}
	out, _ := e.hook("SessionStart", map[string]any{"session_id": "B", "hook_event_name": "SessionStart", "source": "resume", "cwd": e.w, "transcript_path": rollouts[0]})
	if !strings.Contains(out, "tune the bee parser") || strings.Contains(out, "paint the ay button") {
		t.Fatalf("resumed B is not given its own goal alone:\n%s", out)
	}
	out, _ = e.hook("SessionStart", map[string]any{"session_id": "C", "hook_event_name": "SessionStart", "source": "startup", "cwd": e.w, "transcript_path": ""})
	if !strings.Contains(out, "paint the ay button") || !strings.Contains(out, "left by the last session to end here") {
		t.Fatalf("a new thread is not given the worktree's continuity, labelled:\n%s", out)
	}
}
