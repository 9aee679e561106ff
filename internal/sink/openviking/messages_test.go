package openviking

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/ovclient"
	"cx/internal/rollout"
)

// Every recorded rollout of both Codex versions maps to OpenViking messages
// as the OpenViking Codex plugin sends them: the assistant's texts and tool
// calls in the order the rollout has them, each call followed by its
// result, statuses from the server's documented set, the peer on every
// message, tool output bounded by max_tool_chars.
func TestMessagesFollowTheRollout(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "rollouts", "*", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no recorded rollouts")
	}
	statuses := map[string]bool{"pending": true, "running": true, "completed": true, "error": true}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			capt := rollout.Assemble(data, rollout.Options{MaxToolChars: 100000})
			var got []string
			calls := 0
			for _, turn := range capt.Turns {
				msgs := Messages(turn, "peer-1", 40, "")
				for i, m := range msgs {
					if m.PeerID != "peer-1" || m.TurnID != turn.Key || len(m.Parts) != 1 {
						t.Fatalf("message %+v", m)
					}
					p := m.Parts[0]
					switch {
					case p.Type == "text" && m.Role == "assistant":
						got = append(got, "text")
					case p.Type == "tool" && m.Role == "assistant":
						calls++
						got = append(got, "call:"+p.ToolID)
						if p.ToolStatus != ovclient.ToolRunning || p.ToolInput == nil {
							t.Fatalf("call %+v", p)
						}
						if i+1 >= len(msgs) || msgs[i+1].Role != "user" || msgs[i+1].Parts[0].ToolID != p.ToolID {
							t.Fatalf("call %s not followed by its result", p.ToolID)
						}
					case p.Type == "tool" && m.Role == "user":
						if len([]rune(p.ToolOutput)) > 40+len("… [999999 chars cut]") {
							t.Fatalf("tool output of %d chars", len(p.ToolOutput))
						}
					}
					if p.Type == "tool" && !statuses[p.ToolStatus] {
						t.Fatalf("status %q outside the server's set", p.ToolStatus)
					}
				}
			}
			if want := rolloutOrder(t, f, capt.Turns); !equal(got, want) {
				t.Fatalf("order:\n got %v\nwant %v", got, want)
			}
			if f == filepath.Join("..", "..", "..", "testdata", "rollouts", "0.169.0", "exec-tools.jsonl") && calls == 0 {
				t.Fatal("no tool call mapped from a rollout with tools")
			}
		})
	}
}

// rolloutOrder is the order of assistant texts and tool calls in the
// rollout's records that fall within captured turns (a fork's copied
// history and records between turns belong to none).
func rolloutOrder(t *testing.T, path string, turns []rollout.Turn) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A turn runs from its first record to its task_complete or
	// turn_aborted (a compaction's own task after an abort is no turn).
	var ends []int64
	var o int64
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Contains(line, []byte(`"type":"task_complete"`)) || bytes.Contains(line, []byte(`"type":"turn_aborted"`)) {
			ends = append(ends, o)
		}
		o += int64(len(line))
	}
	within := func(off int64) bool {
		for i, tu := range turns {
			end := int64(len(data))
			if i+1 < len(turns) {
				end = turns[i+1].Offset
			}
			for _, e := range ends {
				if e >= tu.Offset {
					end = min(end, e)
					break
				}
			}
			if off >= tu.Offset && off < end {
				return true
			}
		}
		return false
	}
	var out []string
	var off int64
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		at := off
		off += int64(len(line))
		var r struct {
			Type    string `json:"type"`
			Payload struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				CallID  string `json:"call_id"`
				ID      string `json:"id"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &r) != nil || r.Type != "response_item" || !within(at) {
			continue
		}
		switch r.Payload.Type {
		case "message":
			if r.Payload.Role == "assistant" && len(r.Payload.Content) > 0 && strings.TrimSpace(r.Payload.Content[0].Text) != "" {
				out = append(out, "text")
			}
		case "function_call", "custom_tool_call", "local_shell_call":
			id := r.Payload.CallID
			if id == "" {
				id = r.Payload.ID
			}
			out = append(out, "call:"+id)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Texts and calls interleave as they happened; a call without a result
// (the turn ended first) gets an error result, never a status outside the
// server's set.
func TestMessagesInterleave(t *testing.T) {
	code := 2
	turn := rollout.Turn{Key: "t1", User: "go", Assistant: []string{"looking", "found it"},
		Tools: []rollout.ToolCall{
			{CallID: "c1", Name: "shell", Input: `{"cmd":"ls"}`, Output: "a b", Done: true, After: 1},
			{CallID: "c2", Name: "shell", Input: "raw", Output: "boom", Done: true, ExitCode: &code, After: 1},
			{CallID: "c3", Name: "shell", Input: `{}`, After: 2},
		}}
	var got []string
	for _, m := range Messages(turn, "", 100, "") {
		p := m.Parts[0]
		s := m.Role + ":" + p.Type
		if p.Type == "text" {
			s += ":" + p.Text
		} else {
			s += ":" + p.ToolID + ":" + p.ToolStatus
		}
		got = append(got, s)
	}
	want := []string{"user:text:go", "assistant:text:looking",
		"assistant:tool:c1:running", "user:tool:c1:completed",
		"assistant:tool:c2:running", "user:tool:c2:error",
		"assistant:text:found it",
		"assistant:tool:c3:running", "user:tool:c3:error"}
	if !equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

// A subagent's turn names its parent's session in a context part of its
// user message; its other messages, and a parent's, are as they were.
func TestChildTurnNamesItsParent(t *testing.T) {
	turn := rollout.Turn{Key: "t1", User: "child task", Assistant: []string{"done"}}
	child := Messages(turn, "", 100, "01a218b3-10f1-7843-b6a6-c0aa6bd7591e")
	own := Messages(turn, "", 100, "")
	if len(child) != len(own) || len(child[0].Parts) != 2 || len(own[0].Parts) != 1 {
		t.Fatalf("child %+v own %+v", child, own)
	}
	p := child[0].Parts[1]
	if p.Type != "context" || p.URI != "viking://session/cx-01a218b3-10f1-7843-b6a6-c0aa6bd7591e" || p.ContextType != "session" || !strings.Contains(p.Abstract, "01a218b3-10f1-7843-b6a6-c0aa6bd7591e") {
		t.Errorf("context part %+v", p)
	}
}
