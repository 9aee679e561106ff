// Package openviking is a client of the OpenViking session API: add
// messages (batch, falling back to one at a time on older servers), commit,
// read a session's info and context, health. It follows the server's
// envelope and error contract and classifies failures as retryable or not
// (the rule of OpenViking's own Codex plugin).
package openviking

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Settings locate and authenticate the server.
type Settings struct {
	URL     string
	APIKey  string
	Account string
	User    string
	Peer    string
	Timeout time.Duration
}

// Resolve fills settings the user left empty from what they already have
// for OpenViking: ~/.openviking/ovcli.conf, then OPENVIKING_URL /
// OPENVIKING_BASE_URL, then the default http://127.0.0.1:1933. The API key
// comes from the environment variable keyEnv, else ovcli.conf.
func Resolve(s Settings, keyEnv string, getenv func(string) (string, bool), home string) Settings {
	var conf struct {
		URL     string `json:"url"`
		APIKey  string `json:"api_key"`
		Account string `json:"account"`
		User    string `json:"user"`
		Peer    string `json:"actor_peer_id"`
	}
	if data, err := os.ReadFile(filepath.Join(home, ".openviking", "ovcli.conf")); err == nil {
		_ = json.Unmarshal(data, &conf)
	}
	env := func(k string) string {
		if k == "" {
			return ""
		}
		v, _ := getenv(k)
		return v
	}
	first := func(vs ...string) string {
		for _, v := range vs {
			if v != "" {
				return v
			}
		}
		return ""
	}
	s.URL = first(s.URL, conf.URL, env("OPENVIKING_URL"), env("OPENVIKING_BASE_URL"), "http://127.0.0.1:1933")
	s.APIKey = first(s.APIKey, env(keyEnv), conf.APIKey)
	s.Account = first(s.Account, conf.Account)
	s.User = first(s.User, conf.User)
	s.Peer = first(s.Peer, conf.Peer)
	if s.Timeout <= 0 {
		s.Timeout = 10 * time.Second
	}
	return s
}

// Client talks to one server.
type Client struct {
	s    Settings
	http *http.Client
}

// New returns a client.
func New(s Settings) *Client {
	return &Client{s: s, http: &http.Client{Timeout: s.Timeout}}
}

// Error is a failed call.
type Error struct {
	Status    int // 0: no answer (connection error, timeout)
	Code      string
	Message   string
	Retryable bool
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return "openviking: " + e.Message
	}
	return fmt.Sprintf("openviking: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// ErrNotFound is an unknown session.
var ErrNotFound = errors.New("openviking: not found")

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// SessionID is OpenViking's id for a Codex session: "cx-<id>", sanitised.
func SessionID(codexID string) string { return "cx-" + unsafeID.ReplaceAllString(codexID, "_") }

// Part is one message part.
type Part struct {
	Type       string         `json:"type"`
	Text       string         `json:"text,omitempty"`
	ToolID     string         `json:"tool_id,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	ToolInput  map[string]any `json:"tool_input,omitempty"`
	ToolOutput string         `json:"tool_output,omitempty"`
	ToolStatus string         `json:"tool_status,omitempty"`
}

// Message is one session message.
type Message struct {
	Role      string `json:"role"`
	Parts     []Part `json:"parts"`
	CreatedAt string `json:"created_at,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	PeerID    string `json:"peer_id,omitempty"`
}

func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.s.URL, "/")+path, rd)
	if err != nil {
		return &Error{Message: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.s.APIKey)
		req.Header.Set("X-API-Key", c.s.APIKey)
	}
	if c.s.Account != "" {
		req.Header.Set("X-OpenViking-Account", c.s.Account)
	}
	if c.s.User != "" {
		req.Header.Set("X-OpenViking-User", c.s.User)
	}
	if c.s.Peer != "" {
		req.Header.Set("X-OpenViking-Actor-Peer", c.s.Peer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &Error{Message: err.Error(), Retryable: true} // connection error or timeout
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	var env struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	if resp.StatusCode < 200 || resp.StatusCode > 299 || env.Status == "error" {
		e := &Error{Status: resp.StatusCode, Message: strings.TrimSpace(string(data))}
		if env.Error != nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
			var d struct {
				Retryable bool `json:"retryable"`
			}
			_ = json.Unmarshal(env.Error.Details, &d)
			e.Retryable = resp.StatusCode == 409 && d.Retryable
		}
		switch {
		case resp.StatusCode == 408, resp.StatusCode == 429, resp.StatusCode >= 500:
			e.Retryable = true
		}
		if resp.StatusCode == 404 {
			return fmt.Errorf("%w: %v", ErrNotFound, e)
		}
		return e
	}
	if out != nil && len(env.Result) > 0 {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return &Error{Status: resp.StatusCode, Message: "bad result: " + err.Error()}
		}
	}
	return nil
}

// Retryable reports whether a failure may succeed later.
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return !errors.Is(err, ErrNotFound)
}

// AddMessages appends messages (batch route; on 404/405 from an older
// server, one at a time).
func (c *Client) AddMessages(ctx context.Context, sid string, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sid)+"/messages/batch", map[string]any{"messages": msgs}, nil)
	var e *Error
	if err == nil || !(errors.Is(err, ErrNotFound) || (errors.As(err, &e) && e.Status == 405)) {
		return err
	}
	for _, m := range msgs {
		if err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sid)+"/messages", m, nil); err != nil {
			return err
		}
	}
	return nil
}

// CommitResult is the server's answer to a commit.
type CommitResult struct {
	Status     string `json:"status"` // accepted | skipped
	TaskID     string `json:"task_id"`
	ArchiveURI string `json:"archive_uri"`
	Reason     string `json:"reason"`
	Archived   bool   `json:"archived"`
}

// Commit archives the session's pending messages.
func (c *Client) Commit(ctx context.Context, sid string) (CommitResult, error) {
	var r CommitResult
	err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+url.PathEscape(sid)+"/commit", map[string]any{}, &r)
	return r, err
}

// Info is a session's counters.
type Info struct {
	MessageCount  int `json:"message_count"`
	CommitCount   int `json:"commit_count"`
	PendingTokens int `json:"pending_tokens"`
}

// Session returns a session's info; ErrNotFound when unknown.
func (c *Client) Session(ctx context.Context, sid string) (Info, error) {
	var i Info
	err := c.do(ctx, http.MethodGet, "/api/v1/sessions/"+url.PathEscape(sid)+"?auto_create=false", nil, &i)
	return i, err
}

// Overview is the latest archive overview ("" while the server is still
// summarising).
func (c *Client) Overview(ctx context.Context, sid string, tokenBudget int) (string, error) {
	var r struct {
		Overview string `json:"latest_archive_overview"`
	}
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%s/context?token_budget=%d", url.PathEscape(sid), tokenBudget), nil, &r)
	return r.Overview, err
}

// Health checks the server (not enveloped, no auth needed).
func (c *Client) Health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.s.URL, "/")+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &Error{Message: err.Error(), Retryable: true}
	}
	defer resp.Body.Close()
	var h struct {
		Healthy bool `json:"healthy"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	if resp.StatusCode != 200 || !h.Healthy {
		return &Error{Status: resp.StatusCode, Message: "unhealthy", Retryable: true}
	}
	return nil
}
