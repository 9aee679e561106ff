package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"cx/internal/checkpoint"
	"cx/internal/cli"
	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/rollout"
)

// Request names the session a block is for.
type Request struct {
	Home           string // CX_HOME (continuity files)
	Ledger         Ledger // archives of earlier sessions (nil: none)
	Source         string // startup | clear | fork | resume | compact | fallback
	SessionID      string
	Cwd            string
	TranscriptPath string
	MaxChars       int
	// Checkpoint is the session's own checkpoint and Present the cx
	// sections its history holds, both from the ledger (resume, compact);
	// when Checkpoint is nil they are read from TranscriptPath (a session
	// captured before the ledger kept checkpoints).
	Checkpoint *checkpoint.Checkpoint
	Present    map[string]bool
	// RemoteOverview, when set, reads a memory backend's archive overview
	// of the session (OpenViking's latest_archive_overview) for a resume.
	RemoteOverview func(ctx context.Context, sessionID string) string
}

// Ledger is the read-only view of cx's ledger inject works from.
type Ledger interface {
	RecentSessions(ctx context.Context, n int) ([]ledger.Session, error)
	Archives(ctx context.Context, sessionID string) ([]ledger.Archive, error)
	Generations(ctx context.Context, sessionID string) ([]ledger.Generation, error)
}

// ForSessionStart builds the SessionStart block: continuity, and the
// checkpoint of this session (resume, compact) or of the project's latest
// archived session (startup, clear, fork); on resume, only what the
// session's history does not hold yet, plus the archive overview.
func ForSessionStart(ctx context.Context, r Request) string {
	block, _ := ForSessionStartQuoting(ctx, r)
	return block
}

// ForSessionStartQuoting is ForSessionStart, and the archived turns the
// block quotes.
func ForSessionStartQuoting(ctx context.Context, r Request) (string, []Quote) {
	in := Input{Source: r.Source, MaxChars: r.MaxChars}
	id := continuity.Store{Home: r.Home}.Identify(r.Cwd)
	if r.Source != "compact" {
		project, worktree := continuity.Store{Home: r.Home}.Read(id)
		in.ProjectContinuity = continuity.ForContext(project)
		// The worktree's goal and next steps are the last session's to end
		// here — with threads side by side in one checkout, perhaps another
		// thread's. A resumed thread has its own in its checkpoint.
		if r.Source != "resume" {
			in.WorktreeContinuity = continuity.ForContext(worktree)
		}
	}
	disk := checkpoint.OSDisk(r.Cwd)
	switch r.Source {
	case "resume", "compact":
		cp, present := r.own()
		if cp != nil {
			in.Checkpoint, in.CheckpointOf = cp, "this session"
		}
		if r.Source == "resume" {
			in.Present = present
			in.Overview = overview(ctx, r.Ledger, r.SessionID)
			if r.RemoteOverview != nil {
				if o := r.RemoteOverview(ctx, r.SessionID); o != "" {
					in.Overview = strings.TrimSpace(in.Overview + "\n\n" + o)
				}
			}
		}
	default:
		if cp, of := latestOfProject(ctx, r.Ledger, continuity.Store{Home: r.Home}, id, r.SessionID); cp != nil {
			in.Checkpoint, in.CheckpointOf = cp, of
		}
	}
	if in.Checkpoint != nil && in.Checkpoint.Cwd != "" {
		disk = checkpoint.OSDisk(in.Checkpoint.Cwd)
	}
	in.Disk = disk
	return buildQuoting(in)
}

// own is the session's own checkpoint and the sections its history holds:
// from the ledger, or read from the rollout when the ledger has none.
func (r Request) own() (*checkpoint.Checkpoint, map[string]bool) {
	if r.Checkpoint != nil {
		return r.Checkpoint, r.Present
	}
	if r.TranscriptPath == "" {
		return nil, map[string]bool{}
	}
	data, _ := rollout.ReadAll(r.TranscriptPath)
	if len(data) == 0 {
		return nil, map[string]bool{}
	}
	cp := checkpoint.FromRollout(data, checkpoint.DefaultCaps)
	return &cp, presentIn(data)
}

// ForCompaction is the fresh checkpoint of the session after a compaction.
func ForCompaction(r Request) string {
	cp, _ := r.own()
	if cp == nil {
		return ""
	}
	return build(Input{Source: "compact", Checkpoint: cp, CheckpointOf: "this session", Disk: checkpoint.OSDisk(cp.Cwd), MaxChars: r.MaxChars})
}

// latestOfProject is the checkpoint archived by the most recent other
// session of the same project.
func latestOfProject(ctx context.Context, db Ledger, store continuity.Store, id continuity.Identity, self string) (*checkpoint.Checkpoint, string) {
	if db == nil {
		return nil, ""
	}
	sessions, err := db.RecentSessions(ctx, 50)
	if err != nil {
		return nil, ""
	}
	projects := map[string]string{} // cwd → project id (Identify may run git)
	for _, s := range sessions {
		if s.ID == self || s.Cwd == "" {
			continue
		}
		pid, ok := projects[s.Cwd]
		if !ok {
			pid = store.Identify(s.Cwd).ProjectID
			projects[s.Cwd] = pid
		}
		if pid != id.ProjectID {
			continue
		}
		archives, err := db.Archives(ctx, s.ID)
		if err != nil || len(archives) == 0 {
			continue
		}
		var cp checkpoint.Checkpoint
		if json.Unmarshal([]byte(archives[len(archives)-1].Checkpoint), &cp) == nil && cp.Stats.Turns > 0 && cp.Parent == "" {
			// (A subagent's thread is its parent's child, never the latest
			// session of its own.)
			return &cp, "session " + s.ID
		}
	}
	return nil, ""
}

// overview summarises a session's archived generations (the local sink's
// archive overview): what was asked in each.
func overview(ctx context.Context, db Ledger, id string) string {
	if db == nil {
		return ""
	}
	archives, err := db.Archives(ctx, id)
	if err != nil || len(archives) == 0 {
		return ""
	}
	gens, _ := db.Generations(ctx, id)
	reason := map[int]string{}
	for _, g := range gens {
		reason[g.Generation] = g.EndReason
	}
	var b strings.Builder
	for _, a := range archives {
		var turns []struct {
			User string `json:"user"`
		}
		_ = json.Unmarshal([]byte(a.Turns), &turns)
		fmt.Fprintf(&b, "- generation %d (%s, ended: %s)\n", a.Generation, cli.Count(len(turns), "turn"), reason[a.Generation])
		for i, t := range turns {
			if i == 5 {
				fmt.Fprintf(&b, "  - … %d more\n", len(turns)-5)
				break
			}
			fmt.Fprintf(&b, "  - asked: %s\n", rollout.OneLine(t.User, 120))
		}
	}
	return b.String()
}
