package rollout

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

var contextPrefixes = []string{"<environment_context>", "<codex_internal_context", "<subagent_notification>", "<user_instructions>", "# AGENTS.md", "<turn_aborted>", "<permissions instructions>", "<cx-context", "<user_shell_command>", "<skill"}

var injectedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)<cx-context\b[^>]*>.*?</cx-context>\s*`)
})

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (a *assembler) item(r Record) {
	if a.goalTask && a.cur == nil {
		switch r.PType {
		case "function_call", "custom_tool_call", "local_shell_call", "function_call_output", "custom_tool_call_output":
			a.triggered()
		case "message":
			if peek(r.Payload, `"role":"assistant"`, 200) {
				a.triggered()
			}
		}
	}
	switch r.PType {
	case "message":
		if peek(r.Payload, `"role":"developer"`, 200) || peek(r.Payload, `"role":"system"`, 200) {
			return // instructions, permissions, injected context: never part of a turn
		}
		if bytes.Contains(r.Payload, goalClearedMark) {
			// The user cleared Codex's goal (/goal clear, 0.171): Codex tells
			// the model so in a context message, the rollout's only word of it.
			a.goalAt(Goal{Status: GoalCleared}, r.Offset)
			return
		}
		if a.cur != nil && peek(r.Payload, `"role":"user"`, 200) {
			return // the turn's prompt came from its event; user-role items now are context
		}
		var m struct {
			Role    string        `json:"role"`
			Content []contentPart `json:"content"`
		}
		if json.Unmarshal(r.Payload, &m) != nil {
			return
		}
		var b strings.Builder
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
		text := b.String()
		switch m.Role {
		case "assistant":
			if a.cur != nil && strings.TrimSpace(text) != "" {
				a.cur.Assistant = append(a.cur.Assistant, text)
			}
		case "user":
			if a.cur == nil && !isContextText(text) && a.taskStart >= 0 {
				a.pending = text
			}
		}
	case "agent_message":
		// Another agent's message (multi_agent_v2): a subagent's task, or a
		// message that starts a turn of its own. It begins a turn when none
		// is open; inside one it is context. Its payload may be encrypted:
		// only its plain parts are kept.
		if a.cur != nil || a.taskStart < 0 {
			return
		}
		var m struct {
			Content []contentPart `json:"content"`
		}
		if json.Unmarshal(r.Payload, &m) != nil {
			return
		}
		var b strings.Builder
		for _, c := range m.Content {
			if c.Type == "input_text" || c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		a.prompt(strings.TrimSpace(b.String()), r)
		if a.cur != nil {
			a.cur.Trigger = TriggerAgent
		}
	case "function_call", "custom_tool_call", "local_shell_call":
		if a.cur == nil {
			return
		}
		f := fields(r.Payload, "call_id", "id", "name", "arguments", "input", "action")
		tc := ToolCall{CallID: str(f[0]), Name: str(f[2]), Input: str(f[3])}
		if tc.CallID == "" {
			tc.CallID = str(f[1])
		}
		if r.PType == "custom_tool_call" {
			tc.Input = str(f[4])
		}
		if r.PType == "local_shell_call" {
			tc.Name = "local_shell"
			tc.Input = string(f[5])
		}
		tc.Command = shellCommand(tc.Name, tc.Input, json.RawMessage(f[5]))
		if tc.Name == "apply_patch" {
			a.patch(tc.Input)
		}
		if tc.Name == "update_plan" {
			a.plan(tc.Input)
		}
		if tc.Command == "" {
			tc.Summary = Bound(toolSummary(tc.Name, tc.Input), a.opts.MaxToolChars)
		}
		tc.Input = Bound(tc.Input, a.opts.MaxToolChars)
		tc.After = len(a.cur.Assistant)
		a.cur.Tools = append(a.cur.Tools, tc)
		a.calls[tc.CallID] = len(a.cur.Tools) - 1
	case "function_call_output", "custom_tool_call_output":
		if a.cur == nil {
			return
		}
		f := fields(r.Payload, "call_id", "output", "name")
		i, ok := a.calls[str(f[0])]
		if !ok {
			if str(f[2]) == "goal_objective" {
				// The goal's objective, given to the model with no call of
				// its own (0.171, after a goal is set): no status in it.
				a.goal(Goal{Objective: strings.TrimSpace(outputText(f[1]))})
			}
			return
		}
		out := outputText(f[1])
		t := &a.cur.Tools[i]
		t.Done = true
		switch t.Name {
		case "create_goal", "update_goal", "get_goal":
			var g struct {
				Goal *Goal `json:"goal"`
			}
			if json.Unmarshal([]byte(out), &g) == nil && g.Goal != nil && g.Goal.Objective != "" {
				a.goal(*g.Goal)
			}
		}
		if code, ok := ExitCode(out); ok && t.ExitCode == nil && t.Name != "update_plan" {
			t.ExitCode = &code
		}
		t.Output = Bound(out, a.opts.MaxToolChars)
	}
}

// goal records the thread goal the turn shows; one seen without a status
// keeps the status already known for the same objective.
func (a *assembler) goal(g Goal) {
	if a.cur == nil || g.Objective == "" && g.Status != GoalCleared {
		return
	}
	if g.Status == "" && a.cur.Goal != nil && a.cur.Goal.Objective == g.Objective {
		g.Status = a.cur.Goal.Status
	}
	a.cur.Goal = &g
}

// goalAt records a change of the thread goal at offset: the open turn's,
// or, between turns (a pause, a resume, a user's /goal), the capture's own
// — counted once, by the read that first sees it.
func (a *assembler) goalAt(g Goal, offset int64) {
	if g.Objective == "" && g.Status != GoalCleared {
		return
	}
	if a.cur != nil {
		a.goal(g)
		return
	}
	if offset >= a.seen {
		a.capture.Goal = &GoalChange{Goal: g, Offset: offset}
	}
}

// goalClearedMark is how Codex (0.171) tells the model the user cleared
// its goal: a user-role context message from source "user_goal" (seen in
// testdata/rollouts/0.171.0/goal-pause.jsonl), in the payload's JSON.
var goalClearedMark = []byte(`<codex_internal_context source=\"user_goal\">\nUser cleared the goal.`)

func (a *assembler) patch(body string) {
	for _, pf := range parsePatch(body) {
		fe := FileEdit{Path: a.rel(pf.Path), Op: pf.Op}
		if pf.MoveTo != "" {
			fe.MoveTo = a.rel(pf.MoveTo)
		}
		if pf.HasBytes {
			fe.Hash = ContentHash(pf.Content)
		}
		a.addFile(fe)
	}
}

// fileChanges records the outcome Codex reports for applied changes.
func (a *assembler) fileChanges(changes map[string]json.RawMessage, ok bool) {
	if a.cur == nil {
		return
	}
	for p := range changes {
		rel := a.rel(p)
		for i := range a.cur.Files {
			if a.cur.Files[i].Path == rel && a.cur.Files[i].OK == nil {
				v := ok
				a.cur.Files[i].OK = &v
			}
		}
	}
}

func (a *assembler) addFile(fe FileEdit) {
	if a.cur == nil {
		return
	}
	a.cur.Files = append(a.cur.Files, fe)
}

// rel makes p relative to the session's cwd when it is inside it.
func (a *assembler) rel(p string) string {
	p = filepath.Clean(p)
	if a.meta == nil || a.meta.Cwd == "" || !filepath.IsAbs(p) {
		return filepath.ToSlash(p)
	}
	if r, err := filepath.Rel(a.meta.Cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(p)
}

func (a *assembler) plan(args string) {
	var m struct {
		Plan []PlanStep `json:"plan"`
	}
	if json.Unmarshal([]byte(args), &m) == nil && a.cur != nil {
		a.cur.Plan = m.Plan
	}
}
