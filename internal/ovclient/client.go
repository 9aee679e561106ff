// Package openviking is a client of the OpenViking session API: add
// messages (batch, falling back to one at a time on older servers), commit,
// read a session's info and context, health. It follows the server's
// envelope and error contract and classifies failures as retryable or not
// (the rule of OpenViking's own Codex plugin). It also resolves the
// settings the user already has for OpenViking and detects its Codex
// plugin.
package ovclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Settings locate and authenticate the server.
type Settings struct {
	URL     string
	APIKey  string
	Account string
	User    string
	Peer    string // goes into each message's peer_id (session routes ignore the peer header)
	Timeout time.Duration
}

// Source says where each resolved setting came from ("" when unset), for
// doctor.
type Source map[string]string

// defaultURL is the server's default address.
const defaultURL = "http://127.0.0.1:1933"

// Resolve fills the settings cx's own config left empty the way the
// OpenViking tools read theirs: the environment (OPENVIKING_URL,
// OPENVIKING_BASE_URL, the key variable keyEnv then OPENVIKING_API_KEY and
// OPENVIKING_BEARER_TOKEN, OPENVIKING_ACCOUNT, OPENVIKING_USER,
// OPENVIKING_PEER_ID) over ovcli.conf (OPENVIKING_CLI_CONFIG_FILE, else
// ~/.openviking/ovcli.conf: url, api_key, account|account_id,
// user|user_id, peer_id|actor_peer_id), then the default URL. cx's
// [openviking] keys win over both.
func Resolve(s Settings, keyEnv string, getenv func(string) (string, bool), home string) (Settings, Source) {
	env := func(k string) string {
		if k == "" {
			return ""
		}
		v, _ := getenv(k)
		return strings.TrimSpace(v)
	}
	confPath := env("OPENVIKING_CLI_CONFIG_FILE")
	if confPath == "" {
		confPath = filepath.Join(home, ".openviking", "ovcli.conf")
	} else if rest, ok := strings.CutPrefix(confPath, "~/"); ok {
		confPath = filepath.Join(home, rest)
	}
	conf := map[string]any{}
	if data, err := os.ReadFile(confPath); err == nil {
		_ = json.Unmarshal(data, &conf)
	}
	cf := func(k string) string {
		v, _ := conf[k].(string)
		return strings.TrimSpace(v)
	}
	src := Source{}
	type cand struct{ v, from string }
	pick := func(field string, cs ...cand) string {
		for _, c := range cs {
			if c.v != "" {
				src[field] = c.from
				return c.v
			}
		}
		return ""
	}
	const cx = "cx config [openviking]"
	confName := "ovcli.conf (" + confPath + ")"
	s.URL = pick("url", cand{s.URL, cx}, cand{env("OPENVIKING_URL"), "$OPENVIKING_URL"}, cand{env("OPENVIKING_BASE_URL"), "$OPENVIKING_BASE_URL"},
		cand{cf("url"), confName}, cand{defaultURL, "default"})
	s.URL = strings.TrimRight(s.URL, "/")
	s.APIKey = pick("api_key", cand{env(keyEnv), "$" + keyEnv}, cand{env("OPENVIKING_API_KEY"), "$OPENVIKING_API_KEY"},
		cand{env("OPENVIKING_BEARER_TOKEN"), "$OPENVIKING_BEARER_TOKEN"}, cand{cf("api_key"), confName})
	s.Account = pick("account", cand{s.Account, cx}, cand{env("OPENVIKING_ACCOUNT"), "$OPENVIKING_ACCOUNT"},
		cand{cf("account"), confName}, cand{cf("account_id"), confName})
	s.User = pick("user", cand{s.User, cx}, cand{env("OPENVIKING_USER"), "$OPENVIKING_USER"},
		cand{cf("user"), confName}, cand{cf("user_id"), confName})
	s.Peer = pick("peer", cand{s.Peer, cx}, cand{env("OPENVIKING_PEER_ID"), "$OPENVIKING_PEER_ID"},
		cand{cf("peer_id"), confName}, cand{cf("actor_peer_id"), confName})
	if s.Timeout <= 0 {
		s.Timeout = defaultTimeout
	}
	return s, src
}

// defaultTimeout outlasts the server's 30 s session lock, so an answer that
// is coming is not given up on.
const defaultTimeout = 35 * time.Second

// ServerHold is how long the server may still act on a request after the
// client stopped waiting: a request queued behind a session's lock (up to
// 30 s) is done when the lock frees, and then takes its own time.
const ServerHold = 40 * time.Second

// Client talks to one server.
type Client struct {
	s    Settings
	http *http.Client

	mu       sync.Mutex
	modeSeen bool // the server's auth mode is known
	identity bool // send the account/user headers
}

// sendIdentity reports whether the account and user headers go with
// session requests: not to a server in api_key mode, where the key decides
// who the user is and current servers refuse the headers with 403
// (openviking/server/auth.py); yes to trusted mode, which needs them. The
// mode is read once from /health (only when an account or user is set).
func (c *Client) sendIdentity(ctx context.Context) bool {
	if c.s.Account == "" && c.s.User == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.modeSeen {
		h, err := c.Health(ctx)
		if err != nil {
			return true // unknown: as configured; asked again next time
		}
		c.modeSeen, c.identity = true, h.AuthMode != "api_key"
	}
	return c.identity
}

// New returns a client.
func New(s Settings) *Client {
	return &Client{s: s, http: &http.Client{Timeout: s.Timeout}}
}

// Settings are the client's resolved settings.
func (c *Client) Settings() Settings { return c.s }

// Error is a failed call.
type Error struct {
	Status    int // 0: no answer (connection error, timeout)
	Code      string
	Message   string
	Retryable bool
	// Unanswered: the request may have reached the server (a timeout, a
	// connection dropped after sending) — whether it did is unknown.
	Unanswered bool
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return "openviking: " + e.Message
	}
	return fmt.Sprintf("openviking: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// ErrNotFound is an unknown session (code NOT_FOUND, whatever the HTTP
// status: get_session answers it with HTTP 200).
var ErrNotFound = errors.New("openviking: not found")

var unsafeID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]`) })

// SessionID is OpenViking's id for a Codex session: "cx-<id>", sanitised
// (the OpenViking Codex plugin's convention).
func SessionID(codexID string) string { return "cx-" + unsafeID().ReplaceAllString(codexID, "_") }

// Part is one message part.
type Part struct {
	Type       string         `json:"type"`
	Text       string         `json:"text,omitempty"`
	ToolID     string         `json:"tool_id,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	ToolInput  map[string]any `json:"tool_input,omitempty"`
	ToolOutput string         `json:"tool_output,omitempty"`
	ToolStatus string         `json:"tool_status,omitempty"`
	// A context part: a pointer to another context (uri), its kind and a
	// line about it.
	URI         string `json:"uri,omitempty"`
	ContextType string `json:"context_type,omitempty"`
	Abstract    string `json:"abstract,omitempty"`
}

// Tool statuses the server documents.
const (
	ToolRunning   = "running"
	ToolCompleted = "completed"
	ToolError     = "error"
)

// Message is one session message.
type Message struct {
	Role      string `json:"role"`
	Parts     []Part `json:"parts"`
	CreatedAt string `json:"created_at,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	PeerID    string `json:"peer_id,omitempty"`
}

type envelope struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
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
	req, err := http.NewRequestWithContext(ctx, method, c.s.URL+path, rd)
	if err != nil {
		return &Error{Message: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.s.APIKey != "" {
		// Both: servers read X-API-Key first, older ones only the bearer.
		req.Header.Set("Authorization", "Bearer "+c.s.APIKey)
		req.Header.Set("X-API-Key", c.s.APIKey)
	}
	if c.sendIdentity(ctx) {
		if c.s.Account != "" {
			req.Header.Set("X-OpenViking-Account", c.s.Account)
		}
		if c.s.User != "" {
			req.Header.Set("X-OpenViking-User", c.s.User)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// A refused connection never reached the server; anything else
		// (a timeout, a reset after sending) may have.
		return &Error{Message: err.Error(), Retryable: true, Unanswered: !refused(err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &Error{Status: resp.StatusCode, Message: "reading the answer: " + err.Error(), Retryable: true, Unanswered: true}
	}
	var env envelope
	_ = json.Unmarshal(data, &env)
	if resp.StatusCode < 200 || resp.StatusCode > 299 || env.Status == "error" {
		e := &Error{Status: resp.StatusCode, Message: bodyLine(data)}
		if env.Error != nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
			var d struct {
				Retryable bool `json:"retryable"`
			}
			_ = json.Unmarshal(env.Error.Details, &d) // details may be null
			e.Retryable = resp.StatusCode == 409 && d.Retryable
		}
		switch {
		case resp.StatusCode == http.StatusNotImplemented:
			// The route is missing (a server or proxy without it), like 404
			// and 405: waiting does not bring it.
		case resp.StatusCode == 408, resp.StatusCode == 429, resp.StatusCode >= 500:
			e.Retryable = true
		}
		if e.Code == "NOT_FOUND" || (resp.StatusCode == 404 && e.Code == "") {
			return fmt.Errorf("%w: %v", ErrNotFound, e)
		}
		return e
	}
	if out != nil && len(env.Result) > 0 && string(env.Result) != "null" {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return &Error{Status: resp.StatusCode, Message: "bad result: " + err.Error()}
		}
	}
	return nil
}

func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Retryable reports whether a failure may succeed later.
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return !errors.Is(err, ErrNotFound)
}

// Unanswered reports whether a failed request may still have reached the
// server (its effect is unknown until the server is asked).
func Unanswered(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Unanswered
}

// routeMissing: an older server without the route (405 or 501 — what a
// server or proxy without the method answers — or a 404: on routes where
// the session is known to exist or is auto-created, NOT_FOUND can only
// mean the route).
func routeMissing(err error) bool {
	var e *Error
	return errors.Is(err, ErrNotFound) || errors.As(err, &e) && (e.Status == http.StatusMethodNotAllowed || e.Status == http.StatusNotImplemented)
}

// maxBodyLine bounds the text of an error answer that is not the server's
// JSON envelope (a proxy's or another server's HTML page).
const maxBodyLine = 200

// bodyLine is an error answer's body as one bounded line: an HTML page's
// text without its markup, whitespace collapsed — what status, doctor and
// the log show.
func bodyLine(data []byte) string {
	text := string(data)
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "<") {
		var b strings.Builder
		inTag := false
		for _, r := range t {
			switch {
			case r == '<':
				inTag = true
				b.WriteByte(' ')
			case r == '>':
				inTag = false
			case !inTag:
				b.WriteRune(r)
			}
		}
		text = "(an HTML page) " + html.UnescapeString(b.String())
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > maxBodyLine {
		text = string(r[:maxBodyLine-1]) + "…"
	}
	return text
}

func sessionPath(sid string) string { return "/api/v1/sessions/" + url.PathEscape(sid) }

// AddMessages appends messages with the batch route (≤ 100 per request);
// an older server without it gets them one at a time. It returns how many
// were answered as added (a failure part-way through leaves the rest).
func (c *Client) AddMessages(ctx context.Context, sid string, msgs []Message) (int, error) {
	done := 0
	for done < len(msgs) {
		chunk := msgs[done:min(len(msgs), done+100)]
		err := c.do(ctx, http.MethodPost, sessionPath(sid)+"/messages/batch", map[string]any{"messages": chunk}, nil)
		if err == nil {
			done += len(chunk)
			continue
		}
		if !routeMissing(err) {
			return done, err
		}
		for _, m := range msgs[done:] {
			if err := c.do(ctx, http.MethodPost, sessionPath(sid)+"/messages", m, nil); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}

// CommitResult is the server's answer to a commit.
type CommitResult struct {
	Status     string `json:"status"` // accepted (skipped on older servers)
	TaskID     string `json:"task_id"`
	ArchiveURI string `json:"archive_uri"`
	Reason     string `json:"reason"`
	Archived   *bool  `json:"archived"`
}

// Empty reports a commit that archived nothing (no live messages).
func (r CommitResult) Empty() bool {
	return r.Status == "skipped" || (r.Archived != nil && !*r.Archived)
}

// Commit archives the session's live messages (keep_recent_count 0).
func (c *Client) Commit(ctx context.Context, sid string) (CommitResult, error) {
	var r CommitResult
	err := c.do(ctx, http.MethodPost, sessionPath(sid)+"/commit", map[string]any{"keep_recent_count": 0}, &r)
	return r, err
}

// Info is a session's counters.
type Info struct {
	// MessageCount is the live, unarchived messages: a commit resets it.
	MessageCount int `json:"message_count"`
	// TotalMessageCount counts every message ever added; nil on legacy
	// sessions.
	TotalMessageCount *int `json:"total_message_count"`
	// CommitCount rises when a commit's background phase ends.
	CommitCount   int `json:"commit_count"`
	PendingTokens int `json:"pending_tokens"`
}

// Session returns a session's info; ErrNotFound when unknown.
func (c *Client) Session(ctx context.Context, sid string) (Info, error) {
	var i Info
	err := c.do(ctx, http.MethodGet, sessionPath(sid)+"?auto_create=false", nil, &i)
	return i, err
}

// AutoCommit is what cx could do about a session's server-side auto-commit.
type AutoCommit string

const (
	AutoCommitOff         AutoCommit = "off"         // created or patched with auto_commit_policy null
	AutoCommitUnsupported AutoCommit = "unsupported" // an older server: it has no auto-commit
)

// Prepare makes sure the session exists with the server's auto-commit
// turned off, so every commit of it is cx's: a new session is created with
// auto_commit_policy null, an existing one is patched.
func (c *Client) Prepare(ctx context.Context, sid string, exists bool) (AutoCommit, error) {
	if !exists {
		err := c.do(ctx, http.MethodPost, "/api/v1/sessions", map[string]any{"session_id": sid, "auto_commit_policy": nil}, nil)
		var e *Error
		switch {
		case err == nil:
			// An older server ignores the policy: patch to learn which.
		case errors.As(err, &e) && e.Status == 409:
			// Created meanwhile (by a batch that reached the server).
		default:
			return "", err
		}
	}
	err := c.do(ctx, http.MethodPatch, sessionPath(sid)+"/config", map[string]any{"auto_commit_policy": nil}, nil)
	switch {
	case err == nil:
		return AutoCommitOff, nil
	case routeMissing(err):
		return AutoCommitUnsupported, nil
	}
	return "", err
}

// OverviewBudget is the token budget cx asks the context route with: the
// server spends it on raw messages first and includes the overview (~1,000
// words) only if it still fits, so a small budget drops it. The OpenViking
// Codex plugin asks the same and cuts on its side.
const OverviewBudget = 32000

// Overview is the latest finished archive's overview ("" while the server
// is still summarising, or when it did not fit the budget).
func (c *Client) Overview(ctx context.Context, sid string, tokenBudget int) (string, error) {
	var r struct {
		Overview string `json:"latest_archive_overview"`
	}
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("%s/context?token_budget=%d", sessionPath(sid), tokenBudget), nil, &r)
	return r.Overview, err
}

// Memory is one hit of the server's memory search.
type Memory struct {
	URI      string  `json:"uri"`
	Level    *int    `json:"level"` // 2: a leaf (a memory itself), 0/1: a directory's abstract or overview
	Abstract string  `json:"abstract"`
	Overview string  `json:"overview"`
	Category string  `json:"category"`
	Score    float64 `json:"score"`
}

// Find is the server's memory search (POST /api/v1/search/find, as the
// OpenViking Codex plugin's auto-recall asks it): the memories that bear on
// query, best first. Only the fields every server version takes are sent
// (openviking/server/routers/search.py FindRequest forbids unknown ones).
func (c *Client) Find(ctx context.Context, query string, limit int, minScore float64) ([]Memory, error) {
	var r struct {
		Memories []Memory `json:"memories"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/search/find", map[string]any{"query": query, "limit": limit, "score_threshold": minScore}, &r)
	return r.Memories, err
}

// HealthInfo is /health's answer.
type HealthInfo struct {
	Healthy  bool   `json:"healthy"`
	Version  string `json:"version"`
	AuthMode string `json:"auth_mode"`
}

// Health checks the server (not enveloped, no auth needed).
func (c *Client) Health(ctx context.Context) (HealthInfo, error) {
	var h HealthInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.s.URL+"/health", nil)
	if err != nil {
		return h, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return h, &Error{Message: err.Error(), Retryable: true}
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&h)
	if resp.StatusCode != 200 || !h.Healthy {
		return h, &Error{Status: resp.StatusCode, Message: "unhealthy", Retryable: true}
	}
	return h, nil
}
