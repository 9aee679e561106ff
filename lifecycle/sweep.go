package lifecycle

import (
	"context"
	"fmt"
	"os"
	"time"

	"cx/internal/codex"
	"cx/internal/ledger"
	"cx/internal/outbox"
	"cx/internal/runproc"
)

// SweepResult says what a sweep did.
type SweepResult struct {
	Orphans int // runs found dead
	Ended   int // generations ended
	Jobs    int // jobs worked
	// Recovered counts sessions recorded late from their rollouts (a run
	// could not write the ledger).
	Recovered int
	// InProgress are jobs another process (a hook's background sweeper, a
	// run's exit) still held when the sweep stopped waiting for them.
	InProgress []ledger.Job
	// Waited is how long the sweep waited for such jobs.
	Waited time.Duration
}

// SweepOptions tune a foreground sweep.
type SweepOptions struct {
	// Background: the single background sweeper a hook starts — it holds
	// the sweeper's lock, or leaves at once when another does.
	Background bool
	// Wait is how long to wait for jobs another process is working on
	// (a commit of a long history), so that what the sweep reports done is
	// done; 0 does not wait.
	Wait time.Duration
	// Progress, when set, is told which jobs are waited for, about every
	// second.
	Progress func(waiting []ledger.Job, waited time.Duration)
}

// jobPoll is how often a sweep looks whether other workers' jobs are done.
const jobPoll = 100 * time.Millisecond

// waitForOthers waits, up to wait, until no job is leased by another
// worker (their leases end with their outcome, or expire), working what
// they leave due; it returns the jobs still held elsewhere.
func (m *Manager) waitForOthers(ctx context.Context, o SweepOptions, res *SweepResult) error {
	start := time.Now()
	lastProgress := time.Time{}
	for polls := 0; ; polls++ {
		held, err := m.leasedElsewhere(ctx)
		if err != nil {
			return err
		}
		if polls > 0 { // a sweep that found nothing held waited for nothing
			res.Waited = time.Since(start)
		}
		if len(held) == 0 || res.Waited >= o.Wait || ctx.Err() != nil {
			res.InProgress = held
			return nil
		}
		if o.Progress != nil && time.Since(lastProgress) >= time.Second {
			o.Progress(held, res.Waited)
			lastProgress = time.Now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(jobPoll):
		}
		n, err := m.outbox.Work(ctx, nil) // a job released for a retry, or an expired lease
		res.Jobs += n
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// leasedElsewhere lists the jobs another worker holds a live lease on.
func (m *Manager) leasedElsewhere(ctx context.Context) ([]ledger.Job, error) {
	return m.outbox.LeasedElsewhere(ctx, m.now())
}

// recoverOrphans ends the live sessions of runs whose cx died (pid gone, or
// reused by another process), as `orphan`, and closes those runs.
func (m *Manager) recoverOrphans(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	runs, err := m.db.Runs(ctx, true)
	if err != nil {
		return res, err
	}
	for _, r := range runs {
		if r.PID == os.Getpid() || runproc.CxAlive(r) {
			continue
		}
		if runproc.CodexAlive(r) {
			// cx is gone but its Codex still runs (the watchman is stopping
			// it): its threads are not over, nor unlocked for learnOrphaned.
			continue
		}
		res.Orphans++
		m.learnOrphaned(ctx, r)
		var sessions []ledger.Session
		if err := m.db.Tx(ctx, func(tx *ledger.Tx) error {
			sessions, err = tx.RunSessions(ctx, r.ID)
			return err
		}); err != nil {
			return res, err
		}
		for _, s := range sessions {
			ended, err := m.End(ctx, s.ID, reasonOrphan, EndOptions{})
			if err != nil {
				return res, err
			}
			if ended {
				res.Ended++
			}
		}
		err := m.db.Tx(ctx, func(tx *ledger.Tx) error {
			cur, err := tx.Run(ctx, r.ID)
			if err != nil || cur.EndedAt != nil {
				return err
			}
			now := tx.Now()
			cur.EndedAt, cur.EndReason = &now, reasonOrphan
			_ = tx.AddEvent(ctx, "run.orphaned", "", r.ID, fmt.Sprintf("pid %d gone", r.PID))
			return tx.PutRun(ctx, cur)
		})
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Sweep recovers orphans, ends un-owned sessions idle past the TTL and
// sessions still live under ended runs, then works the outbox.
func (m *Manager) Sweep(ctx context.Context) (SweepResult, error) {
	res, err := m.recoverOrphans(ctx)
	if err != nil {
		return res, err
	}
	n, err := m.recoverUnrecorded(ctx, m.codexHome())
	res.Recovered = n
	if err != nil {
		return res, err
	}
	// Live sessions, and the others seen in the last day (a run's end may
	// have left turns to commit): never every session ever recorded. An
	// older session Codex resumes is learned again by its hooks or by the
	// next start's recovery.
	sessions, err := m.db.SweepCandidates(ctx, m.now().Add(-24*time.Hour))
	if err != nil {
		return res, err
	}
	cutoff := m.now().Add(-m.cfg.Lifecycle.IdleTTL.Duration)
	for _, s := range sessions {
		reason := ""
		switch {
		case s.RunID == "" && s.Status == ledger.Live && s.LastSeen.Before(cutoff):
			reason = reasonIdle
		case s.RunID == "" && s.Status == ledger.Live && m.heldByNone(s) && !m.endQueued(ctx, s.ID):
			// Recorded by a hook that knew no run (its attribution ran out
			// of time on a busy ledger, or Codex runs without cx), and its
			// Codex died without a SessionEnd: the writer lock says no
			// Codex holds it now.
			reason = reasonOrphan
		case s.RunID == "" && s.Status == ledger.Live:
			m.catchUpDeferred(ctx, s)
		case s.RunID == "" && hasNewBytes(s) && !m.liveness(s).Live:
			// Ended, of no run, and resumed where nothing reached the
			// ledger (a cx killed on a full disk leaves no run, hook or
			// breadcrumb): its Codex is done, the new turns are a
			// generation to end.
			reason = ReasonRecovered
		case s.RunID != "":
			run, err := m.db.Run(ctx, s.RunID)
			if err == nil && run.EndedAt == nil {
				m.catchUpDeferred(ctx, s)
			}
			if err == nil && run.EndedAt != nil {
				// The run is over: its sessions may have turns left to commit
				// (a crash between the exit's catch-up and its end).
				if s.Status == ledger.Live || hasNewBytes(s) {
					reason = reasonOrphan
					if run.EndReason != reasonOrphan && run.EndReason != "" {
						reason = run.EndReason
					}
				}
			}
		}
		if reason == "" {
			continue
		}
		ended, err := m.End(ctx, s.ID, reason, EndOptions{})
		if err != nil {
			return res, err
		}
		if ended {
			res.Ended++
		}
	}
	res.Jobs, err = m.outbox.Work(ctx, nil)
	return res, err
}

// catchUpDeferred catches up a session of a running Codex whose long
// history a hook left for the sweeper.
func (m *Manager) catchUpDeferred(ctx context.Context, s ledger.Session) {
	if backlog(s) <= m.hookBacklog {
		return
	}
	if _, _, err := m.capture(ctx, s.ID, 0, m.armAppends); err != nil {
		m.log.Printf("sweep: catch up %s: %v", s.ID, err)
	}
}

// hasNewBytes reports whether the session's rollout grew past its cursor.
func hasNewBytes(s ledger.Session) bool { return backlog(s) > 0 }

// learnOrphaned records the threads a dead run's Codex created that the
// ledger never learned as its own — cx was killed before its discovery saw
// them, and no hook recorded them, or a hook recorded one without knowing
// its run (its attribution ran out of time on a locked ledger) — as the
// run's exit would have, so its end ends them too.
func (m *Manager) learnOrphaned(ctx context.Context, r ledger.Run) {
	if r.CodexPID == 0 || r.CodexHome == "" {
		return
	}
	cwd := r.Cwd
	if r.Mode == ModeAppServer {
		cwd = "" // a daemon's threads run wherever it says
	}
	logs := codex.NewLogWatch(r.CodexHome, r.StartedAt)
	defer logs.Close()
	for id, path := range codex.OwnThreads(r.CodexHome, r.CodexPID, r.StartedAt, cwd, logs, func(id string) bool { return m.taken(ctx, id) }) {
		err := m.db.Tx(ctx, func(tx *ledger.Tx) error {
			claimed, err := m.claim(ctx, tx, r, id, path, reasonOrphan)
			if err != nil || !claimed {
				return err
			}
			return tx.AddEvent(ctx, "session.recovered", id, r.ID, "learned from Codex's files when its run was found dead")
		})
		if err != nil {
			m.log.Printf("sweep: learn %s of dead run %s: %v", id, r.ID, err)
		}
	}
}

// taken reports whether session id is known as a run's, or has ended: not
// for a run that finds it among its Codex's threads (a dead run's, a run's
// at its exit) to take. A live one no run holds was recorded by a hook
// that could not name its run (a busy ledger): it is theirs — no one else
// would end it before the idle TTL, for a Codex without writer locks.
func (m *Manager) taken(ctx context.Context, id string) bool {
	s, err := m.db.Session(ctx, id)
	return err == nil && (s.RunID != "" || s.Status != ledger.Live)
}

// SweepNow sweeps once, within five minutes: `cx ctl sweep`, and the
// background sweeper (background: the caller holds its place,
// hookserver.BackgroundSweep). A foreground sweep then waits, up to
// o.Wait, for the jobs other processes are working on. The sinks' upkeep
// follows.
func (m *Manager) SweepNow(ctx context.Context, o SweepOptions) (SweepResult, error) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	res, err := m.Sweep(sctx)
	if err == nil && !o.Background {
		err = m.waitForOthers(sctx, o, &res)
	}
	if err != nil {
		m.log.Printf("sweep: %v", err)
		return res, fmt.Errorf("sweep: %w", err)
	}
	m.Upkeep(sctx)
	if o.Background {
		m.log.Printf("background sweep: %d ended, %d job(s) worked", res.Ended, res.Jobs)
	}
	return res, nil
}

// WorkDue works the commits due now, if any (the background sweeper
// does, between its looks at the threads of Codex started without cx; the
// outbox asks first, by a read, whether any is).
func (m *Manager) WorkDue(ctx context.Context) error {
	_, err := m.outbox.Work(ctx, nil)
	return err
}

// EndLetGo ends the live sessions of no run whose Codex let go of their
// thread (its writer lock free, as the sweep would: `orphan`), and counts
// those still held. No hook tells when a Codex started without cx lets go
// of a thread — a TUI's thread kept by Codex's background daemon after
// /exit, a daemon gone — so the background sweeper asks this while any is
// held (hookserver.BackgroundSweep).
func (m *Manager) EndLetGo(ctx context.Context) (held, ended int, err error) {
	var live []ledger.Session
	if err := m.db.Tx(ctx, func(tx *ledger.Tx) (err error) { live, err = tx.UnownedLive(ctx); return err }); err != nil {
		return 0, 0, err
	}
	for _, s := range live {
		l := m.liveness(s)
		switch {
		case !l.ByLock:
		case l.Live:
			held++
		case !m.endQueued(ctx, s.ID):
			if ok, err := m.End(ctx, s.ID, reasonOrphan, EndOptions{}); err != nil {
				m.log.Printf("background sweep: end %s: %v", s.ID, err)
			} else if ok {
				ended++
			}
		}
	}
	return held, ended, nil
}

// liveness judges whether a Codex may still write the session's rollout
// (the zero Liveness when it has none yet: no turn, nothing to end).
func (m *Manager) liveness(s ledger.Session) codex.Liveness {
	path := codex.FindRollout(s.CodexHome, s.ID, s.TranscriptPath)
	if path == "" {
		return codex.Liveness{}
	}
	return codex.RolloutFileLiveness(s.CodexHome, s.ID, path, m.now(), m.cfg.Lifecycle.ActiveWindow.Duration)
}

// heldByNone reports whether the session's Codex keeps writer locks and
// none holds its thread: no Codex has it loaded. A Codex without writer
// locks is never judged so (its rollout's age cannot tell an idle user
// from a dead Codex; the idle TTL does).
func (m *Manager) heldByNone(s ledger.Session) bool {
	l := m.liveness(s)
	return l.ByLock && !l.Live
}

// endQueued reports whether an end a hook left to the outbox waits for the
// session: that end, with its reason, is the one to make.
func (m *Manager) endQueued(ctx context.Context, id string) bool {
	jobs, err := m.db.SessionJobs(ctx, id)
	if err != nil {
		return true // unknown: leave it to the outbox and the next sweep
	}
	for _, j := range jobs {
		if j.Kind == outbox.JobEnd && j.State != ledger.JobDone {
			return true
		}
	}
	return false
}
