// Package hookserver is the hook protocol end to end, the handler Codex
// runs for each hook event (`cx ctl hook <event>`): JSON on stdin, exactly
// one valid answer on stdout within the event's budget whatever its input,
// the ledger or a bug does; the audit line in hook-events.jsonl; the
// background sweeper started when commits are due. What the event means
// for the session is lifecycle's (Manager.HandleHook); what context it
// gives back is inject's, and per-prompt recall's (internal/recall).
//
// A hook payload goes down once: cmd/cx → hookserver → internal/codex
// (ParseHook) → lifecycle (HandleHook, OwnContext) → inject.
package hookserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cx/inject"
	"cx/internal/cli"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/crumbs"
	"cx/internal/health"
	"cx/internal/hookwire"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/proc"
	"cx/internal/recall/prompt"
	"cx/internal/redact"
	"cx/internal/sinks"
	"cx/internal/testpoint"
	"cx/lifecycle"
)

// Args reads the hook handler's command line (`cx ctl hook <event>`): its
// event, and why it is refused (Codex then gets a valid no-op answer, never
// an error). help is what `--help` shows: Codex never asks for it, a person
// does (`cx ctl hook --help`, `cx ctl help hook`).
func Args(args []string) (event, help string, argErr error) {
	spec := cli.Spec{Name: "hook", Synopsis: "<event>", Min: 1, Max: 1}
	fs, pos, argErr := spec.Parse(args)
	switch {
	case errors.Is(argErr, cli.ErrHelp):
		return "", spec.Usage(fs) + Help, nil
	case len(pos) == 1:
		return pos[0], "", argErr
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		return args[0], "", argErr
	}
	return "", "", argErr
}

// HookCall is one run of the hook handler Codex starts for an event.
type HookCall struct {
	Event  string // the event named on the command line
	ArgErr error  // the command line was refused: answer with a no-op
	Stdin  io.Reader
	Stdout io.Writer
	Getenv func(string) (string, bool)
	// Start is when the process began: deadlines count from there, as
	// Codex's timeout does.
	Start time.Time
	// PPID is the hook's parent process: the Codex that ran it.
	PPID int
	// ClientCPU is what the hook's process used of the CPU before it gave
	// the hook to the host (µs).
	ClientCPU int64
	// Own is why no host took the hook, when this process asked (Serve);
	// else its client says it (hookwire.OwnEnv).
	Own string
	// Environ is the hook process's environment when this call is that
	// process (cmd/cx): the hook may then go to CX_HOME's hook host, which
	// reads it there. Nil: answered here, as in-process tests do.
	Environ []string
}

// hookAnswer prints exactly one answer, whoever gets there first: the
// handler, its deadline, or a recovered panic.
type hookAnswer struct {
	once sync.Once
	out  io.Writer
}

func (h *hookAnswer) send(event, context string) {
	h.once.Do(func() {
		if context == "" {
			fmt.Fprintln(h.out, "{}")
			return
		}
		b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": context}})
		fmt.Fprintln(h.out, string(b))
	})
}

// Serve is the hook protocol end to end, in the hook's process: JSON on
// stdin, one valid answer on stdout within the event's budget, whatever
// its input, the ledger or a bug does. The answer is CX_HOME's hook host's
// when one runs and takes it, else this process's own (answer), which
// then starts the background sweeper: to work the commits due, or to be
// the host of the hooks that follow. It returns the exit code: always 0.
func Serve(ctx context.Context, c HookCall) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(c.Stdout, "{}")
			code = 0
		}
	}()
	deadline := c.Start.Add(hookwire.Budget(c.Event))
	payload, readErr := readHookInput(c.Stdin, hookwire.MaxPayload, time.Until(deadline)-200*time.Millisecond)
	if v, _ := c.Getenv("CX_HOOKS_OFF"); v == "1" {
		fmt.Fprintln(c.Stdout, "{}")
		return 0
	}
	forward := c.Environ != nil && hookwire.Forwardable(c.Environ)
	if c.Environ != nil && !forward {
		c.Own = hookwire.OwnOff
	}
	if v, _ := c.Getenv(hookwire.HostEnv); forward && readErr == nil && v != "asked" {
		if home, err := config.Home(c.Getenv); err == nil {
			req := hookwire.Request{Binary: exeIdentity(), Event: c.Event, Start: c.Start.UnixNano(), PPID: c.PPID, Env: c.Environ, Payload: payload,
				ClientCPU: hookwire.SelfCPU()}
			if c.ArgErr != nil {
				req.ArgErr = c.ArgErr.Error()
			}
			out, why := hookwire.Ask(home, req, deadline)
			if why == "" {
				_, _ = c.Stdout.Write(out)
				return 0
			}
			c.Own = why
		}
	}
	return answer(ctx, c, payload, readErr, nil, forward && hookwire.StartsHost(c.Environ))
}

// answer is one hook's answer, in the hook's process or the host's (h):
// exactly one valid answer on c.Stdout within the event's budget, whatever
// its input, the ledger or a bug does; the audit line; the commits due
// handed on (to the host's loop, or a background sweeper started for them).
// Whatever it cannot finish in time is picked up later from the rollout.
// In the hook's process, hostWanted starts the background sweeper to be
// the host when none runs. It returns the exit code: always 0.
func answer(ctx context.Context, c HookCall, payload []byte, readErr error, h *host, hostWanted bool) (code int) {
	ans := &hookAnswer{out: c.Stdout}
	var logger *logs.Logger
	defer func() {
		if r := recover(); r != nil {
			if logger != nil {
				logger.Printf("hook: panic: %v\n%s", r, debug.Stack())
			}
			ans.send("", "")
			code = 0
		}
	}()
	deadline := c.Start.Add(hookwire.Budget(c.Event))
	if v, _ := c.Getenv("CX_HOOKS_OFF"); v == "1" {
		ans.send("", "")
		return 0
	}
	cfg, cfgErr := config.Load(c.Getenv)
	logger = logs.New(cfg.Home)
	if h != nil && cfg.Home != h.home {
		// Not the host's CX_HOME: a no-op, and the rollout keeps the rest.
		logger.Printf("hook host: a hook of CX_HOME %s reached the host of %s", cfg.Home, h.home)
		ans.send("", "")
		return 0
	}
	runID, _ := c.Getenv("CX_RUN_ID")
	ev, p, perr := codex.ParseHook(c.Event, payload)
	if ev != c.Event {
		deadline = c.Start.Add(min(hookwire.Budget(ev), hookwire.Budget(c.Event)))
	}
	audit := hookAudit{Event: ev, RunID: runID, PPID: c.PPID, Hosted: h != nil, ClientCPU: c.ClientCPU, Payload: payload, Parsed: p, Err: perr}
	if h == nil {
		if audit.Own = c.Own; audit.Own == "" {
			audit.Own, _ = c.Getenv(hookwire.OwnEnv) // its client asked
		}
	}
	defer func() { recordHookEvent(cfg, c.Start, audit) }()
	switch {
	case c.ArgErr != nil:
		logger.Printf("hook: %v (answered with a no-op)", c.ArgErr)
		audit.Err = c.ArgErr
		ans.send("", "")
		return 0
	case readErr != nil:
		logger.Printf("hook %s: read input: %v", ev, readErr)
		audit.Err = readErr
		ans.send("", "")
		return 0
	case perr != nil:
		logger.Printf("hook %s: %v (answered with a no-op)", ev, perr)
		ans.send("", "")
		return 0
	case cfgErr != nil:
		logger.Printf("hook %s: %v", ev, cfgErr)
	}
	if strings.HasPrefix(p.SessionID, health.DoctorPrefix) {
		ans.send("", "")
		return 0
	}

	if h == nil {
		testpoint.Panic("hook-main")
	}
	done := make(chan struct{})
	var due dueWork
	var injection string
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// Per-prompt recall reads and ranks its window beside the hook's
	// ledger work, so the prompt waits for the slower of the two, not their
	// sum.
	rec := startRecall(ev, p, cfg, c.Getenv, logger)
	go func() {
		defer close(done)
		// In order: the event's work on the ledger, opened to write (what
		// the event means for the session, and the block it gives back);
		// then per-prompt recall, finished on that connection (or a
		// read-only one of its own when the hook could not open it) and
		// added after the block.
		var db *ledger.DB
		db, injection, due = handle(wctx, c, cfg, ev, p, runID, deadline, logger, h)
		if items := rec.give(wctx, c.Start, cfg, db, p); len(items) > 0 {
			injection = joinBlocks(injection, inject.ForPrompt(items))
		}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		logger.Printf("hook %s %s: out of time %v after start; answered, the rollout keeps the rest", ev, p.SessionID, time.Since(c.Start).Round(time.Millisecond))
		audit.TimedOut = true
		ans.send("", "")
		return 0
	}
	ans.send(ev, injection)
	audit.Answered = len(injection)
	switch {
	case h != nil:
		// The host's loop watches the threads of Codex started without
		// cx already: only jobs and a catch-up are asked of it.
		if due.jobs {
			h.due(false)
		}
		if due.catchUp {
			h.due(true)
		}
	case due.jobs || due.catchUp || due.watch:
		spawnSweeper(cfg.Home, logger, false)
	case hostWanted:
		spawnSweeper(cfg.Home, logger, true)
	}
	return 0
}

// dueWork is what a hook leaves for later: jobs due (their commits and
// appends), a sweep to catch up a long history, a thread of a Codex
// started without cx to watch.
type dueWork struct{ jobs, catchUp, watch bool }

// handle is the event's work: the ledger opened to write (nil when it
// could not be: the next start or sweep that can write it records the
// session from its rollout), what the event means for the session
// (lifecycle), the block it gives back, and whether commits are due. A
// panic is logged and answered with nothing.
func handle(ctx context.Context, c HookCall, cfg config.Config, ev string, p codex.HookPayload, runID string, deadline time.Time, logger *logs.Logger, h *host) (db *ledger.DB, injection string, due dueWork) {
	defer func() {
		if r := recover(); r != nil {
			logger.Printf("hook %s %s: panic: %v\n%s", ev, p.SessionID, r, debug.Stack())
			injection, due = "", dueWork{}
		}
	}()
	if h != nil {
		db = h.db // the host's connection, kept open
	} else {
		testpoint.Panic("hook-work")
		var err error
		db, err = ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{BusyTimeout: time.Until(deadline) / 2})
		if err != nil {
			logger.Printf("hook %s %s: %v", ev, p.SessionID, err)
			if !strings.HasPrefix(p.SessionID, health.DoctorPrefix) {
				_ = crumbs.Mark(cfg.Home, codex.Home(c.Getenv), crumbs.Hook, c.Start, []string{p.SessionID})
			}
			return nil, "", dueWork{}
		}
		// Not closed: closing the last connection checkpoints and removes
		// the WAL (milliseconds on every hook); the process exits right
		// after and SQLite's WAL is safe without it.
	}
	m := lifecycle.New(cfg, db, sinks.Build).ReadEnv(c.Getenv)
	res, err := m.HandleHook(ctx, lifecycle.Hook{Event: ev, Payload: p, RunID: runID, PPID: c.PPID})
	if err != nil {
		logger.Printf("hook %s %s: %v", ev, p.SessionID, err)
	}
	if cfg.Inject.Enabled {
		switch {
		case ev == codex.HookSessionStart:
			var quoted []inject.Quote
			injection, quoted = inject.ForSessionStartQuoting(ctx, injectRequest(ctx, m, db, cfg, p, p.Source == "resume" || p.Source == "compact"))
			// What the block quotes was given: recall does not give it again.
			if err := prompt.MarkGiven(ctx, db, p.SessionID, quotedItems(quoted)); err != nil {
				logger.Printf("hook %s %s: record what the block quoted: %v", ev, p.SessionID, err)
			}
		case res.InjectCheckpoint:
			injection = inject.ForCompaction(injectRequest(ctx, m, db, cfg, p, true))
		}
	}
	// A hook's process ends the sessions of runs that died; the host does
	// that once a second for all of them (its loop), not with every hook.
	if h == nil {
		if err := m.RecoverOrphans(ctx); err != nil {
			logger.Printf("hook %s: orphan recovery: %v", ev, err)
		}
	}
	due = dueWork{jobs: m.JobsDue(ctx), catchUp: res.CatchUpDeferred}
	if h == nil && res.Watch.ID != "" {
		// Reads the system's locks: only where the answer is used.
		due.watch = codex.ThreadLocked(res.Watch.CodexHome, res.Watch.ID)
	}
	return db, injection, due
}

// injectRequest is what the block a hook gives back is built from: the
// session, the ledger and — when the block is about the session itself
// (own: resume, compaction) — what the ledger holds of it.
func injectRequest(ctx context.Context, m *lifecycle.Manager, db *ledger.DB, cfg config.Config, p codex.HookPayload, own bool) inject.Request {
	req := inject.Request{Home: cfg.Home, Ledger: db, Source: p.Source, SessionID: p.SessionID, Cwd: p.Cwd,
		TranscriptPath: p.TranscriptPath, MaxChars: cfg.Inject.MaxChars}
	if !own {
		return req
	}
	o := m.OwnContext(ctx, p)
	req.Checkpoint, req.Present, req.RemoteOverview = o.Checkpoint, o.Present, o.RemoteOverview
	if o.SkipTranscript {
		req.TranscriptPath = ""
	}
	return req
}

// joinBlocks puts two context blocks one after the other.
func joinBlocks(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// spawnSweeper starts the background sweeper in a session of its own
// unless one runs: to sweep, so commits proceed after the hook has
// answered and Codex moved on; or (hostOnly) to be the hook host, no
// sweep first.
func spawnSweeper(home string, logger *logs.Logger, hostOnly bool) {
	if hookwire.SweeperRunning(home) {
		return
	}
	start := func() error { return proc.StartDetached("ctl", "sweep", "--background") }
	if hostOnly {
		start = func() error { return startHost(false) }
	}
	if err := start(); err != nil {
		logger.Printf("start background sweep: %v", err)
	}
}

// readHookInput reads stdin up to max bytes, giving up after d (a hook must
// answer even when its input never closes).
func readHookInput(r io.Reader, max int64, d time.Duration) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, max))
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		return res.b, res.err
	case <-time.After(d):
		return nil, fmt.Errorf("hook input not closed within %v", d)
	}
}

// hookAudit is what the hook log keeps of one event.
type hookAudit struct {
	Event     string
	RunID     string
	PPID      int
	Hosted    bool   // answered by the hook host
	Own       string // not: why, as its client said (hookwire.OwnEnv)
	ClientCPU int64  // µs: the hook's process, before it asked the host
	Payload   []byte
	Parsed    codex.HookPayload
	Err       error
	TimedOut  bool
	Answered  int // characters of context given back
}

// recordHookEvent appends one line per event to CX_HOME/logs/hook-events.jsonl:
// which event, session and turn, sizes and timing — never what was said.
// With [debug] hook_payloads the whole payload is kept too, redacted.
func recordHookEvent(cfg config.Config, start time.Time, au hookAudit) {
	if cfg.Home == "" {
		return
	}
	rec := map[string]any{
		"time":          time.Now().UTC().Format(time.RFC3339Nano),
		"event":         au.Event,
		"session_id":    au.Parsed.SessionID,
		"run_id":        au.RunID,
		"ppid":          au.PPID,
		"payload_bytes": len(au.Payload),
		"took_ms":       time.Since(start).Milliseconds(),
	}
	if au.Hosted {
		rec["host"] = true
		rec["client_cpu_ms"] = float64(au.ClientCPU) / 1000
	} else {
		rec["cpu_ms"] = float64(proc.SelfCPU().Microseconds()) / 1000
		if au.Own != "" {
			rec["own"] = au.Own
		}
	}
	for k, v := range map[string]string{"turn_id": au.Parsed.TurnID, "source": au.Parsed.Source, "trigger": au.Parsed.Trigger,
		"transcript_path": au.Parsed.TranscriptPath, "cwd": au.Parsed.Cwd, "agent_id": au.Parsed.AgentID} {
		if v != "" {
			rec[k] = v
		}
	}
	switch au.Event {
	case codex.HookUserPromptSubmit:
		rec["prompt_chars"] = utf8.RuneCountInString(au.Parsed.Prompt)
	case codex.HookStop:
		rec["assistant_chars"] = utf8.RuneCountInString(au.Parsed.LastAssistantMessage)
	}
	if au.Answered > 0 {
		rec["context_chars"] = au.Answered
	}
	if au.TimedOut {
		rec["timed_out"] = true
	}
	if cfg.Debug.HookPayloads && len(au.Payload) > 0 {
		rec["payload"] = redact.String(string(au.Payload))
	}
	if au.Err != nil {
		rec["error"] = redact.String(au.Err.Error())
	}
	line, _ := json.Marshal(rec)
	_ = logs.Append(filepath.Join(cfg.Home, "logs", "hook-events.jsonl"), append(line, '\n'))
}

// Help says what `cx ctl hook` is, for a person who asks.
const Help = `The hook handler Codex runs for each event cx installs (cx ctl install): Codex
starts it with the event's name (SessionStart, UserPromptSubmit, Stop, PreCompact,
PostCompact, SessionEnd, Interrupt), writes the event's JSON on its stdin and reads
one JSON answer on its stdout, always valid and within the hook's time. It is not
a command to run by hand; ` + "`cx ctl status`" + ` and ` + "`cx ctl show`" + ` say what the hooks did.
`
