package wrapper

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestExitStatusPipe(t *testing.T) {
	t.Parallel()
	cases := []struct {
		child string
		want  int
	}{
		{"exit 0", 0}, {"exit 1", 1}, {"exit 2", 2}, {"exit 32", 32}, {"exit 64", 64},
		{"exit 127", 127}, {"exit 254", 254}, {"exit 255", 255},
		{"die 2", 130}, {"die 15", 143}, {"die 1", 129}, {"die 3", 131}, {"die 9", 137},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.child, " ", "_"), func(t *testing.T) {
			t.Parallel()
			p := startSupervisor(t, supOpts{mode: "pipe", child: c.child})
			if got := p.wait(t, 20*time.Second); got != c.want {
				t.Fatalf("exit status %d, want %d", got, c.want)
			}
			r := p.res(t)
			if r.Code != c.want || r.Mode != "pipe" {
				t.Fatalf("observer saw %+v, want code %d in pipe mode", r, c.want)
			}
			if strings.HasPrefix(c.child, "die") && r.Signal != c.want-128 {
				t.Fatalf("observer signal %d, want %d", r.Signal, c.want-128)
			}
		})
	}
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{filepath.Join(dir, "missing"), 127},
		{notExec, 126},
		{dir, 126},
	} {
		p := startSupervisor(t, supOpts{mode: "pipe", env: []string{"SUP_PATH=" + c.path}})
		if got := p.wait(t, 10*time.Second); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.path, got, c.want)
		}
		if r := p.res(t); r.StartErr == "" {
			t.Errorf("%s: no start error reported", c.path)
		}
	}
}

// Each stop signal sent to the supervisor reaches the child, once.
func TestPipeForwardsSignals(t *testing.T) {
	t.Parallel()
	out := newSyncBuffer()
	p := startSupervisor(t, supOpts{mode: "pipe", child: "echo-signals", grace: 30 * time.Second, stdout: pipeTo(t, out)})
	out.waitFor(t, "ready", 10*time.Second)
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		if err := p.cmd.Process.Signal(s); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, "sig "+SignalName(s), 10*time.Second)
	}
	// SIGUSR1 is not forwarded: the supervisor does not handle it and dies of
	// it, taking the child with it (parent-death signal).
	child := p.childPid(t)
	if got := strings.Count(out.String(), "sig "); got != 4 {
		t.Fatalf("child saw %d signals, want 4:\n%s", got, out.String())
	}
	p.watchmanUp(t)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, 10*time.Second)
	eventually(t, 10*time.Second, "child gone after supervisor SIGKILL", func() bool { return !alive(child) })
}

// The supervisor SIGKILLed: the lifeline's end tells the watchman, which
// stops the child the polite way first — SIGTERM, then SIGKILL KillAfter
// later — however the child takes the signal.
func TestPipeLifelinePoliteThenKill(t *testing.T) {
	t.Parallel()
	out := newSyncBuffer()
	p := startSupervisor(t, supOpts{mode: "pipe", child: "echo-signals", killAfter: 500 * time.Millisecond, stdout: pipeTo(t, out)})
	out.waitFor(t, "ready", 10*time.Second)
	child := p.childPid(t)
	p.watchmanUp(t)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, 10*time.Second)
	out.waitFor(t, "sig TERM", 10*time.Second)
	eventually(t, 10*time.Second, "child gone after the polite stop", func() bool { return !alive(child) })
	if n := strings.Count(out.String(), "sig "); n != 1 {
		t.Fatalf("child saw %d signals, want SIGTERM once:\n%s", n, out.String())
	}
}

// A child that ignores the forwarded signal is killed when the grace ends.
func TestPipeGraceKill(t *testing.T) {
	t.Parallel()
	out := newSyncBuffer()
	p := startSupervisor(t, supOpts{mode: "pipe", child: "echo-signals", grace: 300 * time.Millisecond, stdout: pipeTo(t, out)})
	out.waitFor(t, "ready", 10*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if got := p.wait(t, 10*time.Second); got != 137 {
		t.Fatalf("exit %d, want 137 (killed after grace)", got)
	}
	if !strings.Contains(out.String(), "sig TERM") {
		t.Fatalf("child never saw TERM:\n%s", out.String())
	}
	if r := p.res(t); r.Received != "TERM" {
		t.Fatalf("received %q, want TERM", r.Received)
	}
}

// Stdin, stdout and stderr are the child's as they are: 8 MiB of random
// bytes come back identical, and stderr stays separate.
func TestPipeBytesExact(t *testing.T) {
	t.Parallel()
	data := make([]byte, 8<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var out bytes.Buffer
	errb := newSyncBuffer()
	stdoutW := pipeTo(t, &out)
	stderrW := pipeTo(t, errb)
	p := startSupervisor(t, supOpts{mode: "pipe", child: "cat", stdin: stdin, stdout: stdoutW, stderr: stderrW})
	if got := p.wait(t, 60*time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	errb.waitFor(t, "done <nil>", 10*time.Second)
	waitClosed(t, stdoutW)
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("stdout differs: got %d bytes, want %d", out.Len(), len(data))
	}
	if bytes.Contains(out.Bytes(), []byte("done <nil>")) {
		t.Fatal("stderr leaked into stdout")
	}
}

// `echo x | cx …`: EOF on stdin does not end the child before it answered.
func TestPipeStdinEOF(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(w, "x\n")
	w.Close()
	defer r.Close()
	out := newSyncBuffer()
	p := startSupervisor(t, supOpts{mode: "pipe", child: "slow-echo", stdin: r, stdout: pipeTo(t, out)})
	if got := p.wait(t, 10*time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	out.waitFor(t, "got x", 5*time.Second)
}

// pipeTo returns the write end of a pipe whose bytes are copied into w.
// The test's copy of the write end is closed once the supervisor has it.
func pipeTo(t *testing.T, w io.Writer) *os.File {
	t.Helper()
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(w, r); r.Close(); close(done) }()
	copies.Store(pw, done)
	t.Cleanup(func() { pw.Close() })
	return pw
}

var copies sync.Map // *os.File → chan struct{}: copy finished

// waitClosed closes the test's write end and waits for the copy to finish.
func waitClosed(t *testing.T, pw *os.File) {
	t.Helper()
	pw.Close()
	done, _ := copies.Load(pw)
	select {
	case <-done.(chan struct{}):
	case <-time.After(10 * time.Second):
		t.Fatal("output copy did not finish")
	}
}

// Tapped pipe mode: every byte passes unchanged both ways, the tap sees the
// same bytes, EOF on stdin reaches the child, stderr stays direct.
func TestTappedRelayBytesExact(t *testing.T) {
	t.Parallel()
	data := make([]byte, 8<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.WriteFile(in, data, 0o600)
	stdin, _ := os.Open(in)
	defer stdin.Close()
	var out bytes.Buffer
	errb := newSyncBuffer()
	stdoutW := pipeTo(t, &out)
	p := startSupervisor(t, supOpts{mode: "pipe", child: "cat", stdin: stdin, stdout: stdoutW, stderr: pipeTo(t, errb),
		env: []string{"SUP_TAP_IN=" + filepath.Join(dir, "tap-in"), "SUP_TAP_OUT=" + filepath.Join(dir, "tap-out")}})
	if got := p.wait(t, 60*time.Second); got != 0 {
		t.Fatalf("exit %d", got)
	}
	errb.waitFor(t, "done <nil>", 10*time.Second) // the child saw EOF
	waitClosed(t, stdoutW)
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("relayed stdout differs: %d bytes, want %d", out.Len(), len(data))
	}
	tapIn, _ := os.ReadFile(filepath.Join(dir, "tap-in"))
	tapOut, _ := os.ReadFile(filepath.Join(dir, "tap-out"))
	if !bytes.Equal(tapIn, data) || !bytes.Equal(tapOut, data) {
		t.Fatalf("tap saw %d in / %d out bytes, want %d each", len(tapIn), len(tapOut), len(data))
	}
}

// With CloseStdin, a stop signal first gives a tapped child EOF on its
// stdin (Codex's app-server then ends its threads itself) and the child's
// clean exit is the status; without it, the signal goes first.
func TestStopClosesStdinFirst(t *testing.T) {
	t.Parallel()
	for _, closeFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("closeStdin=", closeFirst), func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe() // the daemon's end stays open: no EOF of its own
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			dir := t.TempDir()
			errb := newSyncBuffer()
			env := []string{"SUP_TAP_IN=" + filepath.Join(dir, "tap-in"), "SUP_TAP_OUT=" + filepath.Join(dir, "tap-out")}
			if closeFirst {
				env = append(env, "SUP_CLOSE_STDIN=1")
			}
			p := startSupervisor(t, supOpts{mode: "pipe", child: "eof-exit", stdin: r, stdout: pipeTo(t, io.Discard),
				stderr: pipeTo(t, errb), grace: 2 * time.Second, killAfter: time.Second, env: env})
			errb.waitFor(t, "ready", 10*time.Second)
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			code := p.wait(t, 15*time.Second)
			res := p.res(t)
			if res.Received != "TERM" {
				t.Fatalf("received %q, want TERM", res.Received)
			}
			if closeFirst {
				if code != 0 || !strings.Contains(errb.String(), "eof") || strings.Contains(errb.String(), "sig TERM") {
					t.Fatalf("exit %d; child said %q; want EOF first and a clean exit", code, errb.String())
				}
				return
			}
			if !strings.Contains(errb.String(), "sig TERM") {
				t.Fatalf("exit %d; child said %q; want the signal first", code, errb.String())
			}
		})
	}
}

// The child's CPU time reaches the observer (cx logs it beside its own),
// through a PTY's session leader too.
func TestExitCPU(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pipe", "pty"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var p *proc
			if mode == "pty" {
				p = newTerminal(t, 24, 80).start(t, supOpts{child: "spin 200"})
			} else {
				p = startSupervisor(t, supOpts{mode: "pipe", child: "spin 200"})
			}
			if got := p.wait(t, 30*time.Second); got != 0 {
				t.Fatalf("exit %d", got)
			}
			if r := p.res(t); r.CPUMs < 200 || r.CPUMs > 10000 {
				t.Fatalf("child CPU %d ms, want at least the 200 ms it spun", r.CPUMs)
			}
		})
	}
}
