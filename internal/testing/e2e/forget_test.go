package e2e

import (
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// Forgetting a session forgets its subagents with it (issue 52), against
// the real Codex: a parent that spawned a child through cx, forgotten by
// its id; the child is named in what forget says, and none of its turns is
// found after.
func TestForgetTakesTheSubagents(t *testing.T) {
	withStructure(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		if _, errOut, code := h.Exec("", "exec", subagentV1Prompt); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		h.CXCtl("ctl", "sweep")
		var parent, child string
		for id, s := range h.Sessions() {
			if s.Parent != "" {
				child, parent = id, s.Parent
			}
		}
		if child == "" {
			t.Fatalf("no subagent recorded: %s", h.CXCtl("ctl", "sessions"))
		}
		if out := h.CXCtl("ctl", "search", "--all", "child task list the parser files"); !strings.Contains(out, child) {
			t.Fatalf("the child's turn is not found before forget:\n%s", out)
		}
		out := h.CXCtl("ctl", "forget", "--yes", parent)
		if !strings.Contains(out, parent+": forgotten") || !strings.Contains(out, child+": forgotten with its parent") {
			t.Errorf("forget says:\n%s", out)
		}
		if out := h.CXCtl("ctl", "search", "--all", "child task list the parser files"); strings.Contains(out, child) || strings.Contains(out, parent) {
			t.Errorf("after forget, search still finds them:\n%s", out)
		}
	})
}
