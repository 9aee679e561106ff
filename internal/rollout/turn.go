package rollout

import (
	"slices"
)

// SessionMeta is the file's identity: its first session_meta.
type SessionMeta struct {
	ID           string `json:"id"`
	Cwd          string `json:"cwd"`
	Originator   string `json:"originator"`
	CLIVersion   string `json:"cli_version"`
	Source       string `json:"-"`
	ForkedFromID string `json:"forked_from_id"`
	Timestamp    string `json:"timestamp"`
	// A subagent's thread (multi_agent, 0.169+) names the thread that
	// spawned it: parent_thread_id (0.171 writes it at the top level too;
	// source.subagent.thread_spawn holds it on both) and its own name.
	ParentID     string `json:"parent_thread_id,omitempty"`
	ThreadSource string `json:"thread_source,omitempty"` // "user" | "subagent" | …
	Agent        string `json:"agent_nickname,omitempty"`
	AgentRole    string `json:"agent_role,omitempty"`
	// HistoryStart is where a forked subagent's own history begins: the
	// records before this ordinal repeat its parent's (0.171).
	HistoryStart int64 `json:"subagent_history_start_ordinal,omitempty"`
}

// Subagent reports whether the thread is a subagent's: its parent's
// child, never a line of work of its own.
func (m SessionMeta) Subagent() bool { return m.ParentID != "" || m.ThreadSource == "subagent" }

// Goal is Codex's own thread goal (the goals feature: create_goal,
// update_goal, /goal), as the rollout last showed it.
type Goal struct {
	Objective string `json:"objective"`
	Status    string `json:"status,omitempty"` // active | paused | blocked | usage_limited | budget_limited | complete; or GoalCleared
}

// GoalCleared is the status cx gives a goal the user cleared (Codex keeps
// no goal then; the objective is the one cleared, when known).
const GoalCleared = "cleared"

// Cleared reports whether the goal was cleared.
func (g *Goal) Cleared() bool { return g != nil && g.Status == GoalCleared }

// Turn is one user request and what the agent did for it.
type Turn struct {
	Key       string     `json:"key"`    // Codex's turn id ("id/2" for the task's second message), or "offset:N"
	Offset    int64      `json:"offset"` // where the turn's first record starts
	Time      string     `json:"time"`
	User      string     `json:"user"`
	Assistant []string   `json:"assistant,omitempty"`
	Tools     []ToolCall `json:"tools,omitempty"`
	Files     []FileEdit `json:"files,omitempty"`
	Plan      []PlanStep `json:"plan,omitempty"` // the turn's last plan update
	// Goal is the thread goal as the turn left it (set, updated or read
	// by a goal tool), nil when the turn did not touch it.
	Goal *Goal `json:"goal,omitempty"`
	// Trigger is why a turn no user message began ran: TriggerGoal,
	// TriggerAgent ("" for a user's turn).
	Trigger  string `json:"trigger,omitempty"`
	Aborted  bool   `json:"aborted,omitempty"`
	Complete bool   `json:"complete,omitempty"` // task_complete (or turn_aborted) seen, or the task's next message
}

// Map returns the turn with f applied to everything it carries that
// someone said or ran (the prompt, the replies, tool inputs, commands and
// outputs, plan steps): redaction before it is stored.
func (t Turn) Map(f func(string) string) Turn {
	t.User = f(t.User)
	t.Assistant = slices.Clone(t.Assistant)
	for i := range t.Assistant {
		t.Assistant[i] = f(t.Assistant[i])
	}
	t.Tools = slices.Clone(t.Tools)
	for i := range t.Tools {
		t.Tools[i].Input, t.Tools[i].Command, t.Tools[i].Output = f(t.Tools[i].Input), f(t.Tools[i].Command), f(t.Tools[i].Output)
	}
	t.Plan = slices.Clone(t.Plan)
	for i := range t.Plan {
		t.Plan[i].Step = f(t.Plan[i].Step)
	}
	if t.Goal != nil {
		g := *t.Goal
		g.Objective = f(g.Objective)
		t.Goal = &g
	}
	return t
}

// ToolCall is one tool call with its (bounded) input and output.
type ToolCall struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Input   string `json:"input,omitempty"`
	Command string `json:"command,omitempty"` // shell tools: the command line
	// Summary says what another tool did as a person would (a patch's
	// files and line counts, a plan's steps), made from its whole input.
	Summary  string `json:"summary,omitempty"`
	Output   string `json:"output,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Done     bool   `json:"done,omitempty"` // its output was seen
	// After is how many of the turn's assistant messages came before the
	// call: with it, messages and calls replay in the order they happened.
	After int `json:"after,omitempty"`
}

// FileEdit is a file written by a patch.
type FileEdit struct {
	Path   string `json:"path"` // relative to the session cwd when inside it
	Op     string `json:"op"`   // add | update | delete
	MoveTo string `json:"move_to,omitempty"`
	Hash   string `json:"hash,omitempty"` // content hash the patch implies, when known (add)
	OK     *bool  `json:"ok,omitempty"`   // the patch applied
}

// PlanStep is one update_plan step.
type PlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"` // pending | in_progress | completed
}

// Placeholder is a line that could not be used.
type Placeholder struct {
	Kind   string `json:"kind"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
}

// Capture is what one incremental read of a rollout yields.
type Capture struct {
	// Cursor is where the next read starts: after the last complete turn, so
	// an open turn is read again (and completed) next time.
	Cursor       Cursor
	Rewritten    bool
	Meta         *SessionMeta
	Turns        []Turn // turns starting at or after the read's start, in order; the last may be open
	Compactions  int
	Aborted      int
	Placeholders []Placeholder
	Records      int
	Bytes        int64
	// Sections are the cx context sections (their hashes) in the lines read:
	// what a resumed session already holds.
	Sections []string
	// Goal is the last change of the thread goal the read found between
	// turns, not seen by an earlier read (nil: none).
	Goal *GoalChange
}

// GoalChange is the thread goal as a change between turns left it, and
// where that change was written.
type GoalChange struct {
	Goal   Goal
	Offset int64
}

// Options bound what capture keeps.
type Options struct {
	MaxLineBytes int // default defaultMaxLine
	MaxToolChars int // default 2000
}

func (o Options) withDefaults() Options {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = defaultMaxLine
	}
	if o.MaxToolChars <= 0 {
		o.MaxToolChars = 2000
	}
	return o
}
