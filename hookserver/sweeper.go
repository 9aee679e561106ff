package hookserver

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"cx/internal/config"
	"cx/internal/fsutil"
	"cx/internal/hookwire"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/proc"
	"cx/internal/sinks"
	"cx/internal/testpoint"
	"cx/lifecycle"
)

// The background sweeper: one process per CX_HOME (`cx ctl sweep
// --background`), started by a hook that finds commits due or a thread of
// a Codex started without cx to watch, so the hook answers at once and
// the work goes on after.

// takeSweepLock takes the background sweeper's place: the lock the hook
// client that started this process took and handed it (hookwire.LockFDEnv,
// so no other hook started one meanwhile), else the lock itself.
func takeSweepLock(home string) (unlock func(), err error) {
	// Kept from what this process starts, the lock cannot outlive a host
	// that was killed (no host could start again until that child ended).
	if fd, ok := handedFD(hookwire.LockFDEnv, func(int) bool { return true }); ok {
		f := os.NewFile(uintptr(fd), hookwire.SweepLock(home))
		// The same open file holds the lock: taking it again holds.
		if f != nil && syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return func() { _ = syscall.Flock(fd, syscall.LOCK_UN); f.Close() }, nil
		}
		if f != nil {
			f.Close()
		}
	}
	return fsutil.Lock(hookwire.SweepLock(home), false)
}

// handedReady is the pipe's write end the hook client that started this
// process handed it (hookwire.ReadyFDEnv; nil without one, or when the
// descriptor is no pipe: no file of this process's is closed for it). Its
// close wakes the client.
func handedReady() *os.File {
	fd, ok := handedFD(hookwire.ReadyFDEnv, func(fd int) bool {
		var st syscall.Stat_t
		return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
	})
	if !ok {
		return nil
	}
	return os.NewFile(uintptr(fd), "host ready")
}

// handedFD is the descriptor the hook client that started this process
// handed it, named by the variable name, when it is one and passes is.
// Neither is handed on to what this process starts: inherited across exec,
// the descriptor would be inherited again (an exec sink's command, which
// may hang, would hold it).
func handedFD(name string, is func(fd int) bool) (int, bool) {
	v := os.Getenv(name)
	if v == "" {
		return 0, false
	}
	os.Unsetenv(name)
	fd, err := strconv.Atoi(v)
	if err != nil || fd <= 2 || !is(fd) {
		return 0, false
	}
	syscall.CloseOnExec(fd)
	return fd, true
}

// BackgroundSweep is the background sweeper's work: it leaves at once
// while another holds the place; else it listens as CX_HOME's hook host,
// sweeps (lifecycle.SweepNow; not when hostOnly: started to be the host),
// and then stays while a Codex started without cx holds a thread cx knows
// live, or hooks keep coming (linger).
func BackgroundSweep(ctx context.Context, cfg config.Config, hostOnly bool) error {
	ready := handedReady()
	defer ready.Close()
	unlock, err := takeSweepLock(cfg.Home)
	if err != nil {
		return nil // another sweeper is at work
	}
	defer unlock()
	// A dead host's socket goes now, not once the ledger opens (seconds,
	// when it is locked): hooks meanwhile wait for this host.
	_ = os.Remove(hookwire.SocketPath(cfg.Home))
	db, err := ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	logger := logs.New(cfg.Home)
	h := listenHost(cfg.Home, db, logger)
	ready.Close() // it listens, or will not: the client that started it looks
	if h != nil {
		defer h.close()
		// A host's heap is small and its garbage is each hook's: collected
		// a quarter as often, a hook costs it ~15% less CPU (measured: 16
		// clients at once, 2.0-2.2 ms a hook at 100, 1.7-1.8 at 400).
		debug.SetGCPercent(400)
	}
	m := lifecycle.New(cfg, db, sinks.Build)
	if !hostOnly {
		if _, err := m.SweepNow(ctx, lifecycle.SweepOptions{Background: true}); err != nil {
			return err
		}
	}
	n := linger(ctx, m, db, h, hostOnly, cfg.Lifecycle.IdleTTL.Duration, logger)
	hooks := int64(0)
	if h != nil {
		hooks = h.taken.Load()
	}
	// Once, as it leaves: what this process cost, its hooks and sweeps
	// (unless CX_HOME went: a line would make it again).
	if _, err := os.Stat(cfg.Home); err != nil {
		return nil
	}
	logger.Printf("background sweep: leaving; %d hook(s) answered, %d session(s) ended as their Codex let go of them; cpu cx=%s", hooks, n, proc.SelfCPU().Round(time.Millisecond))
	return nil
}

// letGoEvery is how often the background sweeper looks whether a Codex
// started without cx let go of a thread; jobEvery, whether commits are due
// meanwhile (a hook that finds the sweeper's place taken starts none) or
// a run's cx died; hostIdle, how long the hook host stays after the last
// hook it took.
var letGoEvery, jobEvery, hostIdle = 15 * time.Second, time.Second, 5 * time.Minute

// quietAfter is how long after the last hook the loop counts as idle:
// then, with no run live and no commit waiting (quiet), it
// looks half as often each time, down to every letGoEvery — a host
// staying its hostIdle after the last session woke twice a second for
// nothing (~0.35 ms of CPU each wake-up on a 2-core VM; measured 1.0 ms
// a second idle).
const quietAfter = 30 * time.Second

// quiet reports whether nothing waits on the loop until a hook comes: no
// run is live (its cx may die, leaving its sessions to end as orphans)
// and no commit waits (due now or at a retry).
func quiet(ctx context.Context, db *ledger.DB) bool {
	if runs, err := db.Runs(ctx, true); err != nil || len(runs) > 0 {
		return false
	}
	waiting, err := db.JobsWaiting(ctx)
	return err == nil && !waiting
}

// nextTick is how long the loop waits, without a hook, after waiting
// last: jobEvery unless it is quiet, then twice as long, up to letGoEvery.
func nextTick(last time.Duration, quiet bool) time.Duration {
	if !quiet {
		return jobEvery
	}
	return min(max(last, jobEvery)*2, letGoEvery)
}

// sweepEvery is how often, at most, the host sweeps when a hook it took
// left jobs due (a session's end): what a background sweeper started for
// them did each time — idle sessions ended, dead runs' sessions recovered.
var sweepEvery = time.Minute

// linger keeps the background sweeper while a Codex started without cx
// holds a thread cx knows live (its writer lock; up to idle), or while it
// is the hook host and took a hook in the last hostIdle: every letGoEvery
// it ends the threads a Codex let go of (lifecycle's EndLetGo), every
// jobEvery — and at once when a hook the host took asks — it works the
// commits due, and sweeps when a hook asks for it. It returns, with how
// many it ended, when it has nothing to stay for, when the host must go
// (host.gone), or when ctx ends.
func linger(ctx context.Context, m *lifecycle.Manager, db *ledger.DB, h *host, hostOnly bool, idle time.Duration, logger *logs.Logger) int {
	ended, held := 0, 0
	until := testpoint.Now().Add(idle)
	lastLook := time.Time{}
	if h != nil && hostOnly {
		// Started for a hook, not for the threads: the first look waits.
		lastLook = time.Now()
	}
	lastSweep := time.Now()
	tick := jobEvery
	sweepNow := func() {
		lastSweep = time.Now()
		if _, err := m.SweepNow(ctx, lifecycle.SweepOptions{Background: true}); err != nil {
			logger.Printf("background sweep: %v", err)
		}
	}
	var work, sweep, stopped <-chan struct{}
	if h != nil {
		work, sweep, stopped = h.work, h.sweep, h.stopped
	}
	for ctx.Err() == nil {
		if h != nil {
			if why := h.gone(); why != "" {
				if _, err := os.Stat(h.home); err == nil {
					logger.Printf("hook host: leaving: %s", why)
				}
				return ended
			}
		}
		if err := m.RecoverOrphans(ctx); err != nil {
			logger.Printf("background sweep: orphan recovery: %v", err)
		}
		if err := m.WorkDue(ctx); err != nil {
			logger.Printf("background sweep: %v", err)
		}
		if time.Since(lastLook) >= letGoEvery {
			lastLook = time.Now()
			var n int
			var err error
			held, n, err = m.EndLetGo(ctx)
			ended += n
			if err != nil {
				logger.Printf("background sweep: %v", err)
				held = 0
			}
		}
		watching := held > 0 && testpoint.Now().Before(until)
		hosting := h != nil && h.idleFor() < hostIdle
		if !watching && !hosting {
			return ended
		}
		tick = nextTick(tick, (h == nil || h.idleFor() >= quietAfter) && quiet(ctx, db))
		select {
		case <-ctx.Done():
		case <-stopped:
		case <-work:
			tick = jobEvery
			if time.Since(lastSweep) >= sweepEvery {
				sweepNow()
			}
		case <-sweep:
			tick = jobEvery
			sweepNow()
		case <-time.After(tick):
		}
	}
	return ended
}
