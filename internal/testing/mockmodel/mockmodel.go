// Package mockmodel is a mock OpenAI Responses API on 127.0.0.1 for driving
// the real Codex CLI in tests: it streams the SSE events Codex needs to
// complete a turn, answers with scripted replies (text, a shell command,
// apply_patch, update_plan, a slow reply, an error) chosen per request, and
// records every request body so tests can assert what reached the model.
package mockmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is one recorded POST /v1/responses.
type Request struct {
	Header http.Header
	Body   []byte         // decoded (decompressed) JSON body
	JSON   map[string]any // Body parsed
}

// Inputs returns the request's input items.
func (r Request) Inputs() []map[string]any {
	items, _ := r.JSON["input"].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// ToolNames lists the tools Codex offered in the request.
func (r Request) ToolNames() []string {
	tools, _ := r.JSON["tools"].([]any)
	var names []string
	for _, t := range tools {
		if m, ok := t.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return names
}

// ToolTypes lists the types of the tools Codex offered (function, custom,
// namespace, tool_search, web_search…).
func (r Request) ToolTypes() []string {
	tools, _ := r.JSON["tools"].([]any)
	var types []string
	for _, t := range tools {
		if m, ok := t.(map[string]any); ok {
			if s, ok := m["type"].(string); ok {
				types = append(types, s)
			}
		}
	}
	return types
}

// hasInput reports whether an input item of this type came after the last
// user message.
func (r Request) hasInput(typ string) bool {
	items := r.Inputs()
	for i := len(items) - 1; i >= 0; i-- {
		if items[i]["type"] == "message" && items[i]["role"] == "user" {
			return false
		}
		if items[i]["type"] == typ {
			return true
		}
	}
	return false
}

// toolLists are the tools Codex offered: the request's, and those its
// tool_search_outputs brought in.
func (r Request) toolLists() [][]any {
	var lists [][]any
	if tools, _ := r.JSON["tools"].([]any); tools != nil {
		lists = append(lists, tools)
	}
	for _, it := range r.Inputs() {
		if it["type"] == "tool_search_output" {
			if tools, _ := it["tools"].([]any); tools != nil {
				lists = append(lists, tools)
			}
		}
	}
	return lists
}

// MCPTool finds how Codex offers an MCP server's tool: as the function
// "mcp__SERVER__TOOL", or as the function TOOL of the namespace
// "mcp__SERVER__" (Codex 0.128 lists it so in its tools) or "mcp__SERVER"
// (Codex 0.169, only in the tools a tool_search_output brought in).
func (r Request) MCPTool(server, tool string) (namespace, name string, ok bool) {
	ns, flat := "mcp__"+server+"__", "mcp__"+server+"__"+tool
	for _, tools := range r.toolLists() {
		for _, t := range tools {
			m, _ := t.(map[string]any)
			switch {
			case m["name"] == flat:
				return "", flat, true
			case m["type"] == "namespace" && (m["name"] == ns || m["name"] == strings.TrimSuffix(ns, "__")):
				children, _ := m["tools"].([]any)
				for _, c := range children {
					if cm, _ := c.(map[string]any); cm["name"] == tool {
						return m["name"].(string), tool, true
					}
				}
			}
		}
	}
	return "", "", false
}

// Tool finds how Codex offers one of its own tools: a function NAME in
// its tools or in a tool_search_output's, or a function of a namespace
// there ("collaboration" holds multi_agent_v2's spawn_agent); a dotted
// NAME ("collaboration.spawn_agent") names the namespace.
func (r Request) Tool(name string) (namespace, fn string, ok bool) {
	wantNS, fn, dotted := strings.Cut(name, ".")
	if !dotted {
		wantNS, fn = "", name
	}
	for _, tools := range r.toolLists() {
		for _, t := range tools {
			m, _ := t.(map[string]any)
			switch {
			case m["type"] == "namespace":
				ns, _ := m["name"].(string)
				if wantNS != "" && ns != wantNS {
					continue
				}
				children, _ := m["tools"].([]any)
				for _, c := range children {
					if cm, _ := c.(map[string]any); cm["name"] == fn {
						return ns, fn, true
					}
				}
			case wantNS == "" && m["name"] == fn:
				return "", fn, true
			}
		}
	}
	return "", "", false
}

// lastPromptText is the text of the last user message that is not one of
// Codex's own (a goal's continuation).
func (r Request) lastPromptText() string {
	items := r.Inputs()
	for i := len(items) - 1; i >= 0; i-- {
		if items[i]["type"] == "message" && items[i]["role"] == "user" {
			if t := textOf(items[i]); !strings.HasPrefix(t, goalContinuation) && !strings.HasPrefix(t, "<") {
				return t
			}
		}
	}
	return ""
}

// LastUserText is the text of the last user message in the input.
func (r Request) LastUserText() string {
	items := r.Inputs()
	for i := len(items) - 1; i >= 0; i-- {
		if items[i]["type"] == "message" && items[i]["role"] == "user" {
			return textOf(items[i])
		}
	}
	return ""
}

func textOf(item map[string]any) string {
	switch c := item["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

// Reply is what the mock answers one request with.
type Reply struct {
	Text string // assistant text
	// Streamed: the text is sent as a model streams it, a delta for each
	// word (the space before it at its start), not in one delta.
	Streamed   bool
	Call       *FunctionCall   // a function tool call (exec_command, update_plan, …)
	ToolSearch *ToolSearchCall // a client-side tool_search call (Codex 0.169's deferred tools)
	CustomCall *CustomCall     // a freeform tool call (apply_patch)
	Delay      time.Duration   // wait before answering (a slow model)
	Status     int             // non-zero: answer this HTTP error instead
}

// FunctionCall is a function tool call; Arguments is JSON. Namespace is
// set for a tool offered inside a namespace (an MCP server's).
type FunctionCall struct {
	Namespace string
	Name      string
	Arguments string
}

// ToolSearchCall asks Codex's client-side tool search for tools (the
// shape of Codex's own parser test, parses_tool_search_call_items).
type ToolSearchCall struct{ Query string }

// CustomCall is a freeform tool call such as apply_patch.
type CustomCall struct {
	Name  string
	Input string
}

// Script chooses the reply for a request.
type Script func(r Request) Reply

// Server is a running mock model.
type Server struct {
	URL    string // base URL, e.g. http://127.0.0.1:PORT/v1
	Model  string
	script Script
	srv    *http.Server
	ln     net.Listener

	mu       sync.Mutex
	requests []Request
	seq      int
}

// Start starts a mock on a random loopback port. A nil script uses Directives.
func Start(model string, script Script) (*Server, error) {
	if script == nil {
		script = Directives
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mock model listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/v1", Model: model, script: script, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/responses", s.responses)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns every POST /v1/responses received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   []map[string]any{{"id": s.Model, "object": "model", "owned_by": "mock"}},
		"models": []any{},
	})
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &req.JSON); err != nil {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.seq++
	seq := s.seq
	s.mu.Unlock()

	reply := s.script(req)
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"error":{"message":"mock error %d","type":"server_error","code":null}}`, reply.Status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	respID := fmt.Sprintf("resp_mock_%d", seq)
	send("response.created", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "in_progress", "model": s.Model, "output": []any{}}})

	var item map[string]any
	switch {
	case reply.Call != nil:
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", seq),
			"call_id": fmt.Sprintf("call_%d", seq), "name": reply.Call.Name, "arguments": reply.Call.Arguments}
		if reply.Call.Namespace != "" {
			item["namespace"] = reply.Call.Namespace
		}
	case reply.ToolSearch != nil:
		item = map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("ts_%d", seq), "call_id": fmt.Sprintf("search_%d", seq),
			"execution": "client", "arguments": map[string]any{"query": reply.ToolSearch.Query, "limit": 8}}
	case reply.CustomCall != nil:
		item = map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_%d", seq),
			"call_id": fmt.Sprintf("call_%d", seq), "name": reply.CustomCall.Name, "input": reply.CustomCall.Input}
	default:
		msgID := fmt.Sprintf("msg_%d", seq)
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"id": msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		deltas := []string{reply.Text}
		if reply.Streamed {
			deltas = streamPieces(reply.Text)
		}
		for _, d := range deltas {
			send("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0,
				"content_index": 0, "delta": d})
		}
		item = map[string]any{"id": msgID, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
	}
	if item["type"] != "message" {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		item["status"] = "completed"
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "completed", "model": s.Model, "output": []any{item},
		"usage": map[string]any{
			"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 110,
		}}})
}

func readBody(r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
		return raw, nil
	default:
		// Neither pinned Codex compresses requests to a custom provider.
		return nil, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
}

// streamPieces splits text as a model's stream does: a piece for each
// word, the space before it at its start.
func streamPieces(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	return append(out, text[start:])
}
