// Package wrapper supervises one child process: under a new PTY when the
// user's stdin and stdout are terminals, over the user's own stdio otherwise.
// It relays the terminal, forwards or politely delivers stop signals, handles
// job control, makes sure the child never outlives the supervisor, and reports
// the child's exit status exactly (128+n for death by signal n, 127/126 when it
// could not be started).
//
// It knows nothing about Codex: callers supply the stop keystrokes and learn
// about the child's start and exit through an Observer.
package wrapper

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"cx/internal/tty"
)

// Mode selects how the child is connected to the user's stdio.
type Mode int

const (
	// ModeAuto picks ModePTY when stdin and stdout are both terminals.
	ModeAuto Mode = iota
	// ModePTY runs the child under a new pseudo-terminal.
	ModePTY
	// ModePipe hands the child cx's own stdin, stdout and stderr.
	ModePipe
)

func (m Mode) String() string {
	switch m {
	case ModePTY:
		return "pty"
	case ModePipe:
		return "pipe"
	}
	return "auto"
}

// StopSignals are the signals that ask the supervisor to stop the child.
// Nothing else is forwarded; SIGWINCH resizes, SIGTSTP/SIGCONT are job control.
var StopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// StopPolicy says how a stop signal received by the supervisor reaches the child.
//
// PTY mode: Keys are written to the PTY at once and every Interval until the
// child exits or Grace has passed; then the signal itself goes to the child's
// process group; KillAfter later, SIGKILL. With no Keys the signal is sent at once.
//
// Pipe mode: the signal goes to the child's process group at once; if the
// child is still there Grace later, SIGKILL. With CloseStdin (and a Tap, so
// the supervisor holds the child's stdin) the child is first given EOF on
// its stdin — a server that ends its work cleanly at EOF does so — then,
// Grace later, the signal; KillAfter after that, SIGKILL.
//
// A second stop signal skips what is left of the current step (PTY mode)
// or is forwarded to the child (pipe mode).
type StopPolicy struct {
	Keys       []byte
	CloseStdin bool
	Interval   time.Duration // default 500ms
	Grace      time.Duration // default 5s
	KillAfter  time.Duration // default 2s
}

func (p StopPolicy) withDefaults() StopPolicy {
	if p.Interval <= 0 {
		p.Interval = 500 * time.Millisecond
	}
	if p.Grace <= 0 {
		p.Grace = 5 * time.Second
	}
	if p.KillAfter <= 0 {
		p.KillAfter = 2 * time.Second
	}
	return p
}

// Exit describes how the child ended.
type Exit struct {
	// Code is the status the supervisor should exit with: the child's exit
	// code, 128+n for death by signal n, 127 not found, 126 not executable.
	Code int
	// Signal is the signal that killed the child, 0 if it exited.
	Signal syscall.Signal
	// Received is the first stop signal the supervisor received, nil if none.
	Received os.Signal
	// Pid is the child's pid, 0 if it never started.
	Pid int
	// StartErr is why the child could not be started.
	StartErr error
	// CPU is the CPU time the child used, with that of the descendants it
	// waited for (a PTY's session leader, Codex's hooks), from wait4.
	CPU time.Duration
}

// Observer learns of the child's start. Calls are made from the goroutine
// that called Run.
type Observer interface {
	Started(pid int, mode Mode)
}

// ExitObserver is an Observer that also learns of the child's exit before
// Run returns it (Run's own result says the same, after the terminal is
// restored).
type ExitObserver interface {
	Exited(Exit)
}

// StopObserver is an Observer that also learns, at once, that a stop signal
// arrived and the child is being stopped (before it has exited). It must
// not block.
type StopObserver interface {
	Stopping(sig os.Signal)
}

// Spec is what to run and how.
type Spec struct {
	Path string   // executable
	Args []string // arguments after argv[0]
	Env  []string // full environment; nil means the supervisor's own
	Dir  string

	Stdin, Stdout, Stderr *os.File
	Mode                  Mode
	Stop                  StopPolicy
	Observer              Observer

	// Signals replaces the process's own signal delivery (tests). When nil,
	// Run subscribes to the stop signals, SIGWINCH, SIGTSTP and SIGCONT.
	Signals <-chan os.Signal
	// ParentDeathSignal is sent to the child when the supervisor dies
	// (default SIGKILL): the child never outlives it.
	ParentDeathSignal syscall.Signal
	// DrainTimeout bounds how long PTY output is still relayed after the
	// child exited (grandchildren may hold the PTY open). Default 1s.
	DrainTimeout time.Duration

	// Leader, in PTY mode, is a program that runs LeaderMain when LeaderEnv=1
	// is in its environment (the supervisor's own binary): it becomes the
	// PTY session's leader and runs the child in a process group of its own
	// below it, so the child's job control works (Ctrl+Z stops it and gives
	// the user's shell back; fg resumes it). Empty: the child leads the
	// session itself, and a SIGTSTP it raises is discarded by the kernel.
	Leader string

	// Tap, in pipe mode, puts the supervisor between the caller and the
	// child's stdin and stdout (stderr stays direct): every byte is relayed
	// unchanged and in order, and the tap sees a copy after it was passed on.
	Tap Tap
}

// Tap observes a relayed stream. Calls come from the relay goroutines, one
// per direction; a tap must copy what it keeps and must not block.
type Tap interface {
	FromParent(b []byte) // bytes on their way to the child's stdin
	FromChild(b []byte)  // bytes from the child's stdout on their way out
}

// Run starts the child, supervises it until it exits, and returns how it
// ended. ctx being cancelled acts like SIGTERM received. The returned error
// is for problems of the supervisor itself (e.g. the terminal could not be
// restored); Exit is meaningful either way.
func Run(ctx context.Context, spec Spec) (Exit, error) {
	if spec.Stdin == nil {
		spec.Stdin = os.Stdin
	}
	if spec.Stdout == nil {
		spec.Stdout = os.Stdout
	}
	if spec.Stderr == nil {
		spec.Stderr = os.Stderr
	}
	if spec.ParentDeathSignal == 0 {
		spec.ParentDeathSignal = syscall.SIGKILL
	}
	if spec.DrainTimeout <= 0 {
		spec.DrainTimeout = time.Second
	}
	spec.Stop = spec.Stop.withDefaults()
	mode := spec.Mode
	if mode == ModeAuto {
		mode = ModePipe
		if tty.IsTerminal(spec.Stdin.Fd()) && tty.IsTerminal(spec.Stdout.Fd()) {
			mode = ModePTY
		}
	}

	// Subscribe before anything changes the terminal, so a signal that arrives
	// during start-up is queued, not fatal.
	sigc := spec.Signals
	if sigc == nil {
		ch := make(chan os.Signal, 16)
		signal.Notify(ch, append(StopSignals[:len(StopSignals):len(StopSignals)],
			syscall.SIGWINCH, syscall.SIGTSTP, syscall.SIGCONT)...)
		defer signal.Stop(ch)
		sigc = ch
	}

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	if len(cmd.Env) == 0 {
		cmd.Env = os.Environ()
	}
	s := &childRun{spec: spec, mode: mode, cmd: cmd, sigc: sigc}
	return s.run(ctx)
}

// startExit maps a start failure to the shell's statuses.
func startExit(err error) Exit {
	code := 126
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		code = 127
	}
	return Exit{Code: code, StartErr: err}
}

// exitOf turns a wait status into an Exit.
func exitOf(ps *os.ProcessState) Exit {
	ex := Exit{Code: ps.ExitCode(), Pid: ps.Pid(), CPU: ps.UserTime() + ps.SystemTime()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		ex.Code = ws.ExitStatus()
		if ws.Signaled() {
			ex.Code, ex.Signal = 128+int(ws.Signal()), ws.Signal()
		}
	}
	return ex
}

// SignalName is the short upper-case name of a signal ("TERM", "KILL").
func SignalName(s os.Signal) string {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return s.String()
	}
	if n := unixSignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("SIG%d", int(sig))
}
