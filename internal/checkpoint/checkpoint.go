// Package checkpoint is the deterministic session checkpoint (v1): a pure
// reduction of a rollout's bytes to a small, bounded JSON — the task pointer,
// the plan, the artifacts (files written by patches with the hash the patch
// implies when known; commands with exit codes), the recent artifacts — and a
// byte-stable text view under fixed caps. No clock, cwd, locale or disk goes
// into the checkpoint; the disk is consulted only when the view is rendered
// for injection, to mark files changed since as SUSPECT.
package checkpoint

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"cx/internal/rollout"
)

// SchemaVersion is the checkpoint format version.
const SchemaVersion = 1

// Caps bound the checkpoint; eviction past them is deterministic.
type Caps struct {
	MaxPlanSteps       int // plan steps kept (first ones)
	MaxArtifacts       int // artifacts kept: the most recently touched, ties by key
	MaxRecentArtifacts int // recent list length
	MaxValueChars      int // any text value
	MaxTaskChars       int // the task text
}

// DefaultCaps are the v1 caps.
var DefaultCaps = Caps{MaxPlanSteps: 32, MaxArtifacts: 128, MaxRecentArtifacts: 16, MaxValueChars: 160, MaxTaskChars: 600}

// Checkpoint is the v1 schema. Field order and names are the format.
type Checkpoint struct {
	SchemaVersion int    `json:"schema_version"`
	SessionID     string `json:"session_id"`
	Cwd           string `json:"cwd"`
	Seq           int    `json:"seq"` // turns applied
	Task          *Task  `json:"task"`
	// Goal is Codex's own thread goal as the rollout last showed it (nil
	// when the thread has none).
	Goal *rollout.Goal `json:"goal,omitempty"`
	// Parent is the thread that spawned this one, for a subagent's thread:
	// its parent's child, never a project's latest session of its own.
	Parent          string              `json:"parent,omitempty"`
	Plan            Plan                `json:"plan"`
	Decisions       []Decision          `json:"decisions"` // kept empty until a deterministic source exists
	Facts           map[string]Fact     `json:"facts"`     // "note:N": what the user asked to keep ("remember …"), oldest first
	Artifacts       map[string]Artifact `json:"artifacts"` // key: "file:<path>" or "cmd:<command>"
	RecentArtifacts []string            `json:"recent_artifacts"`
	Stats           Stats               `json:"stats"`
}

// Task is the last request that did work (a tool call, a file written, a
// plan), else the last real request: what the turns show, not how the
// request was phrased.
type Task struct {
	Text     string `json:"text"`
	Turn     string `json:"turn"` // its turn id
	Seq      int    `json:"seq"`
	Vague    bool   `json:"vague,omitempty"` // every request was vague ("continue"); this is the last one
	Talk     bool   `json:"talk,omitempty"`  // no request did work; this is the last one (a question, perhaps)
	Truncate bool   `json:"truncated,omitempty"`
}

// Plan is the last update_plan.
type Plan struct {
	Steps []PlanStep      `json:"steps"`
	Done  map[string]bool `json:"done"`
	Turn  string          `json:"turn,omitempty"`
}

// PlanStep is one step; ID is its position ("1", "2", …).
type PlanStep struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"`
}

// Decision and Fact are part of the v1 schema, empty for now.
type Decision struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
}

// Fact is part of the v1 schema, empty for now.
type Fact struct {
	Value  string `json:"value"`
	Status string `json:"status"`
}

// Artifact is a file written or a command run.
type Artifact struct {
	URI      string `json:"uri"`
	Kind     string `json:"kind"`                // file | command
	Op       string `json:"op,omitempty"`        // file: add | update | delete | move
	Hash     string `json:"hash,omitempty"`      // file: the content hash the patch implies (add)
	ExitCode *int   `json:"exit_code,omitempty"` // command
	Count    int    `json:"count"`               // times seen
	LastSeq  int    `json:"last_seq"`            // turn of the last observation
}

// Stats counts what the reduction saw.
type Stats struct {
	Turns        int `json:"turns"`
	Aborted      int `json:"aborted"`
	Compactions  int `json:"compactions"`
	Placeholders int `json:"placeholders"`
	ToolCalls    int `json:"tool_calls"`
}

// FromRollout reduces complete rollout bytes to a checkpoint.
func FromRollout(data []byte, caps Caps) Checkpoint {
	c := rollout.Assemble(data, rollout.Options{MaxToolChars: 4000})
	return fromCapture(c, caps)
}

// FromFile is FromRollout of a rollout file, read as a stream: each turn is
// folded in as it is read and dropped, so memory does not grow with the
// file (a 1 GB rollout costs what a 1 MB one does).
func FromFile(path string, caps Caps) (Checkpoint, error) {
	f := NewFold()
	lastGoal := int64(-1) // where the last turn that touched the goal began
	c, err := rollout.StreamFile(path, rollout.Options{MaxToolChars: 4000}, func(t rollout.Turn) {
		f.Add(t, caps)
		if t.Goal != nil {
			lastGoal = t.Offset
		}
	})
	if err != nil {
		return Checkpoint{}, err
	}
	f.Meta(c.Meta)
	f.Count(c.Aborted, c.Compactions, len(c.Placeholders))
	if c.Goal != nil && c.Goal.Offset > lastGoal {
		f.goalChanged(c.Goal.Goal)
	}
	return f.Checkpoint(caps), nil
}

// fromCapture reduces an assembled capture: its turns folded in order.
func fromCapture(c rollout.Capture, caps Caps) Checkpoint {
	f := NewFold()
	f.Meta(c.Meta)
	f.Count(c.Aborted, c.Compactions, len(c.Placeholders))
	f.AddRead(c.Turns, c.Goal, caps, nil)
	return f.Checkpoint(caps)
}

// evict keeps the MaxArtifacts most recently touched artifacts (ties by key).
func evict(cp *Checkpoint, caps Caps) {
	if len(cp.Artifacts) <= caps.MaxArtifacts {
		return
	}
	keys := make([]string, 0, len(cp.Artifacts))
	for k := range cp.Artifacts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := cp.Artifacts[keys[i]], cp.Artifacts[keys[j]]
		if a.LastSeq != b.LastSeq {
			return a.LastSeq > b.LastSeq
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys[caps.MaxArtifacts:] {
		delete(cp.Artifacts, k)
	}
}

// JSON is the checkpoint's canonical bytes: same checkpoint, same bytes.
func (cp Checkpoint) JSON() []byte {
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		panic(err) // only plain types: cannot fail
	}
	return append(b, '\n')
}

func bound(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// FirstLine is s up to its first line break, marked " …" when more follows.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

var vagueWords = map[string]bool{
	"continue": true, "go on": true, "keep going": true, "proceed": true, "go ahead": true, "carry on": true,
	"run checks": true, "run the checks": true, "run tests": true, "run the tests": true, "check it": true,
	"check it again": true, "try again": true, "again": true, "retry": true, "ok": true, "okay": true, "yes": true,
	"y": true, "do it": true, "fix it": true, "next": true, "resume": true, "same": true, "please": true,
	"can you look into it": true, "look into it": true, "thanks": true, "thank you": true, "done": true, "go": true,
	"continue please": true, "please continue": true, "keep at it": true, "what's next": true, "whats next": true,
}

// IsVague reports whether a request carries no task of its own ("continue",
// "run checks", "check it again"): it never replaces a goal or a task.
func IsVague(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.Trim(t, ".!?… ")
	t = strings.Join(strings.Fields(t), " ")
	if t == "" || vagueWords[t] {
		return true
	}
	return false
}
