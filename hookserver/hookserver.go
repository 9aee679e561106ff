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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/crumbs"
	"cx/internal/health"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/proc"
	"cx/internal/recall/prompt"
	"cx/internal/redact"
	"cx/internal/sinks"
	"cx/internal/testpoint"
	"cx/lifecycle"
)

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
}

// hookBudget is how long, from process start, the handler may take before
// it answers anyway: well inside the timeout cx installs for the event
// (SessionEnd and Interrupt are clamped to 3 s by Codex, so they answer
// within 2.3 s whatever stdin does).
func hookBudget(event string) time.Duration {
	switch event {
	case codex.HookUserPromptSubmit:
		return 6 * time.Second
	case codex.HookSessionStart, codex.HookStop, codex.HookPreCompact, codex.HookPostCompact:
		return 8 * time.Second
	}
	// SessionEnd, Interrupt, and anything not known: the tightest clamp.
	return 2300 * time.Millisecond
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

// Serve is the hook protocol end to end: JSON on stdin, one valid
// answer on stdout within the event's budget, whatever its input, the
// ledger or a bug does; the audit line; the background sweeper started
// when commits are due. Whatever it cannot finish in time is picked up
// later from the rollout. It returns the exit code: always 0.
func Serve(ctx context.Context, c HookCall) (code int) {
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
	deadline := c.Start.Add(hookBudget(c.Event))
	payload, readErr := readHookInput(c.Stdin, 16<<20, time.Until(deadline)-200*time.Millisecond)
	if v, _ := c.Getenv("CX_HOOKS_OFF"); v == "1" {
		ans.send("", "")
		return 0
	}
	cfg, cfgErr := config.Load(c.Getenv)
	logger = logs.New(cfg.Home)
	runID, _ := c.Getenv("CX_RUN_ID")
	ev, p, perr := codex.ParseHook(c.Event, payload)
	if ev != c.Event {
		deadline = c.Start.Add(min(hookBudget(ev), hookBudget(c.Event)))
	}
	audit := hookAudit{Event: ev, RunID: runID, Payload: payload, Parsed: p, Err: perr}
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

	testpoint.Panic("hook-main")
	done := make(chan struct{})
	var due bool
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
		db, injection, due = handle(wctx, c, cfg, ev, p, runID, deadline, logger)
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
	if due {
		spawnSweeper(cfg.Home, logger)
	}
	return 0
}

// handle is the event's work: the ledger opened to write (nil when it
// could not be: the next start or sweep that can write it records the
// session from its rollout), what the event means for the session
// (lifecycle), the block it gives back, and whether commits are due. A
// panic is logged and answered with nothing.
func handle(ctx context.Context, c HookCall, cfg config.Config, ev string, p codex.HookPayload, runID string, deadline time.Time, logger *logs.Logger) (db *ledger.DB, injection string, due bool) {
	defer func() {
		if r := recover(); r != nil {
			logger.Printf("hook %s %s: panic: %v\n%s", ev, p.SessionID, r, debug.Stack())
			injection, due = "", false
		}
	}()
	testpoint.Panic("hook-work")
	db, err := ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{BusyTimeout: time.Until(deadline) / 2})
	if err != nil {
		logger.Printf("hook %s %s: %v", ev, p.SessionID, err)
		if !strings.HasPrefix(p.SessionID, health.DoctorPrefix) {
			_ = crumbs.Mark(cfg.Home, codex.Home(c.Getenv), crumbs.Hook, c.Start, []string{p.SessionID})
		}
		return nil, "", false
	}
	// Not closed: closing the last connection checkpoints and removes the
	// WAL (milliseconds on every hook); the process exits right after and
	// SQLite's WAL is safe without it.
	m := lifecycle.New(cfg, db, sinks.Build)
	res, err := m.HandleHook(ctx, lifecycle.Hook{Event: ev, Payload: p, RunID: runID, PPID: os.Getppid()})
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
	return db, injection, m.AfterHook(ctx, ev) || res.CatchUpDeferred || res.WatchLetGo
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

// spawnSweeper starts `cx ctl sweep --background` in a session of its own,
// so commits proceed after the hook has answered and Codex moved on.
func spawnSweeper(home string, logger *logs.Logger) {
	if sweeperRunning(home) {
		return
	}
	if err := proc.StartDetached("ctl", "sweep", "--background"); err != nil {
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
	Event    string
	RunID    string
	Payload  []byte
	Parsed   codex.HookPayload
	Err      error
	TimedOut bool
	Answered int // characters of context given back
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
		"ppid":          os.Getppid(),
		"payload_bytes": len(au.Payload),
		"took_ms":       time.Since(start).Milliseconds(),
		"cpu_ms":        float64(proc.SelfCPU().Microseconds()) / 1000,
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
