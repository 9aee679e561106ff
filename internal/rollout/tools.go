package rollout

import (
	"encoding/json"
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
