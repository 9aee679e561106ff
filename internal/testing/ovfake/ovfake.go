// Package ovfake is a fake OpenViking server built from the server's own
// source (volcengine/OpenViking, the snapshot shared/openviking-api.md
// "Verified against the server's source" was read from), not from what cx
// expects. Each rule names the server file it follows. Where the server is
// lenient but cx must not rely on it (a tool status outside the documented
// set), the fake stores the message as the server would and records a
// contract violation the tests assert on.
//
// Faults apply to any route — appends, batches, commits, reads — and to
// the n-th matching request, so every step can be hit on a session's first
// and later generations: an error status, a lost answer (the work done,
// then an error or a dropped connection), an answer after the client's
// timeout with the work done, and a session lock held past the client's
// timeout (the work done after the client gave up).
package ovfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Options shape the server.
type Options struct {
	// APIKey puts the server in api_key mode with this user key; "" is dev
	// mode (no auth). openviking/server/auth.py resolve_identity.
	APIKey string
	// RootKey is a ROOT key: accepted, but 403 on session routes
	// (openviking/server/auth.py get_request_context: "ROOT API keys cannot
	// access tenant-scoped data APIs in api_key mode").
	RootKey string
	// Trusted is trusted mode: X-OpenViking-Account and X-OpenViking-User
	// are required (400 without). openviking/server/auth.py resolve_identity.
	Trusted bool
	// User is the user a key maps to (archive URIs name it); "default".
	User string
	// Legacy is an older server: no batch route, no config route, no
	// total_message_count (SessionMeta.total_message_count is None for
	// sessions without .meta.json, openviking/session/session.py load()).
	Legacy bool
	// AutoCommitAfter > 0 gives new sessions a server auto-commit policy:
	// the server commits by itself once this many live messages are held
	// (memory.session_auto_commit.default_enabled; off by default).
	AutoCommitAfter int
	// Summarize is how long phase 2 of a commit (the background archive
	// summary) takes: until it ends the archive has no .done, its overview is
	// not served and commit_count has not risen
	// (session.py _run_memory_extraction, _merge_and_save_commit_meta).
	// 0 means 50 ms; negative means it never finishes.
	Summarize time.Duration
	// LockWait is how long a request waits for a session lock another
	// request holds before it is answered 409 CONFLICT retryable (the
	// server's lock, session.py commit_async LockContext; its 30 s from
	// shared/openviking-api.md (verified section)). 0 means 30 s.
	LockWait time.Duration
	// OverviewWords is the size of a generated overview (~1,000 words on a
	// real server). 0 means 1,000.
	OverviewWords int
}

// Request is one recorded request.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Fault is applied to matching requests: those whose path contains Route
// (and whose method is Method, when set), after Skip of them passed.
type Fault struct {
	Route     string
	Method    string
	Skip      int
	Count     int           // how many matching requests (default 1)
	Status    int           // answer this status (error envelope), without the work unless AfterWork
	Retryable bool          // details.retryable (with 409)
	AfterWork bool          // do the work, then answer Status: a lost answer
	Drop      bool          // do the work, then close the connection unanswered
	Delay     time.Duration // do the work, then answer this late (past the client's timeout)
	Stall     time.Duration // hold the session's lock this long before the work (the work is done after the client gave up)
}

// Message is one stored message as the server keeps it.
type Message struct {
	Raw    json.RawMessage
	Role   string
	PeerID string
	TurnID string
}

// Archive is one accepted commit's archive.
type Archive struct {
	Index    int
	URI      string
	Messages []Message
	Done     bool // phase 2 finished: .done written, overview served
	Overview string
}

// Session is a copy of what the server holds for one session.
type Session struct {
	// Messages is every message the session ever stored, archived or live,
	// in order (what "stored once" is checked against).
	Messages []json.RawMessage
	Live     int
	// Total is total_message_count (nil on a legacy server).
	Total *int
	// CommitCount is the session's commit_count (rises when phase 2 ends).
	CommitCount int
	// Commits is the number of accepted commits that archived something.
	Commits    int
	Archives   []Archive
	AutoCommit int // the session's auto-commit threshold (0: off)
	// ServerCommits counts commits the server made by itself (auto-commit).
	ServerCommits int
}

type session struct {
	id            string
	live          []Message
	all           []Message
	total         *int
	commitCount   int
	archives      []*Archive
	autoCommit    int
	serverCommits int
	lock          chan struct{}
}

// Server is a running fake.
type Server struct {
	URL  string
	addr string
	opts Options

	mu         sync.Mutex
	ln         net.Listener
	srv        *http.Server
	down       bool // Down and not Up since
	requests   []Request
	faults     []*Fault
	sessions   map[string]*session
	memories   []memory
	violations []string

	// work counts what the server does after (or without) answering: a
	// commit's phase 2, a stalled request; Settle waits for it to end.
	workMu sync.Mutex
	workCh chan struct{} // closed when work drops to 0
	work   int
}

func (s *Server) begin() {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.work == 0 {
		s.workCh = make(chan struct{})
	}
	s.work++
}

func (s *Server) end() {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.work--; s.work == 0 {
		close(s.workCh)
	}
}

// Settle waits, up to d, until the server has no work in the background
// (a commit's phase 2, a stalled request): what a test waits for instead
// of sleeping. It reports whether the server settled.
func (s *Server) Settle(d time.Duration) bool {
	s.workMu.Lock()
	ch := s.workCh
	idle := s.work == 0
	s.workMu.Unlock()
	if idle {
		return true
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// Start runs a dev-mode fake (no auth) on a random loopback port.
func Start() (*Server, error) { return StartWith(Options{}) }

// StartWith runs the fake with options.
func StartWith(o Options) (*Server, error) {
	if o.User == "" {
		o.User = "default"
	}
	if o.Summarize == 0 {
		o.Summarize = 50 * time.Millisecond
	}
	if o.LockWait == 0 {
		o.LockWait = 30 * time.Second
	}
	if o.OverviewWords == 0 {
		o.OverviewWords = 1000
	}
	s := &Server{opts: o, sessions: map[string]*session{}}
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
	defer s.mu.Unlock()
	if s.down {
		return
	}
	s.down = true
	_ = s.srv.Close()
}

// Up listens again on the same address (nothing to do while up). While
// the server was down, an outgoing connection of this machine may have
// been given its port as a local one: Up tries again for up to 5 s.
func (s *Server) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", s.addr)
		if err == nil {
			s.serve(ln)
			s.down = false
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("listen on %s again: %w", s.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
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

// Unused counts fault applications still queued.
func (s *Server) Unused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.Count
	}
	return n
}

// Requests returns what the fake received.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Violations lists what clients sent that the server's contract does not
// document (stored anyway, as the server would).
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// UserTexts is the text of each user message the server stored for a
// session, in order: what a user's turns left there.
func (s *Server) UserTexts(id string) []string {
	ss, _ := s.Session(id)
	return UserTextsIn(ss.Messages)
}

// ArchiveUserTexts is, per archive of a session in order, the text of each
// user message it holds: what one commit took.
func (s *Server) ArchiveUserTexts(id string) [][]string {
	ss, _ := s.Session(id)
	var out [][]string
	for _, a := range ss.Archives {
		raws := make([]json.RawMessage, len(a.Messages))
		for i, m := range a.Messages {
			raws[i] = m.Raw
		}
		out = append(out, UserTextsIn(raws))
	}
	return out
}

// IDs is the id of every session the server holds, sorted.
func (s *Server) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// UserTextsIn is the text of each user message among msgs, in order.
func UserTextsIn(msgs []json.RawMessage) []string {
	var out []string
	for _, m := range msgs {
		var msg struct {
			Role  string `json:"role"`
			Parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"parts"`
		}
		_ = json.Unmarshal(m, &msg)
		for _, p := range msg.Parts {
			if msg.Role == "user" && p.Type == "text" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// Session returns a copy of a session's state.
func (s *Server) Session(id string) (Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return Session{}, false
	}
	out := Session{Live: len(ss.live), CommitCount: ss.commitCount, AutoCommit: ss.autoCommit, ServerCommits: ss.serverCommits}
	for _, m := range ss.all {
		out.Messages = append(out.Messages, m.Raw)
	}
	if ss.total != nil {
		t := *ss.total
		out.Total = &t
	}
	for _, a := range ss.archives {
		out.Archives = append(out.Archives, *a)
		if len(a.Messages) > 0 {
			out.Commits++
		}
	}
	return out, true
}

// SetAutoCommit sets a session's auto-commit threshold as a server admin
// would (0: off), creating the session if needed.
func (s *Server) SetAutoCommit(id string, after int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.session(id, true).autoCommit = after
}

// --- envelope and errors: openviking/server/models.py Response/ErrorInfo,
// shared/openviking-api.md (verified section) (codes → HTTP status, result null, details null).

func ok(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "result": result, "error": nil, "time": 0.001, "telemetry": nil})
}

var codeOf = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	405: "UNKNOWN", 409: "CONFLICT", 410: "SESSION_EXPIRED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED",
	500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

// fail answers an OpenVikingError: result null, details null unless given.
func fail(w http.ResponseWriter, httpStatus int, code, msg string, details map[string]any) {
	if code == "" {
		code = codeOf[httpStatus]
	}
	var d any
	if details != nil {
		d = details
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "result": nil,
		"error": map[string]any{"code": code, "message": msg, "details": d}})
}

// invalid is FastAPI's 422 as the server maps it: 400 INVALID_ARGUMENT with
// details.validation_errors (shared/openviking-api.md (verified section)).
func invalid(w http.ResponseWriter, msg string) {
	fail(w, 400, "INVALID_ARGUMENT", msg, map[string]any{"validation_errors": []any{map[string]any{"msg": msg}}})
}

// --- the request path

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	var fault *Fault
	for _, f := range s.faults {
		if f.Count > 0 && strings.Contains(r.URL.Path, f.Route) && (f.Method == "" || f.Method == r.Method) {
			if f.Skip > 0 {
				f.Skip--
				continue
			}
			f.Count--
			fault = f
			break
		}
	}
	s.mu.Unlock()
	if r.URL.Path == "/health" {
		// Not enveloped and never behind auth (shared/openviking-api.md (verified section)).
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "healthy": true, "version": "ovfake", "auth_mode": s.authMode()})
		return
	}
	if fault != nil && fault.Status != 0 && !fault.AfterWork {
		details := map[string]any(nil)
		if fault.Retryable {
			details = map[string]any{"retryable": true}
		}
		fail(w, fault.Status, "", fmt.Sprintf("injected %d", fault.Status), details)
		return
	}
	if !s.auth(w, r) {
		return
	}
	out := &recorder{ResponseWriter: w}
	if fault != nil && (fault.AfterWork || fault.Drop) {
		out.swallow = true
	}
	var stall time.Duration
	if fault != nil {
		stall = fault.Stall
	}
	if stall > 0 {
		s.begin()
		defer s.end()
	}
	s.route(out, r, body, stall)
	switch {
	case fault == nil:
	case fault.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
			}
		}
	case fault.AfterWork:
		fail(w, fault.Status, "", "injected after the work was done", nil)
	}
	if fault != nil && fault.Delay > 0 {
		time.Sleep(fault.Delay)
	}
	out.flush()
}

func (s *Server) authMode() string {
	switch {
	case s.opts.Trusted:
		return "trusted"
	case s.opts.APIKey != "" || s.opts.RootKey != "":
		return "api_key"
	}
	return "dev"
}

// auth follows openviking/server/auth.py (_extract_api_key,
// resolve_identity, get_request_context): X-API-Key wins over
// Authorization: Bearer; in api_key mode the account/user headers are
// refused (403) and a ROOT key may not reach session data (403); trusted
// mode needs both headers (400 without).
func (s *Server) auth(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Trusted {
		if r.Header.Get("X-OpenViking-Account") == "" || r.Header.Get("X-OpenViking-User") == "" {
			fail(w, 400, "INVALID_ARGUMENT", "trusted mode requires X-OpenViking-Account and X-OpenViking-User", nil)
			return false
		}
		return true
	}
	if s.opts.APIKey == "" && s.opts.RootKey == "" {
		return true
	}
	key := r.Header.Get("X-API-Key")
	if key == "" {
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	switch {
	case key == "":
		fail(w, 401, "UNAUTHENTICATED", "Missing API Key when resolving identity.", nil)
		return false
	case key != s.opts.APIKey && key != s.opts.RootKey:
		fail(w, 401, "UNAUTHENTICATED", "invalid API key", nil)
		return false
	case r.Header.Get("X-OpenViking-Account") != "" || r.Header.Get("X-OpenViking-User") != "":
		// Current servers refuse identity headers in api_key mode (the
		// snapshot the shared doc read dropped them).
		fail(w, 403, "PERMISSION_DENIED", "X-OpenViking-Account can only assert identity in trusted mode.", nil)
		return false
	case key == s.opts.RootKey:
		fail(w, 403, "PERMISSION_DENIED", "ROOT API keys cannot access tenant-scoped data APIs in api_key mode.", nil)
		return false
	}
	return true
}

// recorder holds the answer until the fault says what to do with it.
type recorder struct {
	http.ResponseWriter
	swallow bool
	code    int
	buf     []byte
}

func (r *recorder) Write(b []byte) (int, error) { r.buf = append(r.buf, b...); return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) flush() {
	if r.swallow {
		return
	}
	if r.code != 0 {
		r.ResponseWriter.WriteHeader(r.code)
	}
	_, _ = r.ResponseWriter.Write(r.buf)
}

// session returns a session (nil when unknown and !create). Caller holds mu.
func (s *Server) session(id string, create bool) *session {
	ss := s.sessions[id]
	if ss == nil && create {
		ss = &session{id: id, lock: make(chan struct{}, 1), autoCommit: s.opts.AutoCommitAfter}
		if !s.opts.Legacy {
			ss.total = new(int)
		}
		s.sessions[id] = ss
	}
	return ss
}

// lockSession takes a session's lock, waiting up to LockWait; false: 409
// CONFLICT retryable was answered.
func (s *Server) lockSession(w http.ResponseWriter, ss *session) bool {
	select {
	case ss.lock <- struct{}{}:
		return true
	case <-time.After(s.opts.LockWait):
		fail(w, 409, "CONFLICT", "session is busy", map[string]any{"retryable": true})
		return false
	}
}

func unlockSession(ss *session) { <-ss.lock }

var sessionRoute = regexp.MustCompile(`^/api/v1/sessions(?:/([^/]+)(/.*)?)?$`)

// memory is one memory the fake's search finds (the real server extracts
// them from committed sessions with a model; a test adds them by hand).
type memory struct {
	uri, category, abstract string
}

// AddMemory adds a memory (a leaf, level 2) the search route can find.
func (s *Server) AddMemory(uri, category, abstract string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memories = append(s.memories, memory{uri, category, abstract})
}

var findFields = map[string]bool{"query": true, "image_url": true, "target_uri": true, "context_type": true, "limit": true, "node_limit": true,
	"score_threshold": true, "filter": true, "include_provenance": true, "tags": true, "since": true, "until": true, "time_field": true,
	"level": true, "read_content": true, "telemetry": true}

// find follows openviking/server/routers/search.py find(): FindRequest
// (unknown fields refused: extra="forbid", a 422 the server maps to 400
// INVALID_ARGUMENT), score_threshold applied, limit applied, the answer a
// FindResult (memories, resources, skills, total; MatchedContext's uri,
// context_type, level, abstract, category, score, match_reason). The
// score is the share of the query's words (3 letters or more) a memory's
// abstract holds — a stand-in for the server's vector similarity, 0 to 1.
func (s *Server) find(w http.ResponseWriter, body []byte) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		invalid(w, "body is not a JSON object")
		return
	}
	for k := range raw {
		if !findFields[k] {
			invalid(w, "extra inputs are not permitted: "+k)
			return
		}
	}
	var req struct {
		Query          string   `json:"query"`
		Limit          *int     `json:"limit"`
		ScoreThreshold *float64 `json:"score_threshold"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		invalid(w, "bad field: "+err.Error())
		return
	}
	limit := 10 // context_assembler DEFAULT_LIMIT
	if req.Limit != nil {
		limit = *req.Limit
	}
	var words []string
	for _, f := range strings.FieldsFunc(strings.ToLower(req.Query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(f) >= 3 {
			words = append(words, f)
		}
	}
	s.mu.Lock()
	mems := append([]memory(nil), s.memories...)
	s.mu.Unlock()
	type hit struct {
		m     memory
		score float64
	}
	var hits []hit
	for _, m := range mems {
		n := 0
		for _, wd := range words {
			if strings.Contains(strings.ToLower(m.abstract), wd) {
				n++
			}
		}
		score := 0.0
		if len(words) > 0 {
			score = float64(n) / float64(len(words))
		}
		if score == 0 || (req.ScoreThreshold != nil && score < *req.ScoreThreshold) {
			continue
		}
		hits = append(hits, hit{m, score})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := []map[string]any{}
	for _, h := range hits {
		out = append(out, map[string]any{"uri": h.m.uri, "context_type": "memory", "level": 2, "abstract": h.m.abstract,
			"category": h.m.category, "score": h.score, "match_reason": ""})
	}
	ok(w, map[string]any{"memories": out, "resources": []any{}, "skills": []any{}, "total": len(out)})
}

// route follows openviking/server/routers/sessions.py (and search.py's
// find).
func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte, stall time.Duration) {
	if r.URL.Path == "/api/v1/search/find" {
		if r.Method != http.MethodPost {
			fail(w, 405, "UNKNOWN", "method not allowed", nil)
			return
		}
		if stall > 0 {
			time.Sleep(stall)
		}
		s.find(w, body)
		return
	}
	m := sessionRoute.FindStringSubmatch(r.URL.Path)
	if m == nil {
		fail(w, 404, "NOT_FOUND", "no route "+r.URL.Path, nil)
		return
	}
	id, rest := m[1], m[2]
	type route struct{ method, rest string }
	known := map[route]bool{{"POST", ""}: true, {"GET", "/"}: true, {"GET", "/context"}: true, {"POST", "/commit"}: true, {"POST", "/messages"}: true}
	if !s.opts.Legacy {
		known[route{"POST", "/messages/batch"}] = true
		known[route{"PATCH", "/config"}] = true
	}
	key := route{r.Method, rest}
	if id != "" && rest == "" {
		key.rest = "/"
	}
	if id == "" {
		key.rest = ""
	}
	if !known[key] {
		for k := range known {
			if k.rest == key.rest {
				// A known path with another method: 405 with code UNKNOWN.
				fail(w, 405, "UNKNOWN", "method not allowed", nil)
				return
			}
		}
		fail(w, 404, "NOT_FOUND", "no route "+r.URL.Path, nil)
		return
	}
	if key.rest == "" {
		s.create(w, body)
		return
	}
	s.mu.Lock()
	ss := s.session(id, false)
	if ss == nil && (key.rest == "/messages" || key.rest == "/messages/batch") {
		ss = s.session(id, true) // add_message: get(..., auto_create=True)
	}
	s.mu.Unlock()
	if ss != nil && r.Method != http.MethodGet {
		if !s.lockSession(w, ss) {
			return
		}
		defer unlockSession(ss)
		if stall > 0 {
			time.Sleep(stall)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch key.rest {
	case "/":
		// get_session: an unknown session is an error envelope with HTTP
		// 200 (the router returns Response(status="error") itself).
		if ss == nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "result": nil,
				"error": map[string]any{"code": "NOT_FOUND", "message": "Session " + id + " not found", "details": nil}})
			return
		}
		ok(w, s.info(ss))
	case "/messages":
		msg, err := s.parseMessage(body)
		if err != "" {
			invalid(w, err)
			return
		}
		s.add(ss, msg)
		ok(w, map[string]any{"session_id": id, "message_count": len(ss.live)})
	case "/messages/batch":
		var b struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &b) != nil || b.Messages == nil {
			invalid(w, "messages: field required")
			return
		}
		if len(b.Messages) > 100 {
			invalid(w, "messages: at most 100 per batch")
			return
		}
		var msgs []Message
		for i, raw := range b.Messages {
			msg, err := s.parseMessage(raw)
			if err != "" {
				invalid(w, fmt.Sprintf("messages[%d]: %s", i, err))
				return
			}
			msgs = append(msgs, msg)
		}
		for _, msg := range msgs {
			s.add(ss, msg)
		}
		ok(w, map[string]any{"session_id": id, "message_count": len(ss.live), "added": len(msgs)})
	case "/commit":
		if ss == nil {
			fail(w, 404, "NOT_FOUND", "Session "+id+" not found", nil)
			return
		}
		var c struct {
			Keep int `json:"keep_recent_count"`
		}
		if len(body) > 0 && json.Unmarshal(body, &c) != nil {
			invalid(w, "body: invalid JSON")
			return
		}
		ok(w, s.commit(ss, c.Keep, false))
	case "/context":
		budget := 128000
		if v := r.URL.Query().Get("token_budget"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				invalid(w, "token_budget must be a non-negative integer")
				return
			}
			budget = n
		}
		ok(w, s.context(ss, budget))
	case "/config":
		if ss == nil {
			fail(w, 404, "NOT_FOUND", "Session "+id+" not found", nil)
			return
		}
		var c map[string]json.RawMessage
		if json.Unmarshal(body, &c) != nil {
			invalid(w, "body: invalid JSON")
			return
		}
		if p, has := c["auto_commit_policy"]; has {
			ss.autoCommit = 0
			var pol struct {
				MessageCount int `json:"message_count"`
			}
			if string(p) != "null" && json.Unmarshal(p, &pol) == nil {
				ss.autoCommit = pol.MessageCount
			}
		}
		var pol any
		if ss.autoCommit > 0 {
			pol = map[string]any{"message_count": ss.autoCommit}
		}
		ok(w, map[string]any{"session_id": id, "auto_commit_policy": pol})
	}
}

// create is POST /api/v1/sessions: a new session, with its auto-commit
// policy when given (null: off).
func (s *Server) create(w http.ResponseWriter, body []byte) {
	var c struct {
		SessionID string          `json:"session_id"`
		Policy    json.RawMessage `json:"auto_commit_policy"`
	}
	if len(body) > 0 && json.Unmarshal(body, &c) != nil {
		invalid(w, "body: invalid JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.SessionID == "" {
		c.SessionID = fmt.Sprintf("s-%d", len(s.sessions)+1)
	}
	if s.sessions[c.SessionID] != nil {
		fail(w, 409, "ALREADY_EXISTS", "Session "+c.SessionID+" already exists", nil)
		return
	}
	ss := s.session(c.SessionID, true)
	if string(c.Policy) == "null" && !s.opts.Legacy {
		ss.autoCommit = 0
	}
	ok(w, map[string]any{"session_id": c.SessionID, "user": s.opts.User})
}

var peerID = regexp.MustCompile(`^[a-zA-Z0-9_.@-]+$`)

// documentedStatuses are the tool statuses the server documents
// (docs/en/api/05-sessions.md ToolPart; routers/sessions.py ToolPartRequest
// takes any string, default "pending").
var documentedStatuses = map[string]bool{"pending": true, "running": true, "completed": true, "error": true}

// parseMessage validates one message body as AddMessageRequest and
// part_from_dict do (openviking/server/routers/sessions.py,
// part types from routers/sessions.py PartRequest; peer_id pattern and batch
// limit from shared/openviking-api.md (verified section)); "" error: valid. Caller holds mu.
func (s *Server) parseMessage(raw []byte) (Message, string) {
	var b struct {
		Role    *string          `json:"role"`
		Content *string          `json:"content"`
		Parts   []map[string]any `json:"parts"`
		PeerID  *string          `json:"peer_id"`
		TurnID  string           `json:"turn_id"`
		Created *string          `json:"created_at"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return Message{}, "body: " + err.Error()
	}
	if b.Role == nil || *b.Role == "" {
		return Message{}, "role: field required"
	}
	if b.Content == nil && b.Parts == nil {
		return Message{}, "Either 'content' or 'parts' must be provided"
	}
	if b.PeerID != nil && !peerID.MatchString(*b.PeerID) {
		return Message{}, "peer_id must match ^[a-zA-Z0-9_.@-]+$"
	}
	if b.Created != nil {
		if _, err := time.Parse(time.RFC3339Nano, *b.Created); err != nil {
			return Message{}, "created_at must be ISO 8601"
		}
	}
	for i, p := range b.Parts {
		switch p["type"] {
		case "text":
			if _, ok := p["text"].(string); !ok {
				return Message{}, fmt.Sprintf("parts[%d]: text part needs text", i)
			}
		case "tool":
			st, _ := p["tool_status"].(string)
			if st == "" {
				st = "pending"
			}
			if !documentedStatuses[st] {
				s.violations = append(s.violations, fmt.Sprintf("tool_status %q is not one of pending|running|completed|error", st))
			}
			if in, has := p["tool_input"]; has && in != nil {
				if _, ok := in.(map[string]any); !ok {
					return Message{}, fmt.Sprintf("parts[%d]: tool_input must be an object", i)
				}
			}
		case "context":
		default:
			return Message{}, fmt.Sprintf("parts[%d]: unknown part type %v", i, p["type"])
		}
	}
	if *b.Role != "user" && *b.Role != "assistant" {
		s.violations = append(s.violations, "role "+*b.Role+" is neither user nor assistant")
	}
	m := Message{Raw: append(json.RawMessage(nil), raw...), Role: *b.Role, TurnID: b.TurnID}
	if b.PeerID != nil {
		m.PeerID = *b.PeerID
	}
	return m, ""
}

// add is Session.add_message: live and total counts rise; an auto-commit
// policy may commit right after. Caller holds mu.
func (s *Server) add(ss *session, m Message) {
	ss.live = append(ss.live, m)
	ss.all = append(ss.all, m)
	if ss.total != nil {
		*ss.total++
	}
	if ss.autoCommit > 0 && len(ss.live) >= ss.autoCommit {
		s.commit(ss, 0, true)
	}
}

// info is get_session's result: SessionMeta.to_dict() plus pending_tokens;
// total_message_count only when the meta has it. Caller holds mu.
func (s *Server) info(ss *session) map[string]any {
	out := map[string]any{"session_id": ss.id, "message_count": len(ss.live), "commit_count": ss.commitCount,
		"pending_tokens": tokens(ss.live), "keep_recent_count": 0, "user": s.opts.User}
	if ss.total != nil {
		out["total_message_count"] = *ss.total
	}
	return out
}

// commit is Session.commit_async: phase 1 archives the live messages at
// once (message_count drops to what is kept); phase 2 runs in the
// background and only at its end writes .done and the overview and raises
// commit_count to the archive's index. Caller holds mu.
func (s *Server) commit(ss *session, keep int, byServer bool) map[string]any {
	if len(ss.live) == 0 || (keep > 0 && len(ss.live) <= keep) {
		return map[string]any{"session_id": ss.id, "status": "accepted", "task_id": nil, "archive_uri": nil, "archived": false}
	}
	idx := len(ss.archives) + 1
	split := len(ss.live) - keep
	a := &Archive{Index: idx, URI: fmt.Sprintf("viking://user/%s/sessions/%s/history/archive_%03d", s.opts.User, ss.id, idx),
		Messages: append([]Message(nil), ss.live[:split]...)}
	ss.archives = append(ss.archives, a)
	ss.live = append([]Message(nil), ss.live[split:]...)
	if byServer {
		ss.serverCommits++
	}
	finish := func() {
		a.Done = true
		a.Overview = overview(a, s.opts.OverviewWords)
		ss.commitCount = max(ss.commitCount, idx)
	}
	if s.opts.Summarize > 0 {
		s.begin()
		time.AfterFunc(s.opts.Summarize, func() {
			defer s.end()
			s.mu.Lock()
			defer s.mu.Unlock()
			finish()
		})
	}
	return map[string]any{"session_id": ss.id, "status": "accepted", "task_id": fmt.Sprintf("task-%s-%d", ss.id, idx),
		"archive_uri": a.URI, "archived": true}
}

// context is get_session_context: pending-archive and live messages spend
// the budget first; the newest finished archive's overview is included
// only if it fits what remains. Caller holds mu.
func (s *Server) context(ss *session, budget int) map[string]any {
	var msgs []Message
	var latest *Archive
	if ss != nil {
		for _, a := range ss.archives {
			if a.Done {
				latest, msgs = a, nil
			} else {
				msgs = append(msgs, a.Messages...)
			}
		}
		msgs = append(msgs, ss.live...)
	}
	used := tokens(msgs)
	remaining := max(0, budget-used)
	text := ""
	otoks := 0
	if latest != nil && (len(latest.Overview)+3)/4 <= remaining {
		text, otoks = latest.Overview, (len(latest.Overview)+3)/4
	}
	raw := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		raw = append(raw, m.Raw)
	}
	return map[string]any{"latest_archive_overview": text, "pre_archive_abstracts": []any{}, "messages": raw,
		"estimatedTokens": used + otoks}
}

// tokens estimates like Message.estimated_tokens: characters / 4.
func tokens(ms []Message) int {
	n := 0
	for _, m := range ms {
		n += (len(m.Raw) + 3) / 4
	}
	return n
}

// overview is a summary of about words words, as phase 2's Working
// Memory document runs to.
func overview(a *Archive, words int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Session Summary\n\n**Overview**: archive_%03d, %d messages.\n\n", a.Index, len(a.Messages))
	for i := 0; i < words; i++ {
		fmt.Fprintf(&b, "w%d ", i%97)
	}
	return b.String()
}
