package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Hook events cx handles, in Codex's spelling (hookcfg installs a handler
// for each; SessionEnd, Interrupt and PostCompact exist from 0.169).
const (
	HookSessionStart     = "SessionStart"
	HookUserPromptSubmit = "UserPromptSubmit"
	HookStop             = "Stop"
	HookPreCompact       = "PreCompact"
	HookPostCompact      = "PostCompact"
	HookSessionEnd       = "SessionEnd"
	HookInterrupt        = "Interrupt"
)

// HookShell is the command line Codex runs a hook's command with: the
// user's $SHELL (else /bin/sh) with -c and the command (seen with 0.171,
// which ran `/bin/bash -c <command>` under SHELL=/bin/bash; Codex's
// source: codex-rs/hooks/src/engine/command_runner.rs,
// default_shell_command — its later source adds -l, a login shell).
func HookShell(getenv func(string) string, command string) []string {
	shell := getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	return []string{shell, "-c", command}
}

// HookEvents are the events a hook handler of cx's answers.
var HookEvents = []string{HookSessionStart, HookUserPromptSubmit, HookStop, HookPreCompact, HookPostCompact, HookSessionEnd, HookInterrupt}

// HookPayload is the JSON Codex gives a hook on stdin.
type HookPayload struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`
	TurnID         string `json:"turn_id"`
	Trigger        string `json:"trigger"`
	Reason         string `json:"reason"`
	Model          string `json:"model"`
	// AgentID and AgentType are set on an event a subagent's thread caused
	// (its task's UserPromptSubmit with the v1 tools carries the parent's
	// session_id and these): the parent did not ask it.
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
	// What was said: read for its size in the hook log, never stored.
	Prompt               string `json:"prompt"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// FromSubagent reports whether a subagent's thread caused the event.
func (p HookPayload) FromSubagent() bool { return p.AgentID != "" || p.AgentType != "" }

// ParseHook validates a hook's input and settles its event name: the
// payload's hook_event_name wins over the one on the command line.
func ParseHook(event string, payload []byte) (string, HookPayload, error) {
	var p HookPayload
	if len(strings.TrimSpace(string(payload))) == 0 {
		return event, p, errors.New("empty hook input")
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return event, p, fmt.Errorf("hook input is not JSON: %w", err)
	}
	if p.HookEventName != "" {
		event = p.HookEventName
	}
	if !slices.Contains(HookEvents, event) {
		return event, p, fmt.Errorf("unknown hook event %q", event)
	}
	if p.SessionID == "" {
		return event, p, fmt.Errorf("%s hook input has no session_id", event)
	}
	return event, p, nil
}
