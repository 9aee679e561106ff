// Package lifecycle is the session state machine: it learns sessions from
// hook events and from the Codex process a run supervises, captures their
// turns from the rollout, ends each generation exactly once (whoever ends it
// first: Codex's SessionEnd, /new or /clear, compaction, the wrapper's exit,
// a sweep), and hands the commit jobs each end enqueues to the outbox
// (internal/outbox), settling a generation once they are done.
//
// Every decision that reads and then writes the ledger happens inside one
// immediate transaction, so any number of processes may race to end the
// same generation: exactly one wins.
//
// Each hook writes in at most two transactions before the ends it causes
// (HandleHook): the first records the hook (the session learned or its
// empty fields filled, adopted by its run, reopened by a resume, seen; the
// run's foreground moved by a SessionStart); the second stores what the
// capture read from the rollout together with what the event does with it.
// A prompt and a stop of a session the ledger knows read the rollout
// first and do both in the first (the read is stored when the transaction
// finds the session as the read did):
//
//	SessionStart startup/clear  1, then one per session it ends (/new, /clear, the active window)
//	SessionStart resume/compact 2: capture + the compaction marked given
//	SessionStart fork           1
//	UserPromptSubmit            1 (2 for a session not yet known): capture + the compaction to give, marked given
//	Stop                        1 (2 for a session not yet known): capture + appends armed for the remote sinks
//	PreCompact                  2: capture + the generation ended and the next opened
//	SessionEnd                  2: capture + the end and its commit jobs (a long history: the end job, for the sweeper)
//	PostCompact, Interrupt      1
//
// Every end (End) is one transaction with its capture and its jobs; the
// outbox then records each job's outcome in one.
//
// It offers operations, not fields, over a ledger the entry point opened
// (New): HandleHook and OwnContext to the hook server, runs (BeginRun,
// ChildStarted, Stopping, Finish, the app-server threads) to the
// supervisor, End, Learn and Upkeep to history, CommitNow, SweepNow and
// the Outbox to cmd/cx. It returns facts and its own result types; the
// caller builds the context block (inject) or the view (readmodel). The
// sinks are packages of their own behind internal/sink, wired in
// internal/sinks and built by the entry point's builder (New): the state
// machine knows no concrete sink, so its in-process tests can hand it
// fakes.
package lifecycle

import (
	"context"
	"errors"
	"os"
	"time"

	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/outbox"
	"cx/internal/sink"
	"cx/internal/testpoint"
)

// End reasons (docs/behaviour.md: "End reasons").
const (
	reasonSessionEnd = "session_end"
	reasonExit       = "exit"
	reasonNew        = "new"
	reasonClear      = "clear"
	reasonCompact    = "compact"
	reasonOrphan     = "orphan"
	reasonIdle       = "idle"
	ReasonManual     = "manual"
)

// Manager is the state machine over one process's ledger, which the
// entry point opened (ledger.Open) and closes.
type Manager struct {
	db    *ledger.DB
	cfg   config.Config
	sinks map[string]sink.Sink
	log   *logs.Logger
	// outbox works the jobs the ends enqueue.
	outbox *outbox.Outbox
	// now is the clock.
	now func() time.Time
	// getenv reads the environment (Codex's home for sessions of Codex
	// started without cx).
	getenv func(string) (string, bool)
	// hookBacklog is the most unread rollout a hook reads: past it (a long
	// history cx has not seen, e.g. a session from before cx was
	// installed) the hook answers with what the ledger has and the
	// background sweeper catches the session up, so a hook costs the new
	// bytes, never the history.
	hookBacklog int64
}

// nowUTC is the state machine's clock (a test may set it ahead).
func nowUTC() time.Time { return testpoint.Now() }

// SinkBuilder builds the sinks a state machine commits to, from what they
// may use of it (internal/sinks.Build: the sinks this build has).
type SinkBuilder func(sink.Host) map[string]sink.Sink

// New returns the state machine over db (open to write), with the sinks
// build makes.
func New(cfg config.Config, db *ledger.DB, build SinkBuilder) *Manager {
	m := &Manager{
		db:          db,
		cfg:         cfg,
		log:         logs.New(cfg.Home),
		now:         nowUTC,
		getenv:      os.LookupEnv,
		hookBacklog: 4 << 20,
	}
	if n, ok := testpoint.Int(testpoint.HookBacklog); ok {
		m.hookBacklog = n // the first-sight tests: a long history without 4 MiB of it
	}
	m.sinks = build(m.host())
	m.outbox = outbox.New(db, m.sinks, m.log, cfg.Lifecycle.MaxAttempts)
	m.outbox.End = func(ctx context.Context, id, reason string) error {
		// What the hook would have ended: whatever is live once caught up.
		_, err := m.End(ctx, id, reason, EndOptions{})
		return err
	}
	m.outbox.Settle = settleGeneration
	return m
}

// ReadEnv makes the state machine read getenv for the environment (Codex's
// home, the sinks' settings) instead of its own process's: a hook answered
// by the hook host reads the environment of the hook's process, which
// Codex gave it.
func (m *Manager) ReadEnv(getenv func(string) (string, bool)) *Manager {
	m.getenv = getenv
	return m
}

// Upkeep runs the sinks' upkeep after their jobs were worked (the local
// sink's search index); a failure is logged, and the next upkeep tries
// again.
func (m *Manager) Upkeep(ctx context.Context) {
	for name, s := range m.sinks {
		if u, ok := s.(sink.Upkeeper); ok {
			if err := u.Upkeep(ctx); err != nil {
				m.log.Printf("upkeep of the %s sink: %v", name, err)
			}
		}
	}
}

// Outbox is the outbox the manager's ends go to.
func (m *Manager) Outbox() *outbox.Outbox { return m.outbox }

// host is what the sinks may use of the manager (its clock and environment
// read at each call, so a test's replacement holds).
func (m *Manager) host() sink.Host {
	return sink.Host{Store: m.db.SinkStore(), Index: m.db, Cfg: m.cfg, Log: m.log,
		Getenv: func(k string) (string, bool) { return m.getenv(k) },
		Now:    func() time.Time { return m.now() }}
}

// ensureSession returns the session, creating it live (generation 1) when
// unknown. Fields that are empty in the ledger are filled from hint.
func (m *Manager) ensureSession(ctx context.Context, tx *ledger.Tx, hint ledger.Session) (ledger.Session, bool, error) {
	s, err := tx.Session(ctx, hint.ID)
	if errors.Is(err, ledger.ErrNotFound) {
		now := tx.Now()
		s = ledger.Session{ID: hint.ID, RunID: hint.RunID, Status: ledger.Live, Generation: 1,
			TranscriptPath: hint.TranscriptPath, Cwd: hint.Cwd, CodexHome: hint.CodexHome, Sinks: hint.Sinks,
			CreatedAt: now, LastSeen: now}
		if s.Sinks == nil {
			s.Sinks = m.cfg.Sinks
		}
		if err := tx.PutSession(ctx, s); err != nil {
			return s, false, err
		}
		_ = tx.AddEvent(ctx, "session.learned", s.ID, s.RunID, hint.EndReason)
		return s, true, nil
	}
	if err != nil {
		return s, false, err
	}
	changed := false
	if s.TranscriptPath == "" && hint.TranscriptPath != "" {
		s.TranscriptPath, changed = hint.TranscriptPath, true
	}
	if s.Cwd == "" && hint.Cwd != "" {
		s.Cwd, changed = hint.Cwd, true
	}
	if s.CodexHome == "" && hint.CodexHome != "" {
		s.CodexHome, changed = hint.CodexHome, true
	}
	if changed {
		err = tx.PutSession(ctx, s)
	}
	return s, false, err
}

// adopt makes run the session's owner; its sinks become the run's.
func adopt(s *ledger.Session, run ledger.Run) {
	s.RunID = run.ID
	s.Sinks = run.Sinks
	if run.CodexHome != "" {
		s.CodexHome = run.CodexHome
	}
}

// Learn records a session the ledger does not know, live in its first
// generation, with an event of kind (and detail) beside the one that says
// it was learned; a known session only has its empty fields filled.
func (m *Manager) Learn(ctx context.Context, hint ledger.Session, kind, detail string) error {
	return m.db.Tx(ctx, func(tx *ledger.Tx) error {
		s, created, err := m.ensureSession(ctx, tx, hint)
		if err == nil && created {
			err = tx.AddEvent(ctx, kind, s.ID, "", detail)
		}
		return err
	})
}
