package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"cx/internal/codex"
	"cx/internal/testing/codextest"
)

// Codex's own structure (issue: continuity that follows it), against the
// real Codex: subagent threads stay their parent's children, Codex's goal
// is the goal.

// withStructure runs f for each installed Codex with subagents and goals.
func withStructure(t *testing.T, f func(t *testing.T, in codextest.Install)) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		if codex.CompareVersions(in.Version, "0.171.0") < 0 {
			t.Skipf("Codex %s has no multi_agent or goals as 0.171 has them", in.Version)
		}
		f(t, in)
	})
}

// worktreeGoal is the goal `cx ctl context` gives (the first line under
// "### Goal").
func worktreeGoal(t *testing.T, h *H) string {
	t.Helper()
	// A commit left to the outbox at exit (the exit budget ran out on a
	// busy machine) is done first: the goal is what every commit left.
	h.CXCtl("ctl", "sweep")
	out := h.CXCtl("ctl", "context")
	_, after, ok := strings.Cut(out, "### Goal\n\n")
	if !ok {
		t.Fatalf("no goal in cx ctl context:\n%s", out)
	}
	line, _, _ := strings.Cut(after, "\n")
	return line
}

func TestSubagentsStayUnderTheirParent(t *testing.T) {
	withStructure(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		// v1 (found through tool_search), then v2 forked with the parent's
		// history, each through cx.
		if _, errOut, code := h.Exec("", "exec", subagentV1Prompt); code != 0 {
			t.Fatalf("v1: exit %d: %s", code, errOut)
		}
		if _, errOut, code := h.Exec("", "exec", "--enable", "multi_agent_v2", subagentV2Prompt); code != 0 {
			t.Fatalf("v2: exit %d: %s", code, errOut)
		}
		states := h.Sessions()
		var parents, children []SessionState
		for _, s := range states {
			if s.Parent == "" {
				parents = append(parents, s)
			} else {
				children = append(children, s)
			}
		}
		if len(parents) != 2 || len(children) != 2 {
			t.Fatalf("want 2 parents and 2 children, have %+v", states)
		}
		for _, c := range children {
			p, ok := states[c.Parent]
			if !ok || p.Parent != "" {
				t.Errorf("child %s names parent %q, not a listed parent session", c.ID, c.Parent)
			}
			if c.Status != "committed" || c.Commits != c.Generation || c.TotalTurns != 1 {
				t.Errorf("child %s: %+v, want committed with its one turn", c.ID, c)
			}
			// show of the parent names it.
			var show struct {
				Session SessionState `json:"session"`
			}
			if err := json.Unmarshal([]byte(h.CXCtl("ctl", "show", c.Parent, "--json")), &show); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(show.Session.Children, c.ID) {
				t.Errorf("show %s: children %v, want %s", c.Parent, show.Session.Children, c.ID)
			}
		}
		// The list puts each child under its parent.
		list := h.CXCtl("ctl", "sessions")
		for _, c := range children {
			pi, ci := strings.Index(list, c.Parent), strings.Index(list, "↳ "+c.ID)
			if pi < 0 || ci < pi {
				t.Errorf("child %s not listed under its parent:\n%s", c.ID, list)
			}
		}
		// Each parent's prompt archived once, each child's turn once, and
		// no child's task among the parent's turns.
		for _, p := range parents {
			if p.TotalTurns != 1 {
				t.Errorf("parent %s: %d turns, want 1", p.ID, p.TotalTurns)
			}
		}
		// The worktree's goal, plan and latest session are the parents'.
		if g := worktreeGoal(t, h); !strings.HasPrefix(g, "Investigate the flamingo parser bug") {
			t.Errorf("the goal is %q, want the parent's task", g)
		}
		ctx := h.CXCtl("ctl", "context")
		// (The parents' prompts quote the children's tasks inside their
		// spawn directives; a child's own turn would start with it.)
		if strings.Contains(ctx, "\nchild task") || strings.Contains(ctx, "- child task") {
			t.Errorf("a child's task is in the context:\n%s", ctx)
		}
		for _, c := range children {
			if strings.Contains(ctx, c.ID) {
				t.Errorf("child %s is named as a latest session:\n%s", c.ID, ctx)
			}
		}
		if !strings.Contains(ctx, "read the parser") {
			t.Errorf("the parent's plan is not in the context:\n%s", ctx)
		}
		// A child's task (v1 fires UserPromptSubmit for it, with agent_id)
		// got no per-prompt recall.
		sawChild := false
		for _, ev := range h.HookEvents() {
			if ev.Event == "UserPromptSubmit" && ev.AgentID != "" {
				sawChild = true
				if ev.Context != 0 {
					t.Errorf("a child's prompt was given %d characters of context", ev.Context)
				}
			}
		}
		if !sawChild {
			t.Log("no UserPromptSubmit with agent_id seen (v1's child prompt hook did not fire)")
		}
	})
}

func TestCodexGoalIsTheGoal(t *testing.T) {
	withStructure(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu := h.StartTUI()
		tu.WaitReady()
		// The model sets the goal at the user's request; Codex's goal then
		// starts a turn of its own that runs a command and completes it.
		tu.Prompt(goalPrompt, "mock: done (2 steps)")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		if g := worktreeGoal(t, h); g != "Ship the flamingo parser rewrite with tests (Codex goal, complete)" {
			t.Errorf("goal %q, want Codex's objective and status", g)
		}
		states := committedOnce(t, h)
		if len(states) != 1 {
			t.Fatalf("sessions %+v", states)
		}
		for _, s := range states {
			if s.TotalTurns != 2 {
				t.Errorf("turns %d, want the user's and the goal's, once each", s.TotalTurns)
			}
			out := h.CXCtl("ctl", "show", s.ID)
			if !strings.Contains(out, "[GOAL]\n- Ship the flamingo parser rewrite with tests (complete)") {
				t.Errorf("show:\n%s", out)
			}
		}
	})
}

// Each turn of a parent and of its children reaches each sink once: the
// local archive and OpenViking, where a child is a session of its own whose
// user message names its parent's session.
func TestSubagentsReachEachSinkOnce(t *testing.T) {
	withStructure(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		ov := withOpenViking(t, h, "")
		if _, errOut, code := h.Exec("", "exec", subagentV1Prompt); code != 0 {
			t.Fatalf("v1: exit %d: %s", code, errOut)
		}
		if _, errOut, code := h.Exec("", "exec", "--enable", "multi_agent_v2", subagentV2Prompt); code != 0 {
			t.Fatalf("v2: exit %d: %s", code, errOut)
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			done := true
			for _, s := range h.Sessions() {
				done = done && s.Status == "committed"
			}
			if done {
				break
			}
			h.CXCtl("ctl", "sweep")
			time.Sleep(300 * time.Millisecond)
		}
		states := committedOnce(t, h)
		if len(states) != 4 {
			t.Fatalf("sessions %+v", states)
		}
		userTexts := map[string]int{}
		for id, st := range states {
			s, ok := ov.Session("cx-" + id)
			if !ok || s.Commits != 1 {
				t.Fatalf("OpenViking session cx-%s: %+v", id, s)
			}
			named := false
			for _, m := range s.Messages {
				var msg struct {
					Role  string `json:"role"`
					Parts []struct {
						Type string `json:"type"`
						Text string `json:"text"`
						URI  string `json:"uri"`
					} `json:"parts"`
				}
				if err := json.Unmarshal(m, &msg); err != nil {
					t.Fatal(err)
				}
				for _, p := range msg.Parts {
					switch {
					case msg.Role == "user" && p.Type == "text":
						userTexts[p.Text]++
					case p.Type == "context":
						named = named || p.URI == "viking://session/cx-"+st.Parent
					}
				}
			}
			if (st.Parent != "") != named {
				t.Errorf("cx-%s (parent %q): its messages name the parent's session: %v", id, st.Parent, named)
			}
		}
		for text, n := range userTexts {
			if n != 1 {
				t.Errorf("%q reached OpenViking %d times", text, n)
			}
		}
		if userTexts[subagentV1Prompt] != 1 || userTexts[subagentV2Prompt] != 1 {
			t.Errorf("the parents' prompts on the server: %v", userTexts)
		}
		if v := ov.Violations(); len(v) > 0 {
			t.Fatalf("outside the server's contract: %v", v)
		}
	})
}
