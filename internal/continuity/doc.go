package continuity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cx/internal/checkpoint"
	"cx/internal/fsutil"
	"cx/internal/redact"
	"cx/internal/rollout"
)

// Section names, in the order they are written.
const (
	secGoal       = "Goal"
	secWorking    = "Confirmed working"
	secFailed     = "Tried and failed"
	secNotTried   = "Not yet tried"
	secNext       = "Incomplete / next"
	secFilesEtc   = "Files, decisions, environment"
	secEarlier    = "Earlier, unfinished"
	secNotes      = "Notes"
	maxListLength = 20
)

var sectionOrder = []string{secGoal, secWorking, secFailed, secNotTried, secNext, secFilesEtc, secEarlier, secNotes}

// Doc is a continuity file: a title, known sections (lines as written) and
// anything else a person added, kept verbatim.
type Doc struct {
	Title    string
	Preamble []string
	Sections map[string][]string
	Extra    []string // unknown sections, with their headings
}

// Parse reads a continuity Markdown file.
func Parse(text string) Doc {
	d := Doc{Sections: map[string][]string{}}
	cur := ""
	inExtra := false
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# ") && d.Title == "" && cur == "" && !inExtra:
			d.Title = strings.TrimPrefix(line, "# ")
			continue
		case strings.HasPrefix(line, "## "):
			name := canonical(strings.TrimSpace(strings.TrimPrefix(line, "## ")))
			if name != "" {
				cur, inExtra = name, false
				if _, ok := d.Sections[name]; !ok {
					d.Sections[name] = nil
				}
				continue
			}
			cur, inExtra = "", true
		}
		switch {
		case inExtra:
			d.Extra = append(d.Extra, line)
		case cur != "":
			d.Sections[cur] = append(d.Sections[cur], line)
		default:
			d.Preamble = append(d.Preamble, line)
		}
	}
	for k, v := range d.Sections {
		d.Sections[k] = trimBlank(v)
	}
	d.Preamble, d.Extra = trimBlank(d.Preamble), trimBlank(d.Extra)
	return d
}

func canonical(name string) string {
	l := strings.ToLower(name)
	for _, s := range sectionOrder {
		if strings.ToLower(s) == l {
			return s
		}
	}
	switch {
	case strings.HasPrefix(l, "incomplete"), strings.HasPrefix(l, "next"):
		return secNext
	case strings.HasPrefix(l, "files"):
		return secFilesEtc
	case strings.HasPrefix(l, "earlier"):
		return secEarlier
	}
	return ""
}

func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// render writes the document back; a section never touched is written empty.
func (d Doc) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", d.Title)
	if len(d.Preamble) > 0 {
		b.WriteString("\n" + strings.Join(d.Preamble, "\n") + "\n")
	}
	for _, s := range sectionOrder {
		lines, ok := d.Sections[s]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n", s)
		if len(lines) > 0 {
			b.WriteString("\n" + strings.Join(lines, "\n") + "\n")
		}
	}
	if len(d.Extra) > 0 {
		b.WriteString("\n" + strings.Join(d.Extra, "\n") + "\n")
	}
	return b.String()
}

// Evidence is what one session generation contributes.
type Evidence struct {
	SessionID string
	EndReason string
	Turns     []rollout.Turn        // the generation's turns
	Plan      []checkpoint.PlanStep // the plan as of the generation's end
	// Goal is Codex's own thread goal as of the generation's end (nil:
	// the thread has none; Cleared: the user cleared it).
	Goal *rollout.Goal
	// Ordinary reports whether a word (a term of internal/words) is one
	// most of the project's archived sessions hold: no topic of its own
	// (nil: none is).
	Ordinary func(term string) bool
	// Parent is set for a subagent's thread: its commands count for the
	// project, its files for the worktree, but it is never the goal, the
	// plan, the notes or the last session of its own.
	Parent string
}

// command bullets are cx's own: "- `cmd`" and "- `cmd` (exit N)".
func cmdBullet(cmd string, code *int) string {
	if code == nil || *code == 0 {
		return "- `" + cmd + "`"
	}
	return fmt.Sprintf("- `%s` (exit %d)", cmd, *code)
}

func cmdOf(line string) (string, bool) {
	if !strings.HasPrefix(line, "- `") {
		return "", false
	}
	rest := line[3:]
	i := strings.Index(rest, "`")
	if i < 0 {
		return "", false
	}
	return rest[:i], true
}

// removeCmd drops cx's bullets for cmd from a section.
func removeCmd(lines []string, cmd string) []string {
	out := lines[:0:0]
	for _, l := range lines {
		if c, ok := cmdOf(l); ok && c == cmd {
			continue
		}
		out = append(out, l)
	}
	return out
}

// capList keeps the last n of cx's bullets (a person's lines are kept).
func capList(lines []string, n int) []string {
	count := 0
	for _, l := range lines {
		if _, ok := cmdOf(l); ok {
			count++
		}
	}
	out := lines[:0:0]
	for _, l := range lines {
		if _, ok := cmdOf(l); ok && count > n {
			count--
			continue
		}
		out = append(out, l)
	}
	return out
}

// applyProject merges a generation's command outcomes into the project
// layer: a command's latest outcome decides its list.
func (d *Doc) applyProject(ev Evidence) {
	for _, s := range []string{secWorking, secFailed} {
		if _, ok := d.Sections[s]; !ok {
			d.Sections[s] = nil
		}
	}
	for _, t := range ev.Turns {
		for _, tc := range t.Tools {
			if tc.Command == "" || tc.ExitCode == nil {
				continue
			}
			cmd := firstLine(tc.Command)
			d.Sections[secWorking] = removeCmd(d.Sections[secWorking], cmd)
			d.Sections[secFailed] = removeCmd(d.Sections[secFailed], cmd)
			sec := secWorking
			if *tc.ExitCode != 0 {
				sec = secFailed
			}
			d.Sections[sec] = append(d.Sections[sec], cmdBullet(cmd, tc.ExitCode))
		}
	}
	d.Sections[secWorking] = capList(d.Sections[secWorking], maxListLength)
	d.Sections[secFailed] = capList(d.Sections[secFailed], maxListLength)
}

// applyWorktree merges the line of work, the notes and the files into the
// worktree layer (line.go). A vague request ("continue") never replaces the
// goal, and without a plan nothing is invented as a next step.
func (d *Doc) applyWorktree(ev Evidence) {
	for _, s := range []string{secGoal, secNotTried, secNext, secFilesEtc} {
		if _, ok := d.Sections[s]; !ok {
			d.Sections[s] = nil
		}
	}
	if ev.Parent != "" {
		// A subagent's files are its parent's line's; it is never a line.
		ls := readLines(*d)
		for _, t := range ev.Turns {
			ls.addFiles(t)
		}
		ls.write(d)
		return
	}
	d.applyLines(ev)
	for _, t := range ev.Turns {
		if req := checkpoint.Classify(t.User); req.Kind == checkpoint.KindNote {
			bullet := "- " + rollout.OneLine(redact.String(req.Text), maxGoal)
			d.Sections[secNotes] = append(slices.DeleteFunc(d.Sections[secNotes], func(l string) bool { return l == bullet }), bullet)
		}
	}
	if len(d.Sections[secNotes]) > 0 {
		d.Sections[secNotes] = capList(d.Sections[secNotes], maxListLength)
	}
}

// staleNote follows a step a plan left open after commands that may have
// done it.
const staleNote = " (open in the plan, not updated after the commands that followed it)"

// commandsAfterPlan reports whether a command ran after the last plan
// update in turns (or with no update in them at all).
func commandsAfterPlan(turns []rollout.Turn) bool {
	after := false
	for _, t := range turns {
		for _, tc := range t.Tools {
			switch {
			case tc.Name == "update_plan":
				after = false
			case tc.Command != "":
				after = true
			}
		}
	}
	return after
}

func firstLine(s string) string { return rollout.OneLine(checkpoint.FirstLine(s), 200) }

// Store is where continuity files live: CX_HOME/projects/<project id>/.
type Store struct{ Home string }

// paths returns the project and worktree files of an identity.
func (s Store) paths(id Identity) (project, worktree string) {
	base := filepath.Join(s.Home, "projects", id.ProjectID)
	return filepath.Join(base, "continuity.md"), filepath.Join(base, "worktrees", id.WorktreeID, "continuity.md")
}

// Read returns the project and worktree documents ("" when absent).
func (s Store) Read(id Identity) (project, worktree string) {
	p, w := s.paths(id)
	pb, _ := os.ReadFile(p)
	wb, _ := os.ReadFile(w)
	return string(pb), string(wb)
}

// Update merges one generation's evidence into both layers, under a lock
// and with atomic writes. It returns the new worktree document.
func (s Store) Update(id Identity, ev Evidence) (string, string, error) {
	p, w := s.paths(id)
	if err := os.MkdirAll(filepath.Dir(w), 0o700); err != nil {
		return "", "", fmt.Errorf("continuity dir: %w", err)
	}
	unlock, err := fsutil.Lock(filepath.Join(filepath.Dir(p), ".lock"), true)
	if err != nil {
		return "", "", fmt.Errorf("continuity: %w", err)
	}
	defer unlock()

	pd, err := readDoc(p, fmt.Sprintf("Continuity — project %s", id.Name), "Shared by every worktree of "+redact.String(id.Project)+". Edit freely; cx merges each session's evidence in.")
	if err != nil {
		return "", "", err
	}
	wd, err := readDoc(w, fmt.Sprintf("Continuity — worktree %s", id.Worktree), "This checkout's goal and next steps. Edit freely; cx merges each session's evidence in.")
	if err != nil {
		return "", "", err
	}
	pd.applyProject(ev)
	wd.applyWorktree(ev)
	if ev.SessionID != "" && ev.Parent == "" {
		wd.Sections[secFilesEtc] = setLine(wd.Sections[secFilesEtc], "- Last session: ", fmt.Sprintf("- Last session: `%s` (ended: %s)", ev.SessionID, ev.EndReason))
	}
	pt, wt := pd.render(), wd.render()
	if err := fsutil.WriteAtomic(p, []byte(pt), 0o600); err != nil {
		return "", "", err
	}
	if err := fsutil.WriteAtomic(w, []byte(wt), 0o600); err != nil {
		return "", "", err
	}
	return pt, wt, nil
}

func setLine(lines []string, prefix, line string) []string {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = line
			return lines
		}
	}
	return append(lines, line)
}

func readDoc(path, title, preamble string) (Doc, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Doc{Title: title, Preamble: []string{preamble}, Sections: map[string][]string{}}, nil
	}
	if err != nil {
		return Doc{}, fmt.Errorf("read continuity %s: %w", path, err)
	}
	d := Parse(string(data))
	if d.Title == "" {
		d.Title = title
	}
	return d, nil
}
