package mcpproto

import "encoding/json"

// The JSON-RPC 2.0 envelope MCP speaks on stdio, one message per line:
// the server reads Requests and writes Responses; doctor's probe does the
// opposite.

// JSONRPC is the protocol's version member.
const JSONRPC = "2.0"

// JSON-RPC error codes (JSON-RPC 2.0 §5.1).
const (
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// Request is a request, or a notification when ID is empty.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
}

// Error is a response's error member.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Response answers a request.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}
