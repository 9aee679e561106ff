package continuity

import (
	"cx/internal/checkpoint"
	"cx/internal/redact"
	"cx/internal/rollout"
	"cx/internal/words"
	"maps"
	"strings"
)

// applyGoal sets the goal: Codex's own thread goal when there is one;
// otherwise the task that opened the line of work, decided from what the
// turns did, not from how they were phrased. A turn that did no work (no
// tool call, file or plan) never replaces a goal — an acknowledgement, a
// note, a question about where things stand, in whatever language; one
// that did work continues the line when its request, plan or files share
// a topic word with the goal, the open plan or the files of the line, and
// opens a new line (its request the goal) when they share none.
func (d *Doc) applyGoal(ev Evidence) {
	if ev.Goal != nil && strings.TrimSpace(ev.Goal.Objective) != "" {
		d.Sections[secGoal] = []string{codexGoalLine(*ev.Goal)}
		return
	}
	goal := ""
	if g := trimBlank(d.Sections[secGoal]); len(g) > 0 {
		goal = strings.TrimSpace(g[0])
	}
	line := words.Content(goal)
	for _, sec := range []string{secNotTried, secNext, secFilesEtc} {
		for _, l := range d.Sections[sec] {
			if strings.HasPrefix(l, "- ") && !strings.HasPrefix(l, "- Last session: ") {
				maps.Copy(line, words.Content(l))
			}
		}
	}
	for _, t := range ev.Turns {
		req := checkpoint.Classify(t.User)
		if req.Kind != checkpoint.KindTask || t.Trigger != "" {
			continue // acknowledgements, notes, "continue", a goal's or an agent's turn: never the goal
		}
		g := goalOf(req.Text)
		if g == "" {
			continue
		}
		if !checkpoint.DidWork(t) {
			if goal == "" {
				goal, line = g, words.Content(g) // nothing better yet; work replaces it
			}
			continue
		}
		work := words.Content(req.Text)
		for _, s := range t.Plan {
			maps.Copy(work, words.Content(s.Step))
		}
		for _, f := range t.Files {
			maps.Copy(work, words.Content(f.Path))
		}
		if goal == "" || !shares(line, work) {
			goal, line = g, map[string]bool{}
		}
		maps.Copy(line, work)
	}
	if goal != "" {
		d.Sections[secGoal] = []string{goal}
	}
}

// codexGoalLine is the goal line of Codex's own thread goal.
func codexGoalLine(g rollout.Goal) string {
	line := rollout.OneLine(redact.String(g.Objective), maxGoal)
	if g.Status != "" {
		line += " (Codex goal, " + strings.ReplaceAll(g.Status, "_", " ") + ")"
	}
	return line
}

func shares(a, b map[string]bool) bool {
	for t := range b {
		if a[t] {
			return true
		}
	}
	return false
}

// maxGoal bounds a goal: a sentence, not a prompt.
const maxGoal = 200

// goalOf is the goal a prompt states: its first line, up to the first
// sentence's end, before any code, patch or diff pasted into it ("" if the
// prompt is nothing but those).
func goalOf(prompt string) string {
	for _, mark := range []string{"```", "*** Begin Patch", "diff --git ", "\n--- a/", "\n+++ b/"} {
		if i := strings.Index(prompt, mark); i >= 0 {
			prompt = prompt[:i]
		}
	}
	line := ""
	for _, l := range strings.Split(prompt, "\n") {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	// The first sentence, when it ends within the bound.
	for i, r := range line {
		if i >= maxGoal*4 {
			break
		}
		if (r == '.' || r == '?' || r == '!') && (i+1 == len(line) || line[i+1] == ' ') {
			line = line[:i+1]
			break
		}
	}
	return rollout.OneLine(line, maxGoal)
}
