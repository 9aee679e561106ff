package wrapper

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	cxproc "cx/internal/proc"
	"cx/internal/tty"
)

// LeaderEnv marks a process started as the leader (Spec.Leader) of a PTY
// session: the program that implements it calls LeaderMain when IsLeader
// says so.
const LeaderEnv = "CX_WRAPPER_LEADER"

// leaderGraceEnv is how long the leader lets the child stop politely once
// the lifeline says the supervisor is gone, in milliseconds: the stop
// policy's KillAfter, the time between its signal and SIGKILL.
const leaderGraceEnv = "CX_WRAPPER_LEADER_GRACE_MS"

// leaderTermiosEnv carries the user's terminal settings from before raw
// mode (tty.EncodeTermios), for the leader to restore on terminalFD when
// the lifeline says the supervisor died: a SIGKILLed cx must not leave the
// user's shell in raw mode.
const leaderTermiosEnv = "CX_WRAPPER_LEADER_TERMIOS"

// leaderParentEnv is the pid of the process that ran cx (a shell, most
// often), which shares the user's terminal: the leader reads from it whose
// the terminal is (its foreground group) when cx dies — the leader's own
// controlling terminal is the PTY, so it cannot ask the user's directly.
const leaderParentEnv = "CX_WRAPPER_LEADER_PARENT"

// terminalFD is the user's terminal, passed with leaderTermiosEnv.
const terminalFD = 5

// IsLeader reports whether this process was started as a leader.
func IsLeader() bool { return os.Getenv(LeaderEnv) != "" }

// leaderFD is the status pipe the leader reports on: "pid N" once the child
// runs, "stop" each time the child stops itself (job control), "err CODE
// MESSAGE" when it could not start it.
const leaderFD = 3

// lifelineFD is the read end of the lifeline: a pipe whose write end only
// the supervisor holds. Whatever ends the supervisor — an exit, a crash,
// SIGKILL — the kernel closes that end and the leader reads EOF: the one
// guard against a child outliving cx that works on every Unix (Linux's
// parent-death signal has no macOS equivalent).
const lifelineFD = 4

// Why a leader: it makes job control work in a PTY session, and it is the
// process beside the child that outlives the supervisor to hold the
// lifeline (pipe mode has no leader: a watchman holds it there). Job
// control: a child that leads its own session on the PTY is an orphaned
// process group (its parent, the supervisor, is in another session), and
// the kernel discards the SIGTSTP such a group raises on Ctrl+Z. With a
// small leader as the session's first process and the child in a process
// group of its own below it, the child's group has a parent in the same
// session: Ctrl+Z stops the child as it would in a shell, the leader sees
// the stop (wait with WUNTRACED) and tells the supervisor, which gives the
// user's terminal back and stops itself.

// LeaderMain runs the child (args: path, then its arguments) as the
// foreground process group of the leader's terminal, forwards stop signals
// to it, reports its pid and its stops on fd 3, and exits the way the child
// did — with its code, or killed by the same signal — so the supervisor
// sees the child's own status.
func LeaderMain(args []string) int {
	grace := 5 * time.Second
	if ms, err := strconv.Atoi(os.Getenv(leaderGraceEnv)); err == nil && ms > 0 {
		grace = time.Duration(ms) * time.Millisecond
	}
	// The status pipe and the lifeline are the leader's alone: the child and
	// what it starts must not hold them open.
	unix.CloseOnExec(leaderFD)
	unix.CloseOnExec(lifelineFD)
	termios := os.Getenv(leaderTermiosEnv)
	if termios != "" {
		unix.CloseOnExec(terminalFD)
	}
	status := os.NewFile(leaderFD, "leader-status")
	report := func(format string, a ...any) {
		if status != nil {
			_, _ = fmt.Fprintf(status, format+"\n", a...)
		}
	}
	if len(args) == 0 {
		report("err 126 no program to run")
		return 126
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, LeaderEnv+"=") && !strings.HasPrefix(kv, leaderGraceEnv+"=") && !strings.HasPrefix(kv, leaderTermiosEnv+"=") && !strings.HasPrefix(kv, leaderParentEnv+"=") {
			env = append(env, kv)
		}
	}
	// Stop signals are the child's to handle; the leader only passes them on.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = withParentDeath(&syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}, syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		report("err %d %s", code, err)
		return code
	}
	pid := cmd.Process.Pid
	report("pid %d", pid)
	// The terminal's foreground group now is cx's job (when a job-control
	// shell ran cx): a shell takes the terminal back from it when cx dies.
	parent, _ := strconv.Atoi(os.Getenv(leaderParentEnv))
	jobGroup := foregroundOf(parent)
	// givenBack is closed once the terminal is given back after the
	// supervisor died: the leader does not exit halfway through (the child
	// dies at once of its PTY's hangup).
	givenBack := make(chan struct{})
	watching := false
	supervisor := os.Getppid()
	if lifeline := lifelineFile(); lifeline != nil {
		watching = true
		go watchLifeline(lifeline, pid, grace, termios != "", func(leftScreen bool) {
			defer close(givenBack)
			if termios != "" {
				giveTerminalBack(termios, parent, jobGroup)
			}
			if leftScreen {
				redrawShell(parent, jobGroup)
			}
		})
	}
	// waitGivenBack holds the leader's exit while the terminal is being
	// given back, bounded.
	waitGivenBack := func() {
		// The supervisor gone (this process handed to another parent): its
		// lifeline has broken, or is breaking, and the terminal is given
		// back now.
		if watching && os.Getppid() != supervisor {
			select {
			case <-givenBack:
			case <-time.After(2 * time.Second):
			}
		}
	}
	go func() {
		for s := range sigs {
			signalGroup(pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		switch {
		case ws.Stopped():
			report("stop")
		case ws.Exited():
			waitGivenBack()
			return ws.ExitStatus()
		case ws.Signaled():
			waitGivenBack()
			sig := ws.Signal()
			// Said first: a Go program cannot always die of the signal its
			// child died of (SIGQUIT makes the runtime exit 2 with a stack
			// dump), so the supervisor takes the child's death from here.
			report("end %d", int(sig))
			signal.Reset(sig)
			// No core file of the leader for the child's crash.
			_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
			_ = syscall.Kill(os.Getpid(), sig)
			// Delivery is asynchronous: wait for it rather than exit first.
			time.Sleep(2 * time.Second)
			return 128 + int(sig) // a signal that does not kill (never expected)
		}
	}
}

// modesMsg heads the supervisor's lines on the lifeline that say what
// turns off the terminal modes the child has on (hex).
const modesMsg = "modes"

// lifelineFile is the lifeline the supervisor passed, nil if there is
// none (a leader started without one must not read a closed descriptor's
// error as the supervisor's death).
func lifelineFile() *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(lifelineFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	return os.NewFile(lifelineFD, "lifeline")
}

// watchLifeline waits for the supervisor to be gone — the lifeline's write
// end closed, which only its death (or its end, once the child is gone)
// does — then gives the user's terminal back (restore), and stops the
// child the polite way: SIGTERM to its group, and SIGKILL if it is still
// there grace later. The leader then exits as the child did.
func watchLifeline(lifeline *os.File, pid int, grace time.Duration, haveTerminal bool, restore func(leftScreen bool)) {
	// The supervisor's messages: the latest "modes <hex>" is what turns off
	// the terminal modes the child has on.
	var reset []byte
	sc := bufio.NewScanner(lifeline)
	for sc.Scan() {
		if hexReset, ok := strings.CutPrefix(sc.Text(), modesMsg+" "); ok {
			if b, err := hex.DecodeString(hexReset); err == nil {
				reset = b
			}
		}
	}
	// EOF (or a read error): nobody holds the write end any more. The
	// modes go first, before a shell draws its prompt on the screen the
	// child left.
	leftScreen := false
	if len(reset) > 0 && haveTerminal {
		_, _ = unix.Write(terminalFD, reset)
		leftScreen = tty.LeavesScreen(reset)
	}
	restore(leftScreen)
	signalGroup(pid, syscall.SIGTERM)
	time.Sleep(grace)
	signalGroup(pid, syscall.SIGKILL)
}

// shellTakeBack is how long the leader waits, once cx is gone, for a shell
// to take the terminal back before it restores the settings itself.
const shellTakeBack = 300 * time.Millisecond

// giveTerminalBack restores the user's terminal settings when cx died in
// raw mode — unless a job-control shell took the terminal back: such a
// shell restores its own settings for a killed job and then sets up its
// line editor, and settings written after that would undo it (bash left in
// canonical mode with echo). The shell makes itself the terminal's
// foreground group first, so the leader waits briefly for that (read from
// the process that ran cx, jobGroup being the group it saw at the start),
// and restores only if no one took the terminal and it is still cx's raw
// mode.
func giveTerminalBack(termios string, parent, jobGroup int) {
	deadline := time.Now().Add(shellTakeBack)
	for jobGroup > 0 && time.Now().Before(deadline) {
		if g := foregroundOf(parent); g != jobGroup {
			return // a shell has it back, or the one that ran cx is gone
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = tty.RestoreTermiosIfRaw(terminalFD, termios)
}

// redrawShell has the shell that took the terminal back draw its line
// again: the leader left the child's alternate screen, and a shell quicker
// than the leader drew its prompt there, now out of sight. A line editor
// (readline, zle, fish) redraws when the terminal's size changes.
func redrawShell(parent, jobGroup int) {
	time.Sleep(50 * time.Millisecond) // the shell back in its line editor
	if g := foregroundOf(parent); g > 0 && g != jobGroup {
		_ = tty.NudgeSize(terminalFD)
	}
}

// foregroundOf is the foreground group of pid's controlling terminal (0
// when pid is unknown or has none).
func foregroundOf(pid int) int {
	if pid <= 1 {
		return 0
	}
	st, err := cxproc.ReadStat(pid)
	if err != nil || st.TPGID < 0 {
		return 0
	}
	return st.TPGID
}

// signalGroup signals the process group pid leads. Codex always leads
// one (Setpgid), so a group that is gone means Codex is gone too: its pid
// alone is not signalled then, for it may already be another process's
// (in a terminal the leader reaps Codex, not cx, and pids wrap in minutes
// on a busy machine).
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}

// leaderReport is one line the leader wrote on its status pipe.
type leaderReport struct {
	pid     int
	stopped bool
	errCode int
	errMsg  string
}

// leaderStatus reads the leader's status lines: its reports onto a
// channel (closed when the leader, and the child holding the pipe, are
// gone) and the signal the child died of, if it said one.
type leaderStatus struct {
	reports chan leaderReport
	done    chan struct{} // closed at the pipe's end
	killed  atomic.Int32  // the signal of an "end" line, 0 if none
}

func readLeader(f *os.File) *leaderStatus {
	ls := &leaderStatus{reports: make(chan leaderReport, 8), done: make(chan struct{})}
	go func() {
		defer close(ls.done)
		defer close(ls.reports)
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			word, rest, _ := strings.Cut(sc.Text(), " ")
			switch word {
			case "pid":
				if n, err := strconv.Atoi(rest); err == nil {
					ls.reports <- leaderReport{pid: n}
				}
			case "stop":
				select {
				case ls.reports <- leaderReport{stopped: true}:
				default: // nobody listens any more: the run is ending
				}
			case "end":
				if n, err := strconv.Atoi(rest); err == nil {
					ls.killed.Store(int32(n))
				}
			case "err":
				code, msg, _ := strings.Cut(rest, " ")
				n, _ := strconv.Atoi(code)
				ls.reports <- leaderReport{errCode: n, errMsg: msg}
			}
		}
	}()
	return ls
}
