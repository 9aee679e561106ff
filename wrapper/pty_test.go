package wrapper

import (
	"cx/internal/tty"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// terminal is the test's side of a real PTY: the supervisor runs on the
// slave as its controlling terminal; the test reads the master like a
// terminal emulator would.
type terminal struct {
	master, slave *os.File
	out           *syncBuffer
}

func newTerminal(t *testing.T, rows, cols uint16) *terminal {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	term := &terminal{master: master, slave: slave, out: newSyncBuffer()}
	go func() { _, _ = io.Copy(term.out, master) }()
	t.Cleanup(func() { slave.Close(); master.Close() })
	return term
}

func (tm *terminal) termios(t *testing.T) unix.Termios {
	t.Helper()
	st, err := tty.Termios(tm.slave.Fd())
	if err != nil {
		t.Fatalf("tcgetattr: %v", err)
	}
	return *st
}

func (tm *terminal) isRaw(t *testing.T) bool {
	return tm.termios(t).Lflag&(unix.ICANON|unix.ECHO) == 0
}

func (tm *terminal) start(t *testing.T, o supOpts) *proc {
	t.Helper()
	o.mode = "pty"
	o.stdin, o.stdout, o.stderr, o.ctty = tm.slave, tm.slave, tm.slave, true
	return startSupervisor(t, o)
}

func TestExitStatusPTY(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		child string
		want  int
	}{{"exit 0", 0}, {"exit 3", 3}, {"exit 255", 255}, {"die 15", 143}, {"die 9", 137}} {
		t.Run(strings.ReplaceAll(c.child, " ", "_"), func(t *testing.T) {
			t.Parallel()
			tm := newTerminal(t, 24, 80)
			p := tm.start(t, supOpts{child: c.child})
			if got := p.wait(t, 20*time.Second); got != c.want {
				t.Fatalf("exit %d, want %d", got, c.want)
			}
			if r := p.res(t); r.Mode != "pty" || r.Code != c.want {
				t.Fatalf("observer saw %+v", r)
			}
		})
	}
}

var sizeRE = regexp.MustCompile(`size (\d+) (\d+)`)

func TestPTYSizeAtStartAndResize(t *testing.T) {
	t.Parallel()
	tm := newTerminal(t, 31, 101)
	p := tm.start(t, supOpts{child: "size"})
	tm.out.waitFor(t, "size ", 10*time.Second)
	if m := sizeRE.FindStringSubmatch(tm.out.String()); m == nil || m[1] != "31" || m[2] != "101" {
		t.Fatalf("first size seen by child: %q, want 31 101", tm.out.String())
	}
	if err := pty.Setsize(tm.master, &pty.Winsize{Rows: 42, Cols: 123}); err != nil {
		t.Fatal(err)
	}
	tm.out.waitFor(t, "size 42 123", 10*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, 10*time.Second)
}

// The user's terminal comes back exactly as it was, whichever way the
// supervisor ends (short of SIGKILL).
func TestPTYTerminalRestored(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		child  string
		env    []string
		signal syscall.Signal
		want   int
	}{
		{name: "normal exit", child: "hang-then-exit"},
		{name: "SIGTERM to supervisor", child: "hang", signal: syscall.SIGTERM, want: 143},
		{name: "SIGHUP to supervisor", child: "hang", signal: syscall.SIGHUP, want: 129},
		{name: "SIGINT to supervisor", child: "hang", signal: syscall.SIGINT, want: 130},
		{name: "child killed", child: "hang", want: 137},
		{name: "panic in output relay", child: "hang", env: []string{"CX_TEST_PANIC=output"}, want: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tm := newTerminal(t, 24, 80)
			before := tm.termios(t)
			child := c.child
			if child == "hang-then-exit" {
				child = "raw-keys " + filepath.Join(t.TempDir(), "log")
				c.env = append(c.env, "CHILD_EXIT_ON_KEY=1")
			}
			// Ctrl+C as the polite key: the "hang" child's PTY is in cooked
			// mode, where the key would arrive as SIGINT, so the supervisor
			// sends the stop signal itself at once, which the child dies of.
			p := tm.start(t, supOpts{child: child, keys: "\x03", grace: 5 * time.Second, env: c.env})
			pid := p.childPid(t)
			if c.name != "panic in output relay" {
				tm.out.waitFor(t, "ready", 10*time.Second)
				eventually(t, 5*time.Second, "raw mode while the child runs", func() bool { return tm.isRaw(t) })
			}
			switch {
			case c.signal != 0:
				_ = p.cmd.Process.Signal(c.signal)
			case c.name == "child killed":
				_ = syscall.Kill(pid, syscall.SIGKILL)
			case c.child == "hang-then-exit":
				if _, err := tm.master.Write([]byte("q")); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.wait(t, 20*time.Second); got != c.want {
				t.Fatalf("exit %d, want %d; output:\n%s", got, c.want, tm.out.String())
			}
			if after := tm.termios(t); after != before {
				t.Fatalf("terminal not restored:\nbefore %+v\nafter  %+v", before, after)
			}
			eventually(t, 10*time.Second, "child gone", func() bool { return !alive(pid) })
		})
	}
}

// Polite stop: the keystrokes arrive first, then the signal, then SIGKILL.
func TestPTYPoliteStopOrder(t *testing.T) {
	t.Parallel()
	tm := newTerminal(t, 24, 80)
	log := filepath.Join(t.TempDir(), "log")
	p := tm.start(t, supOpts{child: "raw-keys " + log, keys: "\x03",
		grace: 700 * time.Millisecond, interval: 200 * time.Millisecond, killAfter: 300 * time.Millisecond})
	tm.out.waitFor(t, "ready", 10*time.Second)
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if got := p.wait(t, 20*time.Second); got != 137 {
		t.Fatalf("exit %d, want 137", got)
	}
	elapsed := time.Since(start)
	data, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	keys := 0
	for keys < len(lines) && lines[keys] == "key 03" {
		keys++
	}
	if keys < 2 || keys >= len(lines) || lines[keys] != "sig TERM" || keys+1 != len(lines) {
		t.Fatalf("child saw %q; want ≥2 Ctrl+C keys, then TERM, then nothing (killed)", lines)
	}
	if elapsed < 900*time.Millisecond {
		t.Fatalf("stopped after %v: grace and kill delay not honoured", elapsed)
	}
	if r := p.res(t); r.Received != "TERM" || r.Signal != 9 {
		t.Fatalf("observer saw %+v", r)
	}
}

// A child that quits on the polite keystroke makes the supervisor exit 0.
func TestPTYPoliteStopCleanExit(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
		t.Run(SignalName(sig), func(t *testing.T) {
			t.Parallel()
			tm := newTerminal(t, 24, 80)
			log := filepath.Join(t.TempDir(), "log")
			p := tm.start(t, supOpts{child: "raw-keys " + log, keys: "\x03", env: []string{"CHILD_EXIT_ON_KEY=1"}})
			tm.out.waitFor(t, "ready", 10*time.Second)
			_ = p.cmd.Process.Signal(sig)
			if got := p.wait(t, 20*time.Second); got != 0 {
				t.Fatalf("exit %d, want 0", got)
			}
			if data, _ := os.ReadFile(log); string(data) != "key 03\n" {
				t.Fatalf("child log %q, want one Ctrl+C", data)
			}
			if r := p.res(t); r.Received != SignalName(sig) {
				t.Fatalf("received %q", r.Received)
			}
		})
	}
}

// A child that starts quitting on the first polite keystroke puts its
// terminal back in cooked mode while it shuts down (Codex does): the next
// Ctrl+C written then would reach it as SIGINT and kill it mid-shutdown
// (exit 130, seen on a busy machine). No keystroke is written while the
// terminal would turn it into a signal.
func TestPTYPoliteStopNoKeysWhileCooked(t *testing.T) {
	t.Parallel()
	tm := newTerminal(t, 24, 80)
	log := filepath.Join(t.TempDir(), "log")
	p := tm.start(t, supOpts{child: "raw-keys " + log, keys: "\x03", env: []string{"CHILD_SLOW_QUIT_ON_KEY=1"},
		grace: 5 * time.Second, interval: 100 * time.Millisecond, killAfter: 2 * time.Second})
	tm.out.waitFor(t, "ready", 10*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	if got := p.wait(t, 20*time.Second); got != 0 {
		t.Fatalf("exit %d, want 0", got)
	}
	if data, _ := os.ReadFile(log); string(data) != "key 03\n" {
		t.Fatalf("child log %q, want one Ctrl+C and no signal", data)
	}
}

// Suspend gives back a sane (cooked) terminal with both processes stopped;
// continue brings the child back at the terminal's current size.
func TestPTYSuspendResume(t *testing.T) {
	t.Parallel()
	tm := newTerminal(t, 24, 80)
	before := tm.termios(t)
	p := tm.start(t, supOpts{child: "size"})
	child := p.childPid(t)
	tm.out.waitFor(t, "size 24 80", 10*time.Second)
	eventually(t, 5*time.Second, "raw mode", func() bool { return tm.isRaw(t) })

	_ = p.cmd.Process.Signal(syscall.SIGTSTP)
	eventually(t, 10*time.Second, "supervisor stopped", func() bool { return procState(p.cmd.Process.Pid) == "T" })
	eventually(t, 10*time.Second, "child stopped", func() bool { return procState(child) == "T" })
	if after := tm.termios(t); after != before {
		t.Fatalf("terminal not restored while suspended")
	}
	// The user resizes the window while cx is in the background.
	if err := pty.Setsize(tm.master, &pty.Winsize{Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	eventually(t, 10*time.Second, "child running", func() bool { s := procState(child); return s == "S" || s == "R" })
	tm.out.waitFor(t, "size 50 132", 10*time.Second)
	eventually(t, 5*time.Second, "raw mode again", func() bool { return tm.isRaw(t) })
	_ = syscall.Kill(child, syscall.SIGKILL)
	p.wait(t, 10*time.Second)
	if after := tm.termios(t); after != before {
		t.Fatalf("terminal not restored at exit")
	}
}

// The child never outlives the supervisor, even when it is SIGKILLed: by
// the lifeline alone (macOS), and with Linux's parent-death signal too;
// and the user's terminal is out of raw mode again.
func TestPTYSupervisorKilled(t *testing.T) {
	t.Parallel()
	for name, env := range map[string][]string{"lifeline": nil, "lifeline+pdeathsig": {"CX_TEST_OFF="}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tm := newTerminal(t, 24, 80)
			before := tm.termios(t)
			p := tm.start(t, supOpts{child: "echo-signals", env: env})
			child := p.childPid(t)
			tm.out.waitFor(t, "ready", 10*time.Second)
			if !tm.isRaw(t) {
				t.Fatal("the terminal is not raw while the child runs")
			}
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			p.wait(t, 10*time.Second)
			eventually(t, 10*time.Second, "child gone", func() bool { return !alive(child) })
			// The leader gave the user's terminal back: no `reset` needed.
			if after := tm.termios(t); after != before {
				t.Fatalf("terminal left as the dead supervisor set it (raw %v)", tm.isRaw(t))
			}
		})
	}
}

// Output is drained after the child exits, but a grandchild holding the PTY
// open cannot keep the supervisor waiting past the drain bound.
func TestPTYDrainBounded(t *testing.T) {
	t.Parallel()
	tm := newTerminal(t, 24, 80)
	start := time.Now()
	p := tm.start(t, supOpts{child: "hold-pty"})
	if got := p.wait(t, 15*time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Fatalf("supervisor took %v with the PTY held open", el)
	}
	tm.out.waitFor(t, "bye", 5*time.Second)
	m := regexp.MustCompile(`grandchild (\d+)`).FindStringSubmatch(tm.out.String())
	if m == nil {
		t.Fatalf("no grandchild pid in %q", tm.out.String())
	}
	gc, _ := strconv.Atoi(m[1])
	t.Cleanup(func() { _ = syscall.Kill(gc, syscall.SIGKILL) })
	// The hang-up of the PTY ends the grandchild as a terminal would.
	eventually(t, 10*time.Second, fmt.Sprintf("grandchild %d gone", gc), func() bool { return !alive(gc) })
}

// All output reaches the user, including what the child wrote just before
// exiting.
func TestPTYAllOutput(t *testing.T) {
	t.Parallel()
	tm := newTerminal(t, 24, 80)
	const n = 4 << 20
	p := tm.start(t, supOpts{child: "spew " + strconv.Itoa(n)})
	if got := p.wait(t, 60*time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	// The child's PTY turns \n into \r\n: count payload bytes without \r.
	eventually(t, 10*time.Second, "all output", func() bool {
		return len(strings.ReplaceAll(tm.out.String(), "\r", "")) >= n
	})
}

// Ctrl+Z inside the child: it raises SIGTSTP on itself, as Codex does. With
// the session leader its process group is not orphaned, so it stops; the
// supervisor gives the terminal back (cooked) and stops too, as the shell
// expects; continuing the supervisor (fg) resumes the child in raw mode.
// Without the leader the kernel discards the child's SIGTSTP.
func TestPTYChildCtrlZ(t *testing.T) {
	t.Parallel()
	t.Run("leader", func(t *testing.T) {
		t.Parallel()
		tm := newTerminal(t, 24, 80)
		before := tm.termios(t)
		p := tm.start(t, supOpts{child: "tstp-self"})
		child := p.childPid(t)
		tm.out.waitFor(t, "ready", 10*time.Second)
		eventually(t, 5*time.Second, "raw mode", func() bool { return tm.isRaw(t) })
		fmt.Fprint(tm.master, "z\r")
		eventually(t, 10*time.Second, "child stopped", func() bool { return procState(child) == "T" })
		eventually(t, 10*time.Second, "supervisor stopped", func() bool { return procState(p.cmd.Process.Pid) == "T" })
		if after := tm.termios(t); after != before {
			t.Fatalf("terminal not restored while stopped")
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		tm.out.waitFor(t, "resumed", 10*time.Second)
		eventually(t, 5*time.Second, "raw mode again", func() bool { return tm.isRaw(t) })
		fmt.Fprint(tm.master, "q\r")
		if code := p.wait(t, 10*time.Second); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if after := tm.termios(t); after != before {
			t.Fatalf("terminal not restored at exit")
		}
		if r := p.res(t); r.Pid != child {
			t.Fatalf("reported pid %d, want the child's %d", r.Pid, child)
		}
	})
	t.Run("no-leader", func(t *testing.T) {
		t.Parallel()
		tm := newTerminal(t, 24, 80)
		p := tm.start(t, supOpts{child: "tstp-self", env: []string{"SUP_NO_LEADER=1"}})
		tm.out.waitFor(t, "ready", 10*time.Second)
		fmt.Fprint(tm.master, "z\r")
		tm.out.waitFor(t, "not stopped", 10*time.Second)
		fmt.Fprint(tm.master, "q\r")
		p.wait(t, 10*time.Second)
	})
}

// Under the session leader the child's exit status is still exactly its
// own: an exit code, or death by a signal (128+n, and the signal).
func TestPTYExitStatusThroughLeader(t *testing.T) {
	t.Parallel()
	cases := []struct {
		child string
		code  int
		sig   int
	}{{"exit 0", 0, 0}, {"exit 3", 3, 0}, {"die 15", 143, 15}, {"die 9", 137, 9}, {"die 1", 129, 1}}
	for _, c := range cases {
		t.Run(c.child, func(t *testing.T) {
			t.Parallel()
			tm := newTerminal(t, 24, 80)
			p := tm.start(t, supOpts{child: c.child})
			if got := p.wait(t, 10*time.Second); got != c.code {
				t.Fatalf("exit %d, want %d", got, c.code)
			}
			if r := p.res(t); r.Signal != c.sig {
				t.Fatalf("signal %d, want %d", r.Signal, c.sig)
			}
		})
	}
}
