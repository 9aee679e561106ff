// Package supervisor connects a supervised Codex process to the session
// state machine: the wrapper's child events (started, stopping, exited)
// become a lifecycle run's, and the app-server tap reads the daemon's
// JSON-RPC for the threads it serves. The ledger is opened beside Codex's
// launch, never before it, and no bug or failure here reaches Codex: a run
// that cannot be recorded leaves a breadcrumb and a warning line.
package supervisor

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"sort"
	"time"

	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/crumbs"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/proc"
	"cx/internal/sinks"
	"cx/internal/testpoint"
	"cx/lifecycle"
	"cx/wrapper"
)

// The wrapper finds StopObserver by type assertion: a signature that
// drifts must not turn the stop's end reason off silently.
var (
	_ wrapper.Observer     = (*Supervision)(nil)
	_ wrapper.StopObserver = (*Supervision)(nil)
	_ wrapper.Tap          = (*AppServerTap)(nil)
)

// Supervision connects the wrapper's child events to the run. The
// ledger is opened beside Codex's launch, not before it, so start overhead
// stays that of the supervisor alone — except on the fallback, where cx
// must know before launch whether it can record (and so whether to give
// Codex its block as developer_instructions).
type Supervision struct {
	warn      func(format string, args ...any) // a line for the user (stderr)
	cfg       config.Config
	log       *logs.Logger
	home      string
	info      lifecycle.RunInfo
	startedAt time.Time
	ready     chan struct{}
	m         *lifecycle.Manager
	run       *lifecycle.Run
	err       error
	started   chan struct{} // childStarted has been handed to the run
	launched  chan struct{} // the child is running (or could not start)
	pid       int
	// stopRecovery ends the work a run does at its start (recovery, the
	// outbox); recovered is closed when that work has returned.
	stopRecovery context.CancelFunc
	recovered    chan struct{}
}

// Supervise starts recording a run beside Codex's launch; warn tells the
// user (on stderr) when the run's sessions could not be recorded.
func Supervise(ctx context.Context, cfg config.Config, info lifecycle.RunInfo, tap *AppServerTap, warn func(format string, args ...any)) *Supervision {
	if info.Started.IsZero() {
		info.Started = time.Now()
	}
	s := &Supervision{warn: warn, cfg: cfg, log: logs.New(cfg.Home), home: cfg.Home, info: info, startedAt: info.Started, ready: make(chan struct{}), started: make(chan struct{}), launched: make(chan struct{})}
	// Every goroutine here recovers: a bug in cx's bookkeeping is logged
	// (cx.log) and costs the run's records, never Codex or the terminal;
	// the rollout keeps the session for a later sweep.
	go func() {
		// Deferred in this order: a panic is logged before ready closes (and
		// cx, finishing, may exit).
		defer close(s.ready)
		defer s.log.Recover("open the ledger")
		// After Codex's launch: the ledger never competes with it for the CPU.
		<-s.launched
		s.err = errors.New("the ledger was not opened")
		bound := false
		defer func() {
			if s.m != nil && s.run == nil {
				s.m = nil // a panic half way: nothing to finish
			}
			if tap != nil && !bound {
				tap.bind(nil) // the tap counts frames and records nothing
			}
		}()
		testpoint.Panic("supervise-open")
		var db *ledger.DB
		if db, s.err = ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{}); s.err != nil {
			return
		}
		s.m = lifecycle.New(cfg, db, sinks.Build)
		info.CodexPID = s.pid // set before launched closed; 0 when Codex did not start
		s.run = s.m.BeginRun(ctx, info)
		if tap != nil {
			tap.bind(s.run)
			bound = true
		}
	}()
	// Earlier runs whose cx died, and commits left in the outbox: handled
	// beside Codex, not before it.
	rctx, stop := context.WithCancel(ctx)
	s.stopRecovery, s.recovered = stop, make(chan struct{})
	go func() {
		defer close(s.recovered)
		defer s.log.Recover("recovery at start")
		<-s.ready
		if s.m == nil {
			return
		}
		s.m.RecoverAtStart(rctx, info.CodexHome)
	}()
	return s
}

// AfterLaunch runs f beside Codex once it has launched (never, when it
// did not): cx's own work never competes with Codex's start for the CPU.
// A panic in f is logged as what.
func (s *Supervision) AfterLaunch(what string, f func()) {
	go func() {
		defer s.log.Recover(what)
		<-s.launched
		f()
	}()
}

// Started implements wrapper.Observer.
func (s *Supervision) Started(pid int, _ wrapper.Mode) {
	s.pid = pid
	close(s.launched)
	go func() {
		defer close(s.started)
		defer s.log.Recover("child started")
		<-s.ready
		if s.run != nil {
			s.run.ChildStarted(pid)
		}
	}()
}

// Stopping implements wrapper.StopObserver: the run records why it is
// stopping, so sessions Codex ends on its way out (SessionEnd, a closed
// thread) carry the signal as their end reason.
func (s *Supervision) Stopping(sig os.Signal) {
	record := func() {
		defer s.log.Recover("record the stop")
		<-s.ready
		if s.run != nil {
			s.run.Stopping("signal:" + wrapper.SignalName(sig))
		}
	}
	select {
	case <-s.ready:
		record() // a millisecond, before the signal reaches Codex
	default:
		go record()
	}
}

// Finish ends the run after wrapper.Run has restored the terminal: the
// synthesized session ends, bounded.
func (s *Supervision) Finish(ctx context.Context, ex wrapper.Exit, cut <-chan struct{}) {
	if ex.Pid != 0 {
		// What this run cost, beside what Codex did (hooks are Codex's
		// children, counted there; each hook's audit line has its own).
		defer func() {
			s.log.Printf("run %s: Codex pid %d exited (status %d); cpu codex=%s cx=%s", s.info.ID, ex.Pid, ex.Code,
				ex.CPU.Round(time.Millisecond), proc.SelfCPU().Round(time.Millisecond))
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Printf("finish: panic: %v\n%s", r, debug.Stack())
			s.warn("warning: ending this run's sessions failed (see %s); a later `cx ctl sweep` finishes it", s.log.Path())
		}
	}()
	if s.pid != 0 {
		<-s.started
	} else {
		close(s.launched)
	}
	<-s.ready
	if s.err != nil || s.run == nil {
		crumb := s.leaveBreadcrumb()
		s.warn("warning: %v: this run's sessions are not recorded (their rollouts are intact; %s)", s.err, s.afterwards(s.err, crumb, "see `cx ctl doctor`"))
		return
	}
	// The ledger is not closed: cx exits right after, and closing the last
	// connection would checkpoint the WAL on the user's time.
	info := lifecycle.ExitInfo{Code: ex.Code, Cut: cut}
	if ex.Signal != 0 {
		info.Signal = wrapper.SignalName(ex.Signal)
	}
	if ex.Received != nil {
		info.Received = wrapper.SignalName(ex.Received)
	}
	testpoint.Panic("supervise-finish")
	// The work of the run's start is stopped and waited for before cx
	// exits: a sink command it left running would outlive cx, finish after
	// its job's lease had passed to another worker, and so be done twice.
	// Stopped, the command is killed and its job recorded as failed.
	defer s.endRecovery()
	if err := s.run.Finish(ctx, info); err != nil {
		crumb := s.leaveBreadcrumb()
		s.run.Logf("finish run %s: %v", s.run.ID(), err)
		s.warn("warning: ending this run's sessions: %v (%s)", err, s.afterwards(err, crumb, "a later `cx ctl sweep` finishes it"))
	}
}

// endRecovery stops the work of the run's start and waits for it, within
// recoveryStop: a killed sink command's pipes (exec's WaitDelay) and the
// record of its job.
func (s *Supervision) endRecovery() {
	s.stopRecovery()
	select {
	case <-s.recovered:
	case <-time.After(recoveryStop):
		s.log.Printf("run %s: the work of its start did not stop within %v", s.info.ID, recoveryStop)
	}
}

// recoveryStop bounds the wait for the start's work at exit.
const recoveryStop = 10 * time.Second

// leaveBreadcrumb names, for the next start or sweep that can write the
// ledger, the threads this run's Codex had: those the run learned, those
// Codex logged for its process and still has a rollout of, and those it
// created and wrote (found as a run's exit finds them). Only these are
// recovered: a Codex home may serve other CX_HOMEs' runs too.
func (s *Supervision) leaveBreadcrumb() bool {
	ids := map[string]bool{}
	if s.run != nil {
		for _, id := range s.run.Known() { // discovery has stopped
			ids[id] = true
		}
	}
	if s.pid != 0 {
		logs := codex.NewLogWatch(s.info.CodexHome, s.info.Started)
		defer logs.Close()
		for _, id := range logs.Threads(s.pid) {
			if codex.FindRollout(s.info.CodexHome, id, "") != "" {
				ids[id] = true
			}
		}
		for id := range codex.OwnThreads(s.info.CodexHome, s.pid, s.info.Started, s.info.CodexDir(), logs, nil) {
			ids[id] = true
		}
	}
	threads := make([]string, 0, len(ids))
	for id := range ids {
		threads = append(threads, id)
	}
	sort.Strings(threads)
	if err := crumbs.Mark(s.home, s.info.CodexHome, crumbs.Run, s.startedAt, threads); err != nil {
		s.log.Printf("breadcrumb of an unrecorded run (%d thread(s)): %v", len(threads), err)
		return false
	}
	return true
}

// afterwards is what the user does about a run the ledger could not
// record: the ledger's own trouble has a fix, after which a sweep records
// the run; otherwise what happens by itself (dflt).
// crumb is whether the breadcrumb that lets a sweep find the run's
// sessions could be left; where it could not (a read-only CX_HOME), `cx ctl
// import` records them.
func (s *Supervision) afterwards(err error, crumb bool, dflt string) string {
	then := "`cx ctl sweep`"
	if !crumb {
		then, dflt = "`cx ctl import`", "see `cx ctl doctor`; `cx ctl import` records them later"
	}
	if advice := ledger.Advice(s.cfg.Home, err); advice != "" {
		return advice + "; then " + then + " records this run from its rollouts"
	}
	return dflt
}
