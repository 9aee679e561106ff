package mockmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Directives is the default script: the last user message may hold
// directives, answered one per model request within the turn (each tool
// output Codex sends back moves to the next), then a closing text:
//
//	[[shell: CMD]]            run CMD with Codex's shell tool
//	[[patch]]…[[/patch]]      apply_patch with the text between (an "*** Begin Patch" body)
//	[[plan: a | b | [x] c]]   update_plan; "[x] " marks a step completed, the first open one is in progress
//	[[slow: 2s]]              answer the next text after a delay
//	[[error: 500]]            answer with this HTTP status
//	[[say: TEXT]]             answer TEXT
//	[[words: N]]              answer N words, streamed a word at a time as a model streams
//	[[mcp: SERVER TOOL JSON]]  call an MCP server's tool, under the name Codex lists it by
//	[[tool: NAME JSON]]       call one of Codex's own tools (create_goal, spawn_agent,
//	                          collaboration.spawn_agent …), searched for first when deferred;
//	                          <<kind: arg>> in JSON nests a v1 child's directives
//	[[continue: <<…>> …]]      what a turn Codex's goal starts does
//	[[child: <<…>> …]]         what a v2 subagent spawned by this prompt does
//
// A message without directives is answered "mock reply: <its first words>".
func Directives(r Request) Reply {
	text := r.LastUserText()
	ds := parseDirectives(text)
	if strings.HasPrefix(text, goalContinuation) {
		// A turn Codex's goal started: the directives of the last real
		// prompt's [[continue: …]] (nested as <<kind: arg>>), so a test
		// scripts what the model does while pursuing the goal; with none,
		// the goal is marked complete, so Codex stops continuing it.
		ds = nil
		for _, d := range parseDirectives(r.lastPromptText()) {
			if d.kind == "continue" {
				ds = parseDirectives(strings.NewReplacer("<<", "[[", ">>", "]]").Replace(d.arg))
			}
		}
		if ds == nil {
			ds = []directive{{"tool", `update_goal {"status":"complete"}`}}
		}
	}
	step := toolOutputsSinceLastUser(r)
	if at := r.lastAgentMessage(); at >= 0 {
		// A subagent's task sent as an agent message (multi_agent_v2; its
		// text encrypted, so unreadable here): the [[child: …]] directives
		// of the prompt that spawned it, when its history holds that prompt,
		// counted from the task on.
		ds = nil
		for _, d := range parseDirectives(r.lastPromptText()) {
			if d.kind == "child" {
				ds = parseDirectives(strings.NewReplacer("<<", "[[", ">>", "]]").Replace(d.arg))
			}
		}
		step = r.outputsAfter(at)
		if ds == nil {
			return Reply{Text: "mock: subagent task done"}
		}
	}
	ds = slices.DeleteFunc(ds, func(d directive) bool { return d.kind == "continue" || d.kind == "child" })
	var delay time.Duration
	for i, d := range ds {
		if d.kind == "slow" {
			delay, _ = time.ParseDuration(d.arg)
			ds = slices.Delete(ds, i, i+1)
			break
		}
	}
	if step < len(ds) {
		reply := ds[step].reply(r)
		reply.Delay = delay
		return reply
	}
	if len(ds) > 0 {
		return Reply{Text: fmt.Sprintf("mock: done (%d steps)", len(ds)), Delay: delay}
	}
	return Reply{Text: "mock reply: " + firstWords(text, 8), Delay: delay}
}

type directive struct{ kind, arg string }

// goalContinuation starts the user message Codex (0.171) sends to continue
// an active thread goal.
const goalContinuation = `<codex_internal_context source="goal">`

var directiveRE = regexp.MustCompile(`(?s)\[\[(shell|plan|slow|error|say|words|mcp|tool|continue|child):\s*(.*?)\]\]|\[\[patch\]\](.*?)\[\[/patch\]\]`)

func parseDirectives(text string) []directive {
	var out []directive
	for _, m := range directiveRE.FindAllStringSubmatch(text, -1) {
		if m[1] != "" {
			out = append(out, directive{m[1], strings.TrimSpace(m[2])})
		} else {
			out = append(out, directive{"patch", strings.Trim(m[3], "\n")})
		}
	}
	return out
}

func (d directive) reply(r Request) Reply {
	switch d.kind {
	case "shell":
		tools := r.ToolNames()
		switch {
		case slices.Contains(tools, "exec_command"):
			return Reply{Call: &FunctionCall{Name: "exec_command", Arguments: mustJSON(map[string]any{"cmd": d.arg, "yield_time_ms": 5000})}}
		case slices.Contains(tools, "shell_command"):
			return Reply{Call: &FunctionCall{Name: "shell_command", Arguments: mustJSON(map[string]any{"command": d.arg})}}
		default:
			return Reply{Call: &FunctionCall{Name: "shell", Arguments: mustJSON(map[string]any{"command": []string{"bash", "-lc", d.arg}})}}
		}
	case "patch":
		return Reply{CustomCall: &CustomCall{Name: "apply_patch", Input: d.arg + "\n"}}
	case "plan":
		var steps []map[string]string
		open := false
		for _, s := range strings.Split(d.arg, "|") {
			s = strings.TrimSpace(s)
			status := "pending"
			if rest, ok := strings.CutPrefix(s, "[x] "); ok {
				s, status = rest, "completed"
			} else if !open {
				status, open = "in_progress", true
			}
			steps = append(steps, map[string]string{"step": s, "status": status})
		}
		return Reply{Call: &FunctionCall{Name: "update_plan", Arguments: mustJSON(map[string]any{"plan": steps})}}
	case "error":
		code, err := strconv.Atoi(d.arg)
		if err != nil {
			code = 500
		}
		return Reply{Status: code}
	case "say":
		return Reply{Text: d.arg}
	case "words":
		n, err := strconv.Atoi(d.arg)
		if err != nil || n < 1 || n > 1_000_000 {
			return Reply{Text: "mock: words wants a count"}
		}
		ws := make([]string, n)
		for i := range ws {
			ws[i] = fmt.Sprintf("word%d", i+1)
		}
		return Reply{Text: strings.Join(ws, " "), Streamed: true}
	case "mcp":
		fields := strings.SplitN(d.arg, " ", 3)
		if len(fields) < 3 {
			return Reply{Text: "mock: mcp wants SERVER TOOL JSON"}
		}
		if ns, name, ok := r.MCPTool(fields[0], fields[1]); ok {
			return Reply{Call: &FunctionCall{Namespace: ns, Name: name, Arguments: fields[2]}}
		}
		if slices.Contains(r.ToolTypes(), "tool_search") && !r.hasInput("tool_search_output") {
			// Codex 0.169 defers MCP tools behind its client-side tool search.
			return Reply{ToolSearch: &ToolSearchCall{Query: fields[0] + " " + fields[1]}}
		}
		return Reply{Text: fmt.Sprintf("mock: no tool of MCP server %s named %s among %v", fields[0], fields[1], r.ToolNames())}
	case "tool":
		// [[tool: NAME JSON]]: a function call to one of Codex's own tools
		// (create_goal, spawn_agent, …); one Codex defers behind its tool
		// search is searched for first, as the model would.
		// Directives for a subagent's task nest as <<kind: arg>>.
		name, args, _ := strings.Cut(d.arg, " ")
		args = strings.NewReplacer("<<", "[[", ">>", "]]").Replace(args)
		if ns, fn, ok := r.Tool(name); ok {
			return Reply{Call: &FunctionCall{Namespace: ns, Name: fn, Arguments: strings.TrimSpace(args)}}
		}
		if slices.Contains(r.ToolTypes(), "tool_search") && !r.hasInput("tool_search_output") {
			return Reply{ToolSearch: &ToolSearchCall{Query: strings.ReplaceAll(name, "_", " ")}}
		}
		return Reply{Text: fmt.Sprintf("mock: no tool named %s among %v", name, r.ToolNames())}
	}
	return Reply{Text: "mock: unknown directive " + d.kind}
}

// outputsAfter counts the outputs of the model's calls after input item at.
func (r Request) outputsAfter(at int) int {
	n := 0
	for _, it := range r.Inputs()[at+1:] {
		if t, _ := it["type"].(string); strings.HasSuffix(t, "_call_output") && it["call_id"] != nil {
			n++
		}
	}
	return n
}

// lastAgentMessage is the index of an agent_message input item after the
// last user message (-1 for none).
func (r Request) lastAgentMessage() int {
	items := r.Inputs()
	for i := len(items) - 1; i >= 0; i-- {
		switch {
		case items[i]["type"] == "message" && items[i]["role"] == "user":
			if t := textOf(items[i]); !strings.HasPrefix(t, "<") {
				return -1
			}
		case items[i]["type"] == "agent_message":
			return i
		}
	}
	return -1
}

func toolOutputsSinceLastUser(r Request) int {
	items := r.Inputs()
	n := 0
	for i := len(items) - 1; i >= 0; i-- {
		if items[i]["type"] == "message" && items[i]["role"] == "user" {
			break
		}
		// An output without a call_id answers no call of the model's
		// (0.171 adds the goal's objective so): not a step.
		if t, _ := items[i]["type"].(string); strings.HasSuffix(t, "_call_output") && items[i]["call_id"] != nil {
			n++
		}
	}
	return n
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
