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
// capture read from the rollout together with what the event does with it:
//
//	SessionStart startup/clear  1, then one per session it ends (/new, /clear, the active window)
//	SessionStart resume/compact 2: capture + the compaction marked given
//	SessionStart fork           1
//	UserPromptSubmit            2: capture + the compaction to give, marked given
//	Stop                        2: capture + appends armed for the remote sinks
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
// internal/sinks.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/outbox"
	"cx/internal/redact"
	"cx/internal/rollout"
	"cx/internal/sink"
	"cx/internal/sinks"
	"cx/internal/testpoint"
)

// End reasons (the README: "End reasons").
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

// New returns the state machine over db (open to write), with the sinks
// this build has.
func New(cfg config.Config, db *ledger.DB) *Manager {
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
	m.sinks = sinks.Build(m.host())
	m.outbox = outbox.New(db, m.sinks, m.log, cfg.Lifecycle.MaxAttempts)
	m.outbox.End = func(ctx context.Context, id, reason string) error {
		// What the hook would have ended: whatever is live once caught up.
		_, err := m.End(ctx, id, reason, EndOptions{})
		return err
	}
	m.outbox.Settle = settleGeneration
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

// settleGeneration marks a generation committed, and its session when it
// is the session's ended one (the outbox: every sink's commit is done).
func settleGeneration(ctx context.Context, tx *ledger.Tx, sessionID string, gen int) error {
	if err := tx.SetGenerationStatus(ctx, sessionID, gen, ledger.Committed); err != nil {
		return err
	}
	s, err := tx.Session(ctx, sessionID)
	if err != nil {
		return err
	}
	if s.Generation == gen && s.Status == ledger.Ended {
		s.Status = ledger.Committed
		if err := tx.PutSession(ctx, s); err != nil {
			return err
		}
	}
	return tx.AddEvent(ctx, "generation.committed", sessionID, s.RunID, fmt.Sprintf("g%d", gen))
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

// afterCapture is more work done in the transaction that stores a capture,
// on the session as stored: one transaction where two would let another
// process in between.
type afterCapture func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) error

// capture captures the session's new turns from its rollout (new turns
// after an ended generation open the next one) and returns the session as
// stored afterwards. It reads nothing when more than limit bytes (limit >
// 0) are unread, reporting it deferred, and runs then (when not nil and
// not deferred) in the transaction that stores what it read.
func (m *Manager) capture(ctx context.Context, id string, limit int64, then afterCapture) (ledger.Session, bool, error) {
	s, err := m.db.Session(ctx, id)
	if err != nil {
		return s, false, err
	}
	path := codex.FindRollout(s.CodexHome, s.ID, s.TranscriptPath)
	if path == "" { // no rollout yet: a session with no turn
		if then != nil {
			err = m.db.Tx(ctx, func(tx *ledger.Tx) error {
				if s, err = tx.Session(ctx, id); err != nil {
					return err
				}
				return then(ctx, tx, &s)
			})
		}
		return s, false, err
	}
	if limit > 0 && unread(path, s) > limit {
		return s, true, nil
	}
	var meta *rollout.SessionMeta
	if s.Meta != "" {
		meta = &rollout.SessionMeta{}
		_ = json.Unmarshal([]byte(s.Meta), meta)
	}
	cur := rollout.Cursor{Offset: s.Cursor.Offset, Seen: s.Cursor.Seen, Inode: s.Cursor.Inode, Size: s.Cursor.Size, Head: s.Cursor.Head}
	capt, err := rollout.CaptureFile(path, cur, meta, rollout.Options{MaxLineBytes: m.cfg.Capture.MaxLineBytes, MaxToolChars: m.cfg.ToolChars(s.Sinks)})
	if err != nil {
		return s, false, fmt.Errorf("capture %s: %w", id, err)
	}
	testpoint.Crash("capture")
	err = m.db.Tx(ctx, func(tx *ledger.Tx) error {
		s, err = tx.Session(ctx, id)
		if err != nil {
			return err
		}
		// Another process captured from here meanwhile: its read stands.
		if capt.Rewritten || (s.Cursor.Offset == cur.Offset && s.Cursor.Seen == cur.Seen) {
			if err := m.store(ctx, tx, &s, path, cur, capt); err != nil {
				return err
			}
		}
		if then != nil {
			return then(ctx, tx, &s)
		}
		return nil
	})
	return s, false, err
}

// store records (in tx) what a capture from cur read of the rollout at
// path.
func (m *Manager) store(ctx context.Context, tx *ledger.Tx, s *ledger.Session, path string, cur rollout.Cursor, capt rollout.Capture) error {
	if s.TranscriptPath != path {
		s.TranscriptPath = path // first seen, or moved to archived_sessions/
	}
	if s.Meta == "" && capt.Meta != nil {
		b, _ := json.Marshal(capt.Meta)
		s.Meta = string(b)
		if s.Cwd == "" {
			s.Cwd = capt.Meta.Cwd
		}
	}
	for _, t := range capt.Turns {
		if t.Key == "" {
			continue
		}
		data, _ := json.Marshal(t.Map(redact.String)) // no secret at rest
		gen := s.Generation
		if s.Status != ledger.Live {
			// A turn after the generation ended: it opens the next one.
			// (Upsert keeps a known turn in the generation it had.)
			gen = s.Generation + 1
		}
		inserted, err := tx.UpsertTurn(ctx, ledger.StoredTurn{SessionID: s.ID, Key: t.Key, Generation: gen, Offset: t.Offset, Data: string(data)})
		if err != nil {
			return err
		}
		if inserted && s.Status != ledger.Live {
			m.openNext(s, tx, t.Offset)
			_ = tx.AddEvent(ctx, "generation.opened", s.ID, s.RunID, strconv.Itoa(s.Generation))
		}
	}
	n, err := tx.CountTurns(ctx, s.ID, s.Generation)
	if err != nil {
		return err
	}
	s.Turns = n
	s.Cursor = ledger.Cursor{Offset: capt.Cursor.Offset, Seen: capt.Cursor.Seen, Inode: capt.Cursor.Inode, Size: capt.Cursor.Size, Head: capt.Cursor.Head}
	s.Compactions += capt.Compactions
	s.Interrupted += capt.Aborted
	s.Placeholders += len(capt.Placeholders)
	if len(capt.Turns) > 0 || capt.Bytes > 0 {
		s.LastSeen = tx.Now()
	}
	for _, p := range capt.Placeholders {
		_ = tx.AddEvent(ctx, "capture.placeholder", s.ID, s.RunID, fmt.Sprintf("%s at %d (%d bytes)", p.Kind, p.Offset, p.Size))
	}
	if capt.Rewritten {
		_ = tx.AddEvent(ctx, "capture.rewritten", s.ID, s.RunID, path)
	}
	if err := foldCapture(ctx, tx, s.ID, cur.Offset, capt); err != nil {
		return err
	}
	return tx.PutSession(ctx, *s)
}

// foldCapture folds a read's final turns into the session's checkpoint
// fold (those before the read's resume point; the rest are read again) and
// keeps the cx sections it saw. A read from the start (a new or rewritten
// rollout) starts the fold; a read that does not continue the fold — a
// session captured before cx kept folds — leaves it absent, and its
// checkpoint comes from the rollout.
func foldCapture(ctx context.Context, tx *ledger.Tx, id string, from int64, capt rollout.Capture) error {
	kept, ok, err := tx.Fold(ctx, id)
	if err != nil {
		return err
	}
	if ok && !capt.Rewritten && kept.UpTo == from && capt.Cursor.Offset == from && capt.Aborted == 0 && capt.Compactions == 0 &&
		len(capt.Placeholders) == 0 && !slices.ContainsFunc(capt.Sections, func(h string) bool { return !slices.Contains(kept.Sections, h) }) {
		// The resume point did not move (no turn became final: a prompt's
		// open turn) and nothing was counted or seen anew: the fold stands.
		return nil
	}
	var f *checkpoint.Fold
	switch {
	case capt.Rewritten || (!ok && from == 0):
		f, kept.Sections = checkpoint.NewFold(), nil
	case ok && kept.UpTo == from:
		if f, err = checkpoint.LoadFold([]byte(kept.State)); err != nil {
			return err
		}
	default:
		return nil
	}
	f.Meta(capt.Meta)
	f.Count(capt.Aborted, capt.Compactions, len(capt.Placeholders))
	for _, t := range capt.Turns {
		if t.Offset < capt.Cursor.Offset {
			f.Add(t, checkpoint.DefaultCaps)
		}
	}
	sections := kept.Sections
	for _, h := range capt.Sections {
		if !slices.Contains(sections, h) {
			sections = append(sections, h)
		}
	}
	return tx.PutFold(ctx, id, ledger.Fold{UpTo: capt.Cursor.Offset, State: string(f.JSON()), Sections: sections})
}

// checkpointOf is the session's checkpoint as of its last capture — what
// FromRollout gives for the bytes captured — from the ledger alone: the fold
// and the turns still open. ok is false when the ledger has no fold for it.
// present are the cx context sections the rollout already holds.
func checkpointOf(ctx context.Context, q checkpointReader, id string) (cp checkpoint.Checkpoint, present map[string]bool, ok bool, err error) {
	kept, ok, err := q.Fold(ctx, id)
	if err != nil || !ok {
		return cp, nil, false, err
	}
	f, err := checkpoint.LoadFold([]byte(kept.State))
	if err != nil {
		return cp, nil, false, err
	}
	stored, err := q.TurnsFrom(ctx, id, kept.UpTo)
	if err != nil {
		return cp, nil, false, err
	}
	open := sink.Turns(stored)
	present = map[string]bool{}
	for _, h := range kept.Sections {
		present[h] = true
	}
	return f.Checkpoint(checkpoint.DefaultCaps, open...), present, true, nil
}

// checkpointReader is the ledger read checkpointOf needs (in a transaction
// or not).
type checkpointReader interface {
	Fold(ctx context.Context, id string) (ledger.Fold, bool, error)
	TurnsFrom(ctx context.Context, sessionID string, offset int64) ([]ledger.StoredTurn, error)
}

// openNext makes the session's next generation live.
func (m *Manager) openNext(s *ledger.Session, tx *ledger.Tx, start int64) {
	s.Generation++
	s.Status = ledger.Live
	s.EndReason = ""
	s.EndedAt = nil
	s.Turns = 0
	s.GenStart = start
	s.LastSeen = tx.Now()
}

// EndOptions qualify one end.
type EndOptions struct {
	ExitStatus *int
	// OnlyGeneration, when non-zero, ends only that generation (a racing
	// ender that saw generation g must not end g+1).
	OnlyGeneration int
}

// endLive ends the session's live generation with reason, in one
// transaction with its commit jobs. It reports whether this call ended it
// (false: not live, or another ender won).
func (m *Manager) endLive(ctx context.Context, id, reason string, o EndOptions) (bool, error) {
	ended := false
	err := m.db.Tx(ctx, func(tx *ledger.Tx) (err error) {
		ended, err = m.endInTx(ctx, tx, id, reason, o)
		return err
	})
	if err == nil && ended {
		testpoint.Crash("ended")
	}
	return ended && err == nil, err
}

// endInTx is endLive inside the caller's transaction.
func (m *Manager) endInTx(ctx context.Context, tx *ledger.Tx, id, reason string, o EndOptions) (bool, error) {
	s, err := tx.Session(ctx, id)
	if err != nil {
		return false, err
	}
	if s.Status != ledger.Live || (o.OnlyGeneration != 0 && s.Generation != o.OnlyGeneration) {
		return false, nil
	}
	n, err := tx.CountTurns(ctx, s.ID, s.Generation)
	if err != nil {
		return false, err
	}
	now := tx.Now()
	if n == 0 && s.Generation > 1 {
		// A reopened generation that never got a turn (a resume without a
		// prompt): it never happened; the session is as it was, but
		// ended the way it just ended (a compaction, then a closed
		// terminal, shows the hangup, not the compaction).
		prev, err := tx.Generation(ctx, s.ID, s.Generation-1)
		if err == nil {
			s.Generation, s.Status, s.EndReason, s.EndedAt = prev.Generation, prev.Status, reason, &now
			s.Turns = prev.Turns
			_ = tx.AddEvent(ctx, "generation.discarded", s.ID, s.RunID, reason)
			return true, tx.PutSession(ctx, s)
		}
	}
	g := ledger.Generation{SessionID: s.ID, Generation: s.Generation, EndReason: reason, RunID: s.RunID, Sinks: s.Sinks,
		StartOffset: s.GenStart, EndOffset: s.Cursor.Seen, Turns: n, ExitStatus: o.ExitStatus, EndedAt: now}
	switch {
	case n == 0:
		g.Status = ledger.Empty
	case len(s.Sinks) == 0:
		g.Status, g.CommittedAt = ledger.Committed, &now // CX_SINKS=none: recorded, nothing sent
	default:
		g.Status = ledger.Ended
	}
	if err := tx.InsertGeneration(ctx, g); err != nil {
		return false, err
	}
	if g.Status != ledger.Empty {
		// The checkpoint at the end, from the ledger: the local sink
		// archives it without reading the rollout again.
		if cp, _, ok, err := checkpointOf(ctx, tx, s.ID); err != nil {
			return false, err
		} else if ok {
			if err := tx.SetGenerationCheckpoint(ctx, s.ID, g.Generation, string(cp.JSON())); err != nil {
				return false, err
			}
		}
	}
	if g.Status == ledger.Ended {
		for _, sink := range s.Sinks {
			if _, err := tx.Enqueue(ctx, outbox.JobCommit, s.ID, s.Generation, sink); err != nil {
				return false, err
			}
		}
	}
	s.Status, s.EndReason, s.EndedAt, s.Turns = g.Status, reason, &now, n
	_ = tx.AddEvent(ctx, "generation.ended", s.ID, s.RunID, fmt.Sprintf("g%d %s %s turns=%d", g.Generation, reason, g.Status, n))
	return true, tx.PutSession(ctx, s)
}

// End catches a session up and ends its live generation, in the one
// transaction that stores the capture; used by every ender (SessionEnd,
// the exit path, /new, sweeps, `cx ctl commit`). A rollout that cannot be
// read does not stop the end: the generation ends with what the ledger has.
func (m *Manager) End(ctx context.Context, id, reason string, o EndOptions) (bool, error) {
	ended := false
	_, _, err := m.capture(ctx, id, 0, func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) (err error) {
		ended, err = m.endInTx(ctx, tx, id, reason, o)
		return err
	})
	if err != nil {
		m.log.Printf("catch up %s before end: %v", id, err)
		return m.endLive(ctx, id, reason, o)
	}
	if ended {
		testpoint.Crash("ended")
	}
	return ended, nil
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
