package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/codextest"
	"cx/internal/openviking/ovfake"
)

// The real Codex through cx with the local and OpenViking sinks: the
// server sees each turn once and one commit per generation; with the server
// down at exit, the commit arrives after `cx ctl sweep`, once.
func TestOpenVikingSinkRealCodex(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		ov, err := ovfake.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer ov.Close()
		cfg := filepath.Join(h.CXHome, "config.toml")
		os.MkdirAll(h.CXHome, 0o700)
		os.WriteFile(cfg, []byte("sinks = [\"local\", \"openviking\"]\n[openviking]\nurl = \""+ov.URL+"\"\ntimeout = \"2s\"\n"), 0o600)

		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("first turn for viking", "mock reply: first turn for viking")
		tu.Prompt("second turn [[shell: echo viking]]", "mock: done (1 steps)")
		ov.Down() // the server is gone when the session ends
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("exit %d", code)
		}
		id := h.RolloutSessionIDs()[0]
		if st := h.Sessions()[id]; st.Status == "committed" {
			t.Fatalf("committed with the server down: %+v", st)
		}
		if status := h.CXCtl("ctl", "status"); !strings.Contains(status, "openviking") {
			t.Fatalf("the pending OpenViking job is not shown:\n%s", status)
		}
		if err := ov.Up(); err != nil {
			t.Fatal(err)
		}
		// The job waits out its backoff (about 2 s); sweeps finish it.
		deadline := time.Now().Add(20 * time.Second)
		for h.Sessions()[id].Status != "committed" && time.Now().Before(deadline) {
			h.CXCtl("ctl", "sweep")
			time.Sleep(500 * time.Millisecond)
		}
		committedOnce(t, h)
		s, ok := ov.Session("cx-" + id)
		if !ok || s.Commits != 1 {
			t.Fatalf("server: %+v", s)
		}
		var users []string
		for _, m := range s.Messages {
			var msg struct {
				Role  string `json:"role"`
				Parts []struct {
					Type     string `json:"type"`
					Text     string `json:"text"`
					ToolName string `json:"tool_name"`
				} `json:"parts"`
			}
			json.Unmarshal(m, &msg)
			if msg.Role == "user" {
				users = append(users, msg.Parts[0].Text)
			}
		}
		if strings.Join(users, "|") != "first turn for viking|second turn [[shell: echo viking]]" {
			t.Fatalf("turns on the server: %q", users)
		}
		if !strings.Contains(string(s.Messages[len(s.Messages)-1]), `"tool_name":"exec_command"`) {
			t.Fatalf("the tool call is not a tool part: %s", s.Messages[len(s.Messages)-1])
		}
	})
}
