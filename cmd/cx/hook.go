package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/fsutil"
	"cx/internal/logs"
	"cx/internal/redact"
	"cx/internal/testpoint"
	"cx/lifecycle"
)

// processStart is when this process began (package initialisation runs
// within a millisecond of exec): hook deadlines count from here, as Codex's
// timeout does.
var processStart = time.Now()

// hookBudget is how long, from process start, the handler may take before
// it answers anyway: well inside the timeout cx installs for the event
// (SessionEnd and Interrupt are clamped to 3 s by Codex, so they answer
// within 2.5 s whatever stdin does).
func hookBudget(event string) time.Duration {
	switch event {
	case lifecycle.EvUserPromptSubmit:
		return 6 * time.Second
	case lifecycle.EvSessionStart, lifecycle.EvStop, lifecycle.EvPreCompact, lifecycle.EvPostCompact:
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

// ctlHook is the handler Codex runs for each hook event: JSON on stdin, a
// valid answer on stdout, always exit 0 — a hook never blocks or breaks
// Codex, whatever its input, the ledger or a bug does. Whatever it cannot
// finish in time is picked up later from the rollout.
func (a *app) ctlHook(ctx context.Context, args []string) (code int) {
	ans := &hookAnswer{out: a.stdout}
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
	event := ""
	spec := ctlArgs{name: "hook", synopsis: "<event>", min: 1, max: 1}
	_, pos, argErr := spec.parse(args)
	if len(pos) == 1 {
		event = pos[0]
	} else if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		event = args[0]
	}
	deadline := processStart.Add(hookBudget(event))
	payload, readErr := readHookInput(a.stdin, 16<<20, time.Until(deadline)-200*time.Millisecond)
	if v, _ := a.getenv("CX_HOOKS_OFF"); v == "1" {
		ans.send("", "")
		return 0
	}
	cfg, cfgErr := config.Load(a.getenv)
	logger = logs.New(cfg.Home)
	in := lifecycle.HookInput{Event: event, Payload: payload, PPID: os.Getppid()}
	in.RunID, _ = a.getenv("CX_RUN_ID")
	ev, p, perr := in.Parse()
	if ev != event {
		deadline = processStart.Add(min(hookBudget(ev), hookBudget(event)))
	}
	audit := hookAudit{Event: ev, RunID: in.RunID, Payload: payload, Parsed: p, Err: perr}
	defer func() { a.recordHookEvent(cfg, audit) }()
	switch {
	case argErr != nil && !errors.Is(argErr, errHelp):
		logger.Printf("hook: %v (answered with a no-op)", argErr)
		audit.Err = argErr
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
	if strings.HasPrefix(p.SessionID, lifecycle.DoctorPrefix) {
		ans.send("", "")
		return 0
	}

	testpoint.Panic("hook-main")
	done := make(chan struct{})
	var due bool
	var injection string
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				logger.Printf("hook %s %s: panic: %v\n%s", ev, p.SessionID, r, debug.Stack())
				injection, due = "", false
			}
		}()
		testpoint.Panic("hook-work")
		budget := time.Until(deadline)
		m, err := lifecycle.Open(wctx, cfg, lifecycle.Options{BusyTimeout: budget / 2})
		if err != nil {
			logger.Printf("hook %s %s: %v", ev, p.SessionID, err)
			// The next start or sweep that can write the ledger records
			// this session from its rollout.
			_ = lifecycle.MarkUnrecorded(cfg.Home, codex.Home(a.getenv), processStart)
			return
		}
		// Not closed: closing the last connection checkpoints and removes
		// the WAL (milliseconds on every hook); the process exits right after
		// and SQLite's WAL is safe without it.
		res, err := m.HandleHook(wctx, in)
		if err != nil {
			logger.Printf("hook %s %s: %v", ev, p.SessionID, err)
		}
		if cfg.Inject.Enabled {
			req := inject.Request{Home: cfg.Home, DB: m.DB, Source: p.Source, SessionID: p.SessionID, Cwd: p.Cwd,
				TranscriptPath: p.TranscriptPath, MaxChars: cfg.Inject.MaxChars}
			if ov, ok := m.Sinks["openviking"].(*lifecycle.OpenVikingSink); ok && sessionUses(wctx, m, p.SessionID, "openviking") {
				req.RemoteOverview = func(ctx context.Context, id string) string {
					octx, cancel := context.WithTimeout(ctx, 2*time.Second)
					defer cancel()
					return ov.ResumeOverview(octx, id, cfg.Inject.MaxChars/2)
				}
			}
			switch {
			case ev == lifecycle.EvSessionStart:
				injection = inject.ForSessionStart(wctx, req)
			case res.InjectCheckpoint:
				injection = inject.ForCompaction(req)
			}
		}
		if _, err := m.RecoverOrphans(wctx); err != nil {
			logger.Printf("hook %s: orphan recovery: %v", ev, err)
		}
		due, _ = m.DB.DueJobs(wctx, time.Now().UTC())
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		logger.Printf("hook %s %s: out of time %v after start; answered, the rollout keeps the rest", ev, p.SessionID, time.Since(processStart).Round(time.Millisecond))
		audit.TimedOut = true
		ans.send("", "")
		return 0
	}
	ans.send(ev, injection)
	audit.Answered = len(injection)
	if due {
		a.spawnSweeper(cfg.Home, logger)
	}
	return 0
}

// sessionUses reports whether a session's sinks include sink.
func sessionUses(ctx context.Context, m *lifecycle.Manager, id, sink string) bool {
	s, err := m.DB.Session(ctx, id)
	if err != nil {
		return false
	}
	for _, x := range s.Sinks {
		if x == sink {
			return true
		}
	}
	return false
}

// spawnSweeper starts `cx ctl sweep --background` in a session of its own,
// so commits proceed after the hook has answered and Codex moved on.
func (a *app) spawnSweeper(home string, logger *logs.Logger) {
	if sweepLocked(home) {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(self, "ctl", "sweep", "--background")
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logger.Printf("start background sweep: %v", err)
		return
	}
	_ = cmd.Process.Release()
}

// sweepLock is held by the one background sweeper at a time.
func sweepLockPath(home string) string { return filepath.Join(home, "sweep.lock") }

func sweepLocked(home string) bool { return fsutil.Held(sweepLockPath(home)) }

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
	Parsed   lifecycle.HookPayload
	Err      error
	TimedOut bool
	Answered int // characters of context given back
}

// recordHookEvent appends one line per event to CX_HOME/logs/hook-events.jsonl:
// which event, session and turn, sizes and timing — never what was said.
// With [debug] hook_payloads the whole payload is kept too, redacted.
func (a *app) recordHookEvent(cfg config.Config, au hookAudit) {
	if cfg.Home == "" {
		return
	}
	dir := filepath.Join(cfg.Home, "logs")
	rec := map[string]any{
		"time":          time.Now().UTC().Format(time.RFC3339Nano),
		"event":         au.Event,
		"session_id":    au.Parsed.SessionID,
		"run_id":        au.RunID,
		"ppid":          os.Getppid(),
		"payload_bytes": len(au.Payload),
		"took_ms":       time.Since(processStart).Milliseconds(),
	}
	for k, v := range map[string]string{"turn_id": au.Parsed.TurnID, "source": au.Parsed.Source, "trigger": au.Parsed.Trigger,
		"transcript_path": au.Parsed.TranscriptPath, "cwd": au.Parsed.Cwd} {
		if v != "" {
			rec[k] = v
		}
	}
	switch au.Event {
	case lifecycle.EvUserPromptSubmit:
		rec["prompt_chars"] = utf8.RuneCountInString(au.Parsed.Prompt)
	case lifecycle.EvStop:
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
	_ = logs.Append(filepath.Join(dir, "hook-events.jsonl"), append(line, '\n'))
}
