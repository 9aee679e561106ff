package lifecycle

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/codex"
	"cx/internal/health"
	"cx/internal/ledger"
	"cx/internal/outbox"
	"cx/internal/rollout"
	"cx/internal/runproc"
	"cx/internal/sink"
)

// Hook is one hook event, as the hook server parsed it.
type Hook struct {
	Event   string // Codex's event name (codex.Hook*), settled by codex.ParseHook
	Payload codex.HookPayload
	RunID   string // CX_RUN_ID of the hook's environment
	PPID    int    // the hook process's parent
}

// HookResult tells the caller what the event calls for beyond the ledger.
type HookResult struct {
	// InjectCheckpoint: a compaction happened that the model has not been
	// given the fresh checkpoint for yet (0.128 fires no hook for it; cx saw
	// it in the rollout), so this UserPromptSubmit should carry it.
	InjectCheckpoint bool
	// CatchUpDeferred: the session's rollout had more unread history than
	// a hook reads (a long session cx had not seen); the background sweeper
	// catches it up and the next hook has it.
	CatchUpDeferred bool
	// Watch names the live session of a Codex started without cx that
	// this hook was of (none: empty): the hook's own process has the
	// background sweeper watch for that Codex to let its thread go (the
	// host watches all of them already).
	Watch struct{ CodexHome, ID string }
}

// hookRecord is what the first transaction of a hook settled.
type hookRecord struct {
	session ledger.Session
	run     ledger.Run
	owned   bool
	// ends are sessions whose live generation this SessionStart ends: the
	// run's previous foreground session (/new, /clear), or for a Codex
	// started without cx the one other session of the same Codex process.
	ends []string
	// codex is the Codex process a hook of no run came from (its PID 0
	// when unknown).
	codex codex.Process
}

// codexMark precedes the Codex process in a hook event's detail.
const codexMark = " from codex "

// HandleHook acts on one hook event, in two write transactions at most
// before the ends it causes (the package doc lists them per event). It
// never blocks for long: slow work (commits) is left in the outbox.
func (m *Manager) HandleHook(ctx context.Context, h Hook) (HookResult, error) {
	var res HookResult
	if strings.HasPrefix(h.Payload.SessionID, health.DoctorPrefix) {
		return res, nil
	}
	// A prompt's or a stop's capture is read before the hook's transaction
	// and stored in it: one transaction, not two, when the session is
	// known and the read was made as the transaction finds it.
	var read *captureRead
	if h.Event == codex.HookUserPromptSubmit || h.Event == codex.HookStop {
		if r, err := m.readCapture(ctx, h.Payload.SessionID, m.hookBacklog); err == nil {
			read = &r
		}
	}
	captured := false
	rec, err := m.recordHook(ctx, h, func(ctx context.Context, tx *ledger.Tx, s ledger.Session) error {
		captured = false
		if read == nil || !read.readFor(s) {
			return nil
		}
		if !read.deferred {
			// s is the session as this transaction wrote it: not read again.
			if err := m.storeCapture(ctx, tx, &s, *read, m.afterTurn(h.Event, &res)); err != nil {
				return err
			}
		}
		captured, res.CatchUpDeferred = true, read.deferred
		return nil
	})
	if err != nil {
		return res, err
	}
	switch h.Event {
	case codex.HookSessionStart:
		err = m.onSessionStart(ctx, h.Payload.Source, rec, &res)
	case codex.HookUserPromptSubmit, codex.HookStop:
		if !captured {
			_, res.CatchUpDeferred, err = m.capture(ctx, rec.session.ID, m.hookBacklog, m.afterTurn(h.Event, &res))
		}
	case codex.HookPreCompact:
		err = m.onPreCompact(ctx, rec.session.ID)
	case codex.HookSessionEnd:
		err = m.onSessionEnd(ctx, rec.session, &res)
	}
	if !rec.owned && h.Event != codex.HookSessionEnd && rec.session.Status == ledger.Live {
		res.Watch.CodexHome, res.Watch.ID = rec.session.CodexHome, rec.session.ID
	}
	return res, err
}

// recordHook is a hook's first transaction: the session learned (or its
// empty fields filled), adopted by the run the hook belongs to, reopened
// by a resume, seen; the run's foreground moved by a SessionStart; the
// event recorded; then more of the hook's work on the session as recorded
// (when not nil), in the same transaction.
func (m *Manager) recordHook(ctx context.Context, h Hook, then func(ctx context.Context, tx *ledger.Tx, s ledger.Session) error) (hookRecord, error) {
	p := h.Payload
	var rec hookRecord
	rec.run, rec.owned = runproc.Attribute(ctx, m.db, h.RunID, h.PPID)
	if !rec.owned && h.Event == codex.HookSessionStart {
		// Only a start names its Codex process (see startForeground): no
		// other hook reads the process chain.
		rec.codex = codex.HookProcess(h.PPID)
	}
	hint := ledger.Session{ID: p.SessionID, TranscriptPath: p.TranscriptPath, Cwd: p.Cwd, CodexHome: m.codexHome()}
	if rec.owned {
		hint.RunID, hint.Sinks, hint.CodexHome = rec.run.ID, rec.run.Sinks, rec.run.CodexHome
	}
	err := m.db.Tx(ctx, func(tx *ledger.Tx) error {
		rec.ends = nil
		s, _, err := m.ensureSession(ctx, tx, hint)
		if err != nil {
			return err
		}
		changed := false
		if rec.owned && s.RunID != rec.run.ID {
			adoptable := s.RunID == "" || h.Event == codex.HookSessionStart
			if !adoptable {
				if prev, err := tx.Run(ctx, s.RunID); err != nil || prev.EndedAt != nil {
					adoptable = true
				}
			}
			if adoptable {
				adopt(&s, rec.run)
				changed = true
			}
		}
		switch h.Event {
		case codex.HookSessionStart:
			if p.Source == "resume" && s.Status != ledger.Live {
				// The session is live again under this run; a resume without a
				// turn leaves it as it was (see endInTx).
				m.openNext(&s, tx, s.Cursor.Seen)
				changed = true
			}
			if err := m.startForeground(ctx, tx, &rec, s.ID, p.Source); err != nil {
				return err
			}
		case codex.HookUserPromptSubmit, codex.HookStop:
			s.LastSeen = tx.Now()
			changed = true
		}
		detail := h.Event
		if p.Source != "" {
			detail += "(" + p.Source + ")"
		}
		if h.Event == codex.HookInterrupt && p.TurnID != "" {
			detail += " turn " + p.TurnID
		}
		if rec.codex.PID != 0 {
			// Which Codex process started it: another's start ends it only
			// when it is that same process (startForeground).
			detail += codexMark + rec.codex.String()
		}
		_ = tx.AddEvent(ctx, "hook", s.ID, rec.run.ID, detail)
		rec.session = s
		if changed {
			if err := tx.PutSession(ctx, s); err != nil {
				return err
			}
		}
		if then != nil {
			return then(ctx, tx, s)
		}
		return nil
	})
	return rec, err
}

// startForeground settles, inside recordHook's transaction, what a
// SessionStart does to the run's foreground: a new thread (/new, /clear)
// or a resumed one becomes it — a daemon's threads run side by side, so an
// app-server run keeps none — and the one it replaces is to end. A Codex
// started without cx has no run: a new session there ends the one other
// un-owned session that same Codex process ran (its hooks say which), so
// two Codex side by side — two windows, two `codex exec` — never end each
// other; a daemon's threads (several windows' in one app-server) run side
// by side and none ends another. With two or more candidates it cannot
// know which, and leaves them to the sweep (a writer lock let go, or idle).
func (m *Manager) startForeground(ctx context.Context, tx *ledger.Tx, rec *hookRecord, id, source string) error {
	newThread := source == "startup" || source == "clear"
	if !rec.owned {
		if !newThread || rec.codex.PID == 0 || rec.codex.Daemon {
			return nil
		}
		live, err := tx.UnownedLive(ctx)
		if err != nil {
			return err
		}
		cutoff := tx.Now().Add(-m.cfg.Lifecycle.ActiveWindow.Duration)
		var cands []string
		for _, s := range live {
			if s.ID == id || !s.LastSeen.After(cutoff) {
				continue
			}
			mark := codexMark + rec.codex.String()
			if d, err := tx.LastEventDetail(ctx, s.ID, "hook", "SessionStart("); err != nil {
				return err
			} else if strings.HasSuffix(d, mark) {
				cands = append(cands, s.ID)
			}
		}
		if len(cands) == 1 {
			rec.ends = cands
		}
		return nil
	}
	if (newThread && rec.run.Mode == ModeAppServer) || !(newThread || source == "resume" || source == "fork") {
		return nil
	}
	r, err := tx.Run(ctx, rec.run.ID)
	if err != nil {
		return err
	}
	if newThread && r.Foreground != "" && r.Foreground != id {
		rec.ends = []string{r.Foreground}
	}
	r.Foreground = id
	return tx.PutRun(ctx, r)
}

// onSessionStart: a new thread ends the one it replaces; a resume captures
// what the resumed history holds (for its checkpoint) and, in the same
// transaction, marks any compaction given — the resume's block carries the
// checkpoint as it is now, so a compaction the model was not given yet
// (the terminal closed before the next prompt) must not come again after
// the resumed prompt. Codex (0.169) fires source "compact" after a
// compaction: the checkpoint is injected there, so the next prompt must
// not inject it again.
func (m *Manager) onSessionStart(ctx context.Context, source string, rec hookRecord, res *HookResult) error {
	switch source {
	case "startup", "clear":
		reason := reasonNew
		if source == "clear" {
			reason = reasonClear
		}
		for _, id := range rec.ends {
			if _, err := m.End(ctx, id, reason, EndOptions{}); err != nil {
				return err
			}
		}
	case "resume", "compact":
		_, deferred, err := m.capture(ctx, rec.session.ID, m.hookBacklog, func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) error {
			_, err := markCompactionInjected(ctx, tx, s)
			return err
		})
		res.CatchUpDeferred = deferred
		if err != nil && source == "resume" {
			m.log.Printf("catch up %s on resume: %v", rec.session.ID, err)
			return nil
		}
		return err
	}
	return nil
}

// afterTurn is what a prompt's or a stop's capture does on the session
// as stored, in its transaction: a prompt says whether a compaction is
// still to be given to the model, marking it given; a stop arms sending
// the finished turn to the session's remote sinks.
func (m *Manager) afterTurn(event string, res *HookResult) afterCapture {
	if event == codex.HookStop {
		return m.armAppends
	}
	return func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) error {
		var err error
		res.InjectCheckpoint, err = markCompactionInjected(ctx, tx, s)
		return err
	}
}

// onPreCompact ends the generation before a compaction and opens the next,
// in the transaction that captures it: the compacted half is a generation
// of its own.
func (m *Manager) onPreCompact(ctx context.Context, id string) error {
	ended := false
	_, _, err := m.capture(ctx, id, 0, func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) error {
		ended = false
		if s.Status != ledger.Live || s.Turns == 0 {
			return nil
		}
		var err error
		if ended, err = m.endInTx(ctx, tx, id, reasonCompact, EndOptions{OnlyGeneration: s.Generation}); err != nil || !ended {
			return err
		}
		*s, err = tx.Session(ctx, id)
		if err != nil || s.Status == ledger.Live {
			return err
		}
		m.openNext(s, tx, s.Cursor.Seen)
		_ = tx.AddEvent(ctx, "generation.opened", s.ID, s.RunID, fmt.Sprintf("%d after compaction", s.Generation))
		return tx.PutSession(ctx, *s)
	})
	return err
}

// onSessionEnd ends the generation — for the reason of the signal that is
// stopping the run, if one is. A long unread history is caught up and
// ended by the background sweeper, from the outbox: the end needs every
// turn.
func (m *Manager) onSessionEnd(ctx context.Context, s ledger.Session, res *HookResult) error {
	reason := m.endReason(ctx, s.RunID, reasonSessionEnd)
	if backlog(s) > m.hookBacklog {
		res.CatchUpDeferred = true
		return m.db.Tx(ctx, func(tx *ledger.Tx) error {
			_, err := tx.EnqueueDetail(ctx, outbox.JobEnd, s.ID, s.Generation, "", reason)
			return err
		})
	}
	_, err := m.End(ctx, s.ID, reason, EndOptions{})
	return err
}

// RecoverOrphans ends the sessions of runs whose cx died (orphans): a
// hook's process does after its event, the hook host once a second.
func (m *Manager) RecoverOrphans(ctx context.Context) error {
	_, err := m.recoverOrphans(ctx)
	return err
}

// JobsDue reports whether commits are due now.
func (m *Manager) JobsDue(ctx context.Context) bool {
	due, _ := m.db.DueJobs(ctx, m.now())
	return due
}

// OwnContext is what the ledger holds of a session for a context block
// about the session itself (resume, compaction).
type OwnContext struct {
	// Checkpoint is the session's checkpoint as of its last capture and
	// Present the cx sections its history holds; nil when none is kept.
	Checkpoint *checkpoint.Checkpoint
	Present    map[string]bool
	// SkipTranscript: no checkpoint is kept yet for a long history, which
	// is not read on Codex's time (the sweeper is catching it up).
	SkipTranscript bool
	// RemoteOverview, on resume, reads the overview a remote sink the
	// session goes to keeps of it.
	RemoteOverview func(ctx context.Context, sessionID string) string
}

// OwnContext is what the ledger holds of p's session for a block about
// the session itself.
func (m *Manager) OwnContext(ctx context.Context, p codex.HookPayload) OwnContext {
	var own OwnContext
	if cp, present, ok, err := checkpointOf(ctx, m.db, p.SessionID); err != nil {
		m.log.Printf("checkpoint of %s from the ledger: %v", p.SessionID, err)
	} else if ok {
		own.Checkpoint, own.Present = &cp, present
	} else if fi, err := os.Stat(p.TranscriptPath); err == nil && fi.Size() > m.hookBacklog {
		own.SkipTranscript = true
	}
	if p.Source != "resume" {
		return own
	}
	s, err := m.db.Session(ctx, p.SessionID)
	if err != nil {
		return own
	}
	for _, name := range s.Sinks {
		if ov, ok := m.sinks[name].(sink.Overviewer); ok {
			own.RemoteOverview = func(ctx context.Context, id string) string {
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				return ov.ResumeOverview(octx, id, m.cfg.Inject.MaxChars/2)
			}
			break
		}
	}
	return own
}

// backlog is how much of the session's rollout is unread (0 when none,
// or when it cannot be told).
func backlog(s ledger.Session) int64 {
	return unread(codex.FindRollout(s.CodexHome, s.ID, s.TranscriptPath), s)
}

// unread is how much of the rollout at path lies past the session's cursor.
func unread(path string, s ledger.Session) int64 {
	return rollout.Unread(path, max(s.Cursor.Seen, s.Cursor.Offset))
}

// markCompactionInjected reports whether a compaction captured is newer
// than the last checkpoint injection, recording (in tx) that it is now
// given.
func markCompactionInjected(ctx context.Context, tx *ledger.Tx, s *ledger.Session) (bool, error) {
	if s.Compactions <= s.InjectedCompactions {
		return false, nil
	}
	s.InjectedCompactions = s.Compactions
	return true, tx.PutSession(ctx, *s)
}

// endReason is the reason for an end Codex reports: its own, unless the
// owning run is being stopped by a signal (cx's polite stop, a daemon's
// SIGTERM) — then that signal is why the session ended.
func (m *Manager) endReason(ctx context.Context, runID, own string) string {
	if runID == "" {
		return own
	}
	if run, err := m.db.Run(ctx, runID); err == nil && run.EndedAt == nil && strings.HasPrefix(run.EndReason, "signal:") {
		return run.EndReason
	}
	return own
}

// armAppends schedules (in tx) sending the session's new turns to its
// remote sinks.
func (m *Manager) armAppends(ctx context.Context, tx *ledger.Tx, s *ledger.Session) error {
	if s.Status != ledger.Live {
		return nil
	}
	for _, name := range s.Sinks {
		if _, ok := m.sinks[name].(sink.Appender); !ok {
			continue
		}
		if err := tx.ArmJob(ctx, outbox.JobAppend, s.ID, s.Generation, name); err != nil {
			return err
		}
	}
	return nil
}

// codexHome is Codex's home for sessions whose run does not say.
func (m *Manager) codexHome() string { return codex.Home(m.getenv) }
