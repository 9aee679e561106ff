package continuity

import (
	"strings"

	"cx/internal/redact"
	"cx/internal/rollout"
)

// codexGoalLine is the goal line of Codex's own thread goal.
func codexGoalLine(g rollout.Goal) string {
	line := rollout.OneLine(redact.String(g.Objective), maxGoal)
	if g.Status != "" {
		line += codexGoalMark + strings.ReplaceAll(g.Status, "_", " ") + ")"
	}
	return line
}

// codexGoalMark follows the objective on a goal line of Codex's goal.
const codexGoalMark = " (Codex goal, "

// objectiveOf is the goal a goal line states, without its state.
func objectiveOf(goalLine string) string {
	if i := strings.Index(goalLine, codexGoalMark); i >= 0 {
		return goalLine[:i]
	}
	return strings.TrimSuffix(goalLine, doneMark)
}

// doneMark follows the goal of a line whose plan is all done.
const doneMark = " (done)"

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
