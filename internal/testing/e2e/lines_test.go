package e2e

import (
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// Lines of work, against the real Codex (issue 51): sessions on an invoice
// migration, a CSV export and a login fix, each with a plan as a model
// writes one ("Look at the code …", "Make the change …", "Run the tests")
// or only commands. Each start block gives the goal and the plan of the
// same line; a new line replaces both, the unfinished one is named in
// one line; back on the invoice line ("continue …", its plan updated) its
// goal and its own plan come back.
func TestLinesOfWork(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		exec := func(prompt string) {
			t.Helper()
			if _, errOut, code := h.Exec("", "exec", prompt); code != 0 {
				t.Fatalf("%q: exit %d: %s", prompt, code, errOut)
			}
		}
		const (
			invoice = "Migrate the invoice tables to the new ledger schema"
			csv     = "Add a CSV export to the quarterly report generator"
			login   = "Fix the flaky login redirect on the signup page"
		)
		invoiceSteps := []string{"Look at the code for the invoice tables", "Make the change: write the invoice migration", "Run the tests"}
		exec(invoice + " [[plan: " + strings.Join(invoiceSteps, " | ") + "]] [[shell: echo looking at the invoice tables]]")
		exec(csv + " [[plan: Look at the code for the report generator | Make the change: add the CSV writer | Run the tests]] [[shell: echo looking at the report generator]]")
		// The start block the next session is given: its goal and plan are
		// the CSV line's, the invoice line named as earlier.
		probe := "Where do things stand?"
		exec(probe)
		block := startBlock(t, h, probe)
		goal, next := blockSection(block, "Goal"), blockSection(block, "Incomplete / next")+blockSection(block, "Not yet tried")
		if !strings.HasPrefix(goal, csv) {
			t.Errorf("after the CSV session the goal is %q:\n%s", goal, block)
		}
		if !strings.Contains(next, "add the CSV writer") || strings.Contains(next, "invoice") {
			t.Errorf("after the CSV session the next steps are not the CSV line's:\n%s", block)
		}
		if earlier := blockSection(block, "Earlier, unfinished"); !strings.HasPrefix(earlier, "- "+invoice) || strings.Count(earlier, "\n") > 0 {
			t.Errorf("the invoice line is not named in one line as earlier, unfinished:\n%s", block)
		}

		// A new line with commands and no plan: the CSV steps go with theirs.
		exec(login + " [[shell: echo checking the redirect]]")
		if g := worktreeGoal(t, h); !strings.HasPrefix(g, login) {
			t.Errorf("after the login session the goal is %q", g)
		}
		if ctx := h.CXCtl("ctl", "context"); strings.Contains(blockSection(ctx, "Incomplete / next")+blockSection(ctx, "Not yet tried"), "CSV") {
			t.Errorf("the login line lists the CSV steps:\n%s", ctx)
		}

		// Back to the invoice line, its plan updated.
		exec("continue the invoice migration [[plan: [x] " + invoiceSteps[0] + " | " + invoiceSteps[1] + " | " + invoiceSteps[2] + "]] [[shell: echo writing the migration]]")
		ctx := h.CXCtl("ctl", "context")
		if g := worktreeGoal(t, h); !strings.HasPrefix(g, invoice) {
			t.Errorf("back on the invoice line the goal is %q:\n%s", g, ctx)
		}
		steps := blockSection(ctx, "Incomplete / next") + blockSection(ctx, "Not yet tried")
		if !strings.Contains(steps, "write the invoice migration") || strings.Contains(steps, "CSV") || strings.Contains(steps, invoiceSteps[0]) {
			t.Errorf("back on the invoice line the steps are:\n%s", ctx)
		}
		if !strings.Contains(blockSection(ctx, "Earlier, unfinished"), csv) {
			t.Errorf("the CSV line is not earlier, unfinished:\n%s", ctx)
		}

		// What the model reads says a plan as its steps and a command as
		// the command, never a tool's raw JSON: the start block and recall
		// given with a prompt, search and per-prompt recall.
		ask := "What did the CSV writer plan say about the report generator?"
		exec(ask)
		given := map[string]string{
			"what the prompt was given": cxBlocks(inputText(requestFor(t, h, ask))),
			"cx ctl search":             h.CXCtl("ctl", "search", "CSV writer"),
			"cx ctl recall":             h.CXCtl("ctl", "recall", "the CSV writer for the report generator"),
		}
		// The CSV session's turn, as `cx ctl show` (and cx mcp) gives it.
		var csvSession string
		for _, id := range h.RolloutSessionIDs() {
			if out := h.CXCtl("ctl", "show", id, "--turn", "1"); strings.Contains(out, csv) {
				csvSession, given["cx ctl show --turn"] = id, out
			}
		}
		if !strings.Contains(given["cx ctl show --turn"], "• plan: [>] Look at the code for the report generator; [ ] Make the change: add the CSV writer; [ ] Run the tests") {
			t.Errorf("the CSV turn (%s) does not give its plan as its steps:\n%s", csvSession, given["cx ctl show --turn"])
		}
		for what, text := range given {
			for _, raw := range []string{`{"`, `"step"`, `"status"`, "update_plan", "*** Begin Patch"} {
				if strings.Contains(text, raw) {
					t.Errorf("%s holds raw tool input %q:\n%s", what, raw, text)
				}
			}
		}
	})
}

// Codex's goal as it stands (issue 51): set by the model and paused with
// Esc — the goal line says "paused", the line it replaced is earlier;
// set again, paused and cleared — the line before it is the goal again.
func TestCodexGoalAsItStands(t *testing.T) {
	withStructure(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		const csv = "Add a CSV export to the quarterly report generator"
		if _, errOut, code := h.Exec("", "exec", csv+" [[plan: Look at the code for the report generator | Make the change: add the CSV writer | Run the tests]] [[shell: echo looking]]"); code != 0 {
			t.Fatalf("first session: %s", errOut)
		}
		tu := h.StartTUI()
		tu.SetGoalAndPause()
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		const obj = "Migrate the invoice tables to the new ledger schema"
		if g := worktreeGoal(t, h); g != obj+" (Codex goal, paused)" {
			t.Errorf("after a pause the goal is %q", g)
		}
		if out := h.CXCtl("ctl", "context"); !strings.Contains(blockSection(out, "Earlier, unfinished"), csv) || strings.Contains(blockSection(out, "Incomplete / next"), "CSV") {
			t.Errorf("beside Codex's goal:\n%s", out)
		}

		// Set again in a session of its own, paused, then cleared: the goal
		// falls back to the line before it.
		tu = h.StartTUI()
		tu.SetGoalAndPause()
		tu.Slash("/goal clear")
		tu.WaitText("Goal cleared", 30*time.Second)
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		if g := worktreeGoal(t, h); !strings.HasPrefix(g, csv) {
			t.Errorf("after the goal was cleared the goal is %q:\n%s", g, h.CXCtl("ctl", "context"))
		}
	})
}

// startBlock is the cx:startup block of the request that carried prompt.
func startBlock(t *testing.T, h *H, prompt string) string {
	t.Helper()
	for _, b := range cxBlock.FindAllString(inputText(requestFor(t, h, prompt)), -1) {
		if strings.Contains(b, `source="cx:startup"`) {
			return b
		}
	}
	t.Fatalf("no start block for %q", prompt)
	return ""
}

// blockSection is the text under "### name" in a continuity text, up to
// the next heading.
func blockSection(text, name string) string {
	_, after, ok := strings.Cut(text, "### "+name+"\n\n")
	if !ok {
		return ""
	}
	for _, end := range []string{"\n### ", "\n## ", "\n</cx-context>"} {
		if i := strings.Index(after, end); i >= 0 {
			after = after[:i]
		}
	}
	return strings.TrimSpace(after)
}
