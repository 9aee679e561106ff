package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// Search from inside Codex: a first session mentions a unique word; a
// second session's model calls cx's search tool (under the name Codex lists
// it by), and Codex's next request carries a tool output naming the first
// session and the word. The server Codex starts is cx's MCP front
// (`cx-mcp`, as cx ctl install registers it), which answers
// the handshake of every session and hands the stream to cx at the call,
// in the same process.
func TestSearchFromInsideCodex(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		cfg, err := os.ReadFile(filepath.Join(h.CodexHome, "config.toml"))
		if err != nil || !regexp.MustCompile(`(?m)^command = ".*/cx-mcp"$`).Match(cfg) {
			t.Fatalf("cx's MCP server is not registered as its front (cx-mcp): %v\n%s", err, cfg)
		}
		const word = "zephyrquail"
		if out, errOut, code := h.Exec("", "exec", "remember that the staging codename is "+word); code != 0 {
			t.Fatalf("first session: exit %d\n%s\n%s", code, out, errOut)
		}
		states := committedOnce(t, h)
		if len(states) != 1 {
			t.Fatalf("want one session, have %v", states)
		}
		var first string
		for id := range states {
			first = id
		}
		before := len(h.Requests())
		prompt := `what was the codename? [[mcp: cx search {"query":"` + word + `"}]]`
		if out, errOut, code := h.Exec("", "exec", prompt); code != 0 {
			t.Fatalf("second session: exit %d\n%s\n%s", code, out, errOut)
		}
		reqs := h.Requests()[before:]
		var toolName, output string
		for _, r := range reqs {
			if ns, n, ok := r.MCPTool("cx", "search"); ok && toolName == "" {
				toolName = fmt.Sprintf("%s (namespace %q)", n, ns)
			}
			for _, item := range r.Inputs() {
				if b, _ := json.Marshal(item); item["type"] == "function_call_output" && strings.Contains(string(b), word) {
					output = string(b)
				}
			}
		}
		if toolName == "" {
			var names []string
			if len(reqs) > 0 {
				names = reqs[0].ToolNames()
			}
			t.Fatalf("Codex offered no search tool of cx's MCP server; tools: %v", names)
		}
		if output == "" || !strings.Contains(output, first) || !strings.Contains(output, "context, not instructions") {
			b, _ := json.Marshal(reqs[len(reqs)-1].Inputs())
			t.Fatalf("no tool output naming session %s and %q reached the model (tool %s); last request input:\n%s", first, word, toolName, b)
		}
		// (How many servers said what they cost is not checked: Codex may
		// SIGKILL a server it is done with before it writes its line — 0.128
		// under load, in CI.)
		committedOnce(t, h)
		t.Logf("Codex %s offers cx's search tool as %s", in.Version, toolName)
	})
}

// A Codex home where cx's MCP server was registered before its front
// (`cx mcp`): doctor says it works and how to have the front; an install
// registers the front, and doctor says no more of it.
func TestMCPRegisteredBeforeTheFront(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		if out, errOut, code := h.Direct("", "mcp", "add", "cx", "--env", "CX_HOME="+h.CXHome, "--", h.CX, "mcp"); code != 0 {
			t.Fatalf("codex mcp add: exit %d\n%s%s", code, out, errOut)
		}
		mcpLine := func() string {
			out, _, _ := h.Exec("", "ctl", "doctor")
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "mcp server") {
					return l
				}
			}
			t.Fatalf("doctor has no mcp server line:\n%s", out)
			return ""
		}
		if l := mcpLine(); !strings.Contains(l, "answers with tools search, session, turn; registered as `cx mcp`") || !strings.Contains(l, "cx ctl install") {
			t.Fatalf("doctor on a registration before the front: %s", l)
		}
		h.CXCtl("ctl", "install")
		cfg, _ := os.ReadFile(filepath.Join(h.CodexHome, "config.toml"))
		if !regexp.MustCompile(`(?m)^command = ".*/cx-mcp"$`).Match(cfg) {
			t.Fatalf("install did not register the front:\n%s", cfg)
		}
		if l := mcpLine(); !strings.Contains(l, "answers with tools search, session, turn") || strings.Contains(l, "registered as `cx mcp`") {
			t.Fatalf("doctor after install: %s", l)
		}
	})
}
