package continuity

import (
	"fmt"
	"strings"
)

// Said is what a continuity document already tells the model, so what is
// given beside it need not say it again: its goal, the files it lists, the
// commands it lists (working or failed), its notes, and the session it
// names as the last.
type Said struct {
	Goal        string
	Plan        map[string]bool // the open plan's steps (their text)
	Files       map[string]bool
	Commands    map[string]bool
	Notes       map[string]bool
	LastSession string
}

// WhatItSays reads a continuity document's Said (several documents add up).
func (s *Said) WhatItSays(text string) {
	if s.Files == nil {
		s.Files, s.Commands, s.Notes, s.Plan = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	d := Parse(fromContext(text))
	for _, sec := range []string{secNotTried, secNext} {
		for _, l := range d.Sections[sec] {
			for _, mark := range []string{"- [ ] ", "- [>] ", "- [?] "} {
				if step, ok := strings.CutPrefix(l, mark); ok {
					step, _, _ = strings.Cut(step, staleNote)
					s.Plan[step] = true
				}
			}
		}
	}
	if g := trimBlank(d.Sections[secGoal]); len(g) > 0 && s.Goal == "" {
		s.Goal = objectiveOf(strings.TrimSpace(g[0]))
	}
	for _, l := range d.Sections[secFilesEtc] {
		if p, ok := cmdOf(l); ok {
			s.Files[p] = true
		}
		if id, ok := strings.CutPrefix(l, "- Last session: `"); ok {
			s.LastSession, _, _ = strings.Cut(id, "`")
		}
	}
	for _, sec := range []string{secWorking, secFailed} {
		for _, l := range d.Sections[sec] {
			if c, ok := cmdOf(l); ok {
				s.Commands[c] = true
			}
		}
	}
	for _, l := range d.Sections[secNotes] {
		if n, ok := strings.CutPrefix(l, "- "); ok {
			s.Notes[n] = true
		}
	}
}

// WithoutLines is a document in the model's form (ForContext) without the
// lines that start with prefix, in the same form (a section left empty is
// left out).
func WithoutLines(text, prefix string) string {
	var kept []string
	for _, l := range strings.Split(fromContext(text), "\n") {
		if !strings.HasPrefix(l, prefix) {
			kept = append(kept, l)
		}
	}
	return ForContext(strings.Join(kept, "\n"))
}

// fromContext is a document in the model's form (ForContext, its sections
// headed "###") in the file's form, for Parse.
func fromContext(text string) string { return strings.ReplaceAll("\n"+text, "\n### ", "\n## ") }

// ForContext is a continuity document as the model is given it: its known
// sections that hold something, in order, and a person's own sections —
// without the title and preamble written for people, or empty headings.
func ForContext(text string) string {
	d := Parse(text)
	var b strings.Builder
	for _, s := range sectionOrder {
		lines := trimBlank(d.Sections[s])
		if s == secEarlier {
			lines = earlierForContext(lines)
		}
		if s == secFilesEtc && len(lines) == 1 && strings.HasPrefix(lines[0], "- Last session: ") {
			// A session id alone says nothing of files, decisions or the
			// environment (the checkpoint beside names its session).
			continue
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "### %s\n\n%s\n\n", s, strings.Join(lines, "\n"))
		}
	}
	if len(d.Extra) > 0 {
		b.WriteString(strings.Join(d.Extra, "\n") + "\n")
	}
	return strings.TrimSpace(b.String())
}

// earlierForContext is the earlier lines of work as the model is given
// them: one line each, its goal and how many steps it left open (its
// steps, files and session are cx's, to know a return to it).
func earlierForContext(lines []string) []string {
	var out []string
	open := 0
	flush := func() {
		if n := len(out); n > 0 && open > 0 {
			out[n-1] += fmt.Sprintf(" (%d open %s)", open, map[bool]string{true: "step", false: "steps"}[open == 1])
		}
		open = 0
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "- ") {
			flush()
			out = append(out, l)
			continue
		}
		if _, ok := parseStep(l); ok && strings.HasPrefix(l, "  ") {
			open++
			continue
		}
		if !strings.HasPrefix(l, "  ") {
			out = append(out, l) // a person's line
		}
	}
	flush()
	return out
}
