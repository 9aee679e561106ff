package e2e

import (
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
