package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"cx/internal/codex"
	"cx/internal/health"
	"cx/internal/ledger"
	"cx/internal/proc"
	"cx/internal/sink"
)

// Hook events cx handles (Codex's spelling).
const (
	evSessionStart     = "SessionStart"
	evUserPromptSubmit = "UserPromptSubmit"
	evStop             = "Stop"
	evPreCompact       = "PreCompact"
	evPostCompact      = "PostCompact"
	evSessionEnd       = "SessionEnd"
	evInterrupt        = "Interrupt"
)

// knownEvents are the events with a handler.
var knownEvents = []string{evSessionStart, evUserPromptSubmit, evStop, evPreCompact, evPostCompact, evSessionEnd, evInterrupt}

// HookPayload is the JSON Codex gives a hook on stdin.
type HookPayload struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`
	TurnID         string `json:"turn_id"`
	Trigger        string `json:"trigger"`
	Reason         string `json:"reason"`
	Model          string `json:"model"`
	// What was said: read for its size in the hook log, never stored.
	Prompt               string `json:"prompt"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// HookInput is one hook invocation.
type HookInput struct {
	Event   string // from the command line; the payload's hook_event_name wins
	Payload []byte
	RunID   string // CX_RUN_ID of the hook's environment
	PPID    int    // the hook process's parent

	parsed *parsedHook // Parse's result: a payload (up to 16 MiB) is decoded once
}

type parsedHook struct {
	event   string
	payload HookPayload
	err     error
}

// Parse validates the input and settles its event name (parseHook), once:
// later calls, and handleHook given this input, reuse the result.
func (in *HookInput) Parse() (string, HookPayload, error) {
	if in.parsed == nil {
		ev, p, err := parseHook(*in)
		in.parsed = &parsedHook{ev, p, err}
	}
	return in.parsed.event, in.parsed.payload, in.parsed.err
}

// parseHook validates a hook's input and settles its event name.
func parseHook(in HookInput) (string, HookPayload, error) {
	var p HookPayload
	if len(strings.TrimSpace(string(in.Payload))) == 0 {
		return in.Event, p, errors.New("empty hook input")
	}
	if err := json.Unmarshal(in.Payload, &p); err != nil {
		return in.Event, p, fmt.Errorf("hook input is not JSON: %w", err)
	}
	ev := in.Event
	if p.HookEventName != "" {
		ev = p.HookEventName
	}
	known := false
	for _, k := range knownEvents {
		known = known || k == ev
	}
	if !known {
		return ev, p, fmt.Errorf("unknown hook event %q", ev)
	}
	if p.SessionID == "" {
		return ev, p, fmt.Errorf("%s hook input has no session_id", ev)
	}
	return ev, p, nil
}

// HookResult tells the caller what the event calls for beyond the ledger.
type HookResult struct {
	Event   string
	Payload HookPayload
	// InjectCheckpoint: a compaction happened that the model has not been
	// given the fresh checkpoint for yet (0.128 fires no hook for it; cx saw
	// it in the rollout), so this UserPromptSubmit should carry it.
	InjectCheckpoint bool
	// CatchUpDeferred: the session's rollout had more unread history than
	// a hook reads (a long session cx had not seen); the background sweeper
	// catches it up and the next hook has it.
	CatchUpDeferred bool
}

// handleHook acts on one hook event. It never blocks for long: slow work
// (commits) is left in the outbox.
func (m *Manager) handleHook(ctx context.Context, in HookInput) (HookResult, error) {
	ev, p, err := in.Parse()
	res := HookResult{Event: ev, Payload: p}
	if err != nil {
		return res, err
	}
	if strings.HasPrefix(p.SessionID, health.DoctorPrefix) {
		return res, nil
	}
	run, owned := m.attribute(ctx, in.RunID, in.PPID)
	hint := ledger.Session{ID: p.SessionID, TranscriptPath: p.TranscriptPath, Cwd: p.Cwd, CodexHome: m.codexHome()}
	if owned {
		hint.RunID, hint.Sinks, hint.CodexHome = run.ID, run.Sinks, run.CodexHome
	}
	var s ledger.Session
	err = m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		var err error
		s, _, err = m.ensureSession(ctx, tx, hint)
		if err != nil {
			return err
		}
		changed := false
		if owned && s.RunID != run.ID {
			adoptable := s.RunID == "" || ev == evSessionStart
			if !adoptable {
				if prev, err := tx.Run(ctx, s.RunID); err != nil || prev.EndedAt != nil {
					adoptable = true
				}
			}
			if adoptable {
				adopt(&s, run)
				changed = true
			}
		}
		if ev == evSessionStart && p.Source == "resume" && s.Status != ledger.Live {
			// The session is live again under this run; a resume without a
			// turn leaves it as it was (see endLive).
			m.openNext(&s, tx, s.Cursor.Seen)
			changed = true
		}
		if ev == evUserPromptSubmit || ev == evStop {
			s.LastSeen = tx.Now()
			changed = true
		}
		detail := ev
		if p.Source != "" {
			detail += "(" + p.Source + ")"
		}
		if ev == evInterrupt && p.TurnID != "" {
			detail += " turn " + p.TurnID
		}
		_ = tx.AddEvent(ctx, "hook", s.ID, run.ID, detail)
		if changed {
			return tx.PutSession(ctx, s)
		}
		return nil
	})
	if err != nil {
		return res, err
	}

	switch ev {
	case evSessionStart:
		switch p.Source {
		case "startup", "clear":
			reason := reasonNew
			if p.Source == "clear" {
				reason = reasonClear
			}
			if owned && run.Mode == ModeAppServer {
				return res, nil // a daemon's threads run side by side
			}
			if owned {
				return res, m.switchForeground(ctx, run.ID, s.ID, reason)
			}
			return res, m.activeWindow(ctx, s.ID, reason)
		case "resume", "fork":
			if p.Source == "resume" {
				// What the resumed history holds, for its checkpoint.
				_, deferred, err := m.catchUpOnHook(ctx, s.ID)
				res.CatchUpDeferred = deferred
				if err != nil {
					m.Log.Printf("catch up %s on resume: %v", s.ID, err)
				}
				// The resume's block carries the session's checkpoint as it
				// is now, after any compaction: a compaction not yet given to
				// the model (the terminal closed before the next prompt) must
				// not come again after the resumed prompt.
				if err == nil && !deferred {
					if _, err := m.markCompactionInjected(ctx, s.ID); err != nil {
						m.Log.Printf("compaction of %s on resume: %v", s.ID, err)
					}
				}
			}
			if owned {
				return res, m.setForeground(ctx, run.ID, s.ID)
			}
		case "compact":
			// Codex (0.169) fires this after a compaction: the checkpoint is
			// injected here, so the next prompt must not inject it again.
			_, deferred, err := m.catchUpOnHook(ctx, s.ID)
			if res.CatchUpDeferred = deferred; err != nil || deferred {
				return res, err
			}
			_, err = m.markCompactionInjected(ctx, s.ID)
			return res, err
		}
	case evUserPromptSubmit:
		_, deferred, err := m.catchUpOnHook(ctx, s.ID)
		if res.CatchUpDeferred = deferred; err != nil || deferred {
			return res, err
		}
		due, err := m.markCompactionInjected(ctx, s.ID)
		res.InjectCheckpoint = due
		return res, err
	case evStop:
		s, deferred, err := m.catchUpOnHook(ctx, s.ID)
		if res.CatchUpDeferred = deferred; err != nil || deferred {
			return res, err
		}
		return res, m.armAppends(ctx, s)
	case evPreCompact:
		if _, err := m.catchUp(ctx, s.ID); err != nil {
			return res, err
		}
		return res, m.compact(ctx, s.ID)
	case evSessionEnd:
		reason := m.endReason(ctx, s.RunID, reasonSessionEnd)
		if backlog(s) > m.hookBacklog {
			// The end needs every turn: a long unread history is caught up
			// and ended by the background sweeper, from the outbox.
			res.CatchUpDeferred = true
			return res, m.DB.Tx(ctx, func(tx *ledger.Tx) error {
				_, err := tx.EnqueueDetail(ctx, JobEnd, s.ID, s.Generation, "", reason)
				return err
			})
		}
		_, err := m.End(ctx, s.ID, reason, EndOptions{})
		return res, err
	}
	return res, nil
}

// backlog is how much of the session's rollout is unread (0 when none,
// or when it cannot be told).
func backlog(s ledger.Session) int64 {
	return unread(codex.FindRollout(s.CodexHome, s.ID, s.TranscriptPath), s)
}

// unread is how much of the rollout at path lies past the session's cursor.
func unread(path string, s ledger.Session) int64 {
	if path == "" {
		return 0
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return max(0, fi.Size()-max(s.Cursor.Seen, s.Cursor.Offset))
}

// markCompactionInjected reports whether a compaction captured is newer
// than the last checkpoint injection, recording that it is now given.
func (m *Manager) markCompactionInjected(ctx context.Context, id string) (bool, error) {
	due := false
	err := m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		s, err := tx.Session(ctx, id)
		if err != nil || s.Compactions <= s.InjectedCompactions {
			return err
		}
		due = true
		s.InjectedCompactions = s.Compactions
		return tx.PutSession(ctx, s)
	})
	return due, err
}

// endReason is the reason for an end Codex reports: its own, unless the
// owning run is being stopped by a signal (cx's polite stop, a daemon's
// SIGTERM) — then that signal is why the session ended.
func (m *Manager) endReason(ctx context.Context, runID, own string) string {
	if runID == "" {
		return own
	}
	if run, err := m.DB.Run(ctx, runID); err == nil && run.EndedAt == nil && strings.HasPrefix(run.EndReason, "signal:") {
		return run.EndReason
	}
	return own
}

// armAppends schedules sending the new turns to the session's remote sinks.
func (m *Manager) armAppends(ctx context.Context, s ledger.Session) error {
	for _, name := range s.Sinks {
		if _, ok := m.Sinks[name].(sink.Appender); !ok || s.Status != ledger.Live {
			continue
		}
		if err := m.DB.Tx(ctx, func(tx *ledger.Tx) error { return tx.ArmJob(ctx, JobAppend, s.ID, s.Generation, name) }); err != nil {
			return err
		}
	}
	return nil
}

// compact ends the generation before a compaction and opens the next: the
// compacted half is a generation of its own.
func (m *Manager) compact(ctx context.Context, id string) error {
	s, err := m.DB.Session(ctx, id)
	if err != nil || s.Status != ledger.Live || s.Turns == 0 {
		return err
	}
	ended, err := m.endLive(ctx, id, reasonCompact, EndOptions{OnlyGeneration: s.Generation})
	if err != nil || !ended {
		return err
	}
	return m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		s, err := tx.Session(ctx, id)
		if err != nil || s.Status == ledger.Live {
			return err
		}
		m.openNext(&s, tx, s.Cursor.Seen)
		_ = tx.AddEvent(ctx, "generation.opened", s.ID, s.RunID, fmt.Sprintf("%d after compaction", s.Generation))
		return tx.PutSession(ctx, s)
	})
}

// switchForeground makes id the run's foreground session and ends the
// previous one's generation (/new or /clear in the same Codex process).
func (m *Manager) switchForeground(ctx context.Context, runID, id, reason string) error {
	prev, err := m.swapForeground(ctx, runID, id)
	if err != nil || prev == "" || prev == id {
		return err
	}
	_, err = m.End(ctx, prev, reason, EndOptions{})
	return err
}

func (m *Manager) setForeground(ctx context.Context, runID, id string) error {
	_, err := m.swapForeground(ctx, runID, id)
	return err
}

func (m *Manager) swapForeground(ctx context.Context, runID, id string) (string, error) {
	var prev string
	err := m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		r, err := tx.Run(ctx, runID)
		if err != nil {
			return err
		}
		prev = r.Foreground
		r.Foreground = id
		return tx.PutRun(ctx, r)
	})
	return prev, err
}

// activeWindow is the fallback for Codex started without cx: a new session
// ends the one other un-owned session active within the window; with two or
// more candidates it cannot know which, and leaves them to the idle sweep.
func (m *Manager) activeWindow(ctx context.Context, id, reason string) error {
	var victim string
	err := m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		live, err := tx.UnownedLive(ctx)
		if err != nil {
			return err
		}
		cutoff := tx.Now().Add(-m.Cfg.Lifecycle.ActiveWindow.Duration)
		var cands []string
		for _, s := range live {
			if s.ID != id && s.LastSeen.After(cutoff) {
				cands = append(cands, s.ID)
			}
		}
		if len(cands) == 1 {
			victim = cands[0]
		}
		return nil
	})
	if err != nil || victim == "" {
		return err
	}
	_, err = m.End(ctx, victim, reason, EndOptions{})
	return err
}

// shells are processes that may stand between Codex and its hook command.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "env": true}

// attribute decides whether a hook belongs to the run named by CX_RUN_ID:
// its nearest ancestor that is not a shell must be that run's Codex (pid and
// start time). A nested Codex started by the model, or a shared daemon's
// hooks carrying a stale CX_RUN_ID, fail this check.
func (m *Manager) attribute(ctx context.Context, runID string, ppid int) (ledger.Run, bool) {
	if runID == "" || ppid <= 1 {
		return ledger.Run{}, false
	}
	var run ledger.Run
	var err error
	// The wrapper records its run beside Codex's start; a very early hook
	// may arrive first.
	deadline := time.Now().Add(time.Second)
	for {
		run, err = m.DB.Run(ctx, runID)
		if err == nil && run.CodexPID != 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return ledger.Run{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
	if run.EndedAt != nil {
		return ledger.Run{}, false
	}
	for _, st := range proc.Ancestors(ppid, 4) {
		if shells[st.Comm] {
			continue
		}
		return run, st.PID == run.CodexPID && (run.CodexStart == 0 || st.StartTime == run.CodexStart)
	}
	return ledger.Run{}, false
}

// codexHome is Codex's home for sessions whose run does not say.
func (m *Manager) codexHome() string { return codex.Home(m.Getenv) }
