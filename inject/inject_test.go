package inject

import (
	"strings"
	"testing"
	"unicode/utf8"

	"cx/internal/checkpoint"
	"cx/internal/rollout"
)

func TestBlockBoundaryBudgetAndDeterminism(t *testing.T) {
	in := Input{Source: "startup", WorktreeContinuity: strings.Repeat("worktree line\n", 300),
		ProjectContinuity: strings.Repeat("project line\n", 300), MaxChars: 2000}
	a, b := build(in), build(in)
	if a != b {
		t.Fatal("not deterministic")
	}
	if n := utf8.RuneCountInString(a); n > 2000 {
		t.Fatalf("block of %d chars over the 2000 budget", n)
	}
	if !strings.HasPrefix(a, `<cx-context source="cx:startup" sections="`) || !strings.HasSuffix(a, "</cx-context>") || !strings.Contains(a, Notice) {
		t.Fatalf("boundary or notice missing:\n%s", a)
	}
	if !strings.Contains(a, "[cut ") {
		t.Fatal("truncation not marked")
	}
	// Capture strips it from user text.
	if got := rollout.StripInjected("before " + a + " after"); got != "before after" {
		t.Fatalf("capture left %q", got)
	}
}

func TestResumeInjectsOnlyWhatIsNew(t *testing.T) {
	in := Input{Source: "resume", WorktreeContinuity: "goal: x", ProjectContinuity: "works: make"}
	first := build(in)
	in.Present = presentIn([]byte(`{"text":"` + strings.ReplaceAll(first, `"`, `\"`) + `"}`))
	if got := build(in); got != "" {
		t.Fatalf("everything was present, yet injected:\n%s", got)
	}
	in.WorktreeContinuity = "goal: y"
	got := build(in)
	if !strings.Contains(got, "goal: y") || strings.Contains(got, "works: make") {
		t.Fatalf("want only the changed section:\n%s", got)
	}
}

func TestSecretsNeverInjected(t *testing.T) {
	got := build(Input{Source: "startup", WorktreeContinuity: "deploy with OPENAI_API_KEY=sk-proj-0123456789abcdefghijklmnop"})
	if strings.Contains(got, "sk-proj-0123456789") {
		t.Fatalf("secret injected:\n%s", got)
	}
}

func TestCompactionCarriesOnlyTheCheckpoint(t *testing.T) {
	cp := checkpoint.Checkpoint{SchemaVersion: 1, SessionID: "s", Stats: checkpoint.Stats{Turns: 1}, Task: &checkpoint.Task{Text: "ship it"}}
	got := build(Input{Source: "compact", Checkpoint: &cp, CheckpointOf: "this session", WorktreeContinuity: "w"})
	if !strings.Contains(got, "ship it") || strings.Contains(got, "Continuity") {
		t.Fatalf("compaction block:\n%s", got)
	}
}

func TestDeveloperInstructionsMerge(t *testing.T) {
	if got := DeveloperInstructions("Be terse.", "<cx-context>x</cx-context>"); got != "Be terse.\n\n<cx-context>x</cx-context>" {
		t.Fatalf("%q", got)
	}
}

// A resume's block states the task once: the archive overview's "asked"
// line that is the checkpoint's task goes (issue 52).
func TestResumeStatesTheTaskOnce(t *testing.T) {
	task := "Migrate the invoice tables to the new ledger schema"
	cp := &checkpoint.Checkpoint{SessionID: "s", Task: &checkpoint.Task{Text: task, Seq: 1}, Stats: checkpoint.Stats{Turns: 2}}
	in := Input{Source: "resume", Checkpoint: cp, CheckpointOf: "this session",
		Overview: "- generation 1 (2 turns, ended: exit)\n  - asked: " + task + "\n  - asked: now run the migration\n"}
	got := build(in)
	if n := strings.Count(got, task); n != 1 {
		t.Errorf("the task is stated %d times, want once:\n%s", n, got)
	}
	if !strings.Contains(got, "asked: now run the migration") {
		t.Errorf("the other request is gone:\n%s", got)
	}
}

// Beside a goal the checkpoint's task is never talk nor "(none)" (issue
// 51): a status question did no work, so the goal says what the work is.
func TestNoTalkTaskBesideAGoal(t *testing.T) {
	wt := "### Goal\n\nMigrate the invoice tables"
	for _, task := range []*checkpoint.Task{nil, {Text: "what's left?", Talk: true, Seq: 1}} {
		cp := &checkpoint.Checkpoint{SessionID: "s", Task: task, Stats: checkpoint.Stats{Turns: 1}, Artifacts: map[string]checkpoint.Artifact{"cmd:make": {URI: "make", Kind: "command", Count: 1, LastSeq: 1}}, RecentArtifacts: []string{"cmd:make"}}
		got := build(Input{Source: "startup", WorktreeContinuity: wt, Checkpoint: cp, CheckpointOf: "s"})
		if strings.Contains(got, "[TASK]") {
			t.Errorf("task %+v beside a goal:\n%s", task, got)
		}
	}
}
