package mockmodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, s *Server, body map[string]any) (*http.Response, []map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("bad SSE data %q: %v", data, err)
			}
			events = append(events, ev)
		}
	}
	return resp, events
}

func user(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

func types(evs []map[string]any) string {
	var s []string
	for _, e := range evs {
		s = append(s, e["type"].(string))
	}
	return strings.Join(s, " ")
}

func TestTurnShapesAndRecording(t *testing.T) {
	s, err := Start("gpt-5.5", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools := []any{map[string]any{"type": "function", "name": "exec_command"}, map[string]any{"type": "custom", "name": "apply_patch"}}

	_, evs := post(t, s, map[string]any{"input": []any{user("hi there")}, "tools": tools})
	if got := types(evs); got != "response.created response.output_item.added response.output_text.delta response.output_item.done response.completed" {
		t.Fatalf("text turn events: %s", got)
	}
	if d := evs[2]["delta"]; d != "mock reply: hi there" {
		t.Fatalf("delta %v", d)
	}

	// A long answer comes as a model streams it: a delta a word, which
	// together are the text.
	_, evs = post(t, s, map[string]any{"input": []any{user("[[words: 5]]")}, "tools": tools})
	var streamed []string
	for _, e := range evs {
		if e["type"] == "response.output_text.delta" {
			streamed = append(streamed, e["delta"].(string))
		}
	}
	if got := strings.Join(streamed, "|"); got != "word1| word2| word3| word4| word5" {
		t.Fatalf("streamed deltas %q", got)
	}

	prompt := "go [[shell: ls]] [[patch]]*** Begin Patch\n*** Add File: a\n+x\n*** End Patch[[/patch]]"
	_, evs = post(t, s, map[string]any{"input": []any{user(prompt)}, "tools": tools})
	item := evs[2]["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || !strings.Contains(item["arguments"].(string), `"cmd":"ls"`) {
		t.Fatalf("step 1: %v", item)
	}
	_, evs = post(t, s, map[string]any{"input": []any{user(prompt), item, map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}}, "tools": tools})
	item2 := evs[2]["item"].(map[string]any)
	if item2["type"] != "custom_tool_call" || item2["name"] != "apply_patch" || !strings.HasPrefix(item2["input"].(string), "*** Begin Patch") {
		t.Fatalf("step 2: %v", item2)
	}
	_, evs = post(t, s, map[string]any{"input": []any{user(prompt), item, map[string]any{"type": "function_call_output", "call_id": item["call_id"]}, item2, map[string]any{"type": "custom_tool_call_output", "call_id": item2["call_id"]},
		// An output that answers no call (0.171's goal objective) is no step.
		map[string]any{"type": "function_call_output", "name": "goal_objective", "namespace": "agent", "output": "x"}}})
	if d := evs[2]["delta"]; d != "mock: done (2 steps)" {
		t.Fatalf("closing text %v", d)
	}

	resp, _ := post(t, s, map[string]any{"input": []any{user("[[error: 503]]")}})
	if resp.StatusCode != 503 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	start := time.Now()
	post(t, s, map[string]any{"input": []any{user("[[slow: 300ms]]")}})
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("slow reply was not slow")
	}
	if n := len(s.Requests()); n != 7 {
		t.Fatalf("recorded %d requests, want 7", n)
	}
	if s.Requests()[0].LastUserText() != "hi there" {
		t.Fatalf("recorded body %s", s.Requests()[0].Body)
	}
}

func TestPlanDirective(t *testing.T) {
	r := Request{JSON: map[string]any{"input": []any{user("[[plan: read | [x] write | test]]")}, "tools": []any{}}}
	reply := Directives(r)
	if reply.Call == nil || reply.Call.Name != "update_plan" {
		t.Fatalf("%+v", reply)
	}
	want := `{"plan":[{"status":"in_progress","step":"read"},{"status":"completed","step":"write"},{"status":"pending","step":"test"}]}`
	if reply.Call.Arguments != want {
		t.Fatalf("args %s", reply.Call.Arguments)
	}
}

// The mcp directive, on the three shapes real Codex sent (recorded by
// TestRecallFromInsideCodex): 0.128's namespace "mcp__cx__" in the tools;
// 0.169's tool_search first, then the namespace "mcp__cx" its output
// brought in; and a request with neither.
func TestMCPDirective(t *testing.T) {
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": `q [[mcp: cx search {"query":"w"}]]`}}}
	ns := func(name string) map[string]any {
		return map[string]any{"type": "namespace", "name": name, "tools": []any{map[string]any{"type": "function", "name": "search"}}}
	}
	cases := []struct {
		name  string
		tools []any
		input []any
		want  Reply
	}{
		{"0.128 namespace", []any{map[string]any{"type": "function", "name": "exec_command"}, ns("mcp__cx__")}, []any{user},
			Reply{Call: &FunctionCall{Namespace: "mcp__cx__", Name: "search", Arguments: `{"query":"w"}`}}},
		{"0.169 tool search", []any{map[string]any{"type": "tool_search"}}, []any{user},
			Reply{ToolSearch: &ToolSearchCall{Query: "cx search"}}},
		{"0.169 after the search", []any{map[string]any{"type": "tool_search"}},
			[]any{user, map[string]any{"type": "tool_search_call"}, map[string]any{"type": "tool_search_output", "tools": []any{ns("mcp__cx")}}},
			Reply{Call: &FunctionCall{Namespace: "mcp__cx", Name: "search", Arguments: `{"query":"w"}`}}},
		{"not offered", []any{map[string]any{"type": "function", "name": "exec_command"}}, []any{user},
			Reply{Text: "mock: no tool of MCP server cx named search among [exec_command]"}},
	}
	for _, c := range cases {
		got := Directives(Request{JSON: map[string]any{"tools": c.tools, "input": c.input}})
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(c.want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, g, w)
		}
	}
}

// Codex's own tools: a deferred one is searched for first, then called
// under its namespace; a goal's turn and a v2 child run what the prompt
// scripted for them.
func TestCodexToolDirectives(t *testing.T) {
	req := func(items ...any) Request {
		return Request{JSON: map[string]any{"input": items, "tools": []any{
			map[string]any{"type": "function", "name": "create_goal"}, map[string]any{"type": "tool_search"}}}}
	}
	prompt := `go [[tool: create_goal {"objective":"x"}]] [[tool: spawn_agent {"message":"t <<shell: ls>>"}]] [[continue: <<shell: make>>]] [[child: <<shell: pwd>>]]`
	call := func(r Reply) string {
		switch {
		case r.Call != nil:
			return r.Call.Namespace + "." + r.Call.Name + " " + r.Call.Arguments
		case r.ToolSearch != nil:
			return "search " + r.ToolSearch.Query
		}
		return "text " + r.Text
	}
	out := func(id string) map[string]any {
		return map[string]any{"type": "function_call_output", "call_id": id, "output": "ok"}
	}
	found := map[string]any{"type": "tool_search_output", "tools": []any{map[string]any{"type": "namespace", "name": "multi_agent_v1",
		"tools": []any{map[string]any{"type": "function", "name": "spawn_agent"}}}}}
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"a tool offered", req(user(prompt)), `.create_goal {"objective":"x"}`},
		{"a deferred tool is searched for", req(user(prompt), out("c1")), "search spawn agent"},
		{"then called in its namespace, nesting the child's", req(user(prompt), out("c1"), found), `multi_agent_v1.spawn_agent {"message":"t [[shell: ls]]"}`},
		{"a goal's turn", req(user(prompt), out("c1"), out("c2"), user(goalContinuation+" go on")), `.exec_command {"cmd":"make","yield_time_ms":5000}`},
		{"a v2 child's task", req(user(prompt), map[string]any{"type": "agent_message", "content": []any{}}), `.exec_command {"cmd":"pwd","yield_time_ms":5000}`},
	} {
		if tc.name == "a goal's turn" || tc.name == "a v2 child's task" {
			tc.r.JSON["tools"] = []any{map[string]any{"type": "function", "name": "exec_command"}}
		}
		if got := call(Directives(tc.r)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
