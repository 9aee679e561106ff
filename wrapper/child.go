package wrapper

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/oklog/run"
	"golang.org/x/sys/unix"

	"cx/internal/testpoint"
	"cx/internal/tty"
)

func unixSignalName(s syscall.Signal) string {
	return strings.TrimPrefix(unix.SignalName(s), "SIG")
}

// errChildExited ends the actor group: only the child's exit may end it.
var errChildExited = errors.New("child exited")

// childRun is one child supervised from start to exit.
type childRun struct {
	spec Spec
	mode Mode
	cmd  *exec.Cmd
	sigc <-chan os.Signal

	// Tapped pipe mode: the relays and the supervisor's ends of the pipes.
	tapIn, tapOut *relay
	childIn       *os.File
	childOut      *os.File

	ptmx *os.File
	raw  *tty.Raw
	// modes follows the terminal modes the child turned on (PTY mode):
	// whoever gives the terminal back — this process at its end, or the
	// leader when this process died — turns off those it left on.
	modes *tty.Modes
	pid   int // the process the supervisor waits for (the child, or its leader)
	// target is the child: its process group gets the signals (the child
	// leads it); with a leader, it is not pid.
	target int
	// leaderReports carries the leader's job-control reports (the child
	// stopped itself); nil without a leader.
	leaderReports <-chan leaderReport
	leader        *leaderStatus // nil without a leader
	// lifeline is the write end of the leader's lifeline (PTY mode), held
	// until the supervisor ends (see lifelineFD); nil without a leader.
	lifeline *os.File
	// watchman guards the child in pipe mode (see startWatchman).
	watchman *watchman
	state    *os.ProcessState
}

// followModes reads what the child wrote to the terminal (the output
// relay's tap) and tells the leader, whenever it changes, what turns off
// the modes the child has on: if this process dies, the leader writes it.
func (s *childRun) followModes(b []byte) {
	if s.modes.Observe(b) && s.lifeline != nil {
		_, _ = fmt.Fprintf(s.lifeline, "%s %x\n", modesMsg, s.modes.Reset())
	}
}

// leaveModes turns off the terminal modes the child left on (it died, or
// exited without): the user's shell gets its screen and keys back.
func (s *childRun) leaveModes() {
	if s.modes == nil {
		return
	}
	if reset := s.modes.Reset(); len(reset) > 0 {
		_, _ = s.spec.Stdout.Write(reset)
	}
}

// enterModes turns back on the modes leaveModes turned off (the child
// continued after a suspend); it reports whether it did.
func (s *childRun) enterModes() bool {
	if s.modes == nil {
		return false
	}
	set := s.modes.Restore()
	if len(set) == 0 {
		return false
	}
	_, _ = s.spec.Stdout.Write(set)
	return true
}

// nudgeSize sets the PTY one column narrower and back: the child redraws
// its whole screen, as after a real resize.
func (s *childRun) nudgeSize() {
	if s.ptmx == nil {
		return
	}
	if sz, ok := tty.GetSize(s.spec.Stdin.Fd(), s.spec.Stdout.Fd()); ok && sz.Cols > 1 {
		_ = tty.SetSize(s.ptmx, tty.Size{Rows: sz.Rows, Cols: sz.Cols - 1})
		_ = syscall.Kill(-s.target, syscall.SIGWINCH)
		time.Sleep(50 * time.Millisecond) // each size seen on its own
		_ = tty.SetSize(s.ptmx, sz)
	}
}

// guard restores the terminal before a panic in any goroutine takes the
// process down, so the user's shell is never left in raw mode.
func (s *childRun) guard() {
	if r := recover(); r != nil {
		s.leaveModes()
		if s.raw != nil {
			_ = s.raw.Restore()
		}
		if s.target > 0 {
			_ = syscall.Kill(-s.target, syscall.SIGKILL)
		}
		if s.pid > 0 {
			_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		}
		panic(r)
	}
}

func (s *childRun) run(ctx context.Context) (ex Exit, err error) {
	defer s.guard()
	if err := s.start(); err != nil {
		ex = startExit(err)
		s.exited(ex)
		return ex, nil
	}
	if s.spec.Observer != nil {
		s.spec.Observer.Started(s.target, s.mode)
	}
	testpoint.PanicOn(testpoint.WrapperPanic, "started")

	exited := make(chan struct{})
	stopper := newStopper(s)
	var g run.Group

	// The child: the only actor that returns on its own.
	g.Add(func() error {
		defer s.guard()
		st, werr := s.cmd.Process.Wait()
		s.state = st
		if werr != nil {
			err = fmt.Errorf("wait for child %d: %w", s.pid, werr)
		}
		close(exited)
		return errChildExited
	}, func(error) {})

	// Signals and the stop policy.
	sigCtx, sigCancel := context.WithCancel(ctx)
	g.Add(func() error {
		defer s.guard()
		stopper.loop(sigCtx, exited)
		<-exited
		return nil
	}, func(error) { sigCancel() })

	if s.tapIn != nil {
		tapDone := make(chan struct{})
		go func() {
			defer s.guard()
			s.tapIn.run()
			// The caller closed its end (or the relay stopped): the child sees EOF.
			_ = s.childIn.Close()
		}()
		go func() {
			defer s.guard()
			defer close(tapDone)
			s.tapOut.run()
		}()
		g.Add(func() error {
			<-exited
			return nil
		}, func(error) {
			// Relay what the child wrote before it exited, bounded.
			select {
			case <-tapDone:
			case <-time.After(s.spec.DrainTimeout):
				s.tapOut.stop()
				<-tapDone
			}
			s.tapIn.stop()
		})
	}
	if s.mode == ModePTY {
		ptmxFD := -1
		if rc, err := s.ptmx.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { ptmxFD = int(fd) })
		}
		out := newRelay(ptmxFD, s.spec.Stdout)
		out.keepReading, out.guard, out.pipelined = true, s.guard, true
		s.modes = &tty.Modes{}
		out.tap = s.followModes
		if fd, err := openNonblocking(s.spec.Stdout); err == nil && testpoint.String(testpoint.Relay) != "pipelined" {
			out.dstNB = fd // the polled relay; else the reader and writer threads
		}
		out.before = func() { testpoint.PanicOn(testpoint.WrapperPanic, "output") }
		outDone := make(chan struct{})
		go func() {
			defer s.guard()
			defer close(outDone)
			out.run()
		}()
		in := newRelay(int(s.spec.Stdin.Fd()), s.ptmx)
		in.guard = s.guard
		go func() {
			defer s.guard()
			in.run()
		}()
		g.Add(func() error {
			<-exited
			return nil
		}, func(error) {
			// Drain: the child has exited; relay what it left in the PTY until
			// the PTY reports the child side closed, bounded (grandchildren
			// may hold it open).
			in.stop()
			select {
			case <-outDone:
			case <-time.After(s.spec.DrainTimeout):
				out.stop()
				<-outDone
			}
		})
	}

	_ = g.Run()
	sigCancel()
	if s.lifeline != nil {
		_ = s.lifeline.Close()
	}
	s.watchman.release()
	if s.ptmx != nil {
		_ = s.ptmx.Close()
	}
	if s.childOut != nil {
		_ = s.childOut.Close()
	}
	s.leaveModes()
	if s.raw != nil {
		if rerr := s.raw.Restore(); rerr != nil && err == nil {
			err = rerr
		}
	}
	ex = s.childExit()
	ex.Pid = s.target
	ex.Received = stopper.received
	s.exited(ex)
	return ex, err
}

// exited tells an ExitObserver of the child's exit.
func (s *childRun) exited(ex Exit) {
	if o, ok := s.spec.Observer.(ExitObserver); ok {
		o.Exited(ex)
	}
}

func (s *childRun) start() error {
	if s.mode == ModePipe && s.spec.Tap != nil {
		return s.startTapped()
	}
	if s.mode == ModePipe {
		s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = s.spec.Stdin, s.spec.Stdout, s.spec.Stderr
		return s.startPiped()
	}

	var ws *pty.Winsize
	if sz, ok := tty.GetSize(s.spec.Stdin.Fd(), s.spec.Stdout.Fd()); ok {
		ws = &pty.Winsize{Rows: sz.Rows, Cols: sz.Cols}
	}
	saved := "" // the user's terminal as it was, for the leader to restore
	if tty.IsTerminal(s.spec.Stdin.Fd()) {
		if t, err := tty.Termios(s.spec.Stdin.Fd()); err == nil {
			saved = tty.EncodeTermios(t)
		}
		s.raw = tty.NewRaw(s.spec.Stdin.Fd())
		if err := s.raw.Enter(); err != nil {
			return err
		}
	}
	l, err := s.withLeader(saved)
	if err != nil {
		if s.raw != nil {
			_ = s.raw.Restore()
		}
		return err
	}
	// No parent-death signal for the leader, unlike a child on pipes: killed
	// at once with cx, it could not give the user's terminal back; the
	// lifeline stops it, on Linux as on macOS.
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if s.spec.Leader == "" {
		attrs = withParentDeath(attrs, s.spec.ParentDeathSignal)
	}
	ptmx, err := pty.StartWithAttrs(s.cmd, ws, attrs)
	if err = s.leaderStarted(l, err); err != nil {
		if ptmx != nil {
			ptmx.Close()
		}
		if s.raw != nil {
			_ = s.raw.Restore()
		}
		return err
	}
	if s.ptmx, err = tty.Unpolled(ptmx); err != nil {
		_ = s.cmd.Process.Kill()
		_, _ = s.cmd.Process.Wait()
		if s.raw != nil {
			_ = s.raw.Restore()
		}
		return err
	}
	return nil
}

// startPiped starts the child on the stdio already set on s.cmd, and a
// watchman over it: in pipe mode there is no job control to serve, so no
// leader (an exec of cx's own binary on the path to the child's start)
// stands between the supervisor and the child. The child gets a process
// group of its own, so forwarded signals reach its helpers too and the
// terminal's own signals reach it only through cx (never twice).
func (s *childRun) startPiped() error {
	s.cmd.SysProcAttr = withParentDeath(&syscall.SysProcAttr{Setpgid: true}, s.spec.ParentDeathSignal)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.pid = s.cmd.Process.Pid
	s.target = s.pid
	stderr := s.spec.Stderr
	s.watchman = startWatchman(s.target, s.spec.Stop.KillAfter, watchmanDelay, func(err error) {
		fmt.Fprintf(stderr, "cx: warning: %v: the child may outlive a killed cx\n", err)
	})
	return nil
}

// leaderPipes are the pipes between the supervisor and a leader about to
// start: the leader's ends are closed in the supervisor once it started.
type leaderPipes struct {
	statusR, statusW *os.File
	lifeR, lifeW     *os.File
}

// withLeader puts the leader (Spec.Leader) between the supervisor and the
// child of a PTY session: s.cmd becomes the leader, which runs the child.
// With termios (the user's terminal settings before raw mode, encoded) the
// leader also holds the user's terminal, to give it back should the
// supervisor die in raw mode. Without a leader it does nothing.
func (s *childRun) withLeader(termios string) (*leaderPipes, error) {
	if s.spec.Leader == "" {
		return nil, nil
	}
	l := &leaderPipes{}
	var err error
	if l.statusR, l.statusW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("leader status pipe: %w", err)
	}
	if l.lifeR, l.lifeW, err = os.Pipe(); err != nil {
		l.statusR.Close()
		l.statusW.Close()
		return nil, fmt.Errorf("lifeline pipe: %w", err)
	}
	child := s.cmd
	s.cmd = exec.Command(s.spec.Leader, append([]string{child.Path}, child.Args[1:]...)...)
	s.cmd.Env = append(append([]string(nil), child.Env...),
		LeaderEnv+"=1", fmt.Sprintf("%s=%d", leaderGraceEnv, s.spec.Stop.KillAfter.Milliseconds()))
	s.cmd.Dir = child.Dir
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = child.Stdin, child.Stdout, child.Stderr
	s.cmd.ExtraFiles = []*os.File{l.statusW, l.lifeR} // fds 3 and 4: leaderFD, lifelineFD
	if termios != "" {
		// The process that ran cx (a shell, most often) shares the user's
		// terminal: the leader asks it whose the terminal is when cx dies.
		s.cmd.Env = append(s.cmd.Env, leaderTermiosEnv+"="+termios, fmt.Sprintf("%s=%d", leaderParentEnv, os.Getppid()))
		s.cmd.ExtraFiles = append(s.cmd.ExtraFiles, s.spec.Stdin) // fd 5: terminalFD
	}
	return l, nil
}

// leaderStarted finishes a start (startErr is how it went): the pids, and
// with a leader its report of the child's pid; the supervisor keeps the
// lifeline's write end until it ends.
func (s *childRun) leaderStarted(l *leaderPipes, startErr error) error {
	if l != nil {
		l.statusW.Close()
		l.lifeR.Close()
	}
	if startErr != nil {
		if l != nil {
			l.statusR.Close()
			l.lifeW.Close()
		}
		return startErr
	}
	s.pid = s.cmd.Process.Pid
	s.target = s.pid
	if l == nil {
		return nil
	}
	s.lifeline = l.lifeW
	if err := s.awaitLeader(l.statusR); err != nil {
		s.lifeline.Close()
		s.lifeline = nil
		return err
	}
	return nil
}

// awaitLeader waits for the leader to report the child's pid (or why it
// could not start it) and keeps listening for its job-control reports.
func (s *childRun) awaitLeader(statusR *os.File) error {
	ls := readLeader(statusR)
	fail := func(err error) error {
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		_, _ = s.cmd.Process.Wait()
		return err
	}
	select {
	case r, ok := <-ls.reports:
		switch {
		case !ok:
			return fail(errors.New("the session leader exited before starting the child"))
		case r.errCode == 127:
			_, _ = s.cmd.Process.Wait()
			return fmt.Errorf("%s: %w", r.errMsg, fs.ErrNotExist)
		case r.errCode != 0:
			_, _ = s.cmd.Process.Wait()
			return errors.New(r.errMsg)
		}
		s.target = r.pid
	case <-time.After(10 * time.Second):
		return fail(errors.New("the session leader did not start the child within 10s"))
	}
	s.leader = ls
	s.leaderReports = ls.reports
	return nil
}

// childExit is how the child ended: the leader's wait status, which is
// the child's, unless the leader said the child died of a signal it
// could not die of itself.
func (s *childRun) childExit() Exit {
	ex := exitOf(s.state)
	if s.leader == nil {
		return ex
	}
	select {
	case <-s.leader.done: // the leader is gone: its pipe ends at once
	case <-time.After(time.Second):
	}
	if sig := syscall.Signal(s.leader.killed.Load()); sig != 0 {
		ex.Code, ex.Signal = 128+int(sig), sig
	}
	return ex
}

// startTapped starts the child with pipes of the supervisor's own for stdin
// and stdout, relayed byte for byte to and from the caller's.
func (s *childRun) startTapped() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = inR, outW, s.spec.Stderr
	err = s.startPiped()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return err
	}
	s.childIn, s.childOut = inW, outR
	s.tapIn = newRelay(int(s.spec.Stdin.Fd()), inW)
	s.tapIn.tap, s.tapIn.guard = s.spec.Tap.FromParent, s.guard
	fd := -1
	if rc, err := outR.SyscallConn(); err == nil {
		_ = rc.Control(func(f uintptr) { fd = int(f) })
	}
	s.tapOut = newRelay(fd, s.spec.Stdout)
	s.tapOut.tap, s.tapOut.guard = s.spec.Tap.FromChild, s.guard
	return nil
}

// resize gives the PTY the user's current terminal size (skipping 0×0).
func (s *childRun) resize() {
	if s.ptmx == nil {
		return
	}
	if sz, ok := tty.GetSize(s.spec.Stdin.Fd(), s.spec.Stdout.Fd()); ok {
		_ = tty.SetSize(s.ptmx, sz)
	}
}
