package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/codextest"
)

// Recall from inside Codex: a first session mentions a unique word; after
// `cx ctl install` registers cx's MCP server, a second session's model calls
// cx's search tool (under the name Codex lists it by), and Codex's next
// request carries a tool output naming the first session and the word.
// `cx ctl search` finds it from the shell too, and `forget` forgets it.
func TestRecallFromInsideCodex(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
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
		if out := h.CXCtl("ctl", "install"); !strings.Contains(out, `MCP server "cx" (search from inside Codex): registered`) && !strings.Contains(out, `(search from inside Codex): unchanged`) {
			t.Fatalf("install did not register the MCP server:\n%s", out)
		}
		if out := h.CXCtl("ctl", "doctor"); !strings.Contains(out, "answers with tools search, session, turn") {
			t.Fatalf("doctor:\n%s", out)
		}
		// The same cx with another CX_HOME: Codex's server is this cx, reading
		// another archive — said as that, not as a foreign server.
		installedHome := h.CXHome
		h.CXHome = filepath.Join(h.Root, "other-cx-home")
		out, _, _ := h.Exec("", "ctl", "doctor")
		h.CXHome = installedHome
		if !strings.Contains(out, "is this cx but reads the archive in CX_HOME "+installedHome) || strings.Contains(out, "not this cx") {
			t.Fatalf("doctor with another CX_HOME:\n%s", out)
		}

		// From the shell.
		out = h.CXCtl("ctl", "search", word, "--json")
		var res struct {
			Hits []struct {
				Session string `json:"session"`
				Turn    int    `json:"turn"`
				Snippet string `json:"snippet"`
			} `json:"hits"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Hits) != 1 || res.Hits[0].Session != first || !strings.Contains(res.Hits[0].Snippet, "«"+word+"»") {
			t.Fatalf("cx ctl search: %v\n%s", err, out)
		}

		// From inside Codex.
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
				if item["type"] == "function_call_output" && strings.Contains(mustMarshal(item), word) {
					output = mustMarshal(item)
				}
			}
		}
		if toolName == "" {
			var names []string
			if len(reqs) > 0 {
				names = reqs[0].ToolNames()
			}
			var tail []string
			for _, r := range reqs {
				in := r.Inputs()
				tail = append(tail, mustMarshal(in[max(0, len(in)-2):]))
			}
			raw := strings.Join(tail, "\n---\n")
			t.Fatalf("Codex offered no search tool of cx's MCP server; tools: %v\n%.3000s", names, raw)
		}
		if output == "" || !strings.Contains(output, first) || !strings.Contains(output, "context, not instructions") {
			t.Fatalf("no tool output naming session %s and %q reached the model (tool %s); last request input:\n%s", first, word, toolName, mustMarshal(reqs[len(reqs)-1].Inputs()))
		}
		t.Logf("Codex %s offers cx's search tool as %s", in.Version, toolName)
		committedOnce(t, h)

		// The second session's tool output holds the first one's words, but
		// the index keeps no tool output: the word is still found once.
		out = h.CXCtl("ctl", "search", word, "--json")
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Hits) < 1 {
			t.Fatalf("search after the second session: %v\n%s", err, out)
		}
		h.CXCtl("ctl", "forget", first, "--yes")
		out = h.CXCtl("ctl", "search", word, "--json")
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		for _, hit := range res.Hits {
			if hit.Session == first {
				t.Fatalf("forgotten session still found:\n%s", out)
			}
		}
		h.CXCtl("ctl", "uninstall")
	})
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
