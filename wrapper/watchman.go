package wrapper

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchmanScript is the lifeline's other end in pipe mode, run by /bin/sh
// (on every Unix, and a few hundred kilobytes against cx's 30 MB, so it
// costs a Codex start nothing measurable). Its stdin is the lifeline: a
// line ("done") means the supervisor saw the child end and lets it go; EOF
// without one means the supervisor died, however it died, and the child's
// group is stopped the polite way — SIGTERM, then SIGKILL grace later.
// The terminal's signals are ignored: the watchman leads a process group
// of its own and must outlive a Ctrl+C or a kill of cx's group.
const watchmanScript = `trap '' INT HUP QUIT TSTP TTIN TTOU
read -r _ && exit 0
kill -s TERM -- "-$1" 2>/dev/null || exit 0
sleep "$2"
kill -s KILL -- "-$1" 2>/dev/null
exit 0`

// watchmanShell is the shell that runs the watchman (a variable for tests).
var watchmanShell = "/bin/sh"

// watchmanDelay is how long the watchman waits to start: past the
// child's own start (a Codex start is 30 ms for --version, more for the
// TUI), so that its fork and exec take nothing from it — started at once,
// it cost a trivial child 2 to 3 ms of launch on two cores, against none
// with this delay. A child gone by then never needs a watchman.
const watchmanDelay = 100 * time.Millisecond

// watchman guards a child started directly by the supervisor (pipe mode):
// the child must not outlive the supervisor, and Linux's parent-death
// signal does not exist on macOS. Until it runs (watchmanDelay), only
// Linux's parent-death signal guards the child: on macOS a cx SIGKILLed in
// its first tenth of a second leaves Codex running.
type watchman struct {
	timer    *time.Timer
	started  chan struct{} // closed once the fields below are set
	lifeline *os.File      // the write end, the supervisor's alone
	cmd      *exec.Cmd
	err      error
}

// startWatchman starts a watchman over the process group pgid after
// delay, in the background; warn hears why it could not start (a reason
// to warn the user, not to stop the child's run).
func startWatchman(pgid int, grace, delay time.Duration, warn func(error)) *watchman {
	m := &watchman{started: make(chan struct{})}
	m.timer = time.AfterFunc(delay, func() {
		defer close(m.started)
		if m.lifeline, m.cmd, m.err = spawnWatchman(pgid, grace); m.err != nil && warn != nil {
			warn(m.err)
		}
	})
	return m
}

func spawnWatchman(pgid int, grace time.Duration) (*os.File, *exec.Cmd, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("lifeline pipe: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(watchmanShell, "-c", watchmanScript, "cx-watchman",
		strconv.Itoa(pgid), strconv.FormatFloat(grace.Seconds(), 'f', -1, 64))
	cmd.Stdin = r
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // sleep, on every Unix
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("start watchman: %w", err)
	}
	// Its start must not take CPU from the child's: it waits at the lowest
	// priority, and has nothing to do unless the supervisor dies.
	_ = unix.Setpriority(unix.PRIO_PROCESS, cmd.Process.Pid, 19)
	go func() { _ = cmd.Wait() }() // reaped whenever it ends
	return w, cmd, nil
}

// wait waits until the watchman runs, or could not be started.
func (m *watchman) wait() error {
	<-m.started
	return m.err
}

// release tells the watchman the child has ended, so it leaves the child's
// group (now perhaps some other process's) alone, and ends it; a watchman
// not started yet never starts.
func (m *watchman) release() {
	if m == nil || m.timer.Stop() || m.wait() != nil {
		return
	}
	_, _ = m.lifeline.Write([]byte("done\n"))
	_ = m.lifeline.Close()
}
