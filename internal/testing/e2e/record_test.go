package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"cx/internal/codex"
	"cx/internal/testing/codextest"
)

// TestRecordRollouts records real rollouts from each Codex version into
// testdata/rollouts/<version>/ for the capture and checkpoint golden tests.
// It runs only with CX_TEST_RECORD=1 (the recordings are committed).
func TestRecordRollouts(t *testing.T) {
	what := os.Getenv("CX_TEST_RECORD")
	if what != "1" && what != "structure" {
		t.Skip("set CX_TEST_RECORD=1 to re-record rollouts (=structure: only those of Codex's structure)")
	}
	_, file, _, _ := runtime.Caller(0)
	outRoot := filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "rollouts")
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		out := filepath.Join(outRoot, in.Version)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		save := func(h *H, name string) {
			t.Helper()
			rs := h.Rollouts()
			if len(rs) == 0 {
				t.Fatalf("%s: no rollout", name)
			}
			for i, r := range rs {
				data, err := os.ReadFile(r)
				if err != nil {
					t.Fatal(err)
				}
				// No paths of this machine in the recordings.
				data = bytes.ReplaceAll(data, []byte(h.Root), []byte("/home/user/cx-e2e"))
				// (Codex names its agents by paths under "/root" — the root
				// agent, "/root/<task>": a HOME of /root is not replaced.)
				if home, err := os.UserHomeDir(); err == nil && home != "/" && home != "/root" {
					data = bytes.ReplaceAll(data, []byte(home+"/"), []byte("/home/user/"))
					data = bytes.ReplaceAll(data, []byte(`\"`+home+`\"`), []byte(`\"/home/user\"`))
					data = bytes.ReplaceAll(data, []byte(`"`+home+`"`), []byte(`"/home/user"`))
				}
				n := name
				if len(rs) > 1 {
					n = name + "-" + string(rune('a'+i))
				}
				if err := os.WriteFile(filepath.Join(out, n+".jsonl"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}

		if what == "structure" {
			if codex.CompareVersions(in.Version, "0.171.0") >= 0 {
				recordStructure(t, in, save)
			}
			return
		}
		// exec: a shell command (failing), a patch that adds and one that
		// updates a file, a plan.
		h := New(t, in, Options{})
		_, _, _ = h.Exec("", "exec", `Add notes and check them.
[[plan: write notes | [x] read README | run checks]]
[[patch]]*** Begin Patch
*** Add File: notes.txt
+first line
+second line
*** End Patch[[/patch]]
[[shell: grep -c line notes.txt]]
[[patch]]*** Begin Patch
*** Update File: notes.txt
@@
 first line
-second line
+second line, edited
*** End Patch[[/patch]]
[[shell: ls missing-file]]`)
		save(h, "exec-tools")

		// TUI: two turns, an interrupted slow turn, a compaction, one more turn.
		h = New(t, in, Options{})
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("fix the flaky test in parser_test.go", "mock reply: fix the flaky test")
		tu.Prompt("continue [[shell: echo step two]]", "mock: done (1 steps)")
		tu.Type("take your time [[slow: 20s]]")
		time.Sleep(1500 * time.Millisecond)
		tu.Keys("Escape")
		time.Sleep(1500 * time.Millisecond)
		tu.WaitReady()
		tu.Type("/compact")
		time.Sleep(3 * time.Second)
		tu.WaitReady()
		tu.Prompt("after the compaction", "mock reply: after the compaction")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		save(h, "tui-compact-interrupt")

		if codex.CompareVersions(in.Version, "0.171.0") >= 0 {
			recordStructure(t, in, save)
		}

		// fork: a session, then `codex fork <id>` with one turn.
		h = New(t, in, Options{})
		tu = h.StartTUI()
		tu.WaitReady()
		tu.Prompt("parent turn", "mock reply: parent turn")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		parent := h.RolloutSessionIDs()[0]
		tu = h.StartTUI("fork", parent)
		tu.WaitText("parent turn", 60*time.Second)
		tu.WaitReady()
		tu.Prompt("child turn", "mock reply: child turn")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		save(h, "fork")

		// killed mid-session: SIGKILL to Codex after a turn.
		h = New(t, in, Options{})
		tu = h.StartTUI()
		tu.WaitReady()
		tu.Prompt("a turn before the kill", "mock reply: a turn before the kill")
		tu.Signal(tu.CodexPid(), syscall.SIGKILL)
		tu.WaitExit(30 * time.Second)
		save(h, "killed")
	})
}

// Prompts of the structure recordings and the tests that read them.
const (
	// v1 tools (multi_agent, on by default): spawn_agent found through
	// tool_search; the child runs a command; the parent waits for it.
	subagentV1Prompt = `Investigate the flamingo parser bug [[tool: spawn_agent {"message":"child task: list the parser files <<shell: ls>>"}]] [[shell: sleep 3]]`
	// v2 tools (multi_agent_v2): collaboration.spawn_agent, forked with the
	// parent's history (fork_turns defaults to "all").
	subagentV2Prompt = `Investigate the flamingo parser bug [[plan: read the parser | fix the bug]] [[tool: collaboration.spawn_agent {"task_name":"lister","message":"child task: list the parser files"}]] [[child: <<shell: ls>>]] [[shell: sleep 3]]`
	// A thread goal set by the model at the user's request, pursued by a
	// goal-driven turn that runs a command and completes it.
	// A goal whose turns take long (each answers after 30 s), so the user
	// can pause it.
	goalPausePrompt = `Set a goal: migrate the invoice tables [[tool: create_goal {"objective":"Migrate the invoice tables to the new ledger schema"}]] [[continue: <<say: working on the invoice tables>> <<slow: 30s>>]]`
	goalPrompt      = `Please set a goal for this: ship the flamingo parser rewrite [[tool: create_goal {"objective":"Ship the flamingo parser rewrite with tests"}]] [[continue: <<shell: echo running the parser tests>> <<tool: update_goal {"status":"complete"}>>]]`
)

// recordStructure records what Codex's own structure looks like in its
// rollouts: subagent threads (v1, v2 forked) and a thread goal.
func recordStructure(t *testing.T, in codextest.Install, save func(*H, string)) {
	h := New(t, in, Options{})
	_, _, _ = h.Direct("", "exec", subagentV1Prompt)
	save(h, "subagent-v1")

	h = New(t, in, Options{})
	_, _, _ = h.Direct("", "exec", "--enable", "multi_agent_v2", subagentV2Prompt)
	save(h, "subagent-v2-fork")

	h = New(t, in, Options{})
	tu := h.StartTUI()
	tu.WaitReady()
	tu.Prompt(goalPrompt, "mock: done (2 steps)")
	tu.Slash("/exit")
	tu.WaitExit(30 * time.Second)
	save(h, "goal")

	// A goal the user pauses (Esc while its turn runs), resumes, pauses
	// again and clears: what the rollout says of each (issue 51).
	h = New(t, in, Options{})
	tu = h.StartTUI()
	tu.SetGoalAndPause()
	tu.Slash("/goal resume")
	time.Sleep(3 * time.Second)
	tu.Keys("Escape")
	time.Sleep(2 * time.Second)
	tu.WaitReady()
	tu.Slash("/goal clear")
	time.Sleep(2 * time.Second)
	tu.Slash("/exit")
	tu.WaitExit(30 * time.Second)
	save(h, "goal-pause")
}

// SetGoalAndPause has the model set a goal whose turns take long
// (goalPausePrompt) and pauses it with Esc while its turn runs, as a user
// does; it returns at the prompt.
func (tu *TUI) SetGoalAndPause() {
	tu.h.T.Helper()
	tu.WaitReady()
	tu.Type(goalPausePrompt)
	// The goal is made by the turn's first tool call: an Esc before Codex
	// ran it interrupts a turn with no goal to pause (seen under load).
	// Nor between that turn and the goal's own (its say comes after 30 s):
	// an Esc at the idle composer there left no turn and nothing paused
	// (under load, CI).
	tu.WaitText("Pursuing goal", 60*time.Second)
	tu.WaitText("Worked for", 30*time.Second)
	tu.WaitText("esc to interrupt", 30*time.Second)
	tu.Keys("Escape")
	tu.WaitText("paused", 30*time.Second)
	tu.WaitReady()
}
