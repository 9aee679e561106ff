package continuity

import (
	"fmt"
	"slices"
	"strings"

	"cx/internal/checkpoint"
	"cx/internal/redact"
	"cx/internal/rollout"
	"cx/internal/words"
)

// A line of work is one unit: its goal, its open plan, its files and the
// last session that worked on it. The worktree document holds the current
// line in its Goal, Not yet tried, Incomplete / next and Files sections,
// and up to maxEarlier unfinished earlier lines under "Earlier,
// unfinished". A new line replaces the current one whole; the old one, if
// unfinished, moves to the earlier lines, from where a return to it (its
// plan updated, its session resumed, its files or topic worked on) brings
// it back whole.
//
// New line or same line is decided from structure, in any language (see
// docs/behaviour.md, "A line of work"):
//   - Codex's own goal, when the thread has one, is the line;
//   - a turn that did no work never changes the line;
//   - a plan is the same line's when it holds most of that line's open
//     steps and adds fewer open steps than it keeps (an update: new
//     statuses, a step added), an earlier line's when it is that line's so
//     updated, and otherwise a plan made afresh: a new line (within the
//     session that opened the line, a follow-up that shares its topic
//     keeps it);
//   - without a plan: a nudge ("continue"), the line's own session (a
//     follow-up, a resume) and the line's files keep the line; an earlier
//     line's session or files bring it back; else the request's topic
//     words decide — words the project's archived sessions mostly hold
//     ("run", "tests", "code") are no topic and link nothing — and a
//     request that shares none opens a new line.
type line struct {
	goal    string // the goal line as written (Codex's with its state)
	steps   []step // the open plan
	files   []string
	session string
}

// step is an open plan step: its mark (" " not yet tried, ">" in
// progress, "?" open in a plan the commands after it may have done).
type step struct{ mark, text string }

func (s step) bullet() string {
	if s.mark == "?" {
		return "- [?] " + s.text + staleNote
	}
	return "- [" + s.mark + "] " + s.text
}

// parseStep reads a step bullet ("- [ ] text"), at any indent.
func parseStep(l string) (step, bool) {
	l = strings.TrimSpace(l)
	for _, m := range []string{" ", ">", "?"} {
		if text, ok := strings.CutPrefix(l, "- ["+m+"] "); ok {
			text, _, _ = strings.Cut(text, staleNote)
			return step{m, text}, true
		}
	}
	return step{}, false
}

// maxEarlier bounds the earlier lines a worktree keeps.
const maxEarlier = 3

// unfinished reports whether a line is worth coming back to: it has open
// steps, or Codex's goal for it is not complete.
func (l line) unfinished() bool {
	if l.goal == "" {
		return false
	}
	if strings.Contains(l.goal, codexGoalMark) {
		return !strings.HasSuffix(l.goal, codexGoalMark+"complete)")
	}
	return len(l.steps) > 0
}

// topic is the line's words: its goal's, its open steps' and its files'.
func (l line) topic() map[string]bool {
	out := words.Content(objectiveOf(l.goal))
	for _, s := range l.steps {
		for w := range words.Content(s.text) {
			out[w] = true
		}
	}
	for _, f := range l.files {
		if p, ok := cmdOf(f); ok {
			for w := range words.Content(p) {
				out[w] = true
			}
		}
	}
	return out
}

func (l line) hasFile(path string) bool {
	return slices.ContainsFunc(l.files, func(f string) bool { p, ok := cmdOf(f); return ok && p == path })
}

// lines is a worktree's current line and its earlier unfinished ones.
type lines struct {
	cur     line
	earlier []line
}

// readLines reads the lines a worktree document holds.
func readLines(d Doc) lines {
	var ls lines
	if g := trimBlank(d.Sections[secGoal]); len(g) > 0 {
		ls.cur.goal = strings.TrimSpace(g[0])
	}
	for _, sec := range []string{secNext, secNotTried} {
		for _, l := range d.Sections[sec] {
			if s, ok := parseStep(l); ok {
				ls.cur.steps = append(ls.cur.steps, s)
			}
		}
	}
	for _, l := range d.Sections[secFilesEtc] {
		if _, ok := cmdOf(l); ok {
			ls.cur.files = append(ls.cur.files, l)
		}
		if id, ok := strings.CutPrefix(l, "- Last session: `"); ok {
			ls.cur.session, _, _ = strings.Cut(id, "`")
		}
	}
	var e *line
	for _, l := range d.Sections[secEarlier] {
		switch {
		case strings.HasPrefix(l, "- "):
			ls.earlier = append(ls.earlier, line{goal: strings.TrimPrefix(l, "- ")})
			e = &ls.earlier[len(ls.earlier)-1]
		case e == nil || !strings.HasPrefix(l, "  "):
		default:
			t := strings.TrimSpace(l)
			if s, ok := parseStep(t); ok {
				e.steps = append(e.steps, s)
			} else if id, ok := strings.CutPrefix(t, "- session `"); ok {
				e.session, _, _ = strings.Cut(id, "`")
			} else if _, ok := cmdOf(t); ok {
				e.files = append(e.files, t)
			}
		}
	}
	return ls
}

// write puts the lines back into the document: cx's bullets replaced, a
// person's lines kept.
func (ls lines) write(d *Doc) {
	if ls.cur.goal != "" {
		d.Sections[secGoal] = []string{ls.cur.goal}
	}
	notStep := func(l string) bool { _, ok := parseStep(l); return !ok }
	notTried := slices.DeleteFunc(slices.Clone(d.Sections[secNotTried]), func(l string) bool { return !notStep(l) })
	next := slices.DeleteFunc(slices.Clone(d.Sections[secNext]), func(l string) bool { return !notStep(l) })
	for _, s := range ls.cur.steps {
		if s.mark == " " {
			notTried = append(notTried, s.bullet())
		} else {
			next = append(next, s.bullet())
		}
	}
	d.Sections[secNotTried], d.Sections[secNext] = notTried, next
	var files []string
	for _, l := range d.Sections[secFilesEtc] {
		if _, ok := cmdOf(l); !ok {
			files = append(files, l)
		}
	}
	d.Sections[secFilesEtc] = append(files, capList(ls.cur.files, maxListLength)...)
	var earlier []string
	for _, e := range ls.earlier {
		earlier = append(earlier, "- "+e.goal)
		for _, s := range e.steps {
			earlier = append(earlier, "  "+s.bullet())
		}
		for _, f := range e.files {
			earlier = append(earlier, "  "+f)
		}
		if e.session != "" {
			earlier = append(earlier, "  - session `"+e.session+"`")
		}
	}
	if len(earlier) > 0 || d.Sections[secEarlier] != nil {
		d.Sections[secEarlier] = earlier
	}
}

// open makes l the current line; the current one, if unfinished, becomes
// the first earlier line.
func (ls *lines) open(l line) {
	if ls.cur.unfinished() {
		ls.earlier = slices.Insert(ls.earlier, 0, ls.cur)
		if len(ls.earlier) > maxEarlier {
			ls.earlier = ls.earlier[:maxEarlier]
		}
	}
	ls.cur = l
}

// back makes earlier line i the current one again.
func (ls *lines) back(i int) {
	l := ls.earlier[i]
	ls.earlier = slices.Delete(ls.earlier, i, i+1)
	ls.open(l)
}

// find is the earlier line f holds for (-1 for none).
func (ls *lines) find(f func(line) bool) int { return slices.IndexFunc(ls.earlier, f) }

// normStep is a plan step's text as plans are compared: case and spacing
// do not count, nor a cut's ellipsis.
func normStep(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(strings.TrimSuffix(s, "…"))), " ")
}

// samePlan reports whether plan is an update of a line's open steps: it
// holds most of them, and adds fewer open steps than it holds.
func samePlan(plan []rollout.PlanStep, open []step) bool {
	if len(open) == 0 || len(plan) == 0 {
		return false
	}
	had := map[string]bool{}
	for _, s := range open {
		had[normStep(s.text)] = true
	}
	kept, added := 0, 0
	for _, s := range plan {
		switch {
		case had[normStep(rollout.OneLine(redact.String(s.Step), 200))]:
			kept++
		case s.Status != "completed":
			added++
		}
	}
	return kept*2 > len(open) && added <= kept
}

// stepsOf is a plan's open steps; stale marks the pending ones "?" (the
// commands after the plan may have done them).
func stepsOf(plan []checkpoint.PlanStep, stale bool) []step {
	var out []step
	for _, s := range plan {
		switch {
		case s.Status == "pending" && stale:
			out = append(out, step{"?", s.Text})
		case s.Status == "pending":
			out = append(out, step{" ", s.Text})
		case s.Status == "in_progress":
			out = append(out, step{">", s.Text})
		}
	}
	return out
}

func turnSteps(plan []rollout.PlanStep) []checkpoint.PlanStep {
	out := make([]checkpoint.PlanStep, 0, len(plan))
	for i, s := range plan {
		out = append(out, checkpoint.PlanStep{ID: fmt.Sprint(i + 1), Text: rollout.OneLine(redact.String(s.Step), 200), Status: s.Status})
	}
	return out
}

// applyLines decides, turn by turn, which line of work the generation's
// work belongs to, and writes the lines back with the generation's plan
// and files on the line they belong to.
func (d *Doc) applyLines(ev Evidence) {
	ls := readLines(*d)
	ordinary := ev.Ordinary
	if ordinary == nil {
		ordinary = func(string) bool { return false }
	}
	if ev.Goal.Cleared() {
		// Codex's goal was cleared: its line goes, and the line rule
		// decides again (the line before it, if any, comes back).
		isCodex := func(l line) bool { return strings.Contains(l.goal, codexGoalMark) }
		ls.earlier = slices.DeleteFunc(ls.earlier, isCodex)
		if isCodex(ls.cur) {
			ls.cur = line{}
			if len(ls.earlier) > 0 {
				ls.back(0)
			}
		}
	}
	planned := false // the generation's plan is the current line's
	for _, t := range ev.Turns {
		if t.Trigger != "" {
			// A goal's or an agent's turn works on the line it is in.
			planned = planned || len(t.Plan) > 0
			ls.addFiles(t)
			continue
		}
		req := checkpoint.Classify(t.User)
		task := req.Kind == checkpoint.KindTask
		if !checkpoint.DidWork(t) {
			if g := goalOf(req.Text); task && g != "" && ls.cur.goal == "" {
				ls.cur = line{goal: g, session: ev.SessionID} // nothing better yet; work replaces it
			}
			continue
		}
		g := goalOf(req.Text)
		switch {
		case len(t.Plan) > 0:
			switch {
			case samePlan(t.Plan, ls.cur.steps):
			case ls.find(func(l line) bool { return samePlan(t.Plan, l.steps) }) >= 0:
				ls.back(ls.find(func(l line) bool { return samePlan(t.Plan, l.steps) }))
			case !task || g == "" || ls.cur.goal == "":
				if ls.cur.goal == "" && g != "" {
					ls.cur.goal = g
				}
			case ls.cur.session == ev.SessionID && ls.sharesTopic(req.Text, ordinary):
				// A follow-up in the line's own session, on its topic.
			default:
				ls.open(line{goal: g})
			}
			ls.cur.steps = stepsOf(turnSteps(t.Plan), false)
			planned = true
		case !task || g == "":
			// A nudge works on the current line.
		case ls.cur.goal == "":
			ls.cur.goal = g
		case ls.cur.session == ev.SessionID, ls.touches(ls.cur, t):
		case ls.find(func(l line) bool { return l.session == ev.SessionID || ls.touches(l, t) }) >= 0:
			ls.back(ls.find(func(l line) bool { return l.session == ev.SessionID || ls.touches(l, t) }))
		case ls.sharesTopic(req.Text, ordinary):
		default:
			if i := ls.earlierOnTopic(req.Text, ordinary); i >= 0 {
				ls.back(i)
			} else {
				ls.open(line{goal: g})
			}
		}
		ls.cur.session = ev.SessionID
		ls.addFiles(t)
	}
	if len(ev.Plan) > 0 && (planned || ls.cur.session == ev.SessionID) {
		// The plan as the generation left it (a plan not updated after
		// commands ran may say "pending" of a step they did: open, not
		// "not yet tried").
		ls.cur.steps = stepsOf(ev.Plan, commandsAfterPlan(ev.Turns))
	}
	if ev.Goal != nil && strings.TrimSpace(ev.Goal.Objective) != "" && !ev.Goal.Cleared() {
		gl := codexGoalLine(*ev.Goal)
		obj := objectiveOf(gl)
		switch {
		case objectiveOf(ls.cur.goal) == obj:
		case ls.find(func(l line) bool { return objectiveOf(l.goal) == obj }) >= 0:
			ls.back(ls.find(func(l line) bool { return objectiveOf(l.goal) == obj }))
		case ls.cur.session == ev.SessionID && !strings.Contains(ls.cur.goal, codexGoalMark):
			// The session's own line: Codex's goal now states it.
		default:
			ls.open(line{})
		}
		ls.cur.goal, ls.cur.session = gl, ev.SessionID
	} else if ls.cur.goal != "" && !strings.Contains(ls.cur.goal, codexGoalMark) {
		// A line whose plan has no open step left is done (until a plan
		// opens steps on it again).
		done := len(ls.cur.steps) == 0 && (strings.HasSuffix(ls.cur.goal, doneMark) || planned && len(ev.Plan) > 0)
		ls.cur.goal = objectiveOf(ls.cur.goal)
		if done {
			ls.cur.goal += doneMark
		}
	}
	ls.write(d)
}

// addFiles lists on the current line the files a turn wrote.
func (ls *lines) addFiles(t rollout.Turn) {
	for _, f := range t.Files {
		ls.cur.files = append(removeCmd(ls.cur.files, f.Path), fmt.Sprintf("- `%s` (%s)", f.Path, f.Op))
	}
}

// touches reports whether a turn wrote one of a line's files.
func (ls *lines) touches(l line, t rollout.Turn) bool {
	return slices.ContainsFunc(t.Files, func(f rollout.FileEdit) bool { return l.hasFile(f.Path) })
}

// topicWords is a request's words that can name a topic: its content
// words the project's archive does not mostly hold.
func topicWords(text string, ordinary func(string) bool) map[string]bool {
	ws := words.Content(text)
	for w := range ws {
		if ordinary(w) {
			delete(ws, w)
		}
	}
	return ws
}

func (ls *lines) sharesTopic(text string, ordinary func(string) bool) bool {
	return shares(ls.cur.topic(), topicWords(text, ordinary))
}

// earlierOnTopic is the earlier line a request's topic words name (-1
// for none).
func (ls *lines) earlierOnTopic(text string, ordinary func(string) bool) int {
	ws := topicWords(text, ordinary)
	return ls.find(func(l line) bool { return shares(l.topic(), ws) })
}

func shares(a, b map[string]bool) bool {
	for t := range b {
		if a[t] {
			return true
		}
	}
	return false
}
