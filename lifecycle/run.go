package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"cx/internal/codex"
	"cx/internal/ledger"
	"cx/internal/proc"
	"cx/internal/redact"
	"cx/internal/runproc"
	"cx/internal/testpoint"
)

// RunInfo describes a run when it starts.
type RunInfo struct {
	ID           string
	CodexHome    string
	CodexVersion string
	Cwd          string
	Args         []string
	Sinks        []string
	// Mode is "app-server" when Codex serves a daemon's threads: many live
	// at once, so a new thread never ends another (no /new there).
	Mode string
	// CodexCwd is the directory Codex runs in ("" when its arguments point
	// it elsewhere: codex.Cwd).
	CodexCwd string
	// Started is when cx began launching Codex (zero: when the run is
	// recorded); threads created since are candidates for this run.
	Started time.Time
	// CodexPID is Codex's pid when it was started before the run began
	// (cx launches Codex first): the run's first write records it, so a
	// hook of that Codex is attributed at once, not after a second write
	// it would wait for.
	CodexPID int
	// Attributed, if not nil, is called once Codex's pid is in the run's
	// row: from then on no hook of this Codex waits on this process.
	Attributed func()
}

// ModeAppServer marks a run of `codex app-server`.
const ModeAppServer = "app-server"

// ExitInfo is how the supervised Codex ended.
type ExitInfo struct {
	Code     int
	Signal   string // the signal Codex died of ("KILL"), "" if it exited
	Received string // the stop signal cx received ("TERM"), "" if none
	// Cut, when closed, stops the exit's outbox work (a sink command is
	// killed and waited for, its job left for later): cx was told to stop
	// while it finished. The sessions' ends are recorded all the same.
	Cut <-chan struct{}
}

// Reason is the end reason the exit implies (docs/behaviour.md: "End reasons").
func (e ExitInfo) Reason() string {
	switch {
	case e.Received != "":
		return "signal:" + e.Received
	case e.Signal != "":
		return "killed:" + e.Signal
	}
	return reasonExit
}

// Run is the lifecycle side of one cx process supervising one Codex.
type Run struct {
	m    *Manager
	info RunInfo

	recorded  chan struct{} // the run row exists, or recording it gave up (recErr)
	recErr    error
	finishing chan struct{} // Finish began: recording the run stops trying
	// withCodex: the run row was written with Codex's pid (it had started
	// by then), so no second write is needed for it. Read after recorded.
	withCodex bool

	mu         sync.Mutex
	codexPID   int
	codexStart uint64
	stop       chan struct{}
	stopped    chan struct{}
	known      map[string]bool
	paths      map[string]string // the rollout each known session was learned with
	threads    *codex.Threads    // what the process holds, discovered
	logs       *codex.LogWatch
	drain      func() // before the exit ends the sessions left (the app-server tap)
	started    time.Time
}

// BeginRun records the run in the background (Codex's launch never waits
// for the ledger) and returns at once.
func (m *Manager) BeginRun(ctx context.Context, info RunInfo) *Run {
	r := &Run{m: m, info: info, recorded: make(chan struct{}), finishing: make(chan struct{}), known: map[string]bool{}, paths: map[string]string{}, started: info.Started}
	if r.started.IsZero() {
		r.started = time.Now()
	}
	if info.CodexPID != 0 {
		r.codexPID, r.codexStart = info.CodexPID, proc.StartTime(info.CodexPID)
	}
	r.logs = codex.NewLogWatch(info.CodexHome, r.started)
	r.threads = &codex.Threads{Home: info.CodexHome, Since: r.started, Logs: r.logs, ByLocks: codex.KeepsWriterLocks(info.CodexVersion)}
	go func() {
		defer close(r.recorded) // after a panic is logged
		defer m.log.Recover("record run " + info.ID)
		r.recErr = errors.New("the run was not recorded") // stays, if recording panics
		// A run that could not be recorded is nobody's to end if its cx
		// dies: its hooks' threads are recorded with no run. A failure that
		// passes (a disk full for a moment, the ledger locked past its busy
		// timeout) is tried again until it goes or the run finishes — a
		// daemon started on a full disk runs on for hours (the chaos run,
		// 0.128: an app-server's thread left live, owned by no run).
		var withCodex bool
		tries, err := m.db.TxRetry(ctx, r.finishing, recordRunPause, func(tx *ledger.Tx) error {
			// Codex has started by now (RunInfo.CodexPID, or ChildStarted
			// first): its pid goes in the same write (one write lock fewer
			// a run, at the moment many runs start together).
			r.mu.Lock()
			pid, start := r.codexPID, r.codexStart
			r.mu.Unlock()
			withCodex = pid != 0
			return tx.PutRun(ctx, ledger.Run{ID: info.ID, PID: os.Getpid(), PIDStart: proc.StartTime(os.Getpid()),
				CodexPID: pid, CodexStart: start,
				CodexHome: info.CodexHome, CodexVersion: info.CodexVersion, Cwd: info.Cwd, Args: redact.Strings(info.Args),
				Sinks: info.Sinks, Mode: info.Mode, StartedAt: r.started.UTC()}) // Codex's launch, not this later write: a dead run's threads are those born since
		})
		r.recErr, r.withCodex = err, err == nil && withCodex
		switch {
		case err != nil:
			m.log.Printf("record run %s (%d tries): %v", info.ID, tries, err)
		case tries > 1:
			m.log.Printf("record run %s: recorded at try %d", info.ID, tries)
		}
	}()
	return r
}

// recordRunPause is the pause between tries to record a run.
const recordRunPause = 500 * time.Millisecond

// ID is the run id (CX_RUN_ID).
func (r *Run) ID() string { return r.info.ID }

// ChildStarted records Codex's pid and start time and starts learning the
// sessions it holds.
func (r *Run) ChildStarted(pid int) {
	start := proc.StartTime(pid)
	r.mu.Lock()
	r.codexPID, r.codexStart = pid, start
	r.stop, r.stopped = make(chan struct{}), make(chan struct{})
	r.mu.Unlock()
	go func() {
		defer close(r.stopped)
		defer r.m.log.Recover("session discovery of " + r.info.ID) // logged before stopped closes
		<-r.recorded
		if r.recErr != nil {
			return
		}
		ctx := context.Background()
		recorded := r.withCodex || r.recordCodex(ctx, pid, start)
		if recorded {
			r.attributed()
		}
		testpoint.Panic("discover")
		r.discoverLoop(ctx, pid, start, recorded)
	}()
}

// attributed tells the run's owner that Codex is recorded (once: a
// discovery loop records it once).
func (r *Run) attributed() {
	if r.info.Attributed != nil {
		r.info.Attributed()
	}
}

// recordCodex writes Codex's pid and start time into the run: hooks are
// attributed by them, and a dead run's threads found by them. It reports
// whether it could (after a ledger locked past its timeout, or a full
// disk, discovery tries again).
func (r *Run) recordCodex(ctx context.Context, pid int, start uint64) bool {
	err := r.m.db.Tx(ctx, func(tx *ledger.Tx) error {
		run, err := tx.Run(ctx, r.info.ID)
		if err != nil {
			return err
		}
		run.CodexPID, run.CodexStart = pid, start
		return tx.PutRun(ctx, run)
	})
	if err != nil {
		r.m.log.Printf("record codex pid for %s: %v", r.info.ID, err)
	}
	return err == nil
}

// discoverLoop learns the sessions the Codex process holds before any hook
// names them (SessionStart waits for the first prompt): thread lock files
// (0.169) and rollout files among its open files, and its rows in Codex's log
// database (0.128). It looks every 500 ms while it is learning and backs
// off while nothing changes. A thread is a session only once Codex keeps
// its lock file or rollout, and creating either wakes the loop (inotify,
// once a burst of creations settles: codex.ThreadWatch), so with the watch
// it backs off to every 30 s (4 s without): an idle Codex costs cx next to
// nothing.
func (r *Run) discoverLoop(ctx context.Context, pid int, start uint64, recorded bool) {
	watch := codex.WatchThreads(r.info.CodexHome, codex.KeepsWriterLocks(r.info.CodexVersion))
	defer watch.Close()
	var wake <-chan struct{}
	if watch != nil {
		wake = watch.C
	}
	every := codex.FastLook
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		if !recorded {
			if recorded = r.recordCodex(ctx, pid, start); recorded {
				r.attributed()
			}
		}
		every = watch.NextLook(r.discover(ctx, pid, true), recorded, r.settled(), every)
		watch.Refresh()
		t.Reset(every)
		select {
		case <-r.stop:
			return
		case <-wake:
			every = codex.FastLook
		case <-t.C:
		}
	}
}

// settled reports whether discovery has found a thread and every thread
// the run knows was learned with its rollout (a thread found by its lock
// alone has none yet: Codex opens the rollout after the lock, and no
// watch wakes for that). Before the first thread it is not: in a fresh
// Codex home the watch first watches the home for the locks folder, and
// a lock made in the folder as it appears may come before the folder is
// watched.
func (r *Run) settled() bool {
	if len(r.known) == 0 {
		return false
	}
	for id := range r.known {
		if r.paths[id] == "" {
			return false
		}
	}
	return true
}

// discover learns what the process holds now; it reports whether it
// learned anything (and writes the ledger only then).
func (r *Run) discover(ctx context.Context, pid int, withFDs bool) bool {
	return r.learn(ctx, r.threads.Look(pid, withFDs, func(id string) bool { return r.known[id] }))
}

// learn records the sessions found (id → rollout path, maybe "") that are
// new to the run; it reports whether any was.
func (r *Run) learn(ctx context.Context, found map[string]string) bool {
	learned := false
	for id, path := range found {
		if r.known[id] && (path == "" || r.paths[id] == path) {
			continue // nothing new of it
		}
		r.known[id], r.paths[id], learned = true, path, true
		testpoint.Crash("learn")
		err := r.m.db.Tx(ctx, func(tx *ledger.Tx) error {
			run, err := tx.Run(ctx, r.info.ID)
			if err != nil {
				return err
			}
			_, err = r.m.claim(ctx, tx, run, id, path, "discovered")
			return err
		})
		if err != nil {
			// Not learned after all: the next look, or the exit, tries again.
			delete(r.known, id)
			delete(r.paths, id)
			r.threads.Again(id)
			r.m.log.Printf("discover session %s: %v", id, err)
		}
	}
	return learned
}

// writtenUnseen finds, once Codex has exited, the threads it wrote that
// discovery never saw while it ran: a quick run (a `cx exec` of a second),
// a busy machine, a fresh Codex home whose folders did not exist yet — and
// Codex 0.169+ deletes a thread's lock file at exit, while 0.128's quick
// `exec` logs no thread rows (0.171 logs them: 1,735 of 2,735 rows in one
// e2e home). See codex.OwnThreads; the ledger must not know them either.
//
// A thread born while another run's Codex of the same home runs (or is
// about to) is left to that run (runproc.BornBeside): a run that ended
// beside a sibling ended the sibling's live thread as its own (`cx exec` ×
// 16, 4 at once: 1 in ~30). Its own run learns it (its hooks, its
// discovery, its exit); a thread no run learns is the sweep's.
func (r *Run) writtenUnseen(ctx context.Context, pid int) map[string]string {
	runs, _ := r.m.db.Runs(ctx, true)
	siblingMayHold := runproc.BornBeside(runs, r.info.ID, r.info.CodexHome)
	return codex.OwnThreads(r.info.CodexHome, pid, r.started, r.info.CodexDir(), r.logs, func(id string) bool {
		return r.known[id] || r.m.taken(ctx, id) || siblingMayHold(id)
	})
}

// CodexDir is the directory Codex runs in, "" when it cannot be known
// (the arguments pointed it elsewhere, or it serves a daemon's threads,
// each with a directory of its own).
func (info RunInfo) CodexDir() string {
	if info.Mode == ModeAppServer {
		return ""
	}
	return info.CodexCwd
}

// Stopping records that cx is stopping Codex because of a signal: ends
// Codex reports from now on carry that reason.
func (r *Run) Stopping(reason string) {
	select {
	case <-r.recorded:
		r.recordStopping(reason)
	default:
		// The run is not recorded yet (its ledger busy or full): the signal
		// reaches Codex now, and the reason is written once the run is.
		go r.recordStopping(reason)
	}
}

func (r *Run) recordStopping(reason string) {
	<-r.recorded
	if r.recErr != nil {
		return
	}
	ctx := context.Background()
	err := r.m.db.Tx(ctx, func(tx *ledger.Tx) error {
		run, err := tx.Run(ctx, r.info.ID)
		if err != nil || run.EndedAt != nil {
			return err
		}
		run.EndReason = reason
		return tx.PutRun(ctx, run)
	})
	if err != nil {
		r.m.log.Printf("record stop of %s: %v", r.info.ID, err)
	}
}

// Finish is the synthesized SessionEnd: after Codex exited (and the terminal
// is restored), every session of the run is caught up and its live
// generation ended with the exit's reason; then the outbox is worked for at
// most the exit budget. What is left is done later (next start, hook, sweep).
func (r *Run) Finish(ctx context.Context, ex ExitInfo) error {
	r.mu.Lock()
	pid, stop, stopped := r.codexPID, r.stop, r.stopped
	r.mu.Unlock()
	close(r.finishing)
	if stop != nil {
		close(stop)
		<-stopped
	}
	<-r.recorded
	if r.recErr != nil {
		return r.recErr
	}
	if pid != 0 {
		r.discover(ctx, pid, false) // the log database outlives the process
		r.learn(ctx, r.writtenUnseen(ctx, pid))
	}
	if r.logs != nil {
		r.logs.Close()
	}
	if r.drain != nil {
		r.drain()
	}
	sessions, err := r.sessions(ctx)
	if err != nil {
		return err
	}
	code := ex.Code
	for _, s := range sessions {
		if _, err := r.m.End(ctx, s.ID, ex.Reason(), EndOptions{ExitStatus: &code}); err != nil {
			r.m.log.Printf("end %s at exit of %s: %v", s.ID, r.info.ID, err)
		}
	}
	err = r.m.db.Tx(ctx, func(tx *ledger.Tx) error {
		run, err := tx.Run(ctx, r.info.ID)
		if err != nil {
			return err
		}
		now := tx.Now()
		run.EndedAt, run.ExitCode, run.EndReason = &now, &code, ex.Reason()
		_ = tx.AddEvent(ctx, "run.ended", "", run.ID, fmt.Sprintf("%s code=%d", ex.Reason(), code))
		return tx.PutRun(ctx, run)
	})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, r.m.cfg.Lifecycle.ExitBudget.Duration)
	defer cancel()
	if ex.Cut != nil {
		go func() {
			select {
			case <-ex.Cut:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	if _, err := r.m.outbox.Work(wctx, nil); err != nil && wctx.Err() == nil {
		r.m.log.Printf("outbox at exit of %s: %v", r.info.ID, err)
	}
	return nil
}

func (r *Run) sessions(ctx context.Context) ([]ledger.Session, error) {
	var out []ledger.Session
	err := r.m.db.Tx(ctx, func(tx *ledger.Tx) error {
		var err error
		out, err = tx.RunSessions(ctx, r.info.ID)
		return err
	})
	return out, err
}

// SetDrain names what the run's exit does before it ends the sessions left
// (the app-server tap: what the server said before it exited counts). Set
// before Codex exits.
func (r *Run) SetDrain(f func()) { r.drain = f }

// Known are the threads the run learned; read once discovery has stopped
// (Finish), as discovery alone writes them.
func (r *Run) Known() []string { return slices.Sorted(maps.Keys(r.known)) }

// claim makes run the owner of thread id (learned now, with path, when the
// ledger does not know it; learnedBy says how), unless another live run
// holds it. It reports whether run owns it now.
func (m *Manager) claim(ctx context.Context, tx *ledger.Tx, run ledger.Run, id, path, learnedBy string) (bool, error) {
	s, _, err := m.ensureSession(ctx, tx, ledger.Session{ID: id, RunID: run.ID, Sinks: run.Sinks,
		TranscriptPath: path, CodexHome: run.CodexHome, EndReason: learnedBy})
	if err != nil || s.RunID == run.ID {
		return err == nil, err
	}
	if s.RunID != "" {
		if owner, err := tx.Run(ctx, s.RunID); err == nil && owner.EndedAt == nil {
			return false, nil // another live run holds it
		}
	}
	adopt(&s, run)
	return true, tx.PutSession(ctx, s)
}
