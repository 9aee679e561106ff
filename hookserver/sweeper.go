package hookserver

import (
	"context"
	"path/filepath"
	"time"

	"cx/internal/config"
	"cx/internal/fsutil"
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

// sweepLockPath is held by the one background sweeper at a time.
func sweepLockPath(home string) string { return filepath.Join(home, "sweep.lock") }

// sweeperRunning reports whether a background sweeper holds its place.
func sweeperRunning(home string) bool { return fsutil.Held(sweepLockPath(home)) }

// BackgroundSweep is the background sweeper's work: it leaves at once
// while another holds the place; else it sweeps (lifecycle.SweepNow), and
// then stays while a Codex started without cx holds a thread cx knows live
// (lingerWhileHeld).
func BackgroundSweep(ctx context.Context, cfg config.Config) error {
	unlock, err := fsutil.Lock(sweepLockPath(cfg.Home), false)
	if err != nil {
		return nil // another sweeper is at work
	}
	defer unlock()
	db, err := ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	m := lifecycle.New(cfg, db, sinks.Build)
	if _, err := m.SweepNow(ctx, lifecycle.SweepOptions{Background: true}); err != nil {
		return err
	}
	logger := logs.New(cfg.Home)
	if n := lingerWhileHeld(ctx, m, cfg.Lifecycle.IdleTTL.Duration, logger); n > 0 {
		logger.Printf("background sweep: %d session(s) ended as their Codex let go of them; cpu cx=%s", n, proc.SelfCPU().Round(time.Millisecond))
	}
	return nil
}

// letGoEvery is how often the background sweeper looks whether a Codex
// started without cx let go of a thread; jobEvery, whether commits are due
// meanwhile (a hook that finds the sweeper's place taken starts none).
var letGoEvery, jobEvery = 15 * time.Second, time.Second

// lingerWhileHeld keeps the background sweeper while a Codex started
// without cx holds a thread cx knows live (its writer lock): every
// letGoEvery it ends those a Codex let go of (lifecycle's EndLetGo), every
// jobEvery it works the commits due. It returns, with how many it ended,
// when none is held, after idle, or when ctx ends.
func lingerWhileHeld(ctx context.Context, m *lifecycle.Manager, idle time.Duration, logger *logs.Logger) int {
	ended := 0
	until := testpoint.Now().Add(idle)
	lastLook := time.Time{}
	for ctx.Err() == nil && testpoint.Now().Before(until) {
		if err := m.WorkDue(ctx); err != nil {
			logger.Printf("background sweep: %v", err)
		}
		if time.Since(lastLook) >= letGoEvery {
			lastLook = time.Now()
			held, n, err := m.EndLetGo(ctx)
			ended += n
			if err != nil {
				logger.Printf("background sweep: %v", err)
				return ended
			}
			if held == 0 {
				return ended
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(jobEvery):
		}
	}
	return ended
}
