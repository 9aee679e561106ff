// Package ovfake is a fake OpenViking server that follows the session API
// contract (shared/openviking-api.md): envelopes, error codes, auto-created
// sessions on /messages, 404 for unknown sessions on /commit and /context,
// accepted/skipped commits. It records every request and injects faults on
// demand: refused connections, slow answers, and error statuses.
package ovfake

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

// Request is one recorded request.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Fault is injected into the next Count requests whose path contains Route.
type Fault struct {
	Route     string
	Status    int           // answer with this status (error envelope)
	Retryable bool          // with 409: details.retryable
	Delay     time.Duration // answer late (past the client's timeout)
	AfterOK   bool          // do the work, then answer Status (a lost answer)
	Count     int
}

// Session is what the fake holds for one session.
type Session struct {
	Messages []json.RawMessage
	Commits  int
	Pending  int // messages since the last commit
}

// Server is a running fake.
type Server struct {
	URL    string
	APIKey string // when set, requests must carry it
	addr   string

	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
	requests []Request
	faults   []*Fault
	sessions map[string]*Session
}

// Start runs the fake on a random loopback port.
func Start() (*Server, error) {
	s := &Server{sessions: map[string]*Session{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	s.mu.Lock()
	s.serve(ln)
	s.mu.Unlock()
	return s, nil
}

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 5 * time.Second}
	s.ln, s.srv = ln, srv
	go func() { _ = srv.Serve(ln) }()
}

// Down stops accepting connections (a refused connection for clients).
func (s *Server) Down() {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	_ = srv.Close()
}

// Up listens again on the same address.
func (s *Server) Up() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serve(ln)
	return nil
}

// Close stops the server.
func (s *Server) Close() { s.Down() }

// Inject queues a fault.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Count == 0 {
		f.Count = 1
	}
	s.faults = append(s.faults, &f)
}

// Requests returns what the fake received.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Session returns a copy of a session's state.
func (s *Server) Session(id string) (Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return Session{}, false
	}
	return Session{Messages: append([]json.RawMessage(nil), ss.Messages...), Commits: ss.Commits, Pending: ss.Pending}, true
}

func ok(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "result": result, "time": 0.001})
}

var codes = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "CONFLICT", 410: "SESSION_EXPIRED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
	503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

func fail(w http.ResponseWriter, status int, msg string, retryable bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	details := map[string]any{}
	if retryable {
		details["retryable"] = true
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "result": nil,
		"error": map[string]any{"code": codes[status], "message": msg, "details": details}})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	var fault *Fault
	for _, f := range s.faults {
		if f.Count > 0 && strings.Contains(r.URL.Path, f.Route) {
			f.Count--
			fault = f
			break
		}
	}
	s.mu.Unlock()
	if r.URL.Path == "/health" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "healthy": true, "version": "fake", "auth_mode": "api_key"})
		return
	}
	if fault != nil && fault.Delay > 0 {
		time.Sleep(fault.Delay)
	}
	if fault != nil && fault.Status != 0 && !fault.AfterOK {
		fail(w, fault.Status, fmt.Sprintf("injected %d", fault.Status), fault.Retryable)
		return
	}
	if s.APIKey != "" && r.Header.Get("X-API-Key") != s.APIKey && r.Header.Get("Authorization") != "Bearer "+s.APIKey {
		fail(w, 401, "missing or wrong API key", false)
		return
	}
	rec := &recorder{ResponseWriter: w}
	if fault != nil && fault.AfterOK {
		rec.swallow = true
	}
	s.route(rec, r, body)
	if fault != nil && fault.AfterOK {
		fail(w, fault.Status, "injected after the work was done", fault.Retryable)
	}
}

// recorder lets a fault drop the real answer after the work is done.
type recorder struct {
	http.ResponseWriter
	swallow bool
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.swallow {
		return len(b), nil
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) WriteHeader(code int) {
	if !r.swallow {
		r.ResponseWriter.WriteHeader(code)
	}
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 4 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "sessions" {
		fail(w, 404, "no route "+r.URL.Path, false)
		return
	}
	id := parts[3]
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	switch {
	case r.Method == http.MethodGet && len(parts) == 4:
		if ss == nil {
			fail(w, 404, "session not found", false)
			return
		}
		ok(w, map[string]any{"session_id": id, "message_count": len(ss.Messages), "commit_count": ss.Commits, "pending_tokens": ss.Pending * 10})
	case r.Method == http.MethodPost && len(parts) == 5 && parts[4] == "messages":
		var m map[string]any
		if json.Unmarshal(body, &m) != nil || m["role"] == nil {
			fail(w, 400, "role is required", false)
			return
		}
		if ss == nil {
			ss = &Session{}
			s.sessions[id] = ss
		}
		ss.Messages, ss.Pending = append(ss.Messages, body), ss.Pending+1
		ok(w, map[string]any{"session_id": id, "message_count": len(ss.Messages), "pending_tokens": ss.Pending * 10})
	case r.Method == http.MethodPost && len(parts) == 6 && parts[4] == "messages" && parts[5] == "batch":
		var b struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &b) != nil || len(b.Messages) > 100 {
			fail(w, 400, "bad batch", false)
			return
		}
		if ss == nil {
			ss = &Session{}
			s.sessions[id] = ss
		}
		ss.Messages, ss.Pending = append(ss.Messages, b.Messages...), ss.Pending+len(b.Messages)
		ok(w, map[string]any{"session_id": id, "message_count": len(ss.Messages), "pending_tokens": ss.Pending * 10, "added": len(b.Messages)})
	case r.Method == http.MethodPost && len(parts) == 5 && parts[4] == "commit":
		if ss == nil {
			fail(w, 404, "session not found", false)
			return
		}
		if ss.Pending == 0 {
			ok(w, map[string]any{"session_id": id, "status": "skipped", "reason": "no_messages", "archived": false})
			return
		}
		ss.Commits++
		ss.Pending = 0
		ok(w, map[string]any{"session_id": id, "status": "accepted", "task_id": fmt.Sprintf("task-%d", ss.Commits),
			"archive_uri": fmt.Sprintf("viking://session/%s/history/archive_%03d", id, ss.Commits), "archived": true})
	case r.Method == http.MethodGet && len(parts) == 5 && parts[4] == "context":
		if ss == nil {
			fail(w, 404, "session not found", false)
			return
		}
		overview := ""
		if ss.Commits > 0 {
			overview = fmt.Sprintf("Archive overview: %d archives, %d messages.", ss.Commits, len(ss.Messages))
		}
		ok(w, map[string]any{"latest_archive_overview": overview, "pre_archive_abstracts": []any{}, "messages": []any{}, "estimatedTokens": 0})
	default:
		fail(w, 404, "no route "+r.URL.Path, false)
	}
}
