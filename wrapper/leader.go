package wrapper

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LeaderEnv marks a process started as the session leader of a PTY session
// (Spec.Leader): the program that implements the leader calls LeaderMain
// when it sees LeaderEnv=1 in its environment.
const LeaderEnv = "CX_WRAPPER_LEADER"

// leaderFD is the status pipe the leader reports on: "pid N" once the child
// runs, "stop" each time the child stops itself (job control), "err CODE
// MESSAGE" when it could not start it.
const leaderFD = 3

// Why a leader: a child that leads its own session on the PTY is an orphaned
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
	// The status pipe is the leader's alone: the child and what it starts
	// must not hold it open.
	unix.CloseOnExec(leaderFD)
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
		if !strings.HasPrefix(kv, LeaderEnv+"=") {
			env = append(env, kv)
		}
	}
	// Stop signals are the child's to handle; the leader only passes them on.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
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
	go func() {
		for s := range sigs {
			if err := syscall.Kill(-pid, s.(syscall.Signal)); err != nil {
				_ = syscall.Kill(pid, s.(syscall.Signal))
			}
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
			return ws.ExitStatus()
		case ws.Signaled():
			sig := ws.Signal()
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

// leaderReport is one line the leader wrote on its status pipe.
type leaderReport struct {
	pid     int
	stopped bool
	errCode int
	errMsg  string
}

// readLeader parses the leader's status lines onto a channel; it ends
// when the leader (and the child holding the pipe) is gone.
func readLeader(f *os.File, out chan<- leaderReport) {
	defer close(out)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		word, rest, _ := strings.Cut(sc.Text(), " ")
		switch word {
		case "pid":
			if n, err := strconv.Atoi(rest); err == nil {
				out <- leaderReport{pid: n}
			}
		case "stop":
			out <- leaderReport{stopped: true}
		case "err":
			code, msg, _ := strings.Cut(rest, " ")
			n, _ := strconv.Atoi(code)
			out <- leaderReport{errCode: n, errMsg: msg}
		}
	}
}
