package continuity

import (
	"os"
	"strings"
	"testing"

	"cx/internal/rollout"
)

// planned is a turn that made (or updated) a plan and ran a command, as a
// model does: "[x] " marks a completed step, the first open one is in
// progress.
func planned(user string, steps ...string) rollout.Turn {
	t := turn(user, cmd("echo working", 0))
	open := false
	for _, s := range steps {
		st := rollout.PlanStep{Step: s, Status: "pending"}
		if rest, ok := strings.CutPrefix(s, "[x] "); ok {
			st = rollout.PlanStep{Step: rest, Status: "completed"}
		} else if !open {
			st.Status, open = "in_progress", true
		}
		t.Plan = append(t.Plan, st)
	}
	t.Tools = append([]rollout.ToolCall{{Name: "update_plan"}}, t.Tools...)
	return t
}

// evidence is one session's generation of turns, with the plan its last
// planning turn left.
func evidence(session string, turns ...rollout.Turn) Evidence {
	ev := Evidence{SessionID: session, EndReason: "exit", Turns: turns}
	for _, t := range turns {
		if len(t.Plan) > 0 {
			ev.Plan = turnSteps(t.Plan)
		}
	}
	return ev
}

// lineUpdater merges evidence into a fresh worktree's documents and
// reads them back.
func lineUpdater(t *testing.T) func(Evidence) lineDoc {
	s := Store{Home: t.TempDir()}
	id := Identity{Project: "origin:x", ProjectID: "p1", Worktree: "/w", WorktreeID: "w1", Name: "w"}
	return func(ev Evidence) lineDoc {
		t.Helper()
		if _, _, err := s.Update(id, ev); err != nil {
			t.Fatal(err)
		}
		return readLineDoc(t, s, id)
	}
}

// lineDoc is a worktree document's parts as tests check them.
type lineDoc struct {
	goal, steps, earlier, files, context string
}

func readLineDoc(t *testing.T, s Store, id Identity) lineDoc {
	t.Helper()
	_, w := s.paths(id)
	data, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	d := Parse(string(data))
	return lineDoc{
		goal:    strings.Join(d.Sections[secGoal], "\n"),
		steps:   strings.Join(append(append([]string{}, d.Sections[secNext]...), d.Sections[secNotTried]...), "\n"),
		earlier: strings.Join(d.Sections[secEarlier], "\n"),
		files:   strings.Join(d.Sections[secFilesEtc], "\n"),
		context: ForContext(string(data)),
	}
}

var (
	invoiceGoal = "Migrate the invoice tables to the new ledger schema"
	invoicePlan = []string{"Look at the code for the invoice tables", "Make the change: write the migration for the invoice tables", "Run the tests"}
	csvGoal     = "Add a CSV export to the quarterly report generator"
	csvPlan     = []string{"Look at the code for the report generator", "Make the change: add the CSV writer", "Run the tests"}
	loginGoal   = "Fix the flaky login redirect on the signup page"
)

// Lines of work as a user meets them, with plans as a model writes them
// (issue 51): invoice → CSV → login → back to the invoice line.
func TestLinesOfWork(t *testing.T) {
	update := lineUpdater(t)

	d := update(evidence("s1", planned(invoiceGoal, invoicePlan...)))
	if d.goal != invoiceGoal || !strings.Contains(d.steps, "- [>] Look at the code for the invoice tables") {
		t.Fatalf("first line: goal %q steps:\n%s", d.goal, d.steps)
	}

	// A new task with a plan of its own, its steps as ordinary as the
	// first's ("Look at the code", "Make the change", "Run the tests").
	d = update(evidence("s2", planned(csvGoal, csvPlan...)))
	if d.goal != csvGoal {
		t.Errorf("after the CSV session the goal is %q", d.goal)
	}
	if strings.Contains(d.steps, "invoice") || !strings.Contains(d.steps, "add the CSV writer") {
		t.Errorf("the CSV line's steps:\n%s", d.steps)
	}
	if !strings.HasPrefix(d.earlier, "- "+invoiceGoal) {
		t.Errorf("the invoice line is not kept as earlier, unfinished:\n%s", d.earlier)
	}
	if !strings.Contains(d.context, "### Earlier, unfinished\n\n- "+invoiceGoal+" (3 open steps)") || strings.Contains(d.context, "  - [") {
		t.Errorf("the model is not given the earlier line in one line:\n%s", d.context)
	}

	// A new task with commands and no plan: the CSV steps go with their line.
	d = update(evidence("s3", turn(loginGoal, cmd("go test ./auth/...", 1), cmd("echo fixing", 0))))
	if d.goal != loginGoal {
		t.Errorf("after the login session the goal is %q", d.goal)
	}
	if d.steps != "" {
		t.Errorf("the login line has another line's steps:\n%s", d.steps)
	}
	if !strings.HasPrefix(d.earlier, "- "+csvGoal) || !strings.Contains(d.earlier, "- "+invoiceGoal) {
		t.Errorf("earlier lines:\n%s", d.earlier)
	}

	// Talk-only turns, in any language, never change the line.
	for i, p := range []string{"what's left?", "Thanks, that looks right", "Wo waren wir stehen geblieben?", "ok"} {
		d = update(evidence("q"+string(rune('0'+i)), turn(p)))
		if d.goal != loginGoal {
			t.Errorf("after %q the goal is %q", p, d.goal)
		}
	}

	// Back to the invoice line: its plan updated (a step done).
	back := planned("continue the invoice migration", append([]string{"[x] " + invoicePlan[0]}, invoicePlan[1:]...)...)
	d = update(evidence("s4", back))
	if d.goal != invoiceGoal {
		t.Errorf("back on the invoice line the goal is %q", d.goal)
	}
	if strings.Contains(d.steps, "CSV") || !strings.Contains(d.steps, "- [>] Make the change: write the migration") || strings.Contains(d.steps, invoicePlan[0]) {
		t.Errorf("back on the invoice line the steps are:\n%s", d.steps)
	}
	if strings.Contains(d.earlier, invoiceGoal) || !strings.Contains(d.earlier, csvGoal) {
		t.Errorf("earlier lines after the return:\n%s", d.earlier)
	}

	// The invoice plan done: the line is done, and a new line does not
	// keep it as unfinished.
	d = update(evidence("s4", planned("finish it", "[x] "+invoicePlan[0], "[x] "+invoicePlan[1], "[x] "+invoicePlan[2])))
	if d.goal != invoiceGoal+doneMark || d.steps != "" {
		t.Errorf("a line with its plan done: goal %q steps %q", d.goal, d.steps)
	}
	d = update(evidence("s5", turn("Speed up the slow quarterly report query", cmd("echo profiling", 0))))
	if strings.Contains(d.earlier, invoiceGoal) {
		t.Errorf("a done line is kept as unfinished:\n%s", d.earlier)
	}
}

// Within a line: a follow-up in its session, its files, its topic keep
// it; words most of the project's sessions hold link nothing.
func TestSameLine(t *testing.T) {
	id := Identity{Project: "origin:x", ProjectID: "p1", Worktree: "/w", WorktreeID: "w1", Name: "w"}
	withFile := func(tu rollout.Turn, path string) rollout.Turn {
		tu.Files = append(tu.Files, rollout.FileEdit{Path: path, Op: "update"})
		return tu
	}
	ordinary := func(w string) bool { return w == "test" || w == "run" || w == "shell" || w == "fix" }
	for _, tc := range []struct {
		name  string
		next  Evidence
		same  bool
		first Evidence
	}{
		{"a follow-up in the session", evidence("s1", turn("now handle the empty quarter", cmd("echo x", 0))), true, Evidence{}},
		{"the line's file", evidence("s2", withFile(turn("handle the empty quarter"), "report/export.go")), true, Evidence{}},
		{"the line's topic", evidence("s2", turn("include the tax column in the CSV export", cmd("echo x", 0))), true, Evidence{}},
		{"ordinary words only", evidence("s2", turn("run the shell tests and fix them", cmd("echo x", 0))), false, Evidence{}},
		{"another topic", evidence("s2", turn("Fix the flaky login redirect", cmd("echo x", 0))), false, Evidence{}},
		{"a nudge", evidence("s2", turn("continue", cmd("echo x", 0))), true, Evidence{}},
		{"a fresh plan in another session", evidence("s2", planned("Tidy the report module", "Look at the code", "Run the tests")), false, Evidence{}},
		{"the same plan updated", evidence("s2", planned("go on", "[x] Look at the code for the report generator", "Make the change: add the CSV writer", "Run the tests", "Update the docs")), true, Evidence{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Store{Home: t.TempDir()}
			first := evidence("s1", withFile(planned(csvGoal, csvPlan...), "report/export.go"))
			if _, _, err := s.Update(id, first); err != nil {
				t.Fatal(err)
			}
			tc.next.Ordinary = ordinary
			if _, _, err := s.Update(id, tc.next); err != nil {
				t.Fatal(err)
			}
			d := readLineDoc(t, s, id)
			if same := strings.HasPrefix(d.goal, csvGoal); same != tc.same {
				t.Errorf("same line %v, want %v: goal %q, earlier:\n%s", same, tc.same, d.goal, d.earlier)
			}
		})
	}
}

// Codex's goal as it stands: paused, resumed, complete, cleared (the line
// before it comes back).
func TestCodexGoalLine(t *testing.T) {
	update := lineUpdater(t)
	update(evidence("s1", planned(csvGoal, csvPlan...)))
	obj := "Migrate the invoice tables to the new ledger schema"
	goalTurn := turn("Set a goal: migrate the invoice tables")
	goalTurn.Goal = &rollout.Goal{Objective: obj, Status: "active"}
	for _, status := range []string{"active", "paused", "active", "complete"} {
		ev := evidence("g1", goalTurn)
		ev.Goal = &rollout.Goal{Objective: obj, Status: status}
		d := update(ev)
		if want := obj + " (Codex goal, " + status + ")"; d.goal != want {
			t.Errorf("goal %q, want %q", d.goal, want)
		}
		if strings.Contains(d.steps, "CSV") || !strings.Contains(d.earlier, csvGoal) {
			t.Errorf("with Codex's goal %s: steps %q earlier %q", status, d.steps, d.earlier)
		}
	}
	ev := evidence("g1")
	ev.Turns = []rollout.Turn{turn("thanks")}
	ev.Goal = &rollout.Goal{Objective: obj, Status: rollout.GoalCleared}
	d := update(ev)
	if d.goal != csvGoal || !strings.Contains(d.steps, "add the CSV writer") || strings.Contains(d.goal+d.earlier, obj) {
		t.Errorf("after the goal was cleared: goal %q steps %q earlier %q", d.goal, d.steps, d.earlier)
	}
}
