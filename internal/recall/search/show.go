// One archived turn and one archived session, shown whole but bounded
// (`cx ctl show`, the MCP server's session and turn tools).

package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/redact"
	"cx/internal/rollout"
)

// ErrNotFound is an unknown session or turn.
var ErrNotFound = errors.New("not in the archive")

// maxShown bounds one shown text (a prompt, a reply, a tool's output), so
// one turn stays readable and a tool result stays within what a model
// takes.
const maxShown = 8000

// TurnView is one archived turn, whole but bounded.
type TurnView struct {
	Session    string             `json:"session"`
	Generation int                `json:"generation"`
	Turn       int                `json:"turn"`
	Of         int                `json:"of"`
	Time       string             `json:"time"`
	Cwd        string             `json:"cwd"`
	Prompt     string             `json:"prompt"`
	Replies    []string           `json:"replies,omitempty"`
	Tools      []ToolView         `json:"tools,omitempty"`
	Files      []rollout.FileEdit `json:"files,omitempty"`
	Aborted    bool               `json:"aborted,omitempty"`
	// Trigger is why a turn with no prompt ran (rollout.TriggerGoal:
	// Codex's goal; TriggerAgent: another agent's message).
	Trigger string `json:"trigger,omitempty"`
	// Goal is the objective of the Codex goal a goal's turn pursued.
	Goal string `json:"goal,omitempty"`
}

// ToolView is one tool call of a shown turn.
type ToolView struct {
	Name     string `json:"name"`
	Command  string `json:"command,omitempty"`
	Input    string `json:"input,omitempty"`
	Summary  string `json:"summary,omitempty"` // what a tool (not a shell) did, as a person says it
	ExitCode *int   `json:"exit_code,omitempty"`
	Output   string `json:"output,omitempty"`
}

// Turn returns turn n (1-based, across generations) of an archived session:
// found through the index, read from the ledger's captured turn by key (the
// archive's copy only when that is gone), so its cost does not grow with
// the session.
func (a *Archive) Turn(ctx context.Context, sessionID string, n int) (TurnView, error) {
	rt, ok, total, err := a.db.RecallTurnAt(ctx, sessionID, n)
	switch {
	case err != nil:
		return TurnView{}, err
	case total == 0:
		return TurnView{}, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	case !ok:
		return TurnView{}, fmt.Errorf("session %s has no turn %d (it has %d): %w", sessionID, n, total, ErrNotFound)
	}
	t, err := a.storedTurn(ctx, sessionID, rt)
	if err != nil {
		return TurnView{}, err
	}
	v := TurnView{Session: sessionID, Generation: rt.Generation, Turn: n, Of: total, Time: rt.At.Format(time.RFC3339), Cwd: rt.Cwd,
		Prompt: shown(t.User), Files: t.Files, Aborted: t.Aborted}
	for _, r := range t.Assistant {
		v.Replies = append(v.Replies, shown(r))
	}
	v.Trigger = t.Trigger
	if t.Trigger == rollout.TriggerGoal {
		v.Goal = a.goalOf(ctx, sessionID, t)
	}
	for _, c := range t.Tools {
		tv := ToolView{Name: c.Name, Command: shown(c.Command), Input: shown(rollout.OneLine(c.Input, 400)), ExitCode: c.ExitCode, Output: shown(c.Output)}
		if c.Command == "" {
			tv.Summary = shown(rollout.ToolLine(c))
		}
		v.Tools = append(v.Tools, tv)
	}
	return v, nil
}

// goalOf is the objective of the Codex goal a goal's turn pursued: the
// turn's own, else the session's as its latest checkpoint has it.
func (a *Archive) goalOf(ctx context.Context, sessionID string, t rollout.Turn) string {
	if t.Goal != nil && t.Goal.Objective != "" {
		return shown(t.Goal.Objective)
	}
	var cp struct {
		Goal *rollout.Goal `json:"goal"`
	}
	if data, err := a.db.LatestCheckpoint(ctx, sessionID); err == nil && json.Unmarshal([]byte(data), &cp) == nil && cp.Goal != nil {
		return shown(cp.Goal.Objective)
	}
	return ""
}

// storedTurn reads an indexed turn whole.
func (a *Archive) storedTurn(ctx context.Context, sessionID string, rt ledger.RecallTurn) (rollout.Turn, error) {
	var t rollout.Turn
	data, err := a.db.StoredTurnData(ctx, sessionID, rt.Key)
	if err != nil {
		return t, err
	}
	if data != "" {
		return t, json.Unmarshal([]byte(data), &t)
	}
	archives, err := a.db.Archives(ctx, sessionID)
	if err != nil {
		return t, err
	}
	for _, ar := range archives {
		if ar.Generation != rt.Generation {
			continue
		}
		var turns []rollout.Turn
		if err := json.Unmarshal([]byte(ar.Turns), &turns); err != nil {
			return t, fmt.Errorf("archive %s g%d: %w", sessionID, ar.Generation, err)
		}
		for _, at := range turns {
			if at.Key == rt.Key {
				return at, nil
			}
		}
	}
	return t, fmt.Errorf("session %s turn %d: %w", sessionID, rt.Turn, ErrNotFound)
}

// shown is a text as a view shows it: redacted (again) and bounded.
func shown(s string) string {
	s = redact.String(s)
	if len(s) <= maxShown {
		return s
	}
	cut := strings.ToValidUTF8(s[:maxShown], "")
	return cut + fmt.Sprintf("\n… (%d more bytes)", len(s)-len(cut))
}

// Text renders the turn for a terminal or a model.
func (v TurnView) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s turn %d of %d (generation %d) at %s in %s\n", v.Session, v.Turn, v.Of, v.Generation, v.Time, v.Cwd)
	switch {
	case v.Trigger == rollout.TriggerGoal:
		// No prompt: Codex's goal ran this turn on its own.
		fmt.Fprintf(&b, "\n⟳ a turn Codex's goal ran on its own%s\n", map[bool]string{true: ": " + v.Goal, false: ""}[v.Goal != ""])
	default:
		fmt.Fprintf(&b, "\n› prompt\n%s\n", v.Prompt)
	}
	for _, t := range v.Tools {
		if t.Command != "" {
			fmt.Fprintf(&b, "\n$ %s", t.Command)
		} else {
			fmt.Fprintf(&b, "\n%s%s", recall.ToolMark, t.Summary) // what a tool did, never its JSON
		}
		if t.ExitCode != nil {
			fmt.Fprintf(&b, "  (exit %d)", *t.ExitCode)
		}
		b.WriteByte('\n')
		if t.Output != "" {
			b.WriteString(strings.TrimRight(t.Output, "\n") + "\n")
		}
	}
	for _, r := range v.Replies {
		fmt.Fprintf(&b, "\n‹ reply\n%s\n", r)
	}
	if len(v.Files) > 0 {
		b.WriteString("\nfiles:\n")
		for _, f := range v.Files {
			fmt.Fprintf(&b, "  %s %s\n", f.Op, f.Path)
		}
	}
	if v.Aborted {
		b.WriteString("\n(the turn was interrupted)\n")
	}
	return b.String()
}

// SessionView is an archived session: its last checkpoint and its turns.
type SessionView struct {
	Session    string     `json:"session"`
	Cwd        string     `json:"cwd"`
	Checkpoint string     `json:"checkpoint"`
	TotalTurns int        `json:"total_turns"`
	Turns      []TurnLine `json:"turns"` // the latest maxTurnLines
}

// TurnLine is one turn of a session's list.
type TurnLine struct {
	Turn   int    `json:"turn"`
	Time   string `json:"time"`
	Prompt string `json:"prompt"`
}

// maxTurnLines bounds a session's turn list (its latest turns are listed).
const maxTurnLines = 200

// Session returns an archived session's view: its latest checkpoint and
// its latest turns, read from the index (not from the archives' turns).
func (a *Archive) Session(ctx context.Context, sessionID string) (SessionView, error) {
	latest, err := a.db.LatestRecallTurns(ctx, sessionID, maxTurnLines)
	if err != nil {
		return SessionView{}, err
	}
	if len(latest) == 0 {
		return SessionView{}, fmt.Errorf("session %s: %w", sessionID, ErrNotFound)
	}
	v := SessionView{Session: sessionID, TotalTurns: latest[len(latest)-1].Turn}
	cpJSON, err := a.db.LatestCheckpoint(ctx, sessionID)
	if err != nil {
		return SessionView{}, err
	}
	var cp checkpoint.Checkpoint
	if cpJSON != "" && json.Unmarshal([]byte(cpJSON), &cp) == nil {
		v.Checkpoint = redact.String(checkpoint.View(cp, checkpoint.DefaultViewCaps, nil))
		v.Cwd = cp.Cwd
	}
	for _, rt := range latest {
		if v.Cwd == "" {
			v.Cwd = rt.Cwd
		}
		v.Turns = append(v.Turns, TurnLine{Turn: rt.Turn, Time: rt.At.Format(time.RFC3339), Prompt: rollout.OneLine(rt.Prompt, 120)})
	}
	return v, nil
}

// Text renders the session for a terminal or a model.
func (v SessionView) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s in %s, %d turns\n", v.Session, v.Cwd, v.TotalTurns)
	if v.Checkpoint != "" {
		b.WriteString("\n" + strings.TrimRight(v.Checkpoint, "\n") + "\n")
	}
	if len(v.Turns) < v.TotalTurns {
		fmt.Fprintf(&b, "\nthe latest %d turns:\n", len(v.Turns))
	} else {
		b.WriteString("\nturns:\n")
	}
	for _, t := range v.Turns {
		fmt.Fprintf(&b, "  %d  %s  %s\n", t.Turn, t.Time, t.Prompt)
	}
	return b.String()
}

// ResolveSession is the ledger's: id, or the one session id starts.
func (ar *Archive) ResolveSession(ctx context.Context, id string) (string, error) {
	return ar.db.ResolveSession(ctx, id)
}
