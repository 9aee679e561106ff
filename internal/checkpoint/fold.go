package checkpoint

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"cx/internal/redact"
	"cx/internal/rollout"
)

// Fold is the checkpoint reduction as a state that takes a rollout's turns
// as capture reads them, so a checkpoint costs the new turns, never the
// history: Add each turn once it is final, Count what each read counted,
// and Checkpoint (with the turns still open) gives exactly what
// FromRollout gives for the same bytes. It is kept in the ledger between
// reads, so nothing in it is unredacted.
type Fold struct {
	SessionID string              `json:"session_id"`
	Cwd       string              `json:"cwd"`
	Seq       int                 `json:"seq"`
	Parent    string              `json:"parent,omitempty"`
	Task      *Task               `json:"task,omitempty"`  // the last request that did work (redacted, not yet bounded)
	Asked     *Task               `json:"asked,omitempty"` // the last real request, whether or not it did work
	Vague     *Task               `json:"vague,omitempty"` // the last vague one
	Goal      *rollout.Goal       `json:"goal,omitempty"`
	Plan      Plan                `json:"plan"`
	Artifacts map[string]Artifact `json:"artifacts"`
	// Touched is each artifact's last touch (a running count over every
	// file edit and command): the recent list is the newest of them.
	Touched map[string]int `json:"touched"`
	Touches int            `json:"touches"`
	Stats   Stats          `json:"stats"`
	// Notes are the facts the user asked to keep ("remember …"), oldest
	// first, the latest maxNotes.
	Notes []string `json:"notes,omitempty"`
}

// maxNotes bounds the notes a checkpoint keeps.
const maxNotes = 8

// note keeps a fact the user asked to keep, once.
func (f *Fold) note(text string) {
	for i, n := range f.Notes {
		if strings.EqualFold(n, text) {
			f.Notes = append(f.Notes[:i], f.Notes[i+1:]...)
			break
		}
	}
	f.Notes = append(f.Notes, text)
	if len(f.Notes) > maxNotes {
		f.Notes = f.Notes[len(f.Notes)-maxNotes:]
	}
}

// DidWork reports whether a turn did work: called a tool (a goal's
// bookkeeping aside), wrote a file or set a plan. A turn that only talked
// never becomes the task or opens a line of work, whatever its words.
func DidWork(t rollout.Turn) bool {
	if len(t.Files) > 0 || len(t.Plan) > 0 {
		return true
	}
	for _, tc := range t.Tools {
		switch tc.Name {
		case "create_goal", "update_goal", "get_goal":
		default:
			return true
		}
	}
	return false
}

// NewFold is the fold of nothing yet.
func NewFold() *Fold {
	return &Fold{Plan: Plan{Steps: []PlanStep{}, Done: map[string]bool{}}, Artifacts: map[string]Artifact{}, Touched: map[string]int{}}
}

// Meta takes the session's identity (the first one seen stays).
func (f *Fold) Meta(m *rollout.SessionMeta) {
	if m != nil && f.SessionID == "" && f.Cwd == "" {
		f.SessionID, f.Cwd, f.Parent = m.ID, m.Cwd, m.ParentID
	}
}

// Count adds what one read counted outside the turns.
func (f *Fold) Count(aborted, compactions, placeholders int) {
	f.Stats.Aborted += aborted
	f.Stats.Compactions += compactions
	f.Stats.Placeholders += placeholders
}

// Add folds one turn in (in rollout order, each turn once).
func (f *Fold) Add(t rollout.Turn, caps Caps) {
	f.Seq++
	seq := f.Seq
	f.Stats.Turns++
	if text := strings.TrimSpace(t.User); text != "" && t.Trigger == "" { // a user's turn (not a goal's or another agent's)
		// Only a task is the task: an acknowledgement, a note to keep or a
		// question about where things stand never replaces it.
		req := Classify(text)
		if req.Kind == KindTask {
			text = req.Text
		}
		task := &Task{Text: redact.String(text), Turn: t.Key, Seq: seq}
		task.Truncate = len(text) > caps.MaxTaskChars && utf8.RuneCountInString(text) > caps.MaxTaskChars
		switch req.Kind {
		case KindTask:
			f.Asked = task
			if DidWork(t) {
				f.Task = task
			}
		case KindNote:
			f.note(bound(redact.String(req.Text), caps.MaxValueChars))
		default:
			task.Vague = true
			f.Vague = task
		}
	}
	if t.Goal != nil {
		f.goalChanged(*t.Goal)
	}
	if len(t.Plan) > 0 {
		f.Plan = Plan{Steps: []PlanStep{}, Done: map[string]bool{}, Turn: t.Key}
		for j, s := range t.Plan {
			if j >= caps.MaxPlanSteps {
				break
			}
			id := fmt.Sprint(j + 1)
			f.Plan.Steps = append(f.Plan.Steps, PlanStep{ID: id, Text: redact.String(s.Step), Status: s.Status})
			f.Plan.Done[id] = s.Status == "completed"
		}
	}
	for _, fe := range t.Files {
		key := "file:" + fe.Path
		a := f.Artifacts[key]
		a.URI, a.Kind, a.Op, a.LastSeq = fe.Path, "file", fe.Op, seq
		a.Count++
		if fe.MoveTo != "" {
			a.Op = "move"
		}
		switch {
		case fe.Hash != "":
			a.Hash = fe.Hash
		case fe.Op != "add":
			a.Hash = "" // an update's result is not known from the patch
		}
		f.touch(key, a)
	}
	for _, tc := range t.Tools {
		f.Stats.ToolCalls++
		if tc.Command == "" {
			continue
		}
		cmd := bound(redact.String(FirstLine(tc.Command)), caps.MaxValueChars)
		key := "cmd:" + cmd
		a := f.Artifacts[key]
		a.URI, a.Kind, a.LastSeq, a.ExitCode = cmd, "command", seq, tc.ExitCode
		a.Count++
		f.touch(key, a)
	}
}

// AddRead folds in a read's turns (those keep says) and the change of
// the thread goal it found between them, each at its place in the rollout.
func (f *Fold) AddRead(turns []rollout.Turn, change *rollout.GoalChange, caps Caps, keep func(rollout.Turn) bool) {
	for _, t := range turns {
		if change != nil && change.Offset < t.Offset {
			f.goalChanged(change.Goal)
			change = nil
		}
		if keep == nil || keep(t) {
			f.Add(t, caps)
		}
	}
	if change != nil {
		f.goalChanged(change.Goal)
	}
}

// goalChanged takes the thread goal as a change between turns left it.
// A goal cleared keeps the objective that was cleared.
func (f *Fold) goalChanged(g rollout.Goal) {
	if g.Cleared() {
		if f.Goal == nil || f.Goal.Cleared() {
			return
		}
		g.Objective = f.Goal.Objective
	}
	g.Objective = redact.String(g.Objective)
	f.Goal = &g
}

func (f *Fold) touch(key string, a Artifact) {
	f.Artifacts[key] = a
	f.Touches++
	f.Touched[key] = f.Touches
}

// clone is a copy that shares nothing mutable with f.
func (f *Fold) clone() *Fold {
	c := *f
	c.Artifacts, c.Touched = maps.Clone(f.Artifacts), maps.Clone(f.Touched)
	c.Plan.Steps, c.Plan.Done = slices.Clone(f.Plan.Steps), maps.Clone(f.Plan.Done)
	if f.Task != nil {
		t := *f.Task
		c.Task = &t
	}
	if f.Vague != nil {
		t := *f.Vague
		c.Vague = &t
	}
	if f.Asked != nil {
		t := *f.Asked
		c.Asked = &t
	}
	c.Notes = slices.Clone(f.Notes)
	return &c
}

// Checkpoint is the checkpoint of what was folded plus the turns still
// open (read again by the next capture, so not folded yet); f is unchanged.
func (f *Fold) Checkpoint(caps Caps, open ...rollout.Turn) Checkpoint {
	g := f.clone()
	for _, t := range open {
		g.Add(t, caps)
	}
	// The task is the last request that did work. Without one, the last
	// request is, marked Talk: a question, however phrased ("what's
	// left?"), did no work, so a view gives it only where no goal is
	// shown; without a request, the last vague nudge ("continue").
	talk := g.Task == nil && g.Asked != nil
	cp := Checkpoint{SchemaVersion: SchemaVersion, SessionID: g.SessionID, Cwd: g.Cwd, Seq: g.Seq, Task: cmp.Or(g.Task, g.Asked),
		Goal: g.Goal, Parent: g.Parent, Plan: g.Plan, Decisions: []Decision{}, Facts: map[string]Fact{}, Artifacts: g.Artifacts, RecentArtifacts: []string{}, Stats: g.Stats}
	for i, n := range g.Notes {
		cp.Facts[fmt.Sprintf("note:%d", i+1)] = Fact{Value: n, Status: "noted"}
	}
	if cp.Task == nil {
		cp.Task = g.Vague
	}
	if talk {
		t := *cp.Task
		t.Talk = true
		cp.Task = &t
	}
	if cp.Task != nil {
		cp.Task.Text = bound(redact.String(cp.Task.Text), caps.MaxTaskChars)
	}
	for i := range cp.Plan.Steps {
		cp.Plan.Steps[i].Text = bound(redact.String(cp.Plan.Steps[i].Text), caps.MaxValueChars)
	}
	evict(&cp, caps)
	// Recent: the most recently touched keys still kept, newest first.
	keys := slices.Collect(maps.Keys(cp.Artifacts))
	slices.SortFunc(keys, func(a, b string) int { return g.Touched[b] - g.Touched[a] })
	cp.RecentArtifacts = append(cp.RecentArtifacts, keys[:min(len(keys), caps.MaxRecentArtifacts)]...)
	return cp
}

// JSON is the fold as the ledger keeps it.
func (f *Fold) JSON() []byte {
	b, err := json.Marshal(f)
	if err != nil {
		panic(err) // only plain types: cannot fail
	}
	return b
}

// LoadFold reads a fold the ledger kept.
func LoadFold(b []byte) (*Fold, error) {
	f := NewFold()
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("read checkpoint fold: %w", err)
	}
	if f.Artifacts == nil {
		f.Artifacts = map[string]Artifact{}
	}
	if f.Touched == nil {
		f.Touched = map[string]int{}
	}
	if f.Plan.Steps == nil {
		f.Plan.Steps = []PlanStep{}
	}
	if f.Plan.Done == nil {
		f.Plan.Done = map[string]bool{}
	}
	return f, nil
}
