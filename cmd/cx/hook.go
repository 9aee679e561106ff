package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cx/inject"
	"cx/internal/config"
	"cx/internal/openviking"
	"cx/lifecycle"
)

// hookBudget is how long the handler may work before it answers anyway:
// well inside the timeout cx installs for the event (SessionEnd and
// Interrupt are clamped to 3 s by Codex).
func hookBudget(event string) time.Duration {
	switch event {
	case lifecycle.EvSessionEnd, lifecycle.EvInterrupt:
		return 2 * time.Second
	case lifecycle.EvUserPromptSubmit:
		return 6 * time.Second
	}
	return 8 * time.Second
}

// ctlHook is the handler Codex runs for each hook event: JSON on stdin, a
// valid answer on stdout, always exit 0 — a hook never blocks or breaks
// Codex. Whatever it cannot finish in time is picked up later from the
// rollout.
func (a *app) ctlHook(ctx context.Context, args []string) int {
	event := ""
	if len(args) > 0 {
		event = args[0]
	}
	answer := func() int {
		fmt.Fprintln(a.stdout, "{}")
		return 0
	}
	answerContext := func(event, context string) int {
		if context == "" {
			return answer()
		}
		b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": context}})
		fmt.Fprintln(a.stdout, string(b))
		return 0
	}
	payload, readErr := readHookInput(a.stdin, 8<<20, 3*time.Second)
	if v, _ := a.getenv("CX_HOOKS_OFF"); v == "1" {
		return answer()
	}
	cfg, cfgErr := config.Load(a.getenv)
	logger := lifecycle.NewLogger(cfg.Home)
	in := lifecycle.HookInput{Event: event, Payload: payload, PPID: os.Getppid()}
	in.RunID, _ = a.getenv("CX_RUN_ID")
	ev, p, perr := lifecycle.ParseHook(in)
	a.recordHookEvent(cfg.Home, ev, payload, in.RunID, perr)
	switch {
	case readErr != nil:
		logger.Printf("hook %s: read input: %v", ev, readErr)
		return answer()
	case perr != nil:
		logger.Printf("hook %s: %v (answered with a no-op)", ev, perr)
		return answer()
	case cfgErr != nil:
		logger.Printf("hook %s: %v", ev, cfgErr)
	}
	if len(p.SessionID) >= len(lifecycle.DoctorPrefix) && p.SessionID[:len(lifecycle.DoctorPrefix)] == lifecycle.DoctorPrefix {
		return answer()
	}

	done := make(chan struct{})
	var due bool
	var injection string
	go func() {
		defer close(done)
		wctx, cancel := context.WithTimeout(ctx, hookBudget(ev))
		defer cancel()
		m, err := lifecycle.Open(wctx, cfg, lifecycle.Options{BusyTimeout: hookBudget(ev) / 2})
		if err != nil {
			logger.Printf("hook %s %s: %v", ev, p.SessionID, err)
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
					sid := openviking.SessionID(id)
					text, err := ov.Client().Overview(octx, sid, 2000)
					if err != nil || strings.TrimSpace(text) == "" {
						return "" // not committed yet, or still being summarised by the server
					}
					return fmt.Sprintf("OpenViking archive of this session (%s; history under viking://session/%s/history):\n%s", sid, sid, text)
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
	select {
	case <-done:
	case <-time.After(hookBudget(ev)):
		logger.Printf("hook %s %s: out of time after %v; answered, the rollout keeps the rest", ev, p.SessionID, hookBudget(ev))
		return answer()
	}
	if due {
		a.spawnSweeper(cfg.Home, logger)
	}
	return answerContext(ev, injection)
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
func (a *app) spawnSweeper(home string, logger *lifecycle.Logger) {
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

func sweepLocked(home string) bool {
	f, err := os.OpenFile(sweepLockPath(home), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
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

// recordHookEvent appends the raw event to CX_HOME/logs/hook-events.jsonl:
// what Codex sent, for audit and debugging.
func (a *app) recordHookEvent(home, event string, payload []byte, runID string, parseErr error) {
	if home == "" {
		return
	}
	dir := filepath.Join(home, "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	rec := map[string]any{
		"time":   time.Now().UTC().Format(time.RFC3339Nano),
		"event":  event,
		"run_id": runID,
		"ppid":   os.Getppid(),
	}
	if json.Valid(payload) {
		rec["payload"] = json.RawMessage(payload)
	}
	if parseErr != nil {
		rec["error"] = parseErr.Error()
	}
	line, _ := json.Marshal(rec)
	path := filepath.Join(dir, "hook-events.jsonl")
	lifecycle.RotateLog(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}
