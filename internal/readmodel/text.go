package readmodel

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"cx/internal/checkpoint"
	"cx/internal/cli"
	"cx/internal/rollout"
)

// The text each view prints without --json.

// WriteSessions is `cx ctl sessions`: a table, most recently seen first;
// without all, the sessions that never had a turn (a TUI opened and left)
// are counted, not listed.
//
// limit > 0 lists the limit most recent sessions (their subagents under
// them), and says how many more there are.
func WriteSessions(w io.Writer, out []SessionView, all bool, limit int) {
	if len(out) == 0 {
		fmt.Fprintln(w, "no sessions yet: cx records each Codex session run through it; `cx ctl import` archives the ones Codex already has")
		return
	}
	hidden := 0
	if !all {
		var shown []SessionView
		for _, s := range out {
			if s.TotalTurns == 0 && s.Status != "live" && !s.Forgotten {
				hidden++
				continue
			}
			shown = append(shown, s)
		}
		out = shown
		defer func() {
			if hidden > 0 {
				fmt.Fprintf(w, "(%s without a turn not listed; --all lists every session)\n", cli.Count(hidden, "session"))
			}
		}()
	}
	if len(out) == 0 {
		return
	}
	if n := len(out); limit > 0 {
		out = Latest(out, limit)
		if more := n - len(out); more > 0 {
			defer fmt.Fprintf(w, "(%d more %s not listed; --limit 0 lists them all)\n", more, map[bool]string{true: "session", false: "sessions"}[more == 1])
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tGEN\tCOMMITS\tTURNS\tEND\tLAST SEEN\tCWD")
	for _, s := range out {
		turns, cwd := fmt.Sprint(s.TotalTurns), s.Cwd
		if s.Forgotten {
			turns = "forgotten"
		}
		if cwd == "" {
			cwd = "-" // a session that never said where (no turn, no hook)
		}
		id := s.ID
		if s.Parent != "" {
			id = "  ↳ " + id // a subagent's thread, under its parent when listed
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", id, s.Status, s.Generation, s.Commits, turns, s.EndReason, s.LastSeen, cwd)
	}
	_ = tw.Flush()
}

// WriteText is `cx ctl status`.
func (out StatusView) WriteText(w io.Writer) {
	fmt.Fprintf(w, "ledger: %s\n", out.Ledger)
	dead := map[string]bool{}
	for _, r := range out.Runs {
		dead[r.ID] = r.State == "dead"
	}
	running := len(out.Runs)
	for _, d := range dead {
		if d {
			running--
		}
	}
	if running == len(out.Runs) {
		fmt.Fprintf(w, "runs: %d running\n", running)
	} else {
		fmt.Fprintf(w, "runs: %d running, %d dead, not yet swept (the next cx or `cx ctl sweep` ends their sessions as orphan)\n", running, len(out.Runs)-running)
	}
	for _, r := range out.Runs {
		state := ""
		switch {
		case r.State == "dead" && r.CodexAlive:
			state = "  — cx dead, its Codex still running"
		case r.State == "dead":
			state = "  — dead, not yet swept"
		}
		fmt.Fprintf(w, "  %s pid %d codex %d (%s) sinks %v since %s%s\n", r.ID, r.PID, r.CodexPID, r.Version, r.Sinks, r.StartedAt, state)
	}
	fmt.Fprintf(w, "live sessions: %d\n", len(out.LiveSessions))
	for _, s := range out.LiveSessions {
		note := ""
		if dead[s.RunID] {
			note = " (its run is dead, not yet swept)"
		}
		run := "run " + s.RunID
		if s.RunID == "" {
			run = "Codex started without cx"
		}
		fmt.Fprintf(w, "  %s g%d %s %s%s\n", s.ID, s.Generation, cli.Count(s.Turns, "turn"), run, note)
	}
	fmt.Fprintf(w, "pending jobs: %d\n", len(out.Pending))
	for _, j := range out.Pending {
		fmt.Fprintf(w, "  #%d %s %s g%d → %s (%s) %s\n", j.ID, j.Kind, j.SessionID, j.Generation, j.Target(), JobState(j), j.LastError)
	}
	fmt.Fprintf(w, "parked jobs: %d\n", len(out.Parked))
	for _, j := range out.Parked {
		fmt.Fprintf(w, "  #%d %s %s g%d → %s after %d attempts: %s (cx ctl retry %d)\n", j.ID, j.Kind, j.SessionID, j.Generation, j.Target(), j.Attempts, j.LastError, j.ID)
	}
}

// archivedTurn is what show reads of an archived turn.
type archivedTurn struct {
	User    string        `json:"user"`
	Trigger string        `json:"trigger"`
	Goal    *rollout.Goal `json:"goal"`
}

// WriteText is `cx ctl show`.
func (out ShowView) WriteText(w io.Writer) {
	ss := out.Session
	runID := ss.RunID
	if runID == "" {
		runID = "none (Codex ran without cx)"
	}
	cwd := ss.Cwd
	if cwd == "" {
		cwd = "- (never said)"
	}
	turns := fmt.Sprintf("turns %d in this generation, %d in all; %d interrupted, %s, %s", ss.Turns, ss.TotalTurns, ss.Interrupted,
		cli.Count(ss.Compactions, "compaction"), cli.Count(ss.Placeholders, "unreadable line"))
	if ss.Forgotten {
		turns = "turns forgotten (cx ctl forget): the ledger keeps only that its generations were committed"
	}
	fmt.Fprintf(w, "session %s\n  status %s (generation %d, %d committed)  end reason %q\n  run %s  sinks %v\n  rollout %s\n  cwd %s\n  %s\n",
		ss.ID, ss.Status, ss.Generation, ss.Commits, ss.EndReason, runID, ss.Sinks, ss.TranscriptPath, cwd, turns)
	if ss.Parent != "" {
		fmt.Fprintf(w, "  subagent %s of %s\n", cmp.Or(ss.Agent, "(unnamed)"), ss.Parent)
	}
	if len(ss.Children) > 0 {
		fmt.Fprintf(w, "  subagents: %s\n", strings.Join(ss.Children, ", "))
	}
	for _, g := range out.Generations {
		fmt.Fprintf(w, "  g%d %s (%s) turns %d ended %s\n", g.Generation, g.Status, g.EndReason, g.Turns, g.EndedAt)
	}
	for _, j := range out.Jobs {
		line := fmt.Sprintf("  job #%d %s g%d → %s: %s", j.ID, j.Kind, j.Generation, j.Target(), JobState(j))
		if j.LastError != "" {
			line += " " + j.LastError
		}
		fmt.Fprintln(w, line)
	}
	for _, ar := range out.Archives {
		var turns []archivedTurn
		_ = json.Unmarshal(ar.Turns, &turns)
		fmt.Fprintf(w, "  archive g%d: %s (stored %s)\n", ar.Generation, cli.Count(len(turns), "turn"), ar.StoredAt)
		writeTurnLines(w, turns)
	}
	if n := len(out.Archives); n > 0 && len(out.Archives[n-1].Checkpoint) > 0 {
		var cp checkpoint.Checkpoint
		if json.Unmarshal(out.Archives[n-1].Checkpoint, &cp) == nil {
			fmt.Fprintf(w, "\ncheckpoint (generation %d):\n%s", out.Archives[n-1].Generation, checkpoint.View(cp, checkpoint.DefaultViewCaps, nil))
		}
	}
}

// JobState is a job's state and, if any, how many of its attempts failed
// (a job done at the first try has none).
func JobState(j JobView) string {
	if j.Attempts == 0 {
		return j.State
	}
	return fmt.Sprintf("%s, %d failed attempt(s)", j.State, j.Attempts)
}

// LeaseHolder names a lease's owner ("pid:<pid>:<nanos>") as a person
// reads it: the process.
func LeaseHolder(owner string) string {
	if f := strings.Split(owner, ":"); len(f) == 3 && f[0] == "pid" {
		return "pid " + f[1]
	}
	return owner
}

// WriteText is `cx ctl commit`: whether a live generation was ended (by
// hand: manual), and the session's status now.
func (out CommitView) WriteText(w io.Writer) {
	s := out.Session
	if out.Ended {
		fmt.Fprintf(w, "%s: generation %d ended (%s), status %s\n", s.ID, s.Generation, cmp.Or(out.Reason, "manual"), s.Status)
	} else {
		fmt.Fprintf(w, "%s: nothing live to end (status %s, generation %d)\n", s.ID, s.Status, s.Generation)
	}
}

// writeTurnLines lists an archive's turns, a line each: a user's prompt
// after "›"; the turns Codex's goal ran on its own (no prompt) as one line
// that names the goal and how many there were.
func writeTurnLines(w io.Writer, turns []archivedTurn) {
	objective := ""
	for i := 0; i < len(turns); i++ {
		t := turns[i]
		if t.Goal != nil && t.Goal.Objective != "" {
			objective = t.Goal.Objective
		}
		switch t.Trigger {
		case rollout.TriggerGoal:
			n := 1
			for i+1 < len(turns) && turns[i+1].Trigger == rollout.TriggerGoal {
				i++
				n++
				if g := turns[i].Goal; g != nil && g.Objective != "" {
					objective = g.Objective
				}
			}
			line := "Codex's goal"
			if objective != "" {
				line += ": " + rollout.OneLine(objective, 101)
			}
			fmt.Fprintf(w, "    ⟳ %s (%s on its own)\n", line, cli.Count(n, "turn"))
		default:
			fmt.Fprintf(w, "    › %s\n", rollout.OneLine(t.User, 101))
		}
	}
}
