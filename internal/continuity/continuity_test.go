package continuity

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/rollout"
)

func code(n int) *int { return &n }

func turn(user string, tools ...rollout.ToolCall) rollout.Turn {
	return rollout.Turn{User: user, Tools: tools}
}

func cmd(c string, exit int) rollout.ToolCall {
	return rollout.ToolCall{Name: "exec_command", Command: c, ExitCode: code(exit)}
}

func TestMergeKeepsHandEditsAndMovesOutcomes(t *testing.T) {
	s := Store{Home: t.TempDir()}
	id := Identity{Project: "origin:x", ProjectID: "p1", Worktree: "/w", WorktreeID: "w1", Name: "w"}
	ev := Evidence{SessionID: "s1", EndReason: "exit", Turns: []rollout.Turn{
		turn("fix the flaky parser test", cmd("go test ./parser", 1), cmd("go vet ./...", 0)),
	}, Plan: []checkpoint.PlanStep{{ID: "1", Text: "find the race", Status: "in_progress"}, {ID: "2", Text: "add a regression test", Status: "pending"}}}
	if _, _, err := s.Update(id, ev); err != nil {
		t.Fatal(err)
	}
	pp, wp := s.paths(id)
	// A person edits both files.
	pt, _ := os.ReadFile(pp)
	edited := strings.Replace(string(pt), "## Tried and failed\n", "## Tried and failed\n\n- bisecting by hand took an hour (note by a person)\n", 1) + "\n## My notes\n\nkeep this\n"
	os.WriteFile(pp, []byte(edited), 0o600)
	// The next session: the failing test now passes; a vague prompt.
	ev2 := Evidence{SessionID: "s2", EndReason: "new", Turns: []rollout.Turn{turn("continue", cmd("go test ./parser", 0))}}
	if _, _, err := s.Update(id, ev2); err != nil {
		t.Fatal(err)
	}
	pb, _ := os.ReadFile(pp)
	wb, _ := os.ReadFile(wp)
	p, w := string(pb), string(wb)
	for _, want := range []string{"- `go test ./parser`\n", "- `go vet ./...`", "bisecting by hand took an hour", "## My notes", "keep this"} {
		if !strings.Contains(p, want) {
			t.Errorf("project file lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "(exit 1)") {
		t.Errorf("a command that now works is still listed as failed:\n%s", p)
	}
	for _, want := range []string{"fix the flaky parser test", "- [>] find the race", "- [?] add a regression test", "Last session: `s2`"} {
		if !strings.Contains(w, want) {
			t.Errorf("worktree file lacks %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "continue") {
		t.Errorf("a vague prompt replaced the goal:\n%s", w)
	}
}

func TestParseRenderRoundTrip(t *testing.T) {
	in := "# Continuity — x\n\nintro\n\n## Goal\n\ndo it\n\n## Confirmed working\n\n- `make`\n\n## Elsewhere\n\nfree text\n"
	if out := Parse(in).render(); out != in {
		t.Fatalf("round trip:\n%q\n%q", in, out)
	}
}

func TestIdentitySharedAcrossWorktrees(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git missing")
	}
	dir := t.TempDir()
	main := filepath.Join(dir, "main")
	git := func(d string, args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", d}, args...)...)
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(main, 0o755)
	git(main, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(main, "f"), []byte("x"), 0o644)
	git(main, "add", ".")
	git(main, "commit", "-q", "-m", "one")
	git(main, "worktree", "add", "-q", filepath.Join(dir, "wt"), "-b", "feature")
	os.MkdirAll(filepath.Join(main, "sub"), 0o755)
	a, b, c := identify(filepath.Join(main, "sub"), rootCommit), identify(filepath.Join(dir, "wt"), rootCommit), identify(main, rootCommit)
	if a.ProjectID != b.ProjectID || !strings.HasPrefix(a.Project, "root:") {
		t.Fatalf("worktrees are different projects: %+v %+v", a, b)
	}
	if a.WorktreeID == b.WorktreeID || a.WorktreeID != c.WorktreeID || a.Worktree != main {
		t.Fatalf("worktree ids: %+v %+v %+v", a, b, c)
	}
	git(main, "remote", "add", "origin", "https://example.invalid/repo.git")
	if id := identify(filepath.Join(dir, "wt"), rootCommit); id.Project != "origin:https://example.invalid/repo.git" {
		t.Fatalf("origin not used: %+v", id)
	}
	plain := t.TempDir()
	if id := identify(plain, rootCommit); id.Project != plain || id.Worktree != plain {
		t.Fatalf("outside git: %+v", id)
	}
}

// The store remembers root commits: the same identity, without git.
func TestStoreIdentifyCaches(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git missing")
	}
	dir := t.TempDir()
	c := exec.Command("git", "-C", dir, "init", "-q")
	c.Run()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	s := Store{Home: t.TempDir()}
	a := s.Identify(dir)
	t.Setenv("PATH", "") // no git now: the cache answers
	b := s.Identify(dir)
	if a.ProjectID != b.ProjectID || !strings.HasPrefix(b.Project, "root:") {
		t.Fatalf("%+v vs %+v", a, b)
	}
}

// A git that hangs is given up on (and with the race detector on, the
// give-up path is checked for data races).
func TestRootCommitGivesUpOnHungGit(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	old := gitTimeout
	gitTimeout = 200 * time.Millisecond
	defer func() { gitTimeout = old }()
	start := time.Now()
	if got := rootCommit(t.TempDir()); got != "" {
		t.Fatalf("rootCommit = %q from a hung git", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a hung git held rootCommit for %v", took)
	}
}

// An origin URL with credentials in it names the project, but the token
// is never written to the continuity files.
func TestProjectHeaderHasNoCredentials(t *testing.T) {
	s := Store{Home: t.TempDir()}
	id := Identity{Project: "origin:https://bob:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y.git", ProjectID: "p1", Worktree: "/w", WorktreeID: "w1", Name: "w"}
	if _, _, err := s.Update(id, Evidence{SessionID: "s1", EndReason: "exit", Turns: []rollout.Turn{turn("do it", cmd("make", 0))}}); err != nil {
		t.Fatal(err)
	}
	pp, _ := s.paths(id)
	b, _ := os.ReadFile(pp)
	if strings.Contains(string(b), "ghp_abcdef") || !strings.Contains(string(b), "github.com/x/y.git") {
		t.Fatalf("project file:\n%s", b)
	}
}

func TestGoalOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"fix the flaky test in parser_test.go", "fix the flaky test in parser_test.go"},
		{"Add notes and check them. [[plan: write notes | run checks]] [[patch]]*** Begin Patch\n*** Add File: notes.txt\n+line", "Add notes and check them."},
		{"Why does the build fail? Here is the log:\n```\nerror: x\n```", "Why does the build fail?"},
		{"\n\n  refactor the cache\nthen run the tests", "refactor the cache"},
		{"apply this:\ndiff --git a/x b/x\n--- a/x\n+++ b/x", "apply this:"},
		{"version 1.2.3 is out, bump it", "version 1.2.3 is out, bump it"}, // a dot inside a word ends nothing
		{"```go\nfunc main() {}\n```", ""},
		{strings.Repeat("word ", 100), strings.TrimSpace(rollout.OneLine(strings.Repeat("word ", 100), 200))},
	} {
		if got := goalOf(c.in); got != c.want {
			t.Errorf("goalOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestForContextDropsWhatIsForPeople(t *testing.T) {
	doc := "# Continuity — worktree /w\n\nThis checkout's goal and next steps. Edit freely.\n\n## Goal\n\nship it\n\n## Confirmed working\n\n## Tried and failed\n\n## Not yet tried\n\n- [ ] run checks\n\n## My notes\n\nkeep this\n"
	want := "### Goal\n\nship it\n\n### Not yet tried\n\n- [ ] run checks\n\n## My notes\n\nkeep this"
	if got := ForContext(doc); got != want {
		t.Fatalf("ForContext:\n%s\nwant:\n%s", got, want)
	}
	if got := ForContext("# Continuity\n\n## Goal\n\n## Tried and failed\n"); got != "" {
		t.Fatalf("an empty document gives %q", got)
	}
	// A session id alone is no files, decisions or environment (issue 52).
	alone := "# C\n\n## Goal\n\nship it\n\n## Files, decisions, environment\n\n- Last session: `s1` (ended: exit)\n"
	if got := ForContext(alone); got != "### Goal\n\nship it" {
		t.Fatalf("a session id alone is given as a section:\n%s", got)
	}
	with := "# C\n\n## Goal\n\nship it\n\n## Files, decisions, environment\n\n- `a.go` (update)\n- Last session: `s1` (ended: exit)\n"
	if got := ForContext(with); !strings.Contains(got, "Last session: `s1`") {
		t.Fatalf("beside files the last session is gone:\n%s", got)
	}
}

// A plan step left "pending" by a plan that commands followed is not "not
// yet tried": it stays open, said as what it is; a plan updated after the
// last command is taken at its word.
func TestPendingStepAfterCommandsIsNotUntried(t *testing.T) {
	plan := []checkpoint.PlanStep{{Text: "write notes", Status: "completed"}, {Text: "run the checks", Status: "pending"}}
	update := rollout.ToolCall{Name: "update_plan"}
	check := rollout.ToolCall{Name: "exec_command", Command: "go test ./..."}
	for _, c := range []struct {
		name     string
		tools    []rollout.ToolCall
		notTried bool
	}{
		{"commands after the plan", []rollout.ToolCall{update, check}, false},
		{"plan after the commands", []rollout.ToolCall{check, update}, true},
		{"no command", []rollout.ToolCall{update}, true},
	} {
		var d Doc
		d.Sections = map[string][]string{}
		d.applyWorktree(Evidence{Turns: []rollout.Turn{{User: "add notes and check them", Tools: c.tools}}, Plan: plan})
		untried := strings.Join(d.Sections[secNotTried], "\n")
		next := strings.Join(d.Sections[secNext], "\n")
		if got := strings.Contains(untried, "run the checks"); got != c.notTried {
			t.Errorf("%s: under %q: %v (%q), want %v", c.name, secNotTried, got, untried, c.notTried)
		}
		if !c.notTried && !strings.Contains(next, "- [?] run the checks") {
			t.Errorf("%s: the open step is not under %q: %q", c.name, secNext, next)
		}
	}
}
