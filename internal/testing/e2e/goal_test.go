package e2e

import (
	"slices"
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// The start-time context keeps the goal and says each fact once (issue:
// "the continuity block loses the goal and repeats itself"). A session sets
// up a file and runs a command, then ends on "Thanks, remember …"; the next
// session only asks where things stand. Its injected block gives the set-up
// request as the goal, the note under its own heading, the file, each
// command and the session id once; and after it, the goal is still the
// set-up, not the question.
func TestContinuityKeepsTheGoal(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		goal := "Set up the notes file for the zebrafinch project"
		first := goal + " [[patch]]*** Begin Patch\n*** Add File: notes/cx_todo.md\n+- [ ] zebrafinch\n*** End Patch[[/patch]] [[shell: cat notes/cx_todo.md]]"
		if _, errOut, code := h.Exec("", "exec", first); code != 0 {
			t.Fatalf("first turn: %s", errOut)
		}
		ids := h.RolloutSessionIDs()
		if len(ids) != 1 {
			t.Fatalf("sessions %v", ids)
		}
		thanks := "Thanks, remember the quokkaberry deadline is Friday."
		if _, errOut, code := h.Exec("", "exec", "resume", ids[0], thanks); code != 0 {
			t.Fatalf("resume: %s", errOut)
		}
		ask := "Where were we on zebrafinch?"
		if _, errOut, code := h.Exec("", "exec", ask); code != 0 {
			t.Fatalf("second session: %s", errOut)
		}
		// The start-time block (per-prompt recall's, beside it, quotes past
		// turns as they were).
		block := ""
		for _, b := range cxBlock.FindAllString(inputText(requestFor(t, h, ask)), -1) {
			if strings.Contains(b, `source="cx:startup"`) {
				block = b
			}
		}
		if block == "" {
			t.Fatal("no cx context at the second session's start")
		}
		goalAt := strings.Index(block, "### Goal")
		if goalAt < 0 || !strings.HasPrefix(strings.TrimSpace(block[goalAt+len("### Goal"):]), goal) {
			t.Errorf("the goal is not the set-up request:\n%s", block)
		}
		if strings.Count(block, "quokkaberry deadline is Friday") != 1 {
			t.Errorf("the note is not there once:\n%s", block)
		}
		for _, fact := range []string{"`notes/cx_todo.md`", "cat notes/cx_todo.md", ids[0], goal} {
			if n := strings.Count(block, fact); n != 1 {
				t.Errorf("%q is in the block %d times, want once:\n%s", fact, n, block)
			}
		}
		if strings.Contains(block, "Thanks,") {
			t.Errorf("the acknowledgement is in the block:\n%s", block)
		}
		// The question did not become the goal.
		out := h.CXCtl("ctl", "context")
		if !strings.Contains(out, goal) || strings.Contains(out, "### Goal\n\n"+ask) {
			t.Errorf("after the status question, cx ctl context:\n%s", out)
		}
	})
}

// The goal is the task that opened the line of work, decided from what the
// sessions did, not from how they were phrased (issue: "the goal is the
// last sub-step"). A set-up with a plan and a command, a follow-up step
// with a patch, an acknowledgement with a note; then sessions that only
// ask or tell — in English and not — keep the opening task; a task that
// shares nothing with it, and does work, opens a new line. The start
// block and the first prompt's recall hold no line twice.
func TestOpeningTaskStaysTheGoal(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		opening := "Set up the notes file for the zebrafinch project"
		exec := func(args ...string) {
			t.Helper()
			if _, errOut, code := h.Exec("", append([]string{"exec"}, args...)...); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
		}
		// (The mock's directives are words of the prompts too: the new line
		// below is the only one that runs a shell command, so it shares
		// none of them with this line.)
		exec(opening + " [[plan: create the notes folder | write the notes file]]")
		ids := h.RolloutSessionIDs()
		if len(ids) != 1 {
			t.Fatalf("sessions %v", ids)
		}
		exec("resume", ids[0], "now write the notes file [[patch]]*** Begin Patch\n*** Add File: notes/cx_todo.md\n+- [ ] zebrafinch\n*** End Patch[[/patch]]")
		exec("resume", ids[0], "Thanks, remember the quokkaberry deadline is Friday.")
		if g := worktreeGoal(t, h); !strings.HasPrefix(g, opening) {
			t.Fatalf("after the first session the goal is %q, want %q", g, opening)
		}
		for i, p := range []string{
			"How did we set up the zebrafinch notes file?", // one recall answers
			"Can you remind me where we stopped on zebrafinch?",
			"Any update on zebrafinch?",
			"btw the deadline is Friday",
			"The deadline is Friday, keep that in mind",
			"Wo waren wir bei zebrafinch stehen geblieben?",
		} {
			exec(p)
			if g := worktreeGoal(t, h); !strings.HasPrefix(g, opening) {
				t.Errorf("after %q the goal is %q, want the opening task", p, g)
			}
			if i > 0 {
				continue
			}
			// The first of them: its start block and its recall, side by
			// side in what reached the model, say no line twice — a
			// recalled turn does not quote again the goal or the note the
			// start block gave, nor a command or file it listed.
			var start, recalled []string
			for _, b := range cxBlock.FindAllString(inputText(requestFor(t, h, p)), -1) {
				for _, l := range strings.Split(b, "\n") {
					l = strings.TrimSpace(l)
					if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "<") || strings.HasPrefix(l, "[") || strings.HasPrefix(l, "Reference from earlier sessions") {
						continue
					}
					for _, mark := range []string{"- ", "› ", "‹ ", "$ ", "files: ", "cmd: ", "file: "} {
						l = strings.TrimPrefix(l, mark)
					}
					l = strings.Trim(l, "`")
					if strings.Contains(b, `source="cx:startup"`) {
						start = append(start, l)
					} else {
						recalled = append(recalled, l)
					}
				}
			}
			if len(start) == 0 {
				t.Fatalf("no start block for %q", p)
			}
			// (Each line against the start block's before it: two recalled
			// turns may well say the same, as the mock's replies do.)
			all := append(slices.Clone(start), recalled...)
			for i, l := range all {
				l = strings.TrimSuffix(strings.TrimSuffix(l, "…"), " ")
				for _, earlier := range start[:min(i, len(start))] {
					earlier = strings.TrimSuffix(strings.TrimSuffix(earlier, "…"), " ")
					if len([]rune(earlier)) >= 8 && (l == earlier || strings.HasPrefix(l, earlier) || strings.HasPrefix(earlier, l)) {
						t.Errorf("%q is said again (%q) in what the first prompt was given:\nstart:\n%s\nrecall:\n%s", l, earlier, strings.Join(start, "\n"), strings.Join(recalled, "\n"))
					}
				}
			}
			if !slices.Contains(start, "the quokkaberry deadline is Friday.") {
				t.Errorf("the note is not given:\n%s", strings.Join(start, "\n"))
			}
		}
		// A task that shares nothing with the line, and does work, opens a
		// new one.
		exec("Fix the login timeout in auth.go [[shell: echo fixing]]")
		if g := worktreeGoal(t, h); !strings.HasPrefix(g, "Fix the login timeout in auth.go") {
			t.Errorf("after a new line of work the goal is %q", g)
		}
	})
}
