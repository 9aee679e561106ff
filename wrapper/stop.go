package wrapper

import (
	"context"
	"os"
	"syscall"
	"time"

	cxproc "cx/internal/proc"
	"cx/internal/tty"
)

type stopStep int

const (
	stepNone     stopStep = iota
	stepKeys              // polite keystrokes being written (PTY)
	stepEOF               // the child's stdin was closed (tapped pipe mode)
	stepSignaled          // the stop signal was sent to the child's group
	stepKilled            // SIGKILL was sent
)

// stopper turns signals received by the supervisor into the stop policy,
// resizes and job control. It runs in one goroutine; no locking needed.
type stopper struct {
	s        *childRun
	received os.Signal
	step     stopStep
	tick     *time.Ticker
	next     *time.Timer
	// ownStop: the supervisor stopped the child itself (suspend); the
	// leader's report of that stop is not the child's own Ctrl+Z.
	ownStop bool
}

func newStopper(s *childRun) *stopper { return &stopper{s: s} }

func (st *stopper) loop(ctx context.Context, exited <-chan struct{}) {
	defer st.stopTimers()
	ctxDone := ctx.Done()
	leaderC := st.s.leaderReports
	for {
		var tickC, nextC <-chan time.Time
		if st.tick != nil {
			tickC = st.tick.C
		}
		if st.next != nil {
			nextC = st.next.C
		}
		select {
		case <-exited:
			return
		case <-ctxDone:
			ctxDone = nil
			select {
			case <-exited:
				// The run ends because the child exited (the group then
				// cancels ctx too): nothing to stop, and Ctrl+C keys written
				// now would only come back as an echo on the user's terminal.
				return
			default:
			}
			st.request(syscall.SIGTERM)
		case sig := <-st.s.sigc:
			st.handle(sig)
		case r, ok := <-leaderC:
			if !ok {
				leaderC = nil
				continue
			}
			if r.stopped {
				st.childStopped()
			}
		case <-tickC:
			st.writeKeys()
		case <-nextC:
			st.next = nil
			st.advance()
		}
	}
}

func (st *stopper) handle(sig os.Signal) {
	switch sig {
	case syscall.SIGWINCH:
		st.s.resize()
	case syscall.SIGTSTP:
		st.suspend()
	case syscall.SIGCONT:
		st.resume()
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		st.request(sig)
	}
}

// request starts the stop policy for the first stop signal; later ones
// are forwarded (pipe mode) or skip the rest of the current step (PTY mode).
func (st *stopper) request(sig os.Signal) {
	if st.received == nil {
		st.received = sig
		if o, ok := st.s.spec.Observer.(StopObserver); ok {
			o.Stopping(sig)
		}
		st.begin()
		return
	}
	if st.s.mode == ModePipe {
		st.signalChild(sig)
		return
	}
	st.advance()
}

func (st *stopper) begin() {
	p := st.s.spec.Stop
	switch {
	case st.s.mode == ModePTY && len(p.Keys) > 0 && !st.keysAreSignals():
		st.step = stepKeys
		st.writeKeys()
		st.tick = time.NewTicker(p.Interval)
		st.next = time.NewTimer(p.Grace)
	case st.s.mode == ModePTY:
		st.step = stepSignaled
		st.signalChild(st.received)
		st.next = time.NewTimer(p.KillAfter)
	case p.CloseStdin && st.s.tapIn != nil:
		st.step = stepEOF
		st.s.tapIn.stop() // its goroutine closes the child's stdin
		st.next = time.NewTimer(p.Grace)
	default:
		st.step = stepSignaled
		st.signalChild(st.received)
		st.next = time.NewTimer(p.Grace)
	}
}

// advance moves to the next, harsher step.
func (st *stopper) advance() {
	st.stopTimers()
	switch st.step {
	case stepKeys, stepEOF:
		st.step = stepSignaled
		st.signalChild(st.received)
		st.next = time.NewTimer(st.s.spec.Stop.KillAfter)
	case stepSignaled:
		st.step = stepKilled
		st.signalChild(syscall.SIGKILL)
	}
}

func (st *stopper) stopTimers() {
	if st.tick != nil {
		st.tick.Stop()
		st.tick = nil
	}
	if st.next != nil {
		st.next.Stop()
		st.next = nil
	}
}

// writeKeys writes the polite keystrokes — while the child reads its
// terminal raw. A child that has put its terminal back in cooked mode (a
// TUI quitting, or not yet started) would get an interrupt key as a
// signal, the harsh step the keys are there to spare it: then nothing is
// written, and grace still leads to the signal.
func (st *stopper) writeKeys() {
	if st.s.ptmx != nil && !st.keysAreSignals() {
		_, _ = st.s.ptmx.Write(st.s.spec.Stop.Keys)
	}
}

// keysAreSignals reports whether the child's terminal is in cooked mode,
// where an interrupt key is delivered as a signal. A child that reads
// cooked from the start gets the stop signal at once instead of keys.
func (st *stopper) keysAreSignals() bool {
	return st.s.ptmx != nil && tty.KeysAreSignals(st.s.ptmx.Fd())
}

// signalChild signals the child's whole process group (it leads one).
func (st *stopper) signalChild(sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		signalGroup(st.s.target, s)
		if sig == syscall.SIGKILL && st.s.pid != st.s.target {
			_ = syscall.Kill(-st.s.pid, syscall.SIGKILL) // the leader too
		}
	}
}

// suspend gives the user a sane shell: terminal restored, child stopped
// (SIGSTOP: it leads its own session, so the kernel would drop a SIGTSTP),
// then the supervisor stops itself. SIGCONT (fg/bg) brings both back.
func (st *stopper) suspend() {
	st.s.leaveModes()
	if st.s.raw != nil {
		_ = st.s.raw.Restore()
	}
	st.ownStop = st.s.leaderReports != nil
	_ = syscall.Kill(-st.s.target, syscall.SIGSTOP)
	_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}

// childStopped follows the child into job control: it stopped itself
// (Ctrl+Z in Codex raises SIGTSTP on itself), so the user's terminal is
// restored and the supervisor stops too; the shell takes over. A report
// that is stale (the child runs again) is ignored.
func (st *stopper) childStopped() {
	if st.ownStop {
		st.ownStop = false
		return
	}
	if s, err := cxproc.ReadStat(st.s.target); err != nil || s.State != 'T' {
		return
	}
	st.s.leaveModes()
	if st.s.raw != nil {
		_ = st.s.raw.Restore()
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}

// resume re-enters raw mode (stopping again on SIGTTOU if resumed in the
// background, as any terminal program does), restores the size, and
// continues the child, prodding it to redraw.
func (st *stopper) resume() {
	st.ownStop = false // a report still queued finds the child running
	if st.s.raw != nil {
		_ = st.s.raw.Enter()
	}
	// The modes the child had on come back (its alternate screen, fresh):
	// a size that changes and changes back makes it draw its whole screen
	// again.
	redraw := st.s.enterModes()
	st.s.resize()
	_ = syscall.Kill(-st.s.target, syscall.SIGCONT)
	if st.s.mode == ModePTY {
		if redraw {
			st.s.nudgeSize()
		}
		_ = syscall.Kill(-st.s.target, syscall.SIGWINCH)
	}
}
