// Package mcpproto is what cx's MCP server, its front and its installer
// agree on: the name the server is registered under in Codex, the MCP
// protocol revisions it speaks, the JSON-RPC envelope and its lines, and
// the answers that need no archive (the handshake, ping, the tool list) —
// one home for each, so the server (mcpserver), the front Codex starts
// (mcpfront, in cx-mcp) and doctor's probe (hookcfg) cannot drift apart.
package mcpproto

// Name is the server's name, and the name cx registers it under in Codex.
const Name = "cx"

// Versions are the MCP revisions the server speaks, newest first; a client
// asking for another is answered with the newest.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// ProbeVersion is the revision doctor's probe asks for: one every Codex
// seen so far speaks, and the server too.
const ProbeVersion = "2025-06-18"
