package mcpproto

import (
	"encoding/json"
	"fmt"
)

// HandoffEnv carries a stream's state from the front (`cx-mcp`,
// which Codex starts) to `cx mcp`, which the front execs in its place on
// the first tool call: the same process, the same pipes, so Codex sees one
// server throughout.
const HandoffEnv = "CX_MCP_HANDOFF"

// MaxPending bounds what a handoff carries in the environment (Linux
// takes at most 128 KiB a string; the bytes go as base64, a third more):
// the call that made it, and what the client sent after it before it was
// answered.
const MaxPending = 64 << 10

// Handoff is what the front hands over.
type Handoff struct {
	Initialized bool   `json:"initialized"`
	Pending     []byte `json:"pending,omitempty"` // read from the input, not answered
}

// Encode is h as HandoffEnv's value.
func (h Handoff) Encode() string {
	b, _ := json.Marshal(h)
	return string(b)
}

// DecodeHandoff reads HandoffEnv's value.
func DecodeHandoff(s string) (Handoff, error) {
	var h Handoff
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return h, fmt.Errorf("%s: %w", HandoffEnv, err)
	}
	return h, nil
}
