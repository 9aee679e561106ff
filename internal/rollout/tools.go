package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// outputText is a tool output's text: a string, or content items' text.
func outputText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		return str(raw)
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return string(raw)
}

// shellCommand is the command line of a shell tool call, if it is one.
func shellCommand(name, input string, action json.RawMessage) string {
	var args struct {
		Cmd     string          `json:"cmd"`
		Command json.RawMessage `json:"command"`
	}
	src := input
	if name == "local_shell" {
		src = string(action)
	}
	switch name {
	case "exec_command", "shell", "shell_command", "local_shell", "container.exec":
	default:
		return ""
	}
	if json.Unmarshal([]byte(src), &args) != nil {
		return ""
	}
	if args.Cmd != "" {
		return args.Cmd
	}
	var s string
	if json.Unmarshal(args.Command, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(args.Command, &argv) == nil {
		if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
			return argv[2]
		}
		return strings.Join(argv, " ")
	}
	return ""
}

// ToolLine is one line saying what a tool call did, as a person would
// write it: the command a shell ran; a patch's files with their line
// counts; a plan's steps; another tool's name and arguments — never its
// raw JSON. A call stored before Summary existed is summed up from its
// (bounded) input.
func ToolLine(tc ToolCall) string {
	switch {
	case tc.Command != "":
		return tc.Command
	case tc.Summary != "":
		return tc.Summary
	}
	return toolSummary(tc.Name, tc.Input)
}

// toolSummary is ToolLine of a call that is not a shell command.
func toolSummary(name, input string) string {
	switch name {
	case "apply_patch":
		var files []string
		for _, f := range parsePatch(input) {
			switch f.Op {
			case "add":
				files = append(files, fmt.Sprintf("added %s (+%d)", f.Path, f.Added))
			case "delete":
				files = append(files, "deleted "+f.Path)
			default:
				p := f.Path
				if f.MoveTo != "" {
					p += " → " + f.MoveTo
				}
				files = append(files, fmt.Sprintf("edited %s (+%d −%d)", p, f.Added, f.Removed))
			}
		}
		if len(files) > 0 {
			return strings.Join(files, "; ")
		}
		return "apply_patch"
	case "update_plan":
		var m struct {
			Plan []PlanStep `json:"plan"`
		}
		if json.Unmarshal([]byte(input), &m) != nil || len(m.Plan) == 0 {
			return "update_plan"
		}
		steps := make([]string, 0, len(m.Plan))
		for _, s := range m.Plan {
			mark := " "
			switch s.Status {
			case "completed":
				mark = "x"
			case "in_progress":
				mark = ">"
			}
			steps = append(steps, "["+mark+"] "+OneLine(s.Step, 200))
		}
		return "plan: " + strings.Join(steps, "; ")
	}
	var args map[string]any
	if json.Unmarshal([]byte(input), &args) != nil {
		return strings.TrimSpace(name + " " + OneLine(input, 400))
	}
	keys := slices.Sorted(maps.Keys(args))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := args[k]
		var s string
		switch v := v.(type) {
		case string:
			s = OneLine(v, 200)
		case nil:
			continue
		default:
			b, _ := json.Marshal(v)
			s = OneLine(string(b), 200)
		}
		parts = append(parts, k+": "+s)
	}
	return strings.TrimSpace(name + " (" + strings.Join(parts, ", ") + ")")
}
