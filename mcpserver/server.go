// Package mcpserver is `cx mcp`: cx's archive as an MCP server on stdio,
// with the tools search, session and turn. It is read-only — it opens the
// ledger read-only, on the first call that needs it — and every result is
// wrapped as context, not instructions, the same boundary as injection.
// Codex starts the front (`cx-mcp`, internal/mcpfront), which answers
// the handshake with the answers of internal/mcpproto, as this server does,
// and hands the stream here on the first tool call (Options.Handoff), so a
// session that never searches never starts cx.
//
// The protocol is the small part of MCP a tools-only server needs — the
// lifecycle (initialize, notifications/initialized), ping, tools/list and
// tools/call over newline-delimited JSON-RPC 2.0 — written here rather
// than linked from an SDK: cx is one binary, and every cx process (each
// hook Codex runs, every turn) pays the package initialisation of what is
// linked in; the official Go SDK's cost 0.45 ms per process (measured with
// GODEBUG=inittrace=1: jsonschema-go, encoding/gob). The tests hold this
// server to the official SDK's client.
//
// Requests are answered in order, one at a time; a line that is not a
// JSON-RPC message is dropped, never fatal; what was read before stdin
// closed is answered before the server ends.
package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"cx/inject"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/mcpproto"
	"cx/internal/proc"
	"cx/internal/recall/search"
)

// Name is the server's name, and the name cx registers it under in Codex.
const Name = mcpproto.Name

// Options configure the server.
type Options struct {
	Home    string // CX_HOME, whose ledger is searched
	Cwd     string // the directory whose project a search is limited to
	Version string
	// Log, when set, is told of each dropped line and, as the server
	// leaves, of what it cost (Codex starts one per session: cx's share
	// beside Codex's counts it) — while Home is there (a line would make it).
	Log func(format string, args ...any)
	// Handoff is the stream as the front that Codex started (cx-mcp)
	// hands it over: read before the server's input, with the stream's
	// state.
	Handoff mcpproto.Handoff
}

// tool is one of mcpproto.Tools, called.
type tool struct {
	name string
	call func(ctx context.Context, args json.RawMessage) (string, error)
}

// server is one session on one stream.
type server struct {
	o           Options
	tools       []tool
	db          *ledger.DB
	archive     *search.Archive
	archiveErr  error
	opened      bool
	initialized bool
}

func newServer(o Options) *server {
	s := &server{o: o}
	s.tools = []tool{{"search", s.search}, {"session", s.session}, {"turn", s.turn}}
	return s
}

// open opens the ledger once, when a tool first needs it.
func (s *server) open(ctx context.Context) (*search.Archive, error) {
	if !s.opened {
		s.opened = true
		// Read only: `cx mcp` never writes the ledger.
		if s.db, s.archiveErr = ledger.Open(ctx, s.o.Home, ledger.Reader, ledger.Options{}); s.archiveErr == nil {
			s.archive = search.NewArchive(s.db, s.o.Home)
		}
	}
	return s.archive, s.archiveErr
}

func (s *server) close() {
	if s.db != nil {
		s.db.Close()
	}
}

// decode reads a tool's arguments; unknown fields are refused.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = []byte("{}")
	}
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

func (s *server) search(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Query       string `json:"query"`
		Limit       int    `json:"limit"`
		AllProjects bool   `json:"all_projects"`
	}
	if err := decode(args, &in); err != nil {
		return "", err
	}
	a, err := s.open(ctx)
	if err != nil {
		return "", err
	}
	q := search.Query{Text: in.Query, Limit: min(max(in.Limit, 0), 50)}
	if !in.AllProjects {
		q.Project = s.o.Cwd
	}
	hits, err := a.Search(ctx, q)
	if err != nil {
		return "", err
	}
	body := search.HitsText(in.Query, hits)
	if len(hits) > 0 {
		body += "\nUse the turn tool (id, n) to read one turn whole, the session tool (id) for its checkpoint and turn list.\n"
	}
	return body, nil
}

func (s *server) session(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decode(args, &in); err != nil {
		return "", err
	}
	a, err := s.open(ctx)
	if err != nil {
		return "", err
	}
	v, err := a.Session(ctx, strings.TrimSpace(in.ID))
	if err != nil {
		return "", err
	}
	return v.Text(), nil
}

func (s *server) turn(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		ID string `json:"id"`
		N  int    `json:"n"`
	}
	if err := decode(args, &in); err != nil {
		return "", err
	}
	a, err := s.open(ctx)
	if err != nil {
		return "", err
	}
	v, err := a.Turn(ctx, strings.TrimSpace(in.ID), in.N)
	if err != nil {
		return "", err
	}
	return v.Text(), nil
}

// textResult is a tool's answer: its text (wrapped as context) or, for a
// failed call, the error as text the model can read.
func textResult(tool, text string, err error) map[string]any {
	if err != nil {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": err.Error()}}, "isError": true}
	}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": inject.Wrap("recall "+tool, text)}}}
}

// call answers a tool's call.
func (s *server) call(ctx context.Context, m mcpproto.Message) (any, *mcpproto.Error) {
	if err := mcpproto.Premature(m.Method, s.initialized); err != nil {
		return nil, err
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &mcpproto.Error{Code: mcpproto.CodeInvalidParams, Message: "tools/call: " + err.Error()}
	}
	for _, t := range s.tools {
		if t.name == p.Name {
			text, err := t.call(ctx, p.Arguments)
			return textResult(t.name, text, err), nil
		}
	}
	return nil, &mcpproto.Error{Code: mcpproto.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
}

// Run is Serve as `cx mcp` runs it: its lines go to CX_HOME's log, and a
// signal ends it at once (a read-only server), as its input's end does.
// Started by the front (cx-mcp) for a tool's call, it goes on with the
// stream the front hands over in its environment.
func Run(ctx context.Context, o Options, r io.Reader, w io.Writer) error {
	if v, ok := os.LookupEnv(mcpproto.HandoffEnv); ok {
		os.Unsetenv(mcpproto.HandoffEnv)
		h, err := mcpproto.DecodeHandoff(v)
		if err != nil {
			return err
		}
		o.Handoff = h
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	o.Log = logs.New(o.Home).Printf
	return Serve(ctx, o, r, w)
}

// Serve runs the server on r and w until r ends or ctx is done.
func Serve(ctx context.Context, o Options, r io.Reader, w io.Writer) error {
	if logf := o.Log; logf != nil {
		o.Log = func(format string, args ...any) {
			if _, err := os.Stat(o.Home); err == nil {
				logf(format, args...)
			}
		}
		defer func() { o.Log("mcp: leaving; cpu cx=%s", proc.SelfCPU().Round(time.Millisecond)) }()
	}
	s := newServer(o)
	defer s.close()
	s.initialized = o.Handoff.Initialized
	if len(o.Handoff.Pending) > 0 {
		r = io.MultiReader(bytes.NewReader(o.Handoff.Pending), r)
	}
	type read struct {
		line []byte
		err  error
	}
	lines := make(chan read)
	go func() { // a read cannot be abandoned: this one ends with the process
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := mcpproto.ReadLine(br)
			lines <- read{line, err}
			if err != nil {
				return
			}
		}
	}()
	out := bufio.NewWriter(w)
	for {
		var in read
		select {
		case <-ctx.Done():
			return nil
		case in = <-lines:
		}
		if m, ok := mcpproto.Parse(in.line, o.Log); ok {
			done, werr := mcpproto.Answered(out, m, &s.initialized, o.Version)
			if !done {
				res, rerr := s.call(ctx, m)
				werr = mcpproto.Write(out, mcpproto.Response{JSONRPC: mcpproto.JSONRPC, ID: m.ID, Result: res, Error: rerr})
			}
			if werr != nil {
				return fmt.Errorf("mcp: %w", werr)
			}
		}
		if in.err != nil {
			if errors.Is(in.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("mcp: %w", in.err)
		}
	}
}
