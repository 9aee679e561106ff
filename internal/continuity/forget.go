package continuity

import (
	"cx/internal/checkpoint"
	"cx/internal/fsutil"
	"cx/internal/redact"
	"cx/internal/rollout"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Forgotten is what a session put into continuity documents, as its
// archive holds it: its prompts (their goals and notes), commands, files,
// plan steps and Codex goals.
type Forgotten struct {
	SessionID string
	Prompts   []string
	Commands  []string
	Files     []string
	PlanSteps []string
	Goals     []string // Codex's goal objectives
}

// Drop is the line filter of a forgotten session: it reports whether a
// document line came from it — a line naming the session; its goal, note,
// plan step, command or file bullet as Update wrote them (matched whole,
// at any length); or a line holding one of its prompts' goals or commands
// of some length. Headings stay.
func (f Forgotten) Drop() func(line string) bool {
	exact, cmds, files := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var needles []string
	if f.SessionID != "" {
		needles = append(needles, f.SessionID)
	}
	for _, p := range f.Prompts {
		req := checkpoint.Classify(p)
		for _, n := range []string{goalOf(p), firstLine(p), goalOf(req.Text), rollout.OneLine(redact.String(req.Text), maxGoal)} {
			if n == "" {
				continue
			}
			exact[n], exact["- "+n] = true, true
			if len([]rune(n)) >= 12 {
				needles = append(needles, n)
			}
		}
	}
	for _, c := range f.Commands {
		cmds[firstLine(c)] = true
		if c = rollout.OneLine(c, 200); len(c) >= 8 {
			needles = append(needles, c)
		}
	}
	for _, p := range f.Files {
		files[p] = true
	}
	for _, st := range f.PlanSteps {
		for _, mark := range []string{"- [ ] ", "- [>] ", "- [?] "} {
			exact[mark+st], exact[mark+st+staleNote] = true, true
		}
	}
	for _, g := range f.Goals {
		line := rollout.OneLine(redact.String(g), maxGoal)
		exact[line] = true
		needles = append(needles, line+" (Codex goal")
	}
	return func(l string) bool {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			return false
		}
		if exact[strings.TrimSpace(l)] {
			return true
		}
		if c, ok := cmdOf(strings.TrimSpace(l)); ok && (cmds[c] || files[c]) {
			return true
		}
		for _, n := range needles {
			if strings.Contains(l, n) {
				return true
			}
		}
		return false
	}
}

// ForgetIn is text (a continuity document, or a stored copy of one)
// without the lines drop names, and how many went.
func ForgetIn(text string, drop func(string) bool) (string, int) {
	var kept []string
	removed := 0
	for _, l := range strings.Split(text, "\n") {
		if drop(l) {
			removed++
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n"), removed
}

// Forget takes a forgotten session out of both layers' files (every line
// f.Drop names; a person's edits elsewhere stay). It returns how many
// lines went.
func (s Store) Forget(id Identity, f Forgotten) (int, error) {
	p, w := s.paths(id)
	if _, err := os.Stat(filepath.Dir(p)); err != nil {
		return 0, nil // no continuity of this project
	}
	unlock, err := fsutil.Lock(filepath.Join(filepath.Dir(p), ".lock"), true)
	if err != nil {
		return 0, fmt.Errorf("continuity: %w", err)
	}
	defer unlock()
	drop := f.Drop()
	removed := 0
	for _, path := range []string{p, w} {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("read continuity %s: %w", path, err)
		}
		text, n := ForgetIn(string(data), drop)
		removed += n
		if n == 0 {
			continue
		}
		if err := fsutil.WriteAtomic(path, []byte(text), 0o600); err != nil {
			return removed, err
		}
	}
	return removed, nil
}
