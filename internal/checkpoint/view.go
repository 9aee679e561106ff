package checkpoint

import (
	"cmp"
	"crypto/sha256"
	"cx/internal/cli"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ViewCaps bound the text view.
type ViewCaps struct {
	MaxOpenPlanSteps   int
	MaxDonePlanSteps   int
	MaxRecentArtifacts int
	MaxValueChars      int
}

// DefaultViewCaps are the v1 view caps.
var DefaultViewCaps = ViewCaps{MaxOpenPlanSteps: 12, MaxDonePlanSteps: 6, MaxRecentArtifacts: 12, MaxValueChars: 160}

// Disk answers whether a file still has the content a checkpoint recorded:
// its current hash ("sha256:…"), or ok=false when it cannot be read.
type Disk func(path string) (hash string, ok bool)

// OSDisk reads files relative to dir.
func OSDisk(dir string) Disk {
	return func(p string) (string, bool) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:]), true
	}
}

// View renders the checkpoint as stable text: same checkpoint, caps and
// disk answers, same bytes. With a nil disk nothing is marked SUSPECT (the
// pure view); with one, each file whose recorded hash no longer matches, or
// that cannot be read, is marked SUSPECT.
func View(cp Checkpoint, caps ViewCaps, disk Disk) string {
	return ViewOmitting(cp, caps, disk, Omit{})
}

// Omit is what a view need not say because what it is given beside says
// it: the task (when it is the goal shown beside), the notes, artifacts by
// their URI (a file still marked SUSPECT is said all the same: that is
// news).
type Omit struct {
	Task  bool
	Goal  bool // Codex's goal is shown beside
	Plan  bool // the plan is shown beside (one place, one set of markers)
	Notes map[string]bool
	URIs  map[string]bool
}

// ViewOmitting is View without what o names.
// A view with nothing left to say beside what it omits is "".
func ViewOmitting(cp Checkpoint, caps ViewCaps, disk Disk, o Omit) string {
	var b strings.Builder
	goal := cp.Goal != nil && !cp.Goal.Cleared()
	if goal && !o.Goal {
		fmt.Fprintf(&b, "\n[GOAL]\n- %s (%s)\n", bound(cp.Goal.Objective, caps.MaxValueChars), cmp.Or(cp.Goal.Status, "status unknown"))
	}
	switch {
	case cp.Task == nil && !o.Task && !goal:
		b.WriteString("\n[TASK]\n- (none)\n")
	case cp.Task != nil && cp.Task.Talk && goal:
		// Talk beside Codex's goal: the goal says what the work is.
	case cp.Task != nil && !o.Task:
		fmt.Fprintf(&b, "\n[TASK]\n- %s\n", FirstLine(cp.Task.Text))
	}
	if len(cp.Plan.Steps) > 0 && !o.Plan {
		b.WriteString("\n[PLAN]\n")
		open, done := 0, 0
		for _, s := range cp.Plan.Steps {
			if cp.Plan.Done[s.ID] {
				if done < caps.MaxDonePlanSteps {
					fmt.Fprintf(&b, "- [x] %s\n", bound(s.Text, caps.MaxValueChars))
				}
				done++
				continue
			}
			if open < caps.MaxOpenPlanSteps {
				mark := " "
				if s.Status == "in_progress" {
					mark = ">"
				}
				fmt.Fprintf(&b, "- [%s] %s\n", mark, bound(s.Text, caps.MaxValueChars))
			}
			open++
		}
		if hidden := max(0, open-caps.MaxOpenPlanSteps) + max(0, done-caps.MaxDonePlanSteps); hidden > 0 {
			fmt.Fprintf(&b, "- … %d more steps\n", hidden)
		}
	}
	var notes []string
	for i := 1; i <= len(cp.Facts); i++ {
		if f, ok := cp.Facts[fmt.Sprintf("note:%d", i)]; ok && !o.Notes[f.Value] {
			notes = append(notes, fmt.Sprintf("- %s\n", bound(f.Value, caps.MaxValueChars)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n[NOTES]\n" + strings.Join(notes, ""))
	}
	var recent []string
	for i, k := range cp.RecentArtifacts {
		if i >= caps.MaxRecentArtifacts {
			recent = append(recent, fmt.Sprintf("- … %d more\n", len(cp.RecentArtifacts)-i))
			break
		}
		a := cp.Artifacts[k]
		switch a.Kind {
		case "file":
			if s := suspect(a, disk); s != "" || !o.URIs[a.URI] {
				recent = append(recent, fmt.Sprintf("- file: %s (%s%s)%s\n", bound(a.URI, caps.MaxValueChars), a.Op, shortHash(a.Hash), s))
			}
		case "command":
			if !o.URIs[a.URI] {
				recent = append(recent, fmt.Sprintf("- cmd: %s%s\n", bound(a.URI, caps.MaxValueChars), exitNote(a.ExitCode)))
			}
		}
	}
	if len(recent) > 0 {
		b.WriteString("\n[RECENT_ARTIFACTS]\n" + strings.Join(recent, ""))
	}
	if b.Len() == 0 {
		return "" // no header with nothing under it
	}
	return fmt.Sprintf("[SESSION_CHECKPOINT v%d] session %s (%s)\n", cp.SchemaVersion, cp.SessionID, cli.Count(cp.Stats.Turns, "turn")) + b.String()
}

func shortHash(h string) string {
	if h == "" {
		return ""
	}
	if len(h) > 19 {
		h = h[:19]
	}
	return ", hash=" + h
}

func exitNote(code *int) string {
	switch {
	case code == nil:
		return ""
	case *code == 0:
		return " (exit 0)"
	default:
		return fmt.Sprintf(" (exit %d, FAILED)", *code)
	}
}

func suspect(a Artifact, disk Disk) string {
	if disk == nil || a.Op == "delete" {
		return ""
	}
	cur, ok := disk(a.URI)
	switch {
	case !ok:
		return " SUSPECT: cannot be read now"
	case a.Hash != "" && cur != a.Hash:
		return " SUSPECT: changed on disk since"
	}
	return ""
}
